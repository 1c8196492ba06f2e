"""WebAnno TSV 3.3, as INCEpTION reads and writes it: one ``.tsv`` per dialogue and annotator.

Each document declares three layers: ``webanno.custom.CulturalSignal`` (a span layer,
features ``type``: the signal type code, and ``comment``: the span's comment, on the
Korean side) on the Korean span and on its English counterpart,
``webanno.custom.Counterpart`` (a relation from the Korean span to the English one; its
feature ``value`` is unused, ``*``) and ``webanno.custom.Dialogue`` (a span on the
document's first token, features ``category`` and ``note``: TSV has no
place for a document's own values). A sentence is one segment of the layout (a turn in
one language); tokens are runs of non-space characters; a span edge inside a token is a
sub-token row (``1-3.1``), as INCEpTION writes character-level spans. Offsets are UTF-16
units, as INCEpTION counts them (Java strings); they are converted from and to code
points here, so an emoji before a span moves the TSV offsets and not ours.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from koed_core.annotation.formats import layout
from koed_core.annotation.formats.layout import Document
from koed_core.annotation.taxonomy import AnnotationError
from koed_core.dialogues.dataset import Dataset
from koed_core.private_files import write_private

SUFFIX = ".tsv"
SIGNAL = "webanno.custom.CulturalSignal"
DIALOGUE = "webanno.custom.Dialogue"
COUNTERPART = "webanno.custom.Counterpart"
HEADER = (
    "#FORMAT=WebAnno TSV 3.3\n"
    f"#T_SP={SIGNAL}|type|comment\n"
    f"#T_SP={DIALOGUE}|category|note\n"
    f"#T_RL={COUNTERPART}|value|BT_{SIGNAL}\n\n\n"
)
VALUE_ESCAPES = {"\\": "\\\\", "[": "\\[", "]": "\\]", "|": "\\|", "_": "\\_", "->": "\\->"}
VALUE_ESCAPES |= {";": "\\;", "\t": "\\t", "\n": "\\n", "*": "\\*"}
TEXT_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\r": "\\r", "\f": "\\f", "\b": "\\b"}
_VALUE_RE = re.compile("|".join(re.escape(k) for k in sorted(VALUE_ESCAPES, key=len, reverse=True)))
_TEXT_RE = re.compile("|".join(re.escape(k) for k in TEXT_ESCAPES))
_UNVALUE = {v: k for k, v in VALUE_ESCAPES.items()}
_UNTEXT = {v: k for k, v in TEXT_ESCAPES.items()}


def escape_value(value: str) -> str:
    """A feature value with the format's reserved characters backslash-escaped."""
    return _VALUE_RE.sub(lambda m: VALUE_ESCAPES[m.group()], value)


def unescape(value: str, table: dict[str, str]) -> str:
    """Undo ``escape_value`` (or the ``#Text=`` escaping), left to right."""
    out, i = [], 0
    while i < len(value):
        for size in (3, 2):
            if value[i : i + size] in table:
                out.append(table[value[i : i + size]])
                i += size
                break
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


@dataclass
class _Ann:
    """One annotation being written: its layer, feature values and the units it covers."""

    layer: str
    begin: int
    end: int
    values: tuple[str, ...]
    units: list[tuple[int, int]] = field(default_factory=list)
    ident: int = 0


def _tokens(document: Document) -> list[list[tuple[int, int]]]:
    """Per segment, the (begin, end) of each run of non-space characters (code points)."""
    return [
        [(s.start + m.start(), s.start + m.end()) for m in re.finditer(r"\S+", s.text)]
        for s in document.segments
    ]


def _feature(value: str | None) -> str:
    return "*" if value is None or value == "" else escape_value(value)


def _escape_text(text: str) -> str:
    return _TEXT_RE.sub(lambda m: TEXT_ESCAPES[m.group()], text)


def _annotations(
    document: Document, entry: dict[str, Any]
) -> tuple[list[_Ann], list[tuple[_Ann, _Ann]]]:
    """The entry's annotations on the document (the dialogue's values on its first token)
    and the Korean-to-English counterpart pairs."""
    anns: list[_Ann] = []
    relations: list[tuple[_Ann, _Ann]] = []
    first = next((sentence[0] for sentence in _tokens(document) if sentence), None)
    if first is not None:
        values = (_feature(entry["category"]), _feature(entry["note"]))
        anns.append(_Ann(DIALOGUE, *first, values))
    for s in entry["spans"]:
        values = (_feature(s["type"]), _feature(s.get("comment")))
        ko = _Ann(SIGNAL, *document.place(s["ko"], "ko"), values)
        anns.append(ko)
        if s.get("en"):
            en = _Ann(SIGNAL, *document.place(s["en"], "en"), (_feature(s["type"]), "*"))
            anns.append(en)
            relations.append((ko, en))
    return anns, relations


def write_document(document: Document, entry: dict[str, Any]) -> str:
    """One document's TSV: the header, then a sentence per segment with its token rows
    and, where a span starts or ends inside a token, sub-token rows."""
    tokens = _tokens(document)
    everything = [t for sentence in tokens for t in sentence]
    anns, relations = _annotations(document, entry)
    on_unit: dict[tuple[int, int], list[_Ann]] = defaultdict(list)
    for ann in anns:
        for begin, end in everything:
            piece = (max(begin, ann.begin), min(end, ann.end))
            if piece[0] < piece[1]:
                ann.units.append(piece)
                on_unit[piece].append(ann)
    next_id = 0
    for ann in anns:  # an id wherever a reader could not tell annotations apart otherwise
        stacked = any(sum(o.layer == ann.layer for o in on_unit[u]) > 1 for u in ann.units)
        if len(ann.units) > 1 or stacked:
            next_id += 1
            ann.ident = next_id
    relations = [(ko, en) for ko, en in relations if ko.units and en.units]
    sentences: list[tuple[str, list[tuple[str, tuple[int, int]]]]] = []
    names: dict[tuple[int, int], str] = {}
    for number, (segment, sentence) in enumerate(zip(document.segments, tokens, strict=True), 1):
        rows = []
        for index, token in enumerate(sentence, 1):
            inside = {u for u in on_unit if token[0] <= u[0] and u[1] <= token[1] and u != token}
            rows.append((f"{number}-{index}", token))
            rows += [(f"{number}-{index}.{k}", u) for k, u in enumerate(sorted(inside), 1)]
        names.update({unit: name for name, unit in rows})
        sentences.append((segment.text, rows))
    text = document.text
    out = [HEADER]
    for number, (sentence_text, rows) in enumerate(sentences):
        out.append("\n" if number else "")
        out += [f"#Text={_escape_text(line)}\n" for line in sentence_text.split("\n")]
        for name, unit in rows:
            here = on_unit.get(unit, [])
            cells = [
                name,
                f"{layout.to_utf16(text, unit[0])}-{layout.to_utf16(text, unit[1])}",
                _escape_text(text[unit[0] : unit[1]]),
            ]
            for layer, width in ((SIGNAL, 2), (DIALOGUE, 2)):
                mine = [a for a in here if a.layer == layer]
                cells += [
                    "|".join(a.values[k] + (f"[{a.ident}]" if a.ident else "") for a in mine) or "_"
                    for k in range(width)
                ]
            linked = [(ko, en) for ko, en in relations if en.units[0] == unit]
            cells.append("|".join("*" for _pair in linked) or "_")
            cells.append(
                "|".join(
                    names[ko.units[0]]
                    + (f"[{ko.ident}_{en.ident}]" if ko.ident or en.ident else "")
                    for ko, en in linked
                )
                or "_"
            )
            out.append("\t".join(cells) + "\t\n")
    return "".join(out)


def export(lines: list[dict[str, Any]], dataset: Dataset, out: Path) -> list[Path]:
    """Write one ``CONV_ID@ANNOTATOR.tsv`` per annotation into ``out``."""
    written = []
    for stem, document, entry in layout.documents(lines, dataset):
        written.append(write_private(out / f"{stem}{SUFFIX}", write_document(document, entry)))
    return written


def _split(cell: str) -> list[str]:
    """A cell's stacked values, split at every ``|`` not escaped."""
    parts, current, i = [], [], 0
    while i < len(cell):
        if cell[i] == "\\" and i + 1 < len(cell):
            current.append(cell[i : i + 2])
            i += 2
            continue
        if cell[i] == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(cell[i])
        i += 1
    parts.append("".join(current))
    return parts


_ID = re.compile(r"^(.*?)(?<!\\)\[(\d+)(?:_(\d+))?\]$", re.S)


def _header(lines: list[str], where: str) -> dict[str, tuple[int, list[str]]]:
    """Each declared layer's first column and its features, from the header lines."""
    if not lines or not lines[0].startswith("#FORMAT=WebAnno TSV 3"):
        raise AnnotationError(f"{where}: not WebAnno TSV 3 (no '#FORMAT=WebAnno TSV 3.x' first)")
    columns: dict[str, tuple[int, list[str]]] = {}
    column = 3
    for line in lines[1:]:
        if line[:6] in ("#T_SP=", "#T_CH=", "#T_RL="):
            name, *features = line[6:].split("|")
            columns[name] = (column, features)
            column += len(features)
    if SIGNAL not in columns or columns[SIGNAL][1][:1] != ["type"]:
        raise AnnotationError(
            f"{where}: no span layer {SIGNAL} with the feature 'type' (KoED Studio reads the "
            "layers its export declares; see docs/annotation.md)"
        )
    return columns


@dataclass
class _Read:
    """An annotation as read: its layer, values, extent (code points) and id (if any)."""

    layer: str
    values: list[str]
    begin: int
    end: int
    ident: str


def _sentences(lines: list[str]) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The sentences' texts (consecutive ``#Text=`` lines are one sentence with line
    breaks) and the token rows with their line numbers."""
    sentences: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    continued = False
    for number, line in enumerate(lines, 1):
        if line.startswith("#Text="):
            text = unescape(line[6:].rstrip("\r"), _UNTEXT)
            if continued:
                sentences[-1] += "\n" + text
            else:
                sentences.append(text)
            continued = True
            continue
        continued = False
        if line.strip() and not line.startswith("#"):
            rows.append((number, line.rstrip("\r").split("\t")))
    return sentences, rows


def _values(stacks: list[list[str]], index: int) -> tuple[list[str], str]:
    """The feature values of the ``index``-th stacked annotation of a row, and its id."""
    values, ident = [], ""
    for stack in stacks:
        raw = stack[index] if index < len(stack) else "*"
        match = _ID.match(raw)
        if match:
            raw, ident = match.group(1), match.group(2)
        values.append("" if raw == "*" else unescape(raw, _UNVALUE))
    return values, ident


def read_file(path: Path, dataset: Dataset) -> tuple[str, dict[str, Any]]:
    """(conv_id, annotation entry) from one TSV document.

    Raises:
        AnnotationError: a file not of this form, a text not the dataset's, offsets that do
            not fit, a span without a type, an English span linked to no Korean one.
    """
    conv_id, annotator, adjudicated = layout.parse_doc_name(path.stem, path.name)
    document = layout.layout(layout.dialogue_of(dataset, conv_id, path.name))
    lines = layout.read_text(path).split("\n")
    body = next((i for i, line in enumerate(lines) if line.startswith("#Text=")), len(lines))
    columns = _header([line for line in lines[:body] if line.strip()], path.name)
    sentences, rows = _sentences(lines)
    layout.check_text(document, "\n".join(sentences), path.name)
    found: dict[tuple[str, str], _Read] = {}
    on_unit: dict[str, list[_Read]] = defaultdict(list)
    links: list[tuple[str, str, str]] = []  # (governor reference, dependent unit, where)
    for number, cells in rows:
        where = f"{path.name} line {number}"
        try:
            begin16, end16 = (int(x) for x in cells[1].split("-"))
        except (IndexError, ValueError):
            raise AnnotationError(f"{where}: not a token row (ID, begin-end, token, ...)") from None
        begin = layout.from_utf16(document.text, begin16, where)
        end = layout.from_utf16(document.text, end16, where)
        for layer in (SIGNAL, DIALOGUE):
            if layer not in columns:
                continue
            column, features = columns[layer]
            stacks = [
                _split(cells[column + k]) if column + k < len(cells) else ["_"]
                for k in range(len(features))
            ]
            for index, first in enumerate(stacks[0]):
                if first == "_":
                    continue
                values, ident = _values(stacks, index)
                key = (layer, ident or f"{cells[0]}#{index}")
                ann = found.setdefault(key, _Read(layer, values, begin, end, ident))
                ann.begin, ann.end = min(ann.begin, begin), max(ann.end, end)
                on_unit[cells[0]].append(ann)
        if COUNTERPART in columns:
            column, features = columns[COUNTERPART]
            governors = column + len(features) - 1
            if governors < len(cells) and cells[governors] not in ("_", ""):
                links += [(ref, cells[0], where) for ref in _split(cells[governors])]
    pairs = [_resolve(ref, unit, where, found, on_unit) for ref, unit, where in links]
    features = columns[SIGNAL][1]  # a file written before comments declares type alone
    at = features.index("comment") if "comment" in features else None
    entry = _entry(document, annotator, adjudicated, found, pairs, path.name, at)
    return conv_id, entry


_REF = re.compile(r"^(\d+-\d+(?:\.\d+)?)(?:\[(\d+)_(\d+)\])?$")


def _one(
    unit: str, ident: str, found: dict[tuple[str, str], _Read], on_unit: dict[str, list[_Read]]
) -> _Read | None:
    """The signal annotation a relation end names: by id, else the only one on the unit."""
    if ident and ident != "0":
        return found.get((SIGNAL, ident))
    plain = [a for a in on_unit.get(unit, []) if a.layer == SIGNAL and not a.ident]
    return plain[0] if len(plain) == 1 else None


def _resolve(
    ref: str,
    unit: str,
    where: str,
    found: dict[tuple[str, str], _Read],
    on_unit: dict[str, list[_Read]],
) -> tuple[_Read, _Read]:
    """(governor, dependent) of one relation cell.

    Raises:
        AnnotationError: a reference that names no single span.
    """
    match = _REF.match(ref)
    governor = dependent = None
    if match:
        governor = _one(match.group(1), match.group(2) or "", found, on_unit)
        dependent = _one(unit, match.group(3) or "", found, on_unit)
    if governor is None or dependent is None:
        raise AnnotationError(
            f"{where}: the {COUNTERPART} relation {ref!r} does not name one span at each end"
        )
    return governor, dependent


def _entry(
    document: Document,
    annotator: str,
    adjudicated: bool,
    found: dict[tuple[str, str], _Read],
    pairs: list[tuple[_Read, _Read]],
    where: str,
    comment_at: int | None = None,
) -> dict[str, Any]:
    """The annotation entry: Korean spans with the English each relation links them to
    and their comments (the ``comment_at``-th feature, where the layer has one)."""

    def lang(a: _Read) -> str:
        return document.locate(a.begin, a.end, where)[0].lang

    counterpart: dict[int, _Read] = {}
    linked: set[int] = set()
    for one, other in pairs:
        ko, en = (one, other) if lang(one) == "ko" else (other, one)
        if lang(ko) != "ko" or lang(en) != "en":
            raise AnnotationError(
                f"{where}: a {COUNTERPART} relation must link a Korean span to an English one"
            )
        if id(ko) in counterpart:
            raise AnnotationError(
                f"{where}: the Korean span {document.text[ko.begin : ko.end]!r} has two "
                "English counterparts; link it to one"
            )
        counterpart[id(ko)] = en
        linked.add(id(en))
    spans, category, note = [], None, ""
    for ann in found.values():
        if ann.layer == DIALOGUE:
            category, note = ann.values[0] or None, ann.values[1] if len(ann.values) > 1 else ""
            continue
        text = document.text[ann.begin : ann.end]
        if not ann.values[0]:
            raise AnnotationError(f"{where}: the span {text!r} has no type")
        if lang(ann) == "en":
            if id(ann) not in linked:
                raise AnnotationError(
                    f"{where}: the English span {text!r} is linked to no Korean span; link it "
                    f"with a {COUNTERPART} relation from the Korean span it is replaced by"
                )
            continue
        linked_en = counterpart.get(id(ann))
        span = layout.span(
            document,
            (ann.begin, ann.end),
            ann.values[0],
            (linked_en.begin, linked_en.end) if linked_en else None,
            where,
        )
        comment = ann.values[comment_at] if comment_at is not None else ""
        spans.append({**span, "comment": comment})
    return layout.entry(annotator, adjudicated, category, note, spans)


def read(path: Path, dataset: Dataset) -> list[tuple[int, dict[str, Any]]]:
    """The import rows of a TSV file or of every ``.tsv`` in a folder, one per document."""
    rows = []
    for number, file in enumerate(layout.files(path, SUFFIX), 1):
        conv_id, entry = read_file(file, dataset)
        rows.append((number, {"conv_id": conv_id, "annotations": [entry], "_where": file.name}))
    return rows
