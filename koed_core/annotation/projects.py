"""Annotation projects: who annotates which dialogues, blind, and the reviewer's answer.

As in the KoED authors' own pipeline, each dialogue is annotated by ``per_item`` people
(two by default) who do not see each other's work; once all of them have submitted, a
reviewer sees the answers side by side and records the final one. An annotator sees
another's annotation only after the dialogue is complete, and their own is then frozen,
so what the reviewer compares is what each person decided alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from koed_core.annotation.people import check_annotators
from koed_core.annotation.spans import Span, check_span, span_from_row, span_to_row
from koed_core.annotation.taxonomy import (
    AnnotationError,
    Taxonomy,
    check_category,
    fixed_category,
    load_taxonomy,
    parse_taxonomy,
)
from koed_core.db.annotations import Annotations
from koed_core.db.store import Store
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.dialogue import Dialogue
from koed_core.i18n import _

Kind = Literal["annotator", "adjudicated"]
ANNOTATOR: Kind = "annotator"
ADJUDICATED: Kind = "adjudicated"
DRAFT = "draft"
SUBMITTED = "submitted"
DEFAULT_PER_ITEM = 2
MAX_DIALOGUES = 2000


@dataclass(frozen=True)
class Annotation:
    """One person's (or the reviewer's) annotation of one dialogue."""

    project_id: int
    conv_id: str
    annotator: str
    kind: Kind
    category: str | None
    note: str
    status: str
    taxonomy_version: str
    spans: tuple[Span, ...] = field(default_factory=tuple)

    @property
    def submitted(self) -> bool:
        return self.status == SUBMITTED


def _annotation_of(row: dict[str, Any]) -> Annotation:
    return Annotation(
        project_id=row["project_id"],
        conv_id=row["conv_id"],
        annotator=row["annotator"],
        kind=row["kind"],
        category=row["category"],
        note=row["note"],
        status=row["status"],
        taxonomy_version=row["taxonomy_version"],
        spans=tuple(span_from_row(s) for s in row.get("spans", [])),
    )


def _not_in(project: dict[str, Any], conv_id: str) -> str:
    return _("{conv_id} is not in project {name}", conv_id=conv_id, name=repr(project["name"]))


def _order_key(project_id: int, username: str, conv_id: str) -> str:
    """Each annotator meets the dialogues in an order of their own, the same every time,
    so two annotators rarely work on the same dialogue at the same moment."""
    return hashlib.sha256(f"{project_id}:{username}:{conv_id}".encode()).hexdigest()


class AnnotationRules:
    """Projects, blind annotation and adjudication: the rules; the SQL is in ``koed_core.db``.

    Who may take an annotator's place is decided here, not by the page: with
    ``accounts_file`` holding accounts, only accounts with the annotator role annotate
    (an admin reads every draft in the export, so an admin's answer is never blind), and
    a name that is no account is refused. With no accounts (the file absent or empty) the
    app is one person's, as everywhere else; ``accounts_required`` (KOED_USERS was set)
    makes a missing or broken file close annotation instead. Without ``accounts_file``
    (a script, a test) no account rule applies.
    """

    def __init__(
        self, store: Store, accounts_file: Path | None = None, accounts_required: bool = False
    ) -> None:
        self.store = store
        self.q = Annotations(store)
        self.accounts_file = accounts_file
        self.accounts_required = accounts_required

    # Projects ---------------------------------------------------------------------------

    def create_project(
        self,
        name: str,
        dataset: Dataset,
        conv_ids: Sequence[str],
        per_item: int = DEFAULT_PER_ITEM,
        annotators: Sequence[str] = (),
        taxonomy: Taxonomy | None = None,
    ) -> int:
        """A new project over these dialogues; returns its id.

        ``annotators`` lists who may annotate (empty: any annotator). The taxonomy (the
        shipped one by default) is stored whole under its version.

        Raises:
            AnnotationError: no name, no dialogues or unknown ones, too few annotators
                for ``per_item``.
        """
        if not name.strip():
            raise AnnotationError(_("give the project a name"))
        ids = list(dict.fromkeys(conv_ids))
        if not ids:
            raise AnnotationError(_("choose at least one dialogue"))
        if len(ids) > MAX_DIALOGUES:
            raise AnnotationError(
                _("{n} dialogues: a project takes at most {most}", n=len(ids), most=MAX_DIALOGUES)
            )
        unknown = [c for c in ids if dataset.get(c) is None]
        if unknown:
            first = ", ".join(unknown[:5])
            raise AnnotationError(
                _("not in this dataset: {ids} and {more} more", ids=first, more=len(unknown) - 5)
                if len(unknown) > 5
                else _("not in this dataset: {ids}", ids=first)
            )
        if not 1 <= per_item <= 10:
            raise AnnotationError(_("annotators per dialogue: between 1 and 10"))
        people = sorted(set(annotators))
        check_annotators(people, self.accounts_file, self.accounts_required)
        if people and len(people) < per_item:
            raise AnnotationError(
                _("{n} annotators per dialogue, but only {m} named", n=per_item, m=len(people))
            )
        chosen = taxonomy or load_taxonomy()
        self.q.ensure_taxonomy(chosen.version, chosen.name, chosen.as_rows())
        return self.q.insert_project(
            name.strip(), dataset.sha256, ids, per_item, people, chosen.version
        )

    def projects(self) -> list[dict[str, Any]]:
        """Every project."""
        return self.q.projects()

    def project(self, project_id: int) -> dict[str, Any]:
        """One project.

        Raises:
            AnnotationError: no such project.
        """
        found = self.q.project(project_id)
        if found is None:
            raise AnnotationError(_("no annotation project {id}", id=project_id))
        return found

    def progress(self) -> list[dict[str, Any]]:
        """One row per project: dialogues, complete, adjudicated, who, taxonomy, closed
        (counts only: no annotator's answer)."""
        rows = []
        for p in self.q.projects():
            items = self.items(p["id"])
            rows.append(
                {
                    "project": p["id"],
                    "name": p["name"],
                    "dialogues": len(items),
                    "complete": int(items["complete"].sum()),
                    "adjudicated": int(items["adjudicated"].sum()),
                    "per_item": p["per_item"],
                    "annotators": ", ".join(p["annotators"]) or "any",
                    "taxonomy_version": p["taxonomy_version"],
                    "closed": p["closed"],
                }
            )
        return rows

    def projects_for(self, username: str) -> list[dict[str, Any]]:
        """The open projects this annotator may work in."""
        return [
            p
            for p in self.q.projects()
            if p["closed"] is None and (not p["annotators"] or username in p["annotators"])
        ]

    def close(self, project_id: int) -> None:
        """Close a project: nobody annotates in it any more."""
        self.project(project_id)
        self.q.close_project(project_id)

    def taxonomy(self, project: dict[str, Any]) -> Taxonomy:
        """The taxonomy the project was created with."""
        version = project["taxonomy_version"]
        stored = self.q.taxonomy(version)
        if stored is None:
            raise AnnotationError(
                _("project {id}: taxonomy {version} is missing", id=project["id"], version=version)
            )
        taxonomy = parse_taxonomy(
            {
                "name": stored["name"],
                "version": stored["version"].rsplit("-", 1)[0],
                "types": stored["types"],
            },
            f"taxonomy {stored['version']}",
        )
        return taxonomy

    # Annotating -------------------------------------------------------------------------

    def items(self, project_id: int, username: str | None = None) -> pd.DataFrame:
        """One row per dialogue: how many submitted it, whether it is complete and
        adjudicated, and (for ``username``) their own status and whether it is open to
        them. Never another annotator's name or answer."""
        project = self.project(project_id)
        submitted: dict[str, int] = {}
        started: dict[str, int] = {}
        own: dict[str, str] = {}
        adjudicated: set[str] = set()
        for r in self.q.status_frame(project_id).to_dict("records"):
            if r["kind"] == ADJUDICATED:
                adjudicated.add(r["conv_id"])
                continue
            started[r["conv_id"]] = started.get(r["conv_id"], 0) + 1
            submitted[r["conv_id"]] = submitted.get(r["conv_id"], 0) + (r["status"] == SUBMITTED)
            if username and r["annotator"] == username:
                own[r["conv_id"]] = r["status"]
        need = project["per_item"]
        rows = [
            {
                "conv_id": c,
                "submitted": submitted.get(c, 0),
                "complete": submitted.get(c, 0) >= need,
                "adjudicated": c in adjudicated,
                "yours": own.get(c),
                "open": c in own or started.get(c, 0) < need,
            }
            for c in project["conv_ids"]
        ]
        frame = pd.DataFrame(rows)
        if username:
            frame["order"] = [_order_key(project_id, username, c) for c in frame["conv_id"]]
        return frame

    def next_item(self, project_id: int, username: str) -> str | None:
        """The dialogue to annotate next: one started and not submitted, else an open one
        nobody has finished, in this annotator's own order; None when there is none."""
        items = self.items(project_id, username)
        started = items[items["yours"] == DRAFT]
        if not started.empty:
            return str(started.sort_values("order").iloc[0]["conv_id"])
        fresh = items[items["open"] & items["yours"].isna()]
        if fresh.empty:
            return None
        return str(fresh.sort_values(["submitted", "order"]).iloc[0]["conv_id"])

    def own(self, project_id: int, conv_id: str, username: str) -> Annotation | None:
        """The annotator's own annotation of a dialogue, or None."""
        row = self.q.annotation(project_id, conv_id, username, ANNOTATOR)
        return _annotation_of(row) if row else None

    def _check_access(self, project: dict[str, Any], conv_id: str, username: str) -> None:
        name = repr(project["name"])
        if project["closed"] is not None:
            raise AnnotationError(_("project {name} is closed", name=name))
        if project["annotators"] and username not in project["annotators"]:
            raise AnnotationError(
                _("{user} is not an annotator of project {name}", user=username, name=name)
            )
        if conv_id not in project["conv_ids"]:
            raise AnnotationError(_not_in(project, conv_id))

    def save(
        self,
        project_id: int,
        dialogue: Dialogue,
        username: str,
        category: str | None,
        note: str,
        spans: Sequence[Span],
        submit: bool = False,
    ) -> Annotation:
        """Save (or submit) an annotator's annotation of one dialogue.

        Raises:
            AnnotationError: not this annotator's project, the dialogue is full or
                complete (frozen), a bad category or span, or submitting with no category.
        """
        project = self.project(project_id)
        self._check_access(project, dialogue.conv_id, username)
        check_annotators([username], self.accounts_file, self.accounts_required)
        # One write transaction from the check to the insert: sessions (or processes)
        # saving the same fresh dialogue at once are taken one by one, so the one past
        # the project's per-dialogue limit is refused instead of stored.
        with self.store.write():
            items = self.items(project_id, username)
            item = items[items["conv_id"] == dialogue.conv_id].iloc[0]
            if not item["open"]:
                need = project["per_item"]
                raise AnnotationError(
                    _("{conv_id} already has its {n} annotators", conv_id=dialogue.conv_id, n=need)
                )
            if item["complete"] and item["yours"] == SUBMITTED:
                raise AnnotationError(
                    _(
                        "{conv_id} is complete: every annotator has submitted, and the "
                        "answers are frozen for the reviewer",
                        conv_id=dialogue.conv_id,
                    )
                )
            return self._store(
                project, dialogue, username, ANNOTATOR, category, note, spans, submit
            )

    def _store(
        self,
        project: dict[str, Any],
        dialogue: Dialogue,
        username: str,
        kind: Kind,
        category: str | None,
        note: str,
        spans: Sequence[Span],
        submit: bool,
    ) -> Annotation:
        taxonomy = self.taxonomy(project)
        chosen = check_category(dialogue, category)
        if submit and chosen is None:
            raise AnnotationError(_("choose the dialogue's category before submitting"))
        checked = [check_span(dialogue, s, taxonomy) for s in spans]
        keys = [s.key for s in checked]
        if len(set(keys)) != len(keys):
            raise AnnotationError(
                _("You have marked these words with this type already; pick another type.")
            )
        if len(note) > 4000:
            raise AnnotationError(_("the note is longer than 4,000 characters"))
        self.q.save(
            {
                "project_id": project["id"],
                "conv_id": dialogue.conv_id,
                "annotator": username,
                "kind": kind,
                "category": chosen,
                "note": note,
                "status": SUBMITTED if submit else DRAFT,
                "taxonomy_version": taxonomy.version,
            },
            [span_to_row(s) for s in checked],
        )
        return Annotation(
            project["id"],
            dialogue.conv_id,
            username,
            kind,
            chosen,
            note,
            SUBMITTED if submit else DRAFT,
            taxonomy.version,
            tuple(checked),
        )

    def store_imported(
        self,
        project: dict[str, Any],
        dialogue: Dialogue,
        annotator: str,
        kind: Kind,
        category: str | None,
        note: str,
        spans: Sequence[Span],
    ) -> Annotation:
        """An annotation made elsewhere, checked as one made here, stored submitted."""
        if dialogue.conv_id not in project["conv_ids"]:
            raise AnnotationError(_not_in(project, dialogue.conv_id))
        return self._store(project, dialogue, annotator, kind, category, note, spans, True)

    def others(self, project_id: int, conv_id: str, username: str) -> list[Annotation]:
        """The other annotators' answers, once the dialogue is complete and this annotator
        has submitted; before that, nothing (blind)."""
        items = self.items(project_id, username)
        item = items[items["conv_id"] == conv_id]
        if item.empty or not item.iloc[0]["complete"] or item.iloc[0]["yours"] != SUBMITTED:
            return []
        return [a for a in self.submitted(project_id, conv_id) if a.annotator != username]

    # Review -----------------------------------------------------------------------------

    def annotations(self, project_id: int) -> list[Annotation]:
        """Every annotation of a project (a reviewer's and exports' view)."""
        return [_annotation_of(r) for r in self.q.of_project(project_id)]

    def submitted(self, project_id: int, conv_id: str) -> list[Annotation]:
        """The submitted annotators' answers for one dialogue (the reviewer's view)."""
        rows = self.q.of_project(project_id, conv_id=conv_id)
        return [a for a in map(_annotation_of, rows) if a.kind == ANNOTATOR and a.submitted]

    def adjudication(self, project_id: int, conv_id: str) -> Annotation | None:
        """The reviewer's final answer for a dialogue, or None."""
        rows = self.q.of_project(project_id, conv_id=conv_id)
        return next((a for a in map(_annotation_of, rows) if a.kind == ADJUDICATED), None)

    def adjudicate(
        self,
        project_id: int,
        dialogue: Dialogue,
        reviewer: str,
        category: str,
        note: str,
        spans: Sequence[Span],
    ) -> Annotation:
        """Record the final answer for a complete dialogue (one per dialogue: a second
        replaces the first, and names the reviewer who made it).

        Raises:
            AnnotationError: the dialogue is not complete yet, or a bad category or span.
        """
        project = self.project(project_id)
        if dialogue.conv_id not in project["conv_ids"]:
            raise AnnotationError(_not_in(project, dialogue.conv_id))
        if len(self.submitted(project_id, dialogue.conv_id)) < project["per_item"]:
            raise AnnotationError(
                _(
                    "{conv_id}: not every annotator has submitted yet; the reviewer "
                    "adjudicates complete dialogues only",
                    conv_id=dialogue.conv_id,
                )
            )
        with self.store.write():  # the old final answer goes only if the new one is stored
            for old in self.q.of_project(project_id, with_spans=False, conv_id=dialogue.conv_id):
                if old["kind"] == ADJUDICATED and old["annotator"] != reviewer:
                    self.q.delete(old["id"])
            return self._store(
                project, dialogue, reviewer, ADJUDICATED, category, note, spans, True
            )

    def final(self, project_id: int, dataset: Dataset | None = None) -> pd.DataFrame:
        """Each dialogue's final category and signal types, and where they come from:
        the reviewer's answer, else the annotators' when all agree, else undecided.
        A jeong/han dialogue is handcrafted whatever anyone said (the file says so; with
        no ``dataset`` only its annotations, which always say so, tell)."""
        project = self.project(project_id)
        by_item: dict[str, list[Annotation]] = {}
        for a in self.annotations(project_id):
            by_item.setdefault(a.conv_id, []).append(a)
        rows = []
        for conv_id in project["conv_ids"]:
            dialogue = dataset.get(conv_id) if dataset is not None else None
            found = by_item.get(conv_id, [])
            final = next((a for a in found if a.kind == ADJUDICATED), None)
            people = [a for a in found if a.kind == ANNOTATOR and a.submitted]
            basis: str
            if final is not None:
                category, types, basis = (
                    final.category,
                    {s.type for s in final.spans},
                    "adjudicated",
                )
            elif len(people) >= project["per_item"] and len({a.category for a in people}) == 1:
                category = people[0].category
                common = set.intersection(*({s.key for s in a.spans} for a in people))
                types = {key[3] for key in common}
                basis = "agreed"
            else:
                category, types, basis = None, set(), "undecided"
            fixed = fixed_category(dialogue) if dialogue is not None else None
            if fixed is not None:
                category, basis = fixed, basis if basis != "undecided" else "the file"
            rows.append(
                {
                    "conv_id": conv_id,
                    "category": category,
                    "types": sorted(types),
                    "basis": basis,
                    "annotators": len(people),
                }
            )
        return pd.DataFrame(rows, columns=["conv_id", "category", "types", "basis", "annotators"])
