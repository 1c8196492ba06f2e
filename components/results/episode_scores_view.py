"""An episode run read whole on the Episodes page: the whole-episode verdicts (and raters'
where a study of whole episodes has closed), the oracle Listener as the upper reference,
and how well the simulated Speaker played each language's side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.core import tables
from components.core.literal import md
from koed_core.db import Store
from koed_core.i18n import _
from koed_core.judge.episodes import SPEAKER, WHOLE
from koed_core.results import episode_scores

SHOWN = ["metric", "pairs", "en", "ko", "gap", "ci_low", "ci_high"]


def _columns() -> dict[str, object]:
    number = st.column_config.NumberColumn
    return {
        "metric": _("Metric"),
        "pairs": _("Pairs"),
        "en": number("ED (en)", format="%.2f"),
        "ko": number("KoED (ko)", format="%.2f"),
        "gap": number(_("Gap"), format="%+.2f"),
        "ci_low": number(_("CI low"), format="%+.2f"),
        "ci_high": number(_("CI high"), format="%+.2f"),
        "run": number(_("This run"), format="%.2f"),
        "oracle": number(_("Oracle"), format="%.2f"),
        "headroom": number(_("Headroom"), format="%+.2f"),
        "conv_id": _("Dialogue"),
        "lang": _("Language"),
    }


def _mine(table: pd.DataFrame, run_id: str) -> pd.DataFrame:
    return table[table["run_id"] == run_id][SHOWN]


def whole_episodes(store: Store, run_id: str, closed_studies: list[int]) -> None:
    """The run judged whole, raters' whole-episode scores, and the oracle beside it."""
    judged = episode_scores.configs(store, WHOLE)
    rated = [
        (study, table)
        for study in closed_studies
        if not (table := episode_scores.rated_whole_table(store, study)).empty
        and run_id in set(table["run_id"])
    ]
    if not judged and not rated:
        return
    with st.expander(_("The episode as a whole"), expanded=False):
        st.caption(
            _(
                "Each episode scored once over the whole conversation, on the five "
                "dimensions and UND (did the Listener come to understand what the Speaker "
                "felt and why), English and Korean paired by dialogue, with a bootstrap 95% "
                "CI. `koed judge --run RUN --whole-episode` makes the judge's; a study with "
                "whole episodes makes the raters'. Never averaged with the turn-by-turn "
                "scores."
            )
        )
        for config in judged:
            table = episode_scores.whole_table(store, config)
            if run_id in set(table["run_id"]):
                st.markdown(_("Judge {judge}", judge=md(config.label)))
                tables.show(_mine(table, run_id), hide_index=True, column_config=_columns())
                _oracle(store, config, run_id)
        for study, table in rated:
            st.markdown(_("Raters of study {study}", study=md(study)))
            tables.show(_mine(table, run_id), hide_index=True, column_config=_columns())


def _oracle(store: Store, config: object, run_id: str) -> None:
    if episode_scores.is_oracle(store, run_id):
        st.caption(
            _(
                "This run is the oracle Listener (told the situation and emotion): the "
                "upper reference. Choose the run played beside it to see the headroom per "
                "dialogue."
            )
        )
        return
    oracle = episode_scores.oracle_for(store, run_id)
    if oracle is None:
        st.caption(
            _(
                "No oracle run beside this one: `koed episodes ... --oracle` plays the same "
                "episodes with the Listener told the situation and emotion, the upper "
                "reference per dialogue."
            )
        )
        return
    room = episode_scores.headroom(store, config, run_id, oracle)  # type: ignore[arg-type]
    if room.empty:
        st.caption(_("The oracle run is not judged whole under this configuration yet."))
        return
    st.caption(
        _(
            "Upper reference per dialogue: the mean of the five dimensions for this run and "
            "for the oracle Listener (told the situation and emotion), and the room between."
        )
    )
    tables.show(room, hide_index=True, column_config=_columns())


def speaker_checks(store: Store, run_id: str) -> None:
    """How well the simulated Speaker played each side, per language."""
    for config in episode_scores.configs(store, SPEAKER):
        table = episode_scores.speaker_table(store, config)
        if run_id not in set(table["run_id"]):
            continue
        with st.expander(_("How well the Speaker played each side"), expanded=False):
            st.caption(
                _(
                    "Each Speaker turn the episodes kept, read by {judge}: SIT stays in the "
                    "situation, HID keeps the feeling unnamed, NAT sounds like a native "
                    "speaker (1-5). Read the gap over turns against it: where the Korean "
                    "Speaker played worse than the English one, part of a Korean Listener's "
                    "lower score is the Speaker's. `koed judge --run RUN --speaker-check`.",
                    judge=md(config.label),
                )
            )
            tables.show(_mine(table, run_id), hide_index=True, column_config=_columns())
        return
