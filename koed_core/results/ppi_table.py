"""One study and one judge configuration's gap three ways, named and with provenance.

Reads the judge's scores on every response of the study's runs and the study's ratings
(a rated item's score is the mean of its k ratings), and builds what ``koed gap``, the
Gap page, the Agreement page and the export show: the estimates of
:mod:`koed_core.results.ppi` and the judge-minus-people gap per rater group.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import pandas as pd

from koed_core import i18n
from koed_core.db import Inclusions, JudgeConfig, Judgments, Ratings, Runs, Sampling, Store
from koed_core.i18n import N_
from koed_core.judge.rubric import codes
from koed_core.models.runs import run_labels
from koed_core.rating.sampling import describe, refusal
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi
from koed_core.results.artefact import artefact_frame

ESTIMATOR_WORDS = {
    "judge": N_("judge only"),
    "human": N_("people only"),
    "ppi": N_("PPI++ (judge corrected by people)"),
}
"""How each estimator is named wherever it is shown; PPI always says it is PPI."""
FILE_NAMES = {"judge": "judge-only", "human": "people-only", "ppi": "ppi"}
RATER_GROUPS = (N_("all raters"), N_("native ko"), N_("not native ko"))
ITEM_SCORE = "a rated item's score is the mean of its k ratings"
RUN_COLUMNS = ["run_label", "model", "provenance", "protocol", "prompt_set", "reference"]


@dataclass(frozen=True)
class GapEstimates:
    """The three estimates and the judge-artefact table of one study and judge."""

    estimates: pd.DataFrame
    artefact: pd.DataFrame
    sampling: Sampling
    refusal: str | None
    provenance: dict[str, Any]


def judged_scores(
    store: Store, judge: JudgeConfig, run_ids: list[str], langs: tuple[str, ...]
) -> pd.DataFrame:
    """run_id, conv_id, lang, metric, judge: the judge's score of each response."""
    frame = Judgments(store).scores(judge, run_ids)
    frame = frame[frame["lang"].isin(langs) & frame["dimension"].isin(codes())]
    frame = frame.dropna(subset=["score"]).rename(columns={"dimension": "metric", "score": "judge"})
    return frame[["run_id", "conv_id", "lang", "metric", "judge"]].astype({"judge": float})


def human_scores(long: pd.DataFrame, raters: set[str] | None = None) -> pd.DataFrame:
    """run_id, conv_id, lang, metric, human, k: each rated item's mean over its k
    ratings (of ``raters`` only, when given)."""
    if raters is not None:
        long = long[long["rater"].isin(raters)]
    if long.empty:
        return pd.DataFrame(columns=["run_id", "conv_id", "lang", "metric", "human", "k"])
    grouped = long.groupby(["run_id", "conv_id", "lang", "dimension"], as_index=False)["score"]
    means = grouped.agg(human="mean", k="count")
    return means.rename(columns={"dimension": "metric"}).astype({"human": float})


def rater_groups(store: Store, long: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Item scores from all raters, from native Korean speakers, and from the others."""
    native = Ratings(store).native_languages()
    raters = set(long["rater"])
    ko = {r for r in raters if native.get(r) == "ko"}
    return {
        "all raters": human_scores(long),
        "native ko": human_scores(long, ko),
        "not native ko": human_scores(long, raters - ko),
    }


def gap_estimates(
    store: Store,
    study_id: int,
    judge: JudgeConfig,
    hidden: set[str] | None = None,
    mean_intervals: bool = True,
) -> GapEstimates:
    """The gap three ways and the judge artefact for one study and judge configuration.

    Args:
        hidden: runs to leave out (a visitor's view of runs under an open study).
        mean_intervals: False leaves out the en and ko means' judge-only and people-only
            intervals (what a page that charts the gaps needs; a file has them all).
    """
    config = StudyRules(store).config(study_id)
    run_ids = [r for r in config.run_ids if r not in (hidden or set())]
    judged = judged_scores(store, judge, run_ids, config.langs)
    long = Ratings(store).long_scores(study_id)
    long = long[long["run_id"].isin(run_ids)]
    groups = rater_groups(store, long)
    inclusion = Inclusions(store).probabilities(study_id)  # empty: drawn uniformly
    with i18n.speaking("en"):  # kept for every reader: words in English, see in_reader_words
        refused = refusal(config.sampling)
        about = provenance(store, study_id, judge, config.sampling, run_ids)
    estimates = ppi.estimate_frame(
        judged,
        groups["all raters"],
        config.sampling,
        refused,
        mean_intervals=mean_intervals,
        inclusion=inclusion or None,
    )
    artefact = artefact_frame(judged, groups, config.sampling, inclusion=inclusion or None)
    source = {"study_id": study_id, **judge.as_columns()}
    meta = _run_meta(store)
    return GapEstimates(
        estimates.merge(meta, on="run_id", how="left").assign(**source),
        artefact.merge(meta, on="run_id", how="left").assign(**source),
        config.sampling,
        refused,
        {**about, "bilingual_design": config.bilingual},
    )


def in_reader_words(result: GapEstimates) -> GapEstimates:
    """``result`` with its sentences (the study's design, a refusal of PPI and that
    refusal as the PPI rows' note) in the reader's language.

    :func:`gap_estimates` is computed once for every reader (a page keeps it), so it
    holds its sentences in English, as an export wants them; a page draws this instead.
    """
    if result.refusal is None:
        refused = None
        estimates = result.estimates
    else:
        refused = refusal(result.sampling)
        notes = result.estimates["note"].replace({result.refusal: refused})
        estimates = result.estimates.assign(note=notes)
    words = {**result.provenance, "study_sampling": describe(result.sampling)}
    return replace(result, estimates=estimates, refusal=refused, provenance=words)


def _run_meta(store: Store) -> pd.DataFrame:
    runs = Runs(store).run_table(kind=None)
    if runs.empty:
        return pd.DataFrame(columns=["run_id", *RUN_COLUMNS, "dataset_sha256"])
    labels = run_labels(store)
    runs = runs.assign(run_label=runs["run_id"].map(labels))
    return runs[["run_id", *RUN_COLUMNS, "dataset_sha256"]]


def provenance(
    store: Store, study_id: int, judge: JudgeConfig, sampling: Sampling, run_ids: list[str]
) -> dict[str, Any]:
    """Where these estimates come from, for the export's provenance."""
    shas = sorted(
        set(_run_meta(store).set_index("run_id").reindex(run_ids)["dataset_sha256"].dropna())
    )
    design = {k: v for k, v in asdict(sampling).items() if k != "strata"}
    return {
        "estimators": {
            "judge": "the judge's mean over every response of the study's runs it scored; "
            "bootstrap 95% CI over dialogues",
            "human": f"the raters' mean over the rated items ({ITEM_SCORE}); bootstrap 95% CI",
            "ppi": "PPI++ (ppi_py.ppi_mean_ci, power-tuned lambda): the judge on the unrated "
            "dialogues corrected by judge-minus-people on the rated ones; 95% CLT interval",
        },
        "quantities": "en and ko are over the gap's dialogues (judged in both languages; "
        "rated in both for people) and PPI++ fits them with the gap's lambda, so ko - en is "
        "the gap in every estimator",
        "gain": "gain = n_effective / n_people; gain_ceiling = 1 / (1 - rho^2 N / (N + n)) "
        "(rho: judge-people correlation on the rated units, N: judged units nobody rated); "
        "gain_limit = 1 / (1 - rho^2)",
        "ppi_python": ppi.ppi_version(),
        "alpha": ppi.ALPHA,
        "item_score": ITEM_SCORE,
        "study_id": study_id,
        "study_sampling": describe(sampling),
        "study_design": design,
        "ppi_refused": refusal(sampling),
        "inclusion": "active: each rated dialogue weighted by 1 / its stored inclusion "
        "probability (study_inclusion; Zrnic and Candes 2024)"
        if sampling.method == "active"
        else "uniform: every dialogue's inclusion probability n / N",
        "judge": judge.as_columns(),
        "runs": run_ids,
        "dataset_sha256": shas,
    }


def for_estimator(result: GapEstimates, estimator: str) -> pd.DataFrame:
    """The rows of one estimator, named (``estimator_name``) so a table or a file read
    alone still says which estimate it holds."""
    rows = result.estimates[result.estimates["estimator"] == estimator]
    return rows.assign(estimator_name=ESTIMATOR_WORDS[estimator])


def gap_rows(result: GapEstimates, estimator: str) -> pd.DataFrame:
    """One estimator's gaps in the shape :func:`koed_core.results.figures.gap_figure`
    draws (``gap``, ``ci_low``, ``ci_high`` per run and metric)."""
    rows = for_estimator(result, estimator)
    means = rows.pivot_table(index=["run_id", "metric"], columns="quantity", values="estimate")
    gaps = rows[rows["quantity"] == "gap"].dropna(subset=["estimate"])
    counted = "N_judge" if estimator == "judge" else "n_people"
    gaps = gaps.join(means.reindex(columns=["en", "ko"]), on=["run_id", "metric"])
    return gaps.rename(columns={"estimate": "gap"}).assign(source=estimator, pairs=gaps[counted])


def side_by_side(result: GapEstimates) -> pd.DataFrame:
    """The gaps of the three estimators in one row per run and dimension, each with its
    interval, n people, N judge and PPI's effective n: the table a reader compares."""
    gaps = result.estimates[result.estimates["quantity"] == "gap"]
    if gaps.empty:
        return pd.DataFrame()
    wide = gaps.pivot_table(
        index=["run_label", "run_id", "metric"],
        columns="estimator",
        values=["estimate", "ci_low", "ci_high"],
    )  # a refused PPI's empty columns come back with the reindex below
    wide.columns = [f"{name}_{value}" for value, name in wide.columns]
    counts = gaps[gaps["estimator"] == "ppi"].set_index(["run_label", "run_id", "metric"])
    extra = ["n_people", "N_judge", "n_effective", "judge_worth_ratings", "judge_people_corr"]
    extra += ["gain", "gain_ceiling", "gain_limit", "note"]
    wide = wide.join(counts[extra])
    order = [f"{e}_{v}" for e in ppi.ESTIMATORS for v in ("estimate", "ci_low", "ci_high")]
    wide = wide.reindex(columns=[*order, *extra])
    return wide.reset_index().rename(columns={"note": "ppi_note"})
