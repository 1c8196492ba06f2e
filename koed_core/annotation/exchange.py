"""Annotations in and out as JSONL, one dialogue a line, so other tools can take part.

A line carries the dialogue id, the dataset's sha256, the project, the taxonomy version,
the final answer (if any) and every annotation: category, note and spans with their
code-point offsets, texts in both languages and comments. Annotators appear under a keyed
pseudonym, never their login. An import reads the same form (or a flat line with one
annotation: ``conv_id``, ``annotator``, ``category``, ``spans``) and is checked whole
before anything is written: one bad line and nothing is stored.
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import re
from collections.abc import Iterable, Iterator
from hashlib import sha256
from pathlib import Path
from typing import Any

import pandas as pd

from koed_core.annotation.projects import (
    ADJUDICATED,
    ANNOTATOR,
    Annotation,
    AnnotationRules,
)
from koed_core.annotation.spans import span_from_dict, span_to_dict
from koed_core.annotation.taxonomy import AnnotationError, fixed_category
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import _
from koed_core.private_files import write_private
from koed_core.text.plain_text import has_control

MAX_LINES = 20_000
IMPORTED = "import:"
"""Imported annotators are stored under this prefix, apart from the app's logins."""


def annotator_pseudonym(key: bytes, project_id: int, annotator: str) -> str:
    """A stable per-project id for an annotator that only the key holder can link back."""
    digest = hmac.new(key, f"annotation\x00{project_id}\x00{annotator}".encode(), sha256)
    return "a-" + digest.hexdigest()[:12]


def _check_dataset(project: dict[str, Any], dataset: Dataset) -> None:
    if project["dataset_sha256"] != dataset.sha256:
        raise AnnotationError(
            _(
                "project {id} was made on dataset {made}, the data loaded now is {loaded}: "
                "load that file (KOED_DATA)",
                id=project["id"],
                made=project["dataset_sha256"][:12],
                loaded=dataset.sha256[:12],
            )
        )


def _entry(a: Annotation, key: bytes) -> dict[str, Any]:
    return {
        "annotator": annotator_pseudonym(key, a.project_id, a.annotator),
        "adjudicated": a.kind == ADJUDICATED,
        "status": a.status,
        "category": a.category,
        "note": a.note,
        "taxonomy_version": a.taxonomy_version,
        "spans": [span_to_dict(s) for s in a.spans],
    }


def export_lines(
    annotations: AnnotationRules, project_id: int, dataset: Dataset, key: bytes
) -> list[dict[str, Any]]:
    """One JSON object per dialogue of the project that has any annotation."""
    project = annotations.project(project_id)
    _check_dataset(project, dataset)
    final = annotations.final(project_id, dataset).set_index("conv_id")
    by_item: dict[str, list[Annotation]] = {}
    for a in annotations.annotations(project_id):
        by_item.setdefault(a.conv_id, []).append(a)
    lines = []
    for conv_id in project["conv_ids"]:
        found = by_item.get(conv_id)
        if not found:
            continue
        row = final.loc[conv_id]
        lines.append(
            {
                "conv_id": conv_id,
                "dataset_sha256": dataset.sha256,
                "project": {"id": project["id"], "name": project["name"]},
                "taxonomy_version": project["taxonomy_version"],
                "final": {
                    # undecided: null (a missing value in a frame reads as NaN, not JSON)
                    "category": None if pd.isna(row["category"]) else str(row["category"]),
                    "types": list(row["types"]),
                    "basis": row["basis"],
                },
                "annotations": [_entry(a, key) for a in found],
            }
        )
    return lines


def write_jsonl(lines: Iterable[dict[str, Any]], path: Path) -> Path:
    """Write the lines as UTF-8 JSONL (Korean kept as is, not escaped), owner-only and
    whole or not at all (``write_private``). NaN is refused: it is not JSON, and other
    readers (JavaScript's JSON.parse) reject the file."""
    return write_private(
        path, (json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n" for line in lines)
    )


def file_safe(version: str) -> str:
    """A taxonomy version as part of a file name: only ``[A-Za-z0-9._-]`` (new versions
    are checked to be so; one stored by an older release may hold anything)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", version).lstrip(".") or "version"


def unencodable(value: Any, where: str = "") -> str | None:
    """The field (``spans[0].ko.text``) of the first string in ``value`` that cannot be
    written as UTF-8 (JSON's ``\\ud800`` escapes decode to lone surrogates), else None
    (a bad key: the field holding it). Walked with a stack of its own, not by recursion,
    so a document nested as deeply as ``json`` reads is still walked to the end."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            if not _utf8(item):
                return at
        elif isinstance(item, dict):
            if any(isinstance(key, str) and not _utf8(key) for key in item):
                return at
            children = [(inner, f"{at}.{key}".lstrip(".")) for key, inner in item.items()]
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(inner, f"{at}[{i}]") for i, inner in enumerate(item)]))
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-empty line.

    Raises:
        AnnotationError: not UTF-8, a line that is not a JSON object, too many lines.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnnotationError(f"{path.name}: not UTF-8 text") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(rows) >= MAX_LINES:
            raise AnnotationError(f"{path.name}: more than {MAX_LINES:,} lines")
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise AnnotationError(f"{path.name} line {number}: not JSON ({err.msg})") from None
        except RecursionError:
            raise AnnotationError(
                f"{path.name} line {number}: nested too deeply to be an annotation"
            ) from None
        if not isinstance(value, dict):
            raise AnnotationError(f"{path.name} line {number}: not a JSON object")
        bad = unencodable(value, "")
        if bad is not None:
            raise AnnotationError(
                f"{path.name} line {number}: {bad or 'a key'} holds an unpaired surrogate "
                "(a \\ud800-\\udfff escape alone), which is not Unicode text"
            )
        rows.append((number, value))
    if not rows:
        raise AnnotationError(f"{path.name}: no annotations in it")
    return rows


def _no_conv_id(line: dict[str, Any]) -> str:
    keys = sorted(str(k) for k in line if not str(k).startswith("_"))
    found = ", ".join(keys[:8]) + (" ..." if len(keys) > 8 else "") if keys else "none"
    return (
        "no conv_id, so this is not an annotation file: each line is one dialogue's "
        'annotations ({"conv_id", "annotations": [...]}, as koed annotations export '
        'writes) or one annotation ({"conv_id", "annotator", "category", "note", '
        f'"spans"}}); this line has the keys: {found}'
    )


def import_lines(
    annotations: AnnotationRules,
    project_id: int,
    dataset: Dataset,
    rows: list[tuple[int, dict[str, Any]]],
    where: str = "import",
) -> dict[str, int]:
    """Store every annotation of the lines in the project, all or nothing.

    Annotators are stored as ``import:<name>``; an adjudicated entry becomes the
    project's final answer for that dialogue. Importing the same file twice replaces,
    never duplicates. Returns counts of dialogues, annotations and spans.

    Raises:
        AnnotationError: the first problem, with its line number (nothing stored then).
    """
    project = annotations.project(project_id)
    _check_dataset(project, dataset)
    counts = {"dialogues": 0, "annotations": 0, "spans": 0}
    seen: dict[tuple[str, str, str], str] = {}
    dialogues: set[str] = set()
    with annotations.store.write():
        for number, line in rows:
            # A document of another format names its own file instead of a line.
            here = str(line.get("_where") or f"{where} line {number}")
            conv_id = line.get("conv_id")
            if not isinstance(conv_id, str):  # a file of another shape: say what a line is
                raise AnnotationError(f"{here}: {_no_conv_id(line)}")
            dialogue = dataset.get(conv_id)
            if dialogue is None:
                raise AnnotationError(f"{here}: conv_id {conv_id!r} is not in this dataset")
            if conv_id not in project["conv_ids"]:
                raise AnnotationError(f"{here}: {conv_id} is not in project {project['name']!r}")
            entries = line.get("annotations", [line])
            if not isinstance(entries, list) or not entries:
                raise AnnotationError(f"{here}: 'annotations' must be a non-empty list")
            for i, entry in enumerate(entries, 1):
                at = f"{here}, annotation {i}"
                if not isinstance(entry, dict):
                    raise AnnotationError(f"{at}: not an object")
                name = entry.get("annotator")
                if not isinstance(name, str) or not name.strip() or len(name) > 64:
                    raise AnnotationError(f"{at}: 'annotator' must be a name (1-64 characters)")
                if has_control(name):  # shown on pages, written into exports and file names
                    raise AnnotationError(
                        f"{at}: 'annotator' holds a control character (a line break, tab or "
                        f"escape): {ascii(name)}; give a plain name"
                    )
                category = entry.get("category")
                if category is None and fixed_category(dialogue) is None:
                    raise AnnotationError(f"{at}: 'category' is missing")
                if category is not None and not isinstance(category, str):
                    raise AnnotationError(f"{at}: 'category' must be a category code (text)")
                adjudicated = entry.get("adjudicated", False)
                if not isinstance(adjudicated, bool):
                    raise AnnotationError(f"{at}: 'adjudicated' must be true or false")
                note = entry.get("note") or ""
                if not isinstance(note, str):
                    raise AnnotationError(f"{at}: 'note' must be text")
                raw_spans = entry.get("spans") or []
                if not isinstance(raw_spans, list):
                    raise AnnotationError(f"{at}: 'spans' must be a list")
                spans = [span_from_dict(s, f"{at}, span {j}") for j, s in enumerate(raw_spans, 1)]
                kind = ADJUDICATED if adjudicated else ANNOTATOR
                key = (dialogue.conv_id, name.strip(), kind)
                if key in seen:  # a second answer would silently replace the first
                    raise AnnotationError(
                        f"{at}: {name.strip()} annotated {dialogue.conv_id} already "
                        f"({seen[key]}); one annotation per annotator and dialogue"
                    )
                seen[key] = at
                try:
                    annotations.store_imported(
                        project, dialogue, IMPORTED + name.strip(), kind, category, note, spans
                    )
                except AnnotationError as err:
                    raise AnnotationError(f"{at}: {err}") from None
                counts["annotations"] += 1
                counts["spans"] += len(spans)
            dialogues.add(dialogue.conv_id)
    counts["dialogues"] = len(dialogues)  # distinct: a dialogue may take several lines
    return counts


def export_project(
    annotations: AnnotationRules,
    project_id: int,
    dataset: Dataset,
    key: bytes,
    out: Path,
    lines: bool = True,
) -> list[Path]:
    """The files a linguist cites, for one project: the annotations (JSONL; left out with
    ``lines`` off, when another format carries them), the agreement table (CSV) and the
    taxonomy they were made with (JSON)."""
    from koed_core.annotation.agreement import agreement_table
    from koed_core.text.csv_safe import safe_frame

    project = annotations.project(project_id)
    files = []
    if lines:
        written = export_lines(annotations, project_id, dataset, key)
        files.append(write_jsonl(written, out / f"annotations-{project_id}.jsonl"))
    table = agreement_table(annotations.annotations(project_id), project)
    agreement_file = out / f"annotation-agreement-{project_id}.csv"
    write_private(agreement_file, str(safe_frame(table).to_csv(index=False)))
    files.append(agreement_file)
    taxonomy = annotations.taxonomy(project)
    taxonomy_file = out / f"taxonomy-{file_safe(taxonomy.version)}.json"
    write_private(
        taxonomy_file,
        json.dumps(
            {"name": taxonomy.name, "version": taxonomy.version, "types": taxonomy.as_rows()},
            ensure_ascii=False,
            indent=1,
        ),
    )
    files.append(taxonomy_file)
    return files


def _csv_records(reader: csv.DictReader[str], name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(spreadsheet row, row) of each record, the header being row 1 (a record whose
    quoted cells hold line breaks is one row, as a spreadsheet shows it).

    Raises:
        AnnotationError: a cell longer than the csv module reads, or a malformed record,
            naming the file and row.
    """
    number = 1
    while True:
        number += 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise _csv_error(name, number, err) from None
        yield number, row


def _csv_error(name: str, number: int, err: csv.Error) -> AnnotationError:
    """What the csv module's refusal of a record means, naming the file and row."""
    if "field larger than field limit" in str(err):
        return AnnotationError(
            f"{name} row {number}: a cell longer than {csv.field_size_limit():,} "
            "characters; no field of an annotation is that long"
        )
    return AnnotationError(f"{name} row {number}: not CSV ({err})")


CSV_COLUMNS = (
    "conv_id", "annotator", "category", "note", "turn", "ko", "type", "en", "occurrence",
    "comment",
)  # fmt: skip


def read_csv_rows(path: Path, dataset: Dataset) -> list[tuple[int, dict[str, Any]]]:
    """A spreadsheet's rows as import lines: one row per span (or a row with no span for
    a dialogue's category alone), spans given by their text, offsets found here.

    Columns: conv_id, annotator, category, note, turn, ko, type, en (optional),
    occurrence (optional, 1 = the first appearance of ``ko`` in the turn), comment
    (optional: the span's comment).

    Raises:
        AnnotationError: a missing column, or a span text the turn does not contain.
    """
    from koed_core.annotation.spans import find, turn_text

    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise AnnotationError(f"{path.name}: not UTF-8 text") from None
    # The csv module over the whole text (newline=''): a quoted cell may hold line breaks
    # (a note of several lines), which splitting the text into lines first would cut.
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        columns = reader.fieldnames or []
    except csv.Error as err:
        raise _csv_error(path.name, 1, err) from None
    rows = _csv_records(reader, path.name)
    missing = [c for c in ("conv_id", "annotator", "category") if c not in columns]
    if missing:
        raise AnnotationError(
            f"{path.name}: no column {', '.join(missing)} (columns: {', '.join(CSV_COLUMNS)})"
        )
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    first_row: dict[tuple[str, str], int] = {}
    for number, row in rows:
        if len(grouped) >= MAX_LINES:
            raise AnnotationError(f"{path.name}: more than {MAX_LINES:,} annotations")
        key = (row.get("conv_id") or "", row.get("annotator") or "")
        entry = grouped.setdefault(
            key,
            {
                "annotator": key[1],
                "category": row.get("category") or None,
                # a spreadsheet ends a cell's lines with \r\n or \n: the app's notes use \n
                "note": re.sub(r"\r\n?", "\n", row.get("note") or ""),
                "spans": [],
            },
        )
        first_row.setdefault(key, number)
        category = row.get("category") or None
        if category is not None and entry["category"] is None:
            entry["category"] = category
        elif category is not None and category != entry["category"]:
            raise AnnotationError(
                f"{path.name} row {number}: {key[1]} gave {key[0]} the category "
                f"{entry['category']!r} at row {first_row[key]} and {category!r} here; one "
                "category per annotator and dialogue"
            )
        ko = (row.get("ko") or "").strip()
        if not ko:
            continue
        dialogue = dataset.get(key[0])
        where = f"{path.name} row {number}"
        if dialogue is None:
            raise AnnotationError(f"{where}: conv_id {key[0]!r} is not in this dataset")
        try:
            position = int(row.get("turn") or "")
            occurrence = int(row.get("occurrence") or 1)
            start, end = find(turn_text(dialogue, "ko", position), ko, occurrence)
            span: dict[str, Any] = {
                "type": (row.get("type") or "").strip(),
                "ko": {"position": position, "start": start, "end": end, "text": ko},
                "no_counterpart": not (row.get("en") or "").strip(),
                "comment": re.sub(r"\r\n?", "\n", row.get("comment") or ""),
            }
            en = (row.get("en") or "").strip()
            if en:
                es, ee = find(turn_text(dialogue, "en", position), en)
                span["en"] = {"position": position, "start": es, "end": ee, "text": en}
        except ValueError:
            raise AnnotationError(
                f"{where}: 'turn' must be a turn number (0: the situation)"
            ) from None
        except AnnotationError as err:
            raise AnnotationError(f"{where}: {err}") from None
        entry["spans"].append(span)
    if not grouped:
        raise AnnotationError(f"{path.name}: no rows")
    by_dialogue: dict[str, list[dict[str, Any]]] = {}
    for (conv_id, _who), entry in grouped.items():
        by_dialogue.setdefault(conv_id, []).append(entry)
    return [
        (
            min(first_row[(conv_id, e["annotator"])] for e in entries),
            {"conv_id": conv_id, "annotations": entries},
        )
        for conv_id, entries in by_dialogue.items()
    ]
