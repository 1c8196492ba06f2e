"""Pickers that name a number's source: one judge configuration, one study.

The default is the most recent (as in ``koed_core.results.score_sources``); the choices never mix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from components.core import computed
from components.core.terms import judge_name
from koed_core import i18n
from koed_core.db import JudgeConfig, Ratings, Store
from koed_core.i18n import _


def judge_picker(
    store: Store, run_ids: Sequence[str] | None, key: str, where: Any = st
) -> JudgeConfig | None:
    """A select box of the judge configurations that scored these runs (newest first)."""
    uses = computed.judge_uses(store, run_ids)
    if not uses:
        return None
    labels = [
        _("{judge} ({n} judgments)", judge=judge_name(u.config), n=i18n.number(u.judgments))
        for u in uses
    ]
    picked = where.selectbox(
        _("Judge configuration"),
        range(len(uses)),
        format_func=labels.__getitem__,
        key=key,
        help=_(
            "Model, mode, prompt version and rubric version. Scores from different "
            "configurations are never averaged; the newest is the default."
        ),
    )
    return uses[int(picked or 0)].config


def study_picker(store: Store, key: str, where: Any = st, include_open: bool = True) -> int | None:
    """A select box of the studies that have ratings (most recently rated first); with
    ``include_open`` off, only closed studies (their results are published)."""
    rated = [s for s in Ratings(store).studies_with_ratings() if include_open or s["closed"]]
    if not rated:
        return None
    labels = {
        int(s["id"]): (
            _(
                "study {id}: {name} ({raters} raters)",
                id=s["id"],
                name=s["name"],
                raters=s["raters"],
            )
            if s["closed"]
            else _(
                "study {id}: {name} ({raters} raters, still open)",
                id=s["id"],
                name=s["name"],
                raters=s["raters"],
            )
        )
        for s in rated
    }
    picked = where.selectbox(_("Study (raters)"), list(labels), format_func=labels.get, key=key)
    return int(picked) if picked is not None else None
