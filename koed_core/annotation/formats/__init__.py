"""Annotations in and out in the formats of the tools linguists use.

``jsonl`` is KoED Studio's own (``koed_core.annotation.exchange``); ``webanno-tsv``
(INCEpTION), ``brat`` and ``label-studio`` are written from the same export lines and
read back into the same rows ``exchange.import_lines`` checks and stores, so every
format is checked whole, by one set of rules, before anything is written. How a dialogue
becomes one document is in ``layout``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line reads FORMATS without loading the readers
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.dialogues.dataset import Dataset

JSONL, WEBANNO, BRAT, LABEL_STUDIO = "jsonl", "webanno-tsv", "brat", "label-studio"
FORMATS = (JSONL, WEBANNO, BRAT, LABEL_STUDIO)


def export(
    annotations: AnnotationRules,
    project_id: int,
    dataset: Dataset,
    key: bytes,
    out: Path,
    fmt: str = JSONL,
) -> list[Path]:
    """Write a project in one format into ``out`` (a folder per project for the formats
    with a file per document: ``webanno-tsv-N/``, ``brat-N/``); the agreement table and the
    taxonomy come with every format. Each format writes only its own files (and the
    shared two), so exports of several formats into one folder sit side by side and
    nothing of another format is removed. Returns the files written."""
    from koed_core.annotation.exchange import export_lines, export_project
    from koed_core.annotation.formats import brat, labelstudio, webanno
    from koed_core.annotation.taxonomy import AnnotationError

    if fmt not in FORMATS:
        raise AnnotationError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    extras = export_project(annotations, project_id, dataset, key, out, lines=fmt == JSONL)
    if fmt == JSONL:
        return extras
    lines = export_lines(annotations, project_id, dataset, key)
    types = list(annotations.taxonomy(annotations.project(project_id)).codes)
    if fmt == WEBANNO:
        return webanno.export(lines, dataset, out / f"webanno-tsv-{project_id}") + extras
    if fmt == BRAT:
        return brat.export(lines, dataset, out / f"brat-{project_id}", types) + extras
    return labelstudio.export(lines, dataset, out, project_id, types) + extras


def read(path: Path, fmt: str, dataset: Dataset) -> list[tuple[int, dict[str, Any]]]:
    """The rows ``exchange.import_lines`` stores, from a file or the folder an export
    wrote; a ``.csv`` file in the ``jsonl`` format is read as a spreadsheet.

    Raises:
        AnnotationError: the first problem, naming the file and what is wrong.
    """
    from koed_core.annotation.exchange import read_csv_rows, read_jsonl
    from koed_core.annotation.formats import brat, labelstudio, webanno
    from koed_core.annotation.taxonomy import AnnotationError

    if fmt == JSONL:
        if path.suffix.lower() == ".csv":
            return read_csv_rows(path, dataset)
        if path.is_dir():
            raise AnnotationError(f"{path.name}: a folder; give the .jsonl file")
        return read_jsonl(path)
    readers = {WEBANNO: webanno.read, BRAT: brat.read, LABEL_STUDIO: labelstudio.read}
    if fmt not in readers:
        raise AnnotationError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return readers[fmt](path, dataset)
