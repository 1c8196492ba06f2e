"""Numbers the results pages draw, kept until the database's change stamp moves.

Computing the gap or agreement tables from every stored judgment takes about a second
on an admin's database; a click on a select box should not pay it again. Each cached
function takes the database path and ``Store.stamp()`` as its first arguments: any new
run, answer, judgment or rating (from this app, the worker or the command line) moves the
stamp, so nothing is shown that the database no longer says. Results are copies
(``st.cache_data``), so a page may change what it gets.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.shared import resources
from koed_core import i18n
from koed_core.db import JudgeConfig, JudgeConfigUse, Judgments, Ratings, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.results import agreement, gaps, ppi_table, reproduce, sensitivity, turn_gaps

ENTRIES = 32


def _key(store: Store) -> tuple[str, int]:
    return store.path, store.stamp()


def judge_uses(store: Store, run_ids: Sequence[str] | None) -> list[JudgeConfigUse]:
    """The judge configurations that scored these runs, newest first."""
    return _judge_uses(*_key(store), tuple(run_ids) if run_ids is not None else None)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _judge_uses(db: str, stamp: int, run_ids: tuple[str, ...] | None) -> list[JudgeConfigUse]:
    return Judgments(resources.store_at(db)).configs(list(run_ids) if run_ids else run_ids)


def blind_runs(store: Store) -> set[str]:
    """Runs in a study still being rated: their model names and scores reach admins
    only until the study closes (a rater or crowd worker must not learn who wrote what)."""
    return _blind_runs(*_key(store))


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _blind_runs(db: str, stamp: int) -> set[str]:
    return Ratings(resources.store_at(db)).runs_under_open_studies()


def score_frame(
    store: Store, judge: JudgeConfig | None, study_id: int | None, blind: bool = False
) -> pd.DataFrame:
    """``gaps.score_frame`` for this judge configuration and study; ``blind`` leaves out
    runs under an open study (what visitors and raters get)."""
    return _score_frame(*_key(store), judge, study_id, blind)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _score_frame(
    db: str, stamp: int, judge: JudgeConfig | None, study: int | None, blind: bool = False
) -> pd.DataFrame:
    frame = gaps.score_frame(resources.store_at(db), judge=judge, study_id=study)
    if blind and not frame.empty:
        frame = frame[~frame["run_id"].isin(_blind_runs(db, stamp))]
    return frame


def gap_table(
    store: Store,
    judge: JudgeConfig | None,
    study_id: int | None,
    sources: Sequence[str],
    dataset_sha256: str | None,
    by: str | None,
    dataset: Dataset,
    blind: bool = False,
) -> pd.DataFrame:
    """The paired gap table of these sources (one dataset's scores when it is named),
    broken down ``by`` label or jeong/han group of ``dataset``'s dialogues."""
    return _gap_table(
        *_key(store),
        judge,
        study_id,
        tuple(sources),
        dataset_sha256,
        by,
        dataset,
        dataset.sha256,
        blind,
    )


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _gap_table(
    db: str,
    stamp: int,
    judge: JudgeConfig | None,
    study: int | None,
    sources: tuple[str, ...],
    sha: str | None,
    by: str | None,
    _dataset: Dataset,
    dataset_sha: str,
    blind: bool = False,
) -> pd.DataFrame:
    frame = _score_frame(db, stamp, judge, study, blind)
    if sha is not None:
        frame = frame[frame["dataset_sha256"] == sha]
    groups = None
    if by == "label":
        groups = gaps.label_groups(_dataset.dialogues)
    elif by == "group":
        groups = gaps.korean_groups(_dataset.dialogues)
    return gaps.gap_table(frame[frame["source"].isin(sources)], groups, by)


def paper_table(
    store: Store, dataset_sha256: str, judge: JudgeConfig, blind: bool = False
) -> pd.DataFrame:
    """The paper's table (a row per model and protocol) for one judge configuration."""
    return _paper_table(*_key(store), dataset_sha256, judge, blind)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _paper_table(
    db: str, stamp: int, sha: str, judge: JudgeConfig, blind: bool = False
) -> pd.DataFrame:
    store = resources.store_at(db)
    runs = reproduce.stored_runs(store, sha)
    if blind:
        hidden = _blind_runs(db, stamp)
        runs = {key: run for key, run in runs.items() if run not in hidden}
    return reproduce.paper_table(store, runs, judge)


def agreement_inputs(
    store: Store, study_id: int, judge: JudgeConfig | None
) -> agreement.AgreementInputs:
    """One study's ratings beside one judge configuration's scores."""
    return _agreement_inputs(*_key(store), study_id, judge)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _agreement_inputs(
    db: str, stamp: int, study: int, judge: JudgeConfig | None
) -> agreement.AgreementInputs:
    return agreement.load_inputs(resources.store_at(db), study, judge)


def agreement_table(
    store: Store, study_id: int, judge: JudgeConfig | None, lang: str | None = None
) -> pd.DataFrame:
    """The agreement table of one study against one judge configuration, its readings in
    ``lang`` (default: the page's language; a download asks for English, as exports are)."""
    return _agreement_table(*_key(store), study_id, judge, lang or i18n.language())


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _agreement_table(
    db: str, stamp: int, study: int, judge: JudgeConfig | None, lang: str
) -> pd.DataFrame:
    # the language is part of the key: a Korean reader's table must not be served in English
    with i18n.speaking(lang):
        return agreement.table(_agreement_inputs(db, stamp, study, judge))


def disagreements(
    store: Store, study_id: int, judge: JudgeConfig | None, dimension: str
) -> pd.DataFrame:
    """Where the judge and people differ most on one dimension (admins' view)."""
    return _disagreements(*_key(store), study_id, judge, dimension)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _disagreements(
    db: str, stamp: int, study: int, judge: JudgeConfig | None, dimension: str
) -> pd.DataFrame:
    inputs = _agreement_inputs(db, stamp, study, judge)
    pairs = agreement.paired(inputs)
    shown = pairs[pairs["dimension"] == dimension]
    return agreement.disagreements(resources.store_at(db), inputs, shown)


def sensitivity_bases(store: Store) -> list[tuple[str, JudgeConfig]]:
    """Runs with the authors' steps that have variants stored ("what moves the gap")."""
    return _sensitivity_bases(*_key(store))


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _sensitivity_bases(db: str, stamp: int) -> list[tuple[str, JudgeConfig]]:
    return sensitivity.bases(resources.store_at(db))


def sensitivity_table(store: Store, run_id: str, judge: JudgeConfig) -> pd.DataFrame:
    """The base and its one-step variants: each one's gap and change from the base."""
    return _sensitivity_table(*_key(store), run_id, judge)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _sensitivity_table(db: str, stamp: int, run_id: str, judge: JudgeConfig) -> pd.DataFrame:
    store = resources.store_at(db)
    return sensitivity.table(store, sensitivity.find_variants(store, run_id, judge))


def turn_gap_table(
    store: Store, judge: JudgeConfig | None, study_id: int | None, blind: bool = False
) -> pd.DataFrame:
    """The gap over turns of every episode run, for this judge configuration and study
    (``blind``: runs under an open study left out)."""
    return _turn_gaps(*_key(store), judge, study_id, blind)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _turn_gaps(
    db: str, stamp: int, judge: JudgeConfig | None, study: int | None, blind: bool
) -> pd.DataFrame:
    frame = turn_gaps.turn_frame(resources.store_at(db), judge, study)
    if blind and not frame.empty:
        frame = frame[~frame["run_id"].isin(_blind_runs(db, stamp))]
    return turn_gaps.turn_gap_table(frame)


def gap_estimates(
    store: Store,
    study_id: int,
    judge: JudgeConfig,
    hidden: frozenset[str] = frozenset(),
    mean_intervals: bool = False,
) -> ppi_table.GapEstimates:
    """The gap three ways (judge only, people only, PPI++) of one study and judge
    configuration; ``hidden`` runs left out; the en and ko means' bootstrap intervals
    only when asked (a download: a third of the cost)."""
    return _gap_estimates(*_key(store), study_id, judge, hidden, mean_intervals)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _gap_estimates(
    db: str,
    stamp: int,
    study: int,
    judge: JudgeConfig,
    hidden: frozenset[str],
    mean_intervals: bool,
) -> ppi_table.GapEstimates:
    store = resources.store_at(db)
    return ppi_table.gap_estimates(store, study, judge, set(hidden), mean_intervals)
