"""An annotator's worklist: which dialogues are theirs, how far they and their partners
are, and their own spans across the project.

With 1,360 dialogues and two annotators each, an annotator needs to find work: the
dialogues still new to them, those a partner is waiting on, those they gave a category or
marked a type in. Everything here is read for one annotator and is blind by construction:
of the other annotators only their progress (started, submitted) is read, never their
category, note or spans, whether or not the dialogue is complete.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from koed_core.annotation.projects import ANNOTATOR, DRAFT, SUBMITTED, AnnotationRules
from koed_core.dialogues.dataset import Dataset

NEW = "new"
"""An annotator's status on a dialogue they have not saved anything for."""
STATUSES = (NEW, DRAFT, SUBMITTED)
NO_CATEGORY = "none"
"""The category filter's choice for dialogues whose own answer has no category yet."""
WORDS = 4
"""How many words of the situation name a dialogue in the picker and the span list."""
COLUMNS = [
    "conv_id",
    "yours",
    "category",
    "types",
    "spans",
    "others_submitted",
    "others_drafting",
    "others_needed",
    "complete",
    "open",
]
SPAN_COLUMNS = [
    "conv_id",
    "situation",
    "position",
    "start",
    "end",
    "ko",
    "en",
    "no_counterpart",
    "type",
    "status",
]


def text_or_none(value: Any) -> str | None:
    """A cell as text, or None when it is missing: since pandas 3 an empty text cell
    reads as NaN (a float), which ``str()`` would turn into the word "nan"."""
    if value is None:
        return None
    if not isinstance(value, list | tuple | dict) and pd.isna(value):
        return None
    return str(value)


def first_words(text: Any, n: int = WORDS) -> str:
    """The first ``n`` words of a situation (empty for a missing one): enough to tell
    dialogues apart in a picker without reading the whole text."""
    return " ".join((text_or_none(text) or "").split()[:n])


@dataclass(frozen=True)
class Filters:
    """What the annotator narrows the picker to; an empty set does not narrow."""

    statuses: frozenset[str] = field(default_factory=frozenset)
    categories: frozenset[str] = field(default_factory=frozenset)
    types: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(
        cls, statuses: Iterable[str] = (), categories: Iterable[str] = (), types: Iterable[str] = ()
    ) -> Filters:
        return cls(frozenset(statuses), frozenset(categories), frozenset(types))

    @property
    def active(self) -> bool:
        return bool(self.statuses or self.categories or self.types)

    @property
    def signature(self) -> tuple[tuple[str, ...], ...]:
        """The same filters give the same signature (a notice is tied to the filters it
        was about)."""
        return tuple(tuple(sorted(s)) for s in (self.statuses, self.categories, self.types))


def _own(annotations: AnnotationRules, project_id: int, username: str) -> dict[str, Any]:
    return {r["conv_id"]: r for r in annotations.q.of_annotator(project_id, username, ANNOTATOR)}


def worklist(annotations: AnnotationRules, project_id: int, username: str) -> pd.DataFrame:
    """One row per dialogue of the project, in the project's order: the annotator's own
    status (``yours``: new, draft, submitted), own category (missing before one is
    chosen: NaN in pandas 3, read it with :func:`text_or_none`) and the types of their own
    spans, and how many of the *other* annotators have
    submitted or are drafting it, out of how many it needs besides this one. Counts
    only: nothing of another annotator's answer is read, complete or not."""
    project = annotations.project(project_id)
    need = int(project["per_item"])
    own = _own(annotations, project_id, username)
    submitted: dict[str, int] = {}
    drafting: dict[str, int] = {}
    started: dict[str, int] = {}
    for r in annotations.q.states(project_id):
        if r["kind"] != ANNOTATOR:
            continue
        conv_id = r["conv_id"]
        started[conv_id] = started.get(conv_id, 0) + 1
        if r["annotator"] == username:
            continue
        if r["status"] == SUBMITTED:
            submitted[conv_id] = submitted.get(conv_id, 0) + 1
        else:
            drafting[conv_id] = drafting.get(conv_id, 0) + 1
    rows = []
    for conv_id in project["conv_ids"]:
        mine = own.get(conv_id)
        status = text_or_none(mine["status"]) if mine else None
        everyone = submitted.get(conv_id, 0) + (status == SUBMITTED)
        rows.append(
            {
                "conv_id": conv_id,
                "yours": status or NEW,
                "category": text_or_none(mine["category"]) if mine else None,
                "types": tuple(sorted({s["type"] for s in mine["spans"]})) if mine else (),
                "spans": len(mine["spans"]) if mine else 0,
                "others_submitted": submitted.get(conv_id, 0),
                "others_drafting": drafting.get(conv_id, 0),
                "others_needed": need - 1,
                "complete": everyone >= need,
                "open": mine is not None or started.get(conv_id, 0) < need,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def partner_status(others_submitted: int, others_drafting: int) -> str:
    """The one partner's progress on a dialogue (two annotators a dialogue): submitted
    once every other annotator has, draft while any is drafting, else new."""
    if others_drafting:
        return DRAFT
    return SUBMITTED if others_submitted else NEW


def matching(work: pd.DataFrame, filters: Filters) -> list[str]:
    """The conv_ids of ``work`` (in its order) that every active filter keeps: own status
    among the chosen ones, own category among the chosen ones (:data:`NO_CATEGORY` for
    none yet), and at least one own span of a chosen type."""
    keep = []
    for r in work.itertuples():
        category = text_or_none(r.category) or NO_CATEGORY
        if filters.statuses and r.yours not in filters.statuses:
            continue
        if filters.categories and category not in filters.categories:
            continue
        if filters.types and not filters.types.intersection(r.types):
            continue
        keep.append(str(r.conv_id))
    return keep


def my_spans(
    annotations: AnnotationRules,
    project_id: int,
    username: str,
    dataset: Dataset | None = None,
    types: Collection[str] = (),
) -> pd.DataFrame:
    """Every span of this annotator's own answers in the project (of ``types`` only, when
    given), in the project's dialogue order then by turn and offset, with the dialogue's
    status for them and the situation's first words (from ``dataset``). English is
    missing (NaN in pandas 3: :func:`text_or_none`) where the span has no counterpart."""
    project = annotations.project(project_id)
    order = {c: i for i, c in enumerate(project["conv_ids"])}
    rows = []
    for conv_id, a in _own(annotations, project_id, username).items():
        dialogue = dataset.get(conv_id) if dataset is not None else None
        for s in a["spans"]:
            if types and s["type"] not in types:
                continue
            rows.append(
                {
                    "conv_id": conv_id,
                    "situation": first_words(dialogue.situation_ko if dialogue else ""),
                    "position": int(s["position"]),
                    "start": int(s["start"]),
                    "end": int(s["end"]),
                    "ko": s["text"],
                    "en": text_or_none(s["en_text"]),
                    "no_counterpart": bool(s["no_counterpart"]),
                    "type": s["type"],
                    "status": text_or_none(a["status"]) or NEW,
                    "_order": order.get(conv_id, len(order)),
                }
            )
    frame = pd.DataFrame(rows, columns=[*SPAN_COLUMNS, "_order"])
    frame = frame.sort_values(["_order", "position", "start", "end"], kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)
