"""The cultural empathy gap: Korean minus English, paired by dialogue, with a bootstrap CI.

Scores come from the judge (per response and dimension), from the raters (the mean of
their scores) and from emotion recognition (hit for ``single`` runs, F1 for ``multi``).
For each run and metric, only dialogues answered in both languages count; the gap is
the mean of (ko - en) over them and its 95% CI resamples those dialogues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from koed_core.dialogue import Dialogue
from koed_core.storage import Store

BOOTSTRAP = 2000
KEYS = ["run_id", "model", "provenance", "protocol", "reference", "source", "metric"]
EMOTION_METRIC = "emotion"


def _runs(store: Store) -> pd.DataFrame:
    rows = store.db.query(
        """select id as run_id, json_extract(config, '$.model_name') as model,
                  json_extract(config, '$.provenance') as provenance,
                  json_extract(config, '$.protocol') as protocol,
                  json_extract(config, '$.backend') = 'human' as reference
           from runs where kind = 'batch'"""
    )
    return pd.DataFrame(list(rows))


def score_frame(
    store: Store, judge_model: str | None = None, mode: str | None = None
) -> pd.DataFrame:
    """Long-form scores: one row per (run, dialogue, language, source, metric)."""
    runs = _runs(store)
    if runs.empty:
        return pd.DataFrame(columns=[*KEYS, "conv_id", "lang", "value"])
    parts = []
    tables = set(store.db.table_names())
    if "judgments" in tables:
        sql = """select s.run_id, s.conv_id, s.lang, j.dimension as metric, avg(j.score) as value
                 from judgments j join responses s on s.id = j.response_id
                 where j.score is not null and (? is null or (j.judge_model = ? and j.mode = ?))
                 group by s.run_id, s.conv_id, s.lang, j.dimension"""
        judged = pd.DataFrame(list(store.db.query(sql, [judge_model, judge_model, mode])))
        parts.append(judged.assign(source="judge"))
    if "ratings" in tables:
        sql = """select s.run_id, s.conv_id, s.lang, r.dimension as metric, avg(r.score) as value
                 from ratings r join responses s on s.id = r.response_key
                 group by s.run_id, s.conv_id, s.lang, r.dimension"""
        parts.append(pd.DataFrame(list(store.db.query(sql))).assign(source="raters"))
    sql = """select s.run_id, s.conv_id, s.lang, case json_extract(r.config, '$.protocol')
                    when 'multi' then e.f1 else e.hit end as value
             from emotion_scores e join responses s on s.id = e.response_id
             join runs r on r.id = s.run_id"""
    emotions = pd.DataFrame(list(store.db.query(sql)))
    parts.append(emotions.assign(source="emotion", metric=EMOTION_METRIC))
    frame = pd.concat([p for p in parts if not p.empty and "value" in p], ignore_index=True)
    if frame.empty:
        return pd.DataFrame(columns=[*KEYS, "conv_id", "lang", "value"])
    return frame.merge(runs, on="run_id", how="inner")


def paired_gap(en: np.ndarray, ko: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ko - en over paired dialogues, and a bootstrap 95% CI over dialogues."""
    diffs = np.asarray(ko, dtype=float) - np.asarray(en, dtype=float)
    if len(diffs) == 0:
        raise ValueError("no dialogue is answered in both languages")
    rng = np.random.default_rng(seed)
    resampled = diffs[rng.integers(0, len(diffs), size=(BOOTSTRAP, len(diffs)))].mean(axis=1)
    low, high = np.percentile(resampled, [2.5, 97.5])
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
        return pd.DataFrame()
    data = frame
    keys = list(KEYS)
    if breakdown:
        exploded = pd.DataFrame(
            [(conv, group) for conv, names in (groups or {}).items() for group in names],
            columns=["conv_id", breakdown],
        )
        data = frame.merge(exploded, on="conv_id", how="inner")
        keys.append(breakdown)
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
            }
        )
    return pd.DataFrame(rows)


def label_groups(dialogues: Sequence[Dialogue]) -> dict[str, list[str]]:
    """conv_id -> its gold labels, for the per-label breakdown."""
    return {d.conv_id: list(d.labels) for d in dialogues}


def korean_groups(dialogues: Sequence[Dialogue]) -> dict[str, list[str]]:
    """conv_id -> "jeong/han" or "other labels"."""
    return {d.conv_id: ["jeong/han" if d.korean_emotion else "other labels"] for d in dialogues}
