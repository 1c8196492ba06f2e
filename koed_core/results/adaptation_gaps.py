"""Does the empathy gap sit in the adapted dialogues? The gap broken down by annotation.

Each dialogue's final category and signal types come from one annotation project (the
reviewer's answer, else the annotators' when they agree); the gap is then the paired
KoED-ED gap of :mod:`koed_core.results.gaps`, per category and per signal type, with the
project and its taxonomy version named on every row. A dialogue with no final answer
is left out, never guessed. The similarity of the Adaptation page is set against the
category too: does drift between ko and en predict that a dialogue was adapted?
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from koed_core.annotation.taxonomy import CONTEXT_MODIFIED, SIMPLY_TRANSFERRED
from koed_core.bootstrap import percentile_interval, resample_indices
from koed_core.results.gaps import gap_table

NO_SIGNAL = "no signal marked"
BY_CATEGORY = "category"
BY_TYPE = "signal_type"


def groups(final: pd.DataFrame, by: str) -> dict[str, list[str]]:
    """conv_id -> its groups: its category, or each signal type it has (a decided
    dialogue with none is "no signal marked")."""
    decided = final[final["category"].notna()]
    if by == BY_CATEGORY:
        return {r.conv_id: [r.category] for r in decided.itertuples()}
    return {r.conv_id: list(r.types) or [NO_SIGNAL] for r in decided.itertuples()}


def breakdown(
    scores: pd.DataFrame, final: pd.DataFrame, by: str, project: dict[str, object]
) -> pd.DataFrame:
    """The gap table (per run, source, metric) per category or signal type, each row
    naming the annotation project and taxonomy version its groups come from."""
    table = gap_table(scores, groups(final, by), breakdown=by)
    return table.assign(
        annotation_project=f"{project['id']}: {project['name']}",
        taxonomy_version=project["taxonomy_version"],
    )


def similarity_by_category(departures: pd.DataFrame, final: pd.DataFrame) -> pd.DataFrame:
    """Per category: how many dialogues, and their mean ko/en turn similarity (mean,
    median): is a context-modified dialogue further from its English original?"""
    data = final[final["category"].notna()].merge(
        departures[["conv_id", "mean_similarity"]], on="conv_id", how="inner"
    )
    if data.empty:
        return pd.DataFrame(columns=["category", "dialogues", "mean", "median"])
    grouped = data.groupby("category")["mean_similarity"]
    return pd.DataFrame(
        {
            "dialogues": grouped.size(),
            "mean": grouped.mean().round(4),
            "median": grouped.median().round(4),
        }
    ).reset_index()


def drift_predicts(
    departures: pd.DataFrame, final: pd.DataFrame, seed: int = 0
) -> dict[str, float | int | None]:
    """How well low similarity picks out context-modified among the ED dialogues: the
    ROC AUC (0.5 = no better than chance, 1 = every adapted dialogue drifts more) with a
    bootstrap 95% CI over dialogues. None where one of the two categories is missing."""
    data = final[final["category"].isin([SIMPLY_TRANSFERRED, CONTEXT_MODIFIED])].merge(
        departures[["conv_id", "mean_similarity"]], on="conv_id", how="inner"
    )
    data = data.dropna(subset=["mean_similarity"])
    y = (data["category"] == CONTEXT_MODIFIED).to_numpy(dtype=int)
    drift = -data["mean_similarity"].to_numpy(dtype=float)
    out: dict[str, float | int | None] = {
        "dialogues": len(data),
        "context_modified": int(y.sum()),
        "auc": None,
        "ci_low": None,
        "ci_high": None,
    }
    if len(set(y)) < 2:
        return out
    from sklearn.metrics import roc_auc_score  # here: a page that draws no AUC starts faster

    out["auc"] = round(float(roc_auc_score(y, drift)), 4)
    draws = resample_indices(len(y), seed)
    interval = percentile_interval(_boot_auc(y[draws], drift[draws]))
    if interval is not None:
        out.update(ci_low=round(interval[0], 4), ci_high=round(interval[1], 4))
    return out


def _boot_auc(y: np.ndarray, score: np.ndarray) -> np.ndarray:
    """The ROC AUC of every bootstrap draw at once, from ranks (ties averaged, as
    scikit-learn counts them); NaN for a draw with one class only."""
    from scipy.stats import rankdata  # here: scipy.stats takes most of a second to import

    ranks = rankdata(score, axis=1)
    positives = y.sum(axis=1)
    negatives = y.shape[1] - positives
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = ((ranks * y).sum(axis=1) - positives * (positives + 1) / 2) / (positives * negatives)
    return np.where((positives > 0) & (negatives > 0), auc, np.nan)
