"""Label Studio's JSON export: a list of tasks, one per dialogue, an annotation per annotator.

A task's ``data.text`` is the dialogue laid out as one text (``layout``), ``data.conv_id``
names it and ``data.annotators`` maps each ``completed_by`` number to the annotator's
pseudonym (Label Studio numbers its users; ours have none). Each signal is a ``labels``
region (``from_name`` ``type``, ``to_name`` ``text``) on the Korean span and one on its
English counterpart, joined by a ``relation`` result; a span's comment is a per-region
``textarea`` result (``comment``) carrying its Korean region's id, as Label Studio
stores a ``perRegion`` text area; the category is a ``choices`` result (``category``)
and the note a ``textarea`` result (``note``); a final answer is the annotation marked
``ground_truth``. Offsets are code points: Label Studio has stored
code points, not JavaScript's UTF-16 indexes, since its fix for texts with emoji
(label-studio #1559), so nothing is converted; a region whose offsets read as UTF-16
units is refused with a sentence saying so. ``label-studio-config-N.xml`` is the
labelling interface that reads these tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from koed_core.annotation.exchange import unencodable
from koed_core.annotation.formats import layout
from koed_core.annotation.formats.layout import Document
from koed_core.annotation.taxonomy import CATEGORIES, AnnotationError
from koed_core.dialogues.dataset import Dataset
from koed_core.private_files import write_private

TEXT, TYPE, CATEGORY, NOTE, COMMENT = "text", "type", "category", "note", "comment"


def _region(ident: str, document: Document, start: int, end: int, kind: str) -> dict[str, Any]:
    return {
        "id": ident,
        "from_name": TYPE,
        "to_name": TEXT,
        "type": "labels",
        "value": {"start": start, "end": end, "text": document.text[start:end], "labels": [kind]},
    }


def _result(document: Document, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """One annotation's results: regions, relations, category and note."""
    result: list[dict[str, Any]] = []
    for n, span in enumerate(entry["spans"], 1):
        start, end = document.place(span["ko"], "ko")
        result.append(_region(f"ko{n}", document, start, end, span["type"]))
        if span.get("comment"):
            result.append(
                {
                    "id": f"ko{n}",
                    "from_name": COMMENT,
                    "to_name": TEXT,
                    "type": "textarea",
                    "value": {"start": start, "end": end, "text": [span["comment"]]},
                }
            )
        if span.get("en"):
            start, end = document.place(span["en"], "en")
            result.append(_region(f"en{n}", document, start, end, span["type"]))
            result.append(
                {"from_id": f"ko{n}", "to_id": f"en{n}", "type": "relation", "direction": "right"}
            )
    if entry["category"]:
        result.append(
            {
                "id": CATEGORY,
                "from_name": CATEGORY,
                "to_name": TEXT,
                "type": "choices",
                "value": {"choices": [entry["category"]]},
            }
        )
    if entry["note"]:
        result.append(
            {
                "id": NOTE,
                "from_name": NOTE,
                "to_name": TEXT,
                "type": "textarea",
                "value": {"text": [entry["note"]]},
            }
        )
    return result


def tasks(lines: list[dict[str, Any]], dataset: Dataset) -> list[dict[str, Any]]:
    """The export's lines as Label Studio tasks."""
    out = []
    for number, line in enumerate(lines, 1):
        dialogue = dataset.get(line["conv_id"])
        if dialogue is None:
            continue
        document = layout.layout(dialogue)
        people = {str(k): e["annotator"] for k, e in enumerate(line["annotations"], 1)}
        out.append(
            {
                "id": number,
                "data": {TEXT: document.text, "conv_id": line["conv_id"], "annotators": people},
                "annotations": [
                    {
                        "id": number * 100 + k,
                        "completed_by": k,
                        "was_cancelled": False,
                        "ground_truth": bool(e["adjudicated"]),
                        "result": _result(document, e),
                    }
                    for k, e in enumerate(line["annotations"], 1)
                ],
            }
        )
    return out


def configuration(types: list[str]) -> str:
    """The labelling interface (XML) these tasks are made for."""
    labels = "".join(f"    <Label value={quoteattr(t)}/>\n" for t in types)
    choices = "".join(f"    <Choice value={quoteattr(c)}/>\n" for c in CATEGORIES)
    return (
        "<View>\n"
        f'  <Labels name="{TYPE}" toName="{TEXT}">\n{labels}  </Labels>\n'
        f'  <Text name="{TEXT}" value="${TEXT}"/>\n'
        f'  <Choices name="{CATEGORY}" toName="{TEXT}" choice="single">\n{choices}  </Choices>\n'
        f'  <TextArea name="{NOTE}" toName="{TEXT}"/>\n'
        f'  <TextArea name="{COMMENT}" toName="{TEXT}" perRegion="true"/>\n'
        "</View>\n"
    )


def export(
    lines: list[dict[str, Any]], dataset: Dataset, out: Path, project_id: int, types: list[str]
) -> list[Path]:
    """Write ``label-studio-N.json`` (the tasks) and ``label-studio-config-N.xml``."""
    body = json.dumps(tasks(lines, dataset), ensure_ascii=False, indent=1)
    return [
        write_private(out / f"label-studio-{project_id}.json", body),
        write_private(out / f"label-studio-config-{project_id}.xml", configuration(types)),
    ]


def _annotator(annotation: dict[str, Any], data: dict[str, Any]) -> str:
    """Who made an annotation: our pseudonym if the task maps the number, else the Label
    Studio user (their email, or ``ls-user-N``)."""
    who = annotation.get("completed_by")
    named = data.get("annotators")
    if isinstance(named, dict) and str(who) in named:
        return str(named[str(who)])
    if isinstance(who, dict):
        return str(who.get("email") or f"ls-user-{who.get('id')}")
    return f"ls-user-{who}"


def _span_of(region: dict[str, Any], document: Document, where: str) -> tuple[int, int, list[str]]:
    """(start, end, labels) of a ``labels`` region, its text checked.

    Raises:
        AnnotationError: offsets that are not numbers, or cover other text.
    """
    value = region.get("value")
    if not isinstance(value, dict):
        raise AnnotationError(f"{where}: a region without a 'value'")
    start, end, labels = value.get("start"), value.get("end"), value.get("labels")
    if not isinstance(start, int) or not isinstance(end, int) or not isinstance(labels, list):
        raise AnnotationError(f"{where}: a region needs integer 'start', 'end' and a 'labels' list")
    given = value.get("text")
    if isinstance(given, str) and document.text[start:end] != given:
        units = document.text.encode("utf-16-le")[2 * start : 2 * end]
        hint = (
            "; these offsets count UTF-16 units (as JavaScript does), KoED Studio counts "
            "code points"
            if units.decode("utf-16-le", errors="replace") == given
            else ""
        )
        raise AnnotationError(
            f"{where}: offsets {start}-{end} cover {document.text[start:end]!r}, "
            f"not {given!r}{hint}"
        )
    return start, end, [str(label) for label in labels]


def _entry(
    task: dict[str, Any], annotation: dict[str, Any], document: Document, where: str
) -> dict[str, Any]:
    """One Label Studio annotation as an import entry."""
    result = annotation.get("result") or []
    if not isinstance(result, list):
        raise AnnotationError(f"{where}: 'result' must be a list")
    regions: dict[str, tuple[int, int, list[str]]] = {}
    links: dict[str, str] = {}
    comments: dict[str, str] = {}
    category, note = None, ""
    for item in result:
        if not isinstance(item, dict):
            raise AnnotationError(f"{where}: a result that is not an object")
        kind = item.get("type")
        if kind == "labels":
            regions[str(item.get("id"))] = _span_of(item, document, where)
        elif kind == "relation":
            ko, en = str(item.get("from_id")), str(item.get("to_id"))
            if ko in links:
                raise AnnotationError(f"{where}: region {ko} has two English counterparts")
            links[ko] = en
        elif kind == "choices":
            chosen = (item.get("value") or {}).get("choices") or [None]
            category = chosen[0]
        elif kind == "textarea" and item.get("from_name") == COMMENT:
            comments[str(item.get("id"))] = "\n".join((item.get("value") or {}).get("text") or [])
        elif kind == "textarea":
            note = "\n".join((item.get("value") or {}).get("text") or [])
    linked = set(links.values())
    spans = []
    for ident, (start, end, labels) in regions.items():
        segment, side = document.locate(start, end, where)
        if segment.lang == "en":
            if ident not in linked:
                raise AnnotationError(
                    f"{where}: the English region {side['text']!r} is linked to no Korean region"
                )
            continue
        target = regions.get(links.get(ident, ""))
        if ident in links and target is None:
            raise AnnotationError(f"{where}: a relation names region {links[ident]!r}, not there")
        for label in labels:
            span = layout.span(document, (start, end), label, target[:2] if target else None, where)
            spans.append({**span, "comment": comments.get(ident, "")})
    return layout.entry(
        _annotator(annotation, task.get("data") or {}),
        bool(annotation.get("ground_truth")),
        category,
        note,
        spans,
    )


def read(path: Path, dataset: Dataset) -> list[tuple[int, dict[str, Any]]]:
    """The import rows of a Label Studio JSON export (or of every ``.json`` in a folder):
    one per task; cancelled (skipped) annotations are left out.

    Raises:
        AnnotationError: not JSON, not a list of tasks, a text not the dataset's.
    """
    rows: list[tuple[int, dict[str, Any]]] = []
    for file in layout.files(path, ".json"):
        try:
            tasks_read = json.loads(layout.read_text(file))
        except json.JSONDecodeError as err:
            raise AnnotationError(f"{file.name}: not JSON ({err.msg}, line {err.lineno})") from None
        except RecursionError:
            raise AnnotationError(
                f"{file.name}: nested too deeply to be read (arrays or objects inside each other)"
            ) from None
        if isinstance(tasks_read, dict):
            tasks_read = [tasks_read]
        if not isinstance(tasks_read, list):
            raise AnnotationError(f"{file.name}: not a list of Label Studio tasks")
        for number, task in enumerate(tasks_read, 1):
            where = f"{file.name} task {number}"
            bad = unencodable(task)
            if bad is not None:  # JSON's \ud800 escapes decode to text UTF-8 cannot hold
                raise AnnotationError(
                    f"{where}: {bad or 'a key'} holds an unpaired surrogate (a \\ud800-\\udfff "
                    "escape alone), which is not Unicode text"
                )
            data = task.get("data") if isinstance(task, dict) else None
            if not isinstance(data, dict) or not isinstance(data.get(TEXT), str):
                raise AnnotationError(f"{where}: no data.text")
            conv_id = data.get("conv_id")
            if not isinstance(conv_id, str):
                raise AnnotationError(f"{where}: no data.conv_id naming the dialogue")
            document = layout.layout(layout.dialogue_of(dataset, conv_id, where))
            layout.check_text(document, data[TEXT], where)
            entries = [
                _entry(task, a, document, f"{where}, annotation {k}")
                for k, a in enumerate(task.get("annotations") or [], 1)
                if isinstance(a, dict) and not a.get("was_cancelled")
            ]
            if entries:
                rows.append(
                    (len(rows) + 1, {"conv_id": conv_id, "annotations": entries, "_where": where})
                )
    return rows
