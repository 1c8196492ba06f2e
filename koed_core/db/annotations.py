"""Annotation projects, annotations and their spans: the SQL behind ``koed_core.annotation``.

An annotation is one person's answer for one dialogue of one project (``kind``
'annotator'; an imported one keeps the annotator's name from the file) or the reviewer's
final answer (``kind`` 'adjudicated'). Its spans are replaced whole on every save, in the
same transaction, so a reload shows exactly what was last saved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from koed_core.db.store import Store
from koed_core.db.types import now, short_hash

SPAN_COLUMNS = (
    "position",
    "start",
    "end",
    "text",
    "type",
    "en_position",
    "en_start",
    "en_end",
    "en_text",
    "no_counterpart",
    "origin",
    "comment",
)


def annotation_id(project_id: int, conv_id: str, annotator: str, kind: str) -> str:
    """The stable key of one annotation: saving again replaces it, never adds a second."""
    return short_hash("annotation", project_id, conv_id, annotator, kind)


class Annotations:
    """The annotation tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # Taxonomies and projects ----------------------------------------------------------

    def ensure_taxonomy(self, version: str, name: str, types: list[dict[str, str]]) -> None:
        """Keep a taxonomy whole under its version (the same version twice is one row)."""
        with self.store.write():
            self.store.db.execute(
                "insert or ignore into annotation_taxonomies (version, name, types, created) "
                "values (?, ?, ?, ?)",
                [version, name, json.dumps(types, ensure_ascii=False), now()],
            )

    def taxonomy(self, version: str) -> dict[str, Any] | None:
        """A stored taxonomy: name, version, types."""
        rows = self.store.rows(
            "select version, name, types from annotation_taxonomies where version = ?", [version]
        )
        if not rows:
            return None
        return {
            "name": rows[0]["name"],
            "version": rows[0]["version"],
            "types": json.loads(rows[0]["types"]),
        }

    def insert_project(
        self,
        name: str,
        dataset_sha256: str,
        conv_ids: Sequence[str],
        per_item: int,
        annotators: Sequence[str],
        taxonomy_version: str,
    ) -> int:
        """A new project; returns its id."""
        with self.store.write():
            cursor = self.store.db.execute(
                "insert into annotation_projects (name, dataset_sha256, conv_ids, per_item, "
                "annotators, taxonomy_version, created) values (?, ?, ?, ?, ?, ?, ?)",
                [
                    name,
                    dataset_sha256,
                    json.dumps(list(conv_ids)),
                    per_item,
                    json.dumps(sorted(annotators)),
                    taxonomy_version,
                    now(),
                ],
            )
        return int(cursor.lastrowid or 0)

    def projects(self) -> list[dict[str, Any]]:
        """Every project, its lists parsed."""
        rows = self.store.rows("select * from annotation_projects order by id")
        return [
            {**r, "conv_ids": json.loads(r["conv_ids"]), "annotators": json.loads(r["annotators"])}
            for r in rows
        ]

    def project(self, project_id: int) -> dict[str, Any] | None:
        """One project, or None."""
        return next((p for p in self.projects() if p["id"] == project_id), None)

    def close_project(self, project_id: int) -> None:
        """No more annotation in it; its annotations stay."""
        with self.store.write():
            self.store.db.execute(
                "update annotation_projects set closed = ? where id = ? and closed is null",
                [now(), project_id],
            )

    def set_taxonomy(self, project_id: int, version: str) -> None:
        """The project's taxonomy from now on (its earlier annotations keep theirs)."""
        with self.store.write():
            self.store.db.execute(
                "update annotation_projects set taxonomy_version = ? where id = ?",
                [version, project_id],
            )

    # Annotations ------------------------------------------------------------------------

    def save(self, row: dict[str, Any], spans: Sequence[dict[str, Any]]) -> str:
        """Insert or replace one annotation and all its spans, in one transaction.

        ``row`` has project_id, conv_id, annotator, kind, category, note, status,
        taxonomy_version; each span dict has :data:`SPAN_COLUMNS`.
        """
        key = annotation_id(row["project_id"], row["conv_id"], row["annotator"], row["kind"])
        stamp = now()
        with self.store.write():
            old = self.store.rows("select created from annotations where id = ?", [key])
            self.store.db.execute(
                "insert or replace into annotations (id, project_id, conv_id, annotator, kind, "
                "category, note, status, taxonomy_version, created, updated) "
                "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    key,
                    row["project_id"],
                    row["conv_id"],
                    row["annotator"],
                    row["kind"],
                    row["category"],
                    row.get("note") or "",
                    row["status"],
                    row["taxonomy_version"],
                    old[0]["created"] if old else stamp,
                    stamp,
                ],
            )
            self.store.db.execute("delete from annotation_spans where annotation_id = ?", [key])
            for i, span in enumerate(spans):
                self.store.db.execute(
                    "insert into annotation_spans (id, annotation_id, position, start, [end], "
                    "text, type, en_position, en_start, en_end, en_text, no_counterpart, "
                    "origin, comment, created) "
                    "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        short_hash(key, i),
                        key,
                        *(span[c] for c in SPAN_COLUMNS[:9]),
                        int(bool(span["no_counterpart"])),
                        span["origin"],
                        span.get("comment") or "",
                        stamp,
                    ],
                )
        return key

    def annotation(
        self, project_id: int, conv_id: str, annotator: str, kind: str
    ) -> dict[str, Any] | None:
        """One annotation with its spans (list of dicts, in the order saved), or None."""
        key = annotation_id(project_id, conv_id, annotator, kind)
        rows = self.store.rows("select * from annotations where id = ?", [key])
        if not rows:
            return None
        return {**rows[0], "spans": self.spans_of([key]).get(key, [])}

    def spans_of(self, keys: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The spans of these annotations, by annotation id, in saved order."""
        found: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
        if not keys:
            return found
        marks = ", ".join("?" for _ in keys)
        rows = self.store.rows(
            f"select annotation_id, {', '.join(f'[{c}]' for c in SPAN_COLUMNS)} "
            f"from annotation_spans where annotation_id in ({marks}) order by rowid",
            list(keys),
        )
        for r in rows:
            found[r.pop("annotation_id")].append(r)
        return found

    def of_project(
        self, project_id: int, with_spans: bool = True, conv_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Every annotation of a project (both kinds), or of one dialogue of it, with
        spans if asked."""
        where = "project_id = ?"
        params: list[Any] = [project_id]
        if conv_id is not None:
            where += " and conv_id = ?"
            params.append(conv_id)
        rows = self.store.rows(
            f"select * from annotations where {where} order by conv_id, kind, annotator", params
        )
        if with_spans:
            spans = self.spans_of([r["id"] for r in rows])
            rows = [{**r, "spans": spans[r["id"]]} for r in rows]
        return rows

    def status_frame(self, project_id: int) -> pd.DataFrame:
        """conv_id, annotator, kind, status, category of a project's annotations (no spans,
        no notes): what assignment and progress need."""
        return self.store.frame(
            "select conv_id, annotator, kind, status, category from annotations "
            "where project_id = ?",
            [project_id],
        )

    def states(self, project_id: int) -> list[dict[str, Any]]:
        """conv_id, annotator, kind, status of a project's annotations: who has started or
        submitted what, never what anyone answered (an annotator's worklist shows the
        partner's progress from this, so it cannot leak the partner's answer)."""
        return self.store.rows(
            "select conv_id, annotator, kind, status from annotations where project_id = ?",
            [project_id],
        )

    def of_annotator(self, project_id: int, annotator: str, kind: str) -> list[dict[str, Any]]:
        """One person's annotations of a project with their spans, and nobody else's (an
        annotator's own spans across dialogues, read without touching another's)."""
        rows = self.store.rows(
            "select * from annotations where project_id = ? and annotator = ? and kind = ? "
            "order by conv_id",
            [project_id, annotator, kind],
        )
        spans = self.spans_of([r["id"] for r in rows])
        return [{**r, "spans": spans[r["id"]]} for r in rows]

    def delete(self, key: str) -> None:
        """Remove one annotation and its spans (a replaced final answer)."""
        with self.store.write():
            self.store.db.execute("delete from annotation_spans where annotation_id = ?", [key])
            self.store.db.execute("delete from annotations where id = ?", [key])
