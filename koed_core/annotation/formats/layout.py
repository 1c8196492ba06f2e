"""How a KoED dialogue becomes one plain-text document for another annotation tool.

A span lives on one turn of one language, in code points of that turn. Other tools
annotate one text, so each dialogue is laid out the same way every time: the Korean
situation, the Korean turns in order, then the English situation and the English turns,
one segment a line (``\\n`` between them), a side with no text left out. The document's
text is the dialogue's text as the page shows it (English ``_comma_`` decoded), never
normalised, so a span maps to the document and back exactly. An import rebuilds the
same layout from the loaded dataset and refuses a document whose text differs: its
offsets would point at other words.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from koed_core.annotation.spans import SITUATION
from koed_core.annotation.taxonomy import AnnotationError
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.dialogue import Dialogue, Lang

FINAL = "final"
"""The file-name tail of an adjudicated (final) answer's document."""
MAX_FILES = 20_000


@dataclass(frozen=True)
class Segment:
    """One turn (or the situation) of one language, where it sits in the document."""

    lang: Lang
    position: int
    start: int
    text: str

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True)
class Document:
    """A dialogue as one text, with the place of every segment (code points)."""

    conv_id: str
    text: str
    segments: tuple[Segment, ...]

    def place(self, side: dict[str, Any], lang: Lang) -> tuple[int, int]:
        """Document offsets of a span side (the export's ``{"position", "start", "end"}``)."""
        segment = next(s for s in self.segments if (s.lang, s.position) == (lang, side["position"]))
        return segment.start + side["start"], segment.start + side["end"]

    def locate(self, start: int, end: int, where: str) -> tuple[Segment, dict[str, Any]]:
        """The segment holding document offsets [start, end) and the side inside it.

        Raises:
            AnnotationError: empty, outside the text, or across two turns.
        """
        for segment in self.segments:
            if segment.start <= start < segment.end:
                if end > segment.end or end <= start:
                    break
                side = {
                    "position": segment.position,
                    "start": start - segment.start,
                    "end": end - segment.start,
                    "text": self.text[start:end],
                }
                return segment, side
        raise AnnotationError(
            f"{where}: a span at {start}-{end} is not inside one turn of {self.conv_id} "
            "(spans stay within one turn of one language)"
        )


def layout(dialogue: Dialogue) -> Document:
    """The document of a dialogue: Korean situation and turns, then English ones."""
    parts: list[tuple[Lang, int, str]] = []
    for lang in ("ko", "en"):
        parts.append((lang, SITUATION, dialogue.situation(lang)))
        parts += [(lang, turn.position, turn.text(lang)) for turn in dialogue.turns]
    segments: list[Segment] = []
    offset = 0
    for lang, position, text in parts:
        if not text:
            continue
        if segments:
            offset += 1  # the line break before this segment
        segments.append(Segment(lang, position, offset, text))
        offset += len(text)
    return Document(dialogue.conv_id, "\n".join(s.text for s in segments), tuple(segments))


def check_text(document: Document, given: str, where: str) -> None:
    """Refuse a document whose text is not the dialogue's (its offsets would be wrong).

    Raises:
        AnnotationError: the first place the texts differ, named.
    """
    if given == document.text:
        return
    at = next(
        (i for i, (a, b) in enumerate(zip(given, document.text, strict=False)) if a != b),
        min(len(given), len(document.text)),
    )
    raise AnnotationError(
        f"{where}: its text is not the text of {document.conv_id} in the loaded dataset "
        f"(they differ at character {at}: {given[at : at + 12]!r} here, "
        f"{document.text[at : at + 12]!r} in the dataset), so its offsets cannot be trusted"
    )


def to_utf16(text: str, offset: int) -> int:
    """A code-point offset of ``text`` counted in UTF-16 units, as Java and JavaScript do."""
    return offset + sum(1 for char in text[:offset] if ord(char) > 0xFFFF)


def from_utf16(text: str, units: int, where: str) -> int:
    """A UTF-16 offset of ``text`` as a code-point offset.

    Raises:
        AnnotationError: past the end, or between the two halves of a surrogate pair.
    """
    count = 0
    for index, char in enumerate(text):
        if count == units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
        if count > units:
            break
    if count == units:
        return len(text)
    raise AnnotationError(
        f"{where}: UTF-16 offset {units} falls inside a character or past the end of the text"
    )


def doc_name(conv_id: str, annotator: str, adjudicated: bool) -> str:
    """A file stem naming the dialogue and the annotator, reversibly and safely on every
    file system (``:`` and ``/`` percent-encoded, ``@`` between the parts)."""
    stem = f"{quote(conv_id, safe='')}@{quote(annotator, safe='')}"
    return f"{stem}@{FINAL}" if adjudicated else stem


def parse_doc_name(stem: str, where: str) -> tuple[str, str, bool]:
    """(conv_id, annotator, adjudicated) from a file stem ``doc_name`` wrote.

    Raises:
        AnnotationError: a name not of that form.
    """
    parts = stem.split("@")
    if len(parts) not in (2, 3) or not all(parts) or (len(parts) == 3 and parts[2] != FINAL):
        raise AnnotationError(
            f"{where}: the file name must be CONV_ID@ANNOTATOR (with @{FINAL} for a final "
            "answer), as the export names it, so the dialogue and annotator are known"
        )
    return unquote(parts[0]), unquote(parts[1]), len(parts) == 3


def files(path: Path, suffix: str) -> list[Path]:
    """The files to read: ``path`` itself, or every ``*suffix`` file in the folder.

    Raises:
        AnnotationError: nothing to read, or too many files.
    """
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise AnnotationError(f"{path.name}: no such file or folder")
    found = sorted(p for p in path.rglob(f"*{suffix}") if p.is_file())
    if not found:
        raise AnnotationError(f"{path.name}: no {suffix} files in this folder")
    if len(found) > MAX_FILES:
        raise AnnotationError(f"{path.name}: more than {MAX_FILES:,} {suffix} files")
    return found


def read_text(path: Path) -> str:
    """A file's UTF-8 text, exactly (no newline translation: offsets count every ``\\r``).

    Raises:
        AnnotationError: not UTF-8.
    """
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise AnnotationError(f"{path.name}: not UTF-8 text") from None


def dialogue_of(dataset: Dataset, conv_id: str, where: str) -> Dialogue:
    """The dataset's dialogue, or a sentence saying it is not there.

    Raises:
        AnnotationError: not in this dataset.
    """
    dialogue = dataset.get(conv_id)
    if dialogue is None:
        raise AnnotationError(f"{where}: conv_id {conv_id!r} is not in this dataset")
    return dialogue


def documents(
    lines: list[dict[str, Any]], dataset: Dataset
) -> Iterator[tuple[str, Document, dict[str, Any]]]:
    """(file stem, document, annotation entry) for each annotation of the JSONL export's
    lines: one document per dialogue and annotator, as INCEpTION and brat keep them."""
    for line in lines:
        dialogue = dataset.get(line["conv_id"])
        if dialogue is None:
            continue
        document = layout(dialogue)
        for entry in line["annotations"]:
            yield (
                doc_name(line["conv_id"], entry["annotator"], entry["adjudicated"]),
                document,
                entry,
            )


def entry(
    annotator: str,
    adjudicated: bool,
    category: str | None,
    note: str,
    spans: list[dict[str, Any]],
) -> dict[str, Any]:
    """One annotation in the form ``exchange.import_lines`` reads."""
    return {
        "annotator": annotator,
        "adjudicated": adjudicated,
        "category": category,
        "note": note,
        "spans": spans,
    }


def span(
    document: Document, ko: tuple[int, int], type_: str, en: tuple[int, int] | None, where: str
) -> dict[str, Any]:
    """A span in the import's form from document offsets (code points) of its Korean
    side and of its English counterpart (None: no counterpart).

    Raises:
        AnnotationError: a side across turns, or in the wrong language.
    """
    ko_segment, ko_side = document.locate(*ko, where)
    if ko_segment.lang != "ko":
        raise AnnotationError(
            f"{where}: the {type_!r} span {ko_side['text']!r} is on an English turn; signals are "
            "marked on the Korean text and linked to the English they replace"
        )
    en_side = None
    if en is not None:
        en_segment, en_side = document.locate(*en, where)
        if en_segment.lang != "en":
            raise AnnotationError(
                f"{where}: the counterpart {en_side['text']!r} of {ko_side['text']!r} is not on "
                "an English turn"
            )
    return {"type": type_, "ko": ko_side, "en": en_side, "no_counterpart": en is None}
