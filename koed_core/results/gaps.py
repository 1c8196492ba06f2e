"""The cultural empathy gap: Korean minus English, paired by dialogue, with a bootstrap CI.

Scores come from the judge (per response and dimension), from the raters (the mean of
their scores) and from emotion recognition (hit for ``single`` runs, F1 for ``multi``;
read both ways: an answer naming no label as a miss, the paper's reading, and over the
answers that named one).
For each run and metric, only dialogues answered in both languages count; the gap is
the mean of (ko - en) over them and its 95% CI resamples those dialogues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from koed_core.bootstrap import bootstrap_means
from koed_core.db import JudgeConfig, Judgments, Ratings, Runs, Store
from koed_core.dialogues.dialogue import Dialogue
from koed_core.models.runs import run_labels

SOURCE_COLUMNS = [*JudgeConfig("", "", "", "").as_columns(), "study_id"]
"""A score's source: the judge configuration's columns, as it names them (its temperature
too), or the study."""
KEYS = [
    "run_id",
    "run_label",
    "model",
    "provenance",
    "protocol",
    "prompt_set",
    "reference",
    "dataset_sha256",
    "source",
    *SOURCE_COLUMNS,
    "metric",
]
EMOTION_METRIC = "emotion"
"""Emotion recognition as the paper reads it: an answer naming no label is a miss (0)."""
EMOTION_ANSWERED = "emotion (answered)"
"""The same over the answers that named a label only."""
COLUMNS = [*KEYS, "conv_id", "lang", "value"]
TABLE_COLUMNS = [*KEYS, "pairs", "en", "ko", "gap", "ci_low", "ci_high", "ci_note"]


def _empty() -> pd.DataFrame:
    return pd.DataFrame(columns=COLUMNS)


def score_frame(
    store: Store, judge: JudgeConfig | None = None, study_id: int | None = None
) -> pd.DataFrame:
    """Long-form scores of batch runs: one row per (run, dialogue, language, source, metric).

    Each source is one provenance: the judge rows come from ``judge`` alone, the rater
    rows from study ``study_id`` alone (the mean of its raters), and emotion recognition
    from the runs themselves. Leave ``judge`` or ``study_id`` out to leave that source out.
    """
    runs = Runs(store).run_table(kind="batch")
    if runs.empty:
        return _empty()
    parts = []
    if judge is not None:
        judged = Judgments(store).scores(judge)
        judged = judged.rename(columns={"dimension": "metric", "score": "value"})
        parts.append(judged.assign(source="judge", **judge.as_columns()))
    if study_id is not None:
        rated = Ratings(store).long_scores(study_id)
        if not rated.empty:
            means = rated.groupby(["run_id", "conv_id", "lang", "dimension"], as_index=False)[
                "score"
            ].mean()
            means = means.rename(columns={"dimension": "metric", "score": "value"})
            parts.append(means.assign(source="raters", study_id=study_id))
    parts += emotion_parts(Runs(store).emotion_values())
    parts = [p for p in parts if not p.empty]
    if not parts:
        return _empty()
    frame = pd.concat(parts, ignore_index=True)
    for column in SOURCE_COLUMNS:
        if column not in frame:
            frame[column] = None
    meta = runs[
        ["run_id", "model", "provenance", "protocol", "prompt_set", "reference", "dataset_sha256"]
    ]
    meta = meta.assign(run_label=meta["run_id"].map(run_labels(store)))
    merged = frame.merge(meta, on="run_id", how="inner")
    return merged[COLUMNS] if not merged.empty else _empty()


def emotion_parts(emotions: pd.DataFrame) -> list[pd.DataFrame]:
    """Emotion recognition read both ways, as two metrics of the source "emotion": every
    answer (one naming no label is a miss, the paper's reading) and answered items only."""
    if emotions.empty:
        return []
    answered = emotions[emotions["given"] == 1]
    return [
        emotions.drop(columns="given").assign(source="emotion", metric=EMOTION_METRIC),
        answered.drop(columns="given").assign(source="emotion", metric=EMOTION_ANSWERED),
    ]


MIN_PAIRS_FOR_CI = 2


def paired_gap(
    en: np.ndarray, ko: np.ndarray, seed: int = 0
) -> tuple[float, float | None, float | None]:
    """Mean of ko - en over paired dialogues, and a bootstrap 95% CI over dialogues.

    With fewer than two pairs there is no CI (a resample of one pair is that pair: a
    "CI" equal to the gap would look precise and mean nothing); both bounds are None.
    """
    diffs = np.asarray(ko, dtype=float) - np.asarray(en, dtype=float)
    if len(diffs) == 0:
        raise ValueError("no dialogue is answered in both languages")
    if len(diffs) < MIN_PAIRS_FOR_CI:
        return float(diffs.mean()), None, None
    low, high = np.percentile(bootstrap_means(diffs, seed), [2.5, 97.5])
    return float(diffs.mean()), float(low), float(high)


def gap_table(
    frame: pd.DataFrame,
    groups: Mapping[str, Sequence[str]] | None = None,
    breakdown: str | None = None,
) -> pd.DataFrame:
    """One row per run x source x metric (x breakdown group): en, ko, gap, CI, pairs.

    Args:
        frame: from :func:`score_frame`.
        groups: conv_id -> the groups it belongs to (its labels, or ["jeong/han"]...);
            required with ``breakdown``.
        breakdown: a column name for the groups in the result (e.g. "label").
    """
    if frame.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    data = frame.assign(**{c: None for c in KEYS if c not in frame})
    keys = list(KEYS)
    if breakdown:
        exploded = pd.DataFrame(
            [(conv, group) for conv, names in (groups or {}).items() for group in names],
            columns=["conv_id", breakdown],
        )
        data = data.merge(exploded, on="conv_id", how="inner")
        keys.append(breakdown)
    _refuse_mixed(data)
    rows = []
    for key, cell in data.groupby(keys, sort=True, dropna=False):
        wide = cell.pivot_table(index="conv_id", columns="lang", values="value", aggfunc="mean")
        if "en" not in wide or "ko" not in wide:
            continue
        both = wide.dropna(subset=["en", "ko"])
        if both.empty:
            continue
        gap, low, high = paired_gap(both["en"].to_numpy(), both["ko"].to_numpy())
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "pairs": len(both),
                "en": float(both["en"].mean()),
                "ko": float(both["ko"].mean()),
                "gap": gap,
                "ci_low": low,
                "ci_high": high,
                "ci_note": ""
                if low is not None
                else f"no CI: {len(both)} pair (needs {MIN_PAIRS_FOR_CI})",
            }
        )
    if not rows:
        return pd.DataFrame(columns=[*keys, *TABLE_COLUMNS[len(KEYS) :]])
    return pd.DataFrame(rows)


def _refuse_mixed(frame: pd.DataFrame) -> None:
    """A gap table holds at most one judge configuration and one study."""
    for source, columns in (("judge", SOURCE_COLUMNS[:4]), ("raters", ["study_id"])):
        part = frame[frame["source"] == source]
        found = part[columns].drop_duplicates()
        if len(found) > 1:
            listing = "; ".join(" ".join(str(v) for v in row) for row in found.itertuples(False))
            raise ValueError(f"scores from more than one {source} source; choose one of: {listing}")


def label_groups(dialogues: Sequence[Dialogue]) -> dict[str, list[str]]:
    """conv_id -> its gold labels, for the per-label breakdown."""
    return {d.conv_id: list(d.labels) for d in dialogues}


def korean_groups(dialogues: Sequence[Dialogue]) -> dict[str, list[str]]:
    """conv_id -> "jeong/han" or "other labels"."""
    return {d.conv_id: ["jeong/han" if d.korean_emotion else "other labels"] for d in dialogues}
