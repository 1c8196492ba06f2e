"""brat standoff: a ``.txt`` and an ``.ann`` per dialogue and annotator, and ``annotation.conf``.

Each signal is a text-bound annotation (``T2\\tfood 3 8\\t김치찌개🍲``) on the Korean span,
and its English counterpart another of the same type, joined by a ``Counterpart``
relation (``R1\\tCounterpart Arg1:T2 Arg2:T3``); a span's comment is an ``AnnotatorNotes``
line on its Korean annotation (``#2\\tAnnotatorNotes T2\\t...``), as brat keeps a note on
any annotation. The dialogue's category and note sit on a ``Dialogue`` annotation over
the first word: an attribute ``Category`` and an ``AnnotatorNotes`` comment (brat has no
place for a document's own values; a note's line breaks, tabs and backslashes are
written ``\\n``, ``\\t``, ``\\\\`` as brat keeps a note on one line). Type codes are
already valid brat type names (``[a-z][a-z0-9_]*``), so they are written as they are.
Offsets are character offsets into the ``.txt``: code points, as brat (Python) counts
them, so nothing is converted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from koed_core.annotation.formats import layout
from koed_core.annotation.formats.layout import Document
from koed_core.annotation.taxonomy import CATEGORIES, AnnotationError
from koed_core.dialogues.dataset import Dataset
from koed_core.private_files import write_private

DIALOGUE = "Dialogue"
COUNTERPART = "Counterpart"
CATEGORY = "Category"
NOTES = "AnnotatorNotes"
_NOTE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_NOTE_UNESCAPES = {v: k for k, v in _NOTE_ESCAPES.items()}


def _escape_note(note: str) -> str:
    return "".join(_NOTE_ESCAPES.get(c, c) for c in note)


def _unescape_note(note: str) -> str:
    return re.sub(r"\\[\\ntr]", lambda m: _NOTE_UNESCAPES[m.group()], note)


def _bound(ident: str, kind: str, text: str, start: int, end: int) -> str:
    """A text-bound line; a span holding a line break is written as fragments around it,
    as brat writes them."""
    pieces, at = [], start
    for line in text[start:end].split("\n"):
        if line:
            pieces.append(f"{at} {at + len(line)}")
        at += len(line) + 1
    shown = text[start:end].replace("\n", " ")
    return f"{ident}\t{kind} {';'.join(pieces)}\t{shown}\n"


def write_ann(document: Document, entry: dict[str, Any]) -> str:
    """One document's ``.ann``."""
    text, lines, count = document.text, [], 0
    first = re.search(r"\S+", text)
    if first is not None:
        lines.append(_bound("T1", DIALOGUE, text, first.start(), first.end()))
        count = 1
        if entry["category"]:
            lines.append(f"A1\t{CATEGORY} T1 {entry['category']}\n")
        if entry["note"]:
            lines.append(f"#1\t{NOTES} T1\t{_escape_note(entry['note'])}\n")
    relations, notes = 0, 1
    for span in entry["spans"]:
        count += 1
        ko = f"T{count}"
        lines.append(_bound(ko, span["type"], text, *document.place(span["ko"], "ko")))
        if span.get("comment"):
            notes += 1
            lines.append(f"#{notes}\t{NOTES} {ko}\t{_escape_note(span['comment'])}\n")
        if span.get("en"):
            count += 1
            relations += 1
            lines.append(_bound(f"T{count}", span["type"], text, *document.place(span["en"], "en")))
            lines.append(f"R{relations}\t{COUNTERPART} Arg1:{ko} Arg2:T{count}\n")
    return "".join(lines)


def configuration(types: list[str]) -> str:
    """``annotation.conf``: the types, the relation and the category attribute, so brat
    shows and checks the export."""
    return (
        "[entities]\n"
        + "".join(f"{kind}\n" for kind in [DIALOGUE, *types])
        + "\n[relations]\n"
        + f"{COUNTERPART}\tArg1:<ENTITY>, Arg2:<ENTITY>\n"
        + "<OVERLAP>\tArg1:<ENTITY>, Arg2:<ENTITY>, <OVL-TYPE>:<ANY>\n"
        + "\n[events]\n\n[attributes]\n"
        + f"{CATEGORY}\tArg:{DIALOGUE}, Value:{'|'.join(CATEGORIES)}\n"
    )


def export(
    lines: list[dict[str, Any]], dataset: Dataset, out: Path, types: list[str]
) -> list[Path]:
    """Write ``annotation.conf`` and a ``CONV_ID@ANNOTATOR.txt``/``.ann`` pair per annotation."""
    written = [write_private(out / "annotation.conf", configuration(types))]
    for stem, document, entry in layout.documents(lines, dataset):
        written.append(write_private(out / f"{stem}.txt", document.text))
        written.append(write_private(out / f"{stem}.ann", write_ann(document, entry)))
    return written


def _offsets(field: str, where: str) -> tuple[int, int]:
    """(start, end) of ``"0 5"`` or of fragments ``"0 5;6 9"`` (first start, last end)."""
    try:
        numbers = [int(n) for piece in field.split(";") for n in piece.split()]
    except ValueError:
        numbers = []
    if len(numbers) < 2 or len(numbers) % 2:
        raise AnnotationError(f"{where}: offsets must be 'START END', not {field!r}")
    return numbers[0], numbers[-1]


def read_file(path: Path, dataset: Dataset) -> tuple[str, dict[str, Any]]:
    """(conv_id, annotation entry) from one ``.ann`` and the ``.txt`` beside it.

    Raises:
        AnnotationError: a missing ``.txt``, a text not the dataset's, a line not of the
            standoff form, offsets covering other text, an unlinked English span.
    """
    conv_id, annotator, adjudicated = layout.parse_doc_name(path.stem, path.name)
    document = layout.layout(layout.dialogue_of(dataset, conv_id, path.name))
    txt = path.with_suffix(".txt")
    if not txt.is_file():
        raise AnnotationError(f"{path.name}: no {txt.name} beside it (brat keeps the text there)")
    layout.check_text(document, layout.read_text(txt), txt.name)
    bounds: dict[str, tuple[str, int, int]] = {}
    links: list[tuple[str, str, str]] = []
    comments: dict[str, str] = {}
    category, note = None, ""
    for number, line in enumerate(layout.read_text(path).splitlines(), 1):
        where = f"{path.name} line {number}"
        if not line.strip():
            continue
        fields = line.split("\t")
        head = fields[1].split() if len(fields) > 1 else []
        if line[0] == "T" and len(fields) >= 2 and len(head) >= 2:
            start, end = _offsets(" ".join(head[1:]), where)
            if not 0 <= start < end <= len(document.text):
                raise AnnotationError(f"{where}: offsets {start}-{end} are outside the text")
            shown = document.text[start:end].replace("\n", " ")
            if len(fields) > 2 and fields[2] != shown:
                raise AnnotationError(
                    f"{where}: offsets {start}-{end} cover {shown!r}, not {fields[2]!r}"
                )
            bounds[fields[0]] = (head[0], start, end)
        elif line[0] == "R" and len(head) == 3 and head[0] == COUNTERPART:
            links.append((head[1].partition(":")[2], head[2].partition(":")[2], where))
        elif line[0] == "A" and len(head) == 3 and head[0] == CATEGORY:
            category = head[2]
        elif line[0] == "#" and len(fields) >= 3 and head[:1] == [NOTES]:
            if bounds.get(head[1], ("",))[0] == DIALOGUE:
                note = _unescape_note(fields[2])
            elif head[1] in bounds:  # a span's comment, on its Korean annotation
                comments[head[1]] = _unescape_note(fields[2])
        else:
            raise AnnotationError(
                f"{where}: not a line KoED Studio reads (T text-bound, R {COUNTERPART}, "
                f"A {CATEGORY}, # {NOTES})"
            )
    entry = _entry(document, annotator, adjudicated, category, note, bounds, links, comments)
    return conv_id, entry


def _entry(
    document: Document,
    annotator: str,
    adjudicated: bool,
    category: str | None,
    note: str,
    bounds: dict[str, tuple[str, int, int]],
    links: list[tuple[str, str, str]],
    comments: dict[str, str],
) -> dict[str, Any]:
    """The annotation entry: each Korean span with the English span its relation names
    and the comment its note holds."""
    where = f"{layout.doc_name(document.conv_id, annotator, adjudicated)}.ann"
    counterpart: dict[str, str] = {}
    for ko, en, at in links:
        if ko not in bounds or en not in bounds:
            raise AnnotationError(f"{at}: {COUNTERPART} names an annotation the file lacks")
        if ko in counterpart:
            raise AnnotationError(f"{at}: {ko} has two English counterparts; link it to one")
        counterpart[ko] = en
    spans = []
    for ident, (kind, start, end) in bounds.items():
        if kind == DIALOGUE:
            continue
        segment, side = document.locate(start, end, where)
        if segment.lang == "en":
            if ident not in counterpart.values():
                raise AnnotationError(
                    f"{where}: the English span {ident} {side['text']!r} is linked to no Korean "
                    f"span; add a {COUNTERPART} relation from the Korean span"
                )
            continue
        target = bounds[counterpart[ident]] if ident in counterpart else None
        span = layout.span(
            document, (start, end), kind, (target[1], target[2]) if target else None, where
        )
        spans.append({**span, "comment": comments.get(ident, "")})
    return layout.entry(annotator, adjudicated, category, note, spans)


def read(path: Path, dataset: Dataset) -> list[tuple[int, dict[str, Any]]]:
    """The import rows of an ``.ann`` file or of every ``.ann`` in a folder."""
    rows = []
    for number, file in enumerate(layout.files(path, ".ann"), 1):
        conv_id, entry = read_file(file, dataset)
        rows.append((number, {"conv_id": conv_id, "annotations": [entry], "_where": file.name}))
    return rows
