"""Numbers the results pages draw, kept until the database's change stamp moves, and
only what the viewer may see.

Computing the gap or agreement tables from every stored judgment takes about a second
on an admin's database; a click on a select box should not pay it again. Each cached
function takes the shared ``Store``, hashed by its path and ``Store.stamp()`` (Streamlit's
``hash_funcs``): any new run, answer, judgment or rating (from this app, the worker or the
command line) moves the stamp, so nothing is shown that the database no longer says.
Results are copies (``st.cache_data``), so a page may change what it gets.

Every function that returns numbers about runs or studies takes the page's ``viewer``
(``auth.viewer()``) and leaves out what :meth:`Viewer.allowed` refuses. Given none it
uses a visitor's view: a page that forgets the viewer shows less, never more.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.core import shared_compute
from koed_core import i18n
from koed_core.db import JudgeConfig, JudgeConfigUse, Judgments, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.results import (
    agreement,
    gaps,
    ppi_table,
    reproduce,
    sensitivity,
    shared_tables,
    turn_gaps,
)
from koed_core.results.viewer import Viewer, blind_viewer

ENTRIES = 32
HASH_FUNCS = {
    Store: lambda store: (store.path, store.stamp()),
    Viewer: Viewer.key,
    Dataset: lambda dataset: dataset.sha256,  # immutable: its hash names its dialogues
}
kept = st.cache_data(max_entries=ENTRIES, show_spinner=False, hash_funcs=HASH_FUNCS)


def _seen_by(viewer: Viewer | None, store: Store) -> Viewer:
    return viewer if viewer is not None else blind_viewer(store)


@kept
def judge_uses(store: Store, run_ids: Sequence[str] | None) -> list[JudgeConfigUse]:
    """The judge configurations that scored these runs, newest first."""
    return Judgments(store).configs(list(run_ids) if run_ids is not None else None)


@kept
def score_frame(
    store: Store, judge: JudgeConfig | None, study_id: int | None, viewer: Viewer | None = None
) -> pd.DataFrame:
    """``gaps.score_frame`` for this judge configuration and study, without the runs and
    study the viewer may not see."""
    seen = _seen_by(viewer, store)
    study = study_id if study_id is None or seen.allowed("see-study", study_id) else None
    return seen.shown(gaps.score_frame(store, judge=judge, study_id=study), study=study)


def gap_table(
    store: Store,
    judge: JudgeConfig | None,
    study_id: int | None,
    sources: Sequence[str],
    dataset_sha256: str | None,
    by: str | None,
    dataset: Dataset,
    viewer: Viewer | None = None,
) -> pd.DataFrame | None:
    """The paired gap table of these sources (one dataset's scores when it is named),
    broken down ``by`` label or jeong/han group of ``dataset``'s dialogues.

    A breakdown (seconds: a bootstrap per group) is computed once for every visitor and
    server process (``shared_compute``): None after drawing its progress."""
    if by is None:
        return _gap_table(store, judge, study_id, sources, dataset_sha256, viewer)
    seen = _seen_by(viewer, store)
    study = study_id if study_id is None or seen.allowed("see-study", study_id) else None
    runs = score_frame(store, judge, study_id, viewer)["run_id"].dropna().astype(str)
    inputs = {
        "judge": shared_tables.judge_inputs(judge),
        "study": study,
        "runs": sorted(set(runs)),  # the runs this viewer may see: the page's rules decide
        "sources": list(sources),
        "dataset_sha256": dataset_sha256,
        "by": by,
    }
    return shared_compute.kept_table("gap_breakdown", inputs, dataset)


@kept
def _gap_table(
    store: Store,
    judge: JudgeConfig | None,
    study_id: int | None,
    sources: Sequence[str],
    dataset_sha256: str | None,
    viewer: Viewer | None,
) -> pd.DataFrame:
    frame = score_frame(store, judge, study_id, viewer)
    if dataset_sha256 is not None:
        frame = frame[frame["dataset_sha256"] == dataset_sha256]
    return gaps.gap_table(frame[frame["source"].isin(sources)], None, None)


@kept
def paper_table(
    store: Store, dataset_sha256: str, judge: JudgeConfig, viewer: Viewer | None = None
) -> pd.DataFrame:
    """The paper's table (a row per model and protocol) for one judge configuration."""
    seen = _seen_by(viewer, store)
    runs = reproduce.stored_runs(store, dataset_sha256)
    shown = {key: run for key, run in runs.items() if seen.allowed("see-run", run)}
    return reproduce.paper_table(store, shown, judge)


@kept
def agreement_inputs(
    store: Store, study_id: int, judge: JudgeConfig | None, viewer: Viewer | None = None
) -> agreement.AgreementInputs:
    """One study's ratings beside one judge configuration's scores (no ratings of a study
    the viewer may not see)."""
    allowed = _seen_by(viewer, store).allowed("see-study", study_id)
    return agreement.load_inputs(store, study_id if allowed else None, judge)


def agreement_table(
    store: Store,
    study_id: int,
    judge: JudgeConfig | None,
    lang: str | None = None,
    viewer: Viewer | None = None,
) -> pd.DataFrame:
    """The agreement table of one study against one judge configuration, its readings in
    ``lang`` (default: the page's language; a download asks for English, as exports are)."""
    return _agreement_table(store, study_id, judge, lang or i18n.language(), viewer)


@kept
def _agreement_table(
    store: Store, study: int, judge: JudgeConfig | None, lang: str, viewer: Viewer | None
) -> pd.DataFrame:
    # the language is part of the key: a Korean reader's table must not be served in English
    with i18n.speaking(lang):
        return agreement.table(agreement_inputs(store, study, judge, viewer))


def alt_test(
    store: Store,
    study_id: int,
    judge: JudgeConfig,
    lang: str | None = None,
    viewer: Viewer | None = None,
) -> pd.DataFrame:
    """The Alternative Annotator Test of one study against one judge configuration, its
    readings in ``lang`` (default: the page's language)."""
    return _alt_test(store, study_id, judge, lang or i18n.language(), viewer)


@kept
def _alt_test(
    store: Store, study: int, judge: JudgeConfig, lang: str, viewer: Viewer | None
) -> pd.DataFrame:
    with i18n.speaking(lang):
        return agreement.alt_test(agreement_inputs(store, study, judge, viewer))


@kept
def disagreements(
    store: Store,
    study_id: int,
    judge: JudgeConfig | None,
    dimension: str,
    viewer: Viewer | None = None,
) -> pd.DataFrame:
    """Where the judge and people differ most on one dimension: response texts, the
    judge's rationale and raters' comments, so nothing unless the viewer may read words."""
    seen = _seen_by(viewer, store)
    if not seen.allowed("see-words"):
        return pd.DataFrame()
    inputs = agreement_inputs(store, study_id, judge, seen)
    pairs = agreement.paired(inputs)
    shown = pairs[pairs["dimension"] == dimension]
    return agreement.disagreements(store, inputs, shown)


def ppi_plan(store: Store, study_id: int, judge: JudgeConfig, width: float) -> pd.DataFrame:
    """The next-batch plan of one study (``ppi_plan.plan``: a power analysis per run and
    dimension, the Studies page's slowest part at 1.2 s), kept until the stamp moves: a
    full reload of the page no longer pays it. Admins only see it (the page requires it)."""
    return _ppi_plan(store, study_id, judge, width, i18n.language())


@kept
def _ppi_plan(
    store: Store, study_id: int, judge: JudgeConfig, width: float, lang: str
) -> pd.DataFrame:
    # the language is part of the key: the plan's notes are sentences in the reader's words
    from koed_core.results import ppi_plan as planner

    with i18n.speaking(lang):
        return planner.plan(store, study_id, judge, width)


@kept
def sensitivity_bases(store: Store, viewer: Viewer | None = None) -> list[tuple[str, JudgeConfig]]:
    """Runs with the authors' steps that have variants stored ("what moves the gap")."""
    seen = _seen_by(viewer, store)
    return [(run, judge) for run, judge in sensitivity.bases(store) if seen.allowed("see-run", run)]


@kept
def sensitivity_table(
    store: Store, run_id: str, judge: JudgeConfig, viewer: Viewer | None = None
) -> pd.DataFrame:
    """The base and its one-step variants: each one's gap and change from the base."""
    seen = _seen_by(viewer, store)
    if not seen.allowed("see-run", run_id):
        return pd.DataFrame(columns=["variant", "metric", "run_id"])
    return seen.shown(sensitivity.table(store, sensitivity.find_variants(store, run_id, judge)))


@kept
def turn_gap_table(
    store: Store, judge: JudgeConfig | None, study_id: int | None, viewer: Viewer | None = None
) -> pd.DataFrame:
    """The gap over turns of every episode run, for this judge configuration and study."""
    seen = _seen_by(viewer, store)
    study = study_id if study_id is None or seen.allowed("see-study", study_id) else None
    frame = turn_gaps.turn_frame(store, judge, study)
    return turn_gaps.turn_gap_table(seen.shown(frame, study=study))


def gap_estimates(
    store: Store,
    study_id: int,
    judge: JudgeConfig,
    viewer: Viewer | None = None,
    mean_intervals: bool = False,
) -> ppi_table.GapEstimates | None:
    """The gap three ways (judge only, people only, PPI++) of one study and judge
    configuration, without the runs the viewer may not see in this study's numbers (a
    published study's own runs are shown, whatever open study also holds them). What a
    page charts (seconds)
    is computed once for every visitor and server process (``shared_compute``): None
    after drawing its progress. The en and ko means' bootstrap intervals only when asked
    (a download, computed then: a third of the cost)."""
    seen = _seen_by(viewer, store)
    if mean_intervals:
        return _all_intervals(store, study_id, judge, seen)
    inputs = {
        "study": study_id,
        "judge": shared_tables.judge_inputs(judge),
        "hidden": sorted(seen.hidden_in(study_id)),
    }  # no language: its sentences are kept in English, said in the reader's by the page
    return shared_compute.kept_estimates(inputs)


@kept
def _all_intervals(
    store: Store, study_id: int, judge: JudgeConfig, seen: Viewer
) -> ppi_table.GapEstimates:
    return ppi_table.gap_estimates(store, study_id, judge, set(seen.hidden_in(study_id)), True)


def perception(
    store: Store, judge: JudgeConfig, viewer: Viewer | None = None
) -> pd.DataFrame | None:
    """``perception.perception_table`` (the gap where the emotion was recognised and
    where it was missed, bootstrapped: seconds on an admin's database), computed once for
    every visitor and server process (``shared_compute``), as the viewer may see it; None
    after drawing the computation's progress. Its notes in English, the same for every
    reader (a page draws ``perception.reader_notes``)."""
    inputs = {"judge": shared_tables.judge_inputs(judge)}
    table = shared_compute.kept_table("perception", inputs)
    return None if table is None else _seen_by(viewer, store).shown(table)
