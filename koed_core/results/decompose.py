"""Language or culture? The gap split into what the language changes and what the
cultural content changes (issue 65).

With the two translated variants each dialogue exists in four cells:

==============  ================  ================
\\               Western content   Korean content
==============  ================  ================
English         ``en``            ``en-from-ko``
Korean          ``ko-from-en``    ``ko``
==============  ================  ================

Per model and metric, over the dialogues scored in all four cells (so that every number
below is a mean over the same dialogues, and the arithmetic between them holds exactly):

- the **language effect** at each content: ``ko-from-en - en`` (Western content) and
  ``ko - en-from-ko`` (Korean content);
- the **content effect** in each language: ``en-from-ko - en`` (English) and
  ``ko - ko-from-en`` (Korean);
- their **interaction**: the language effect at Korean content minus that at Western
  content, which is also the content effect in Korean minus that in English;
- the **total gap** ``ko - en``, which is the sum of either path through the square:
  language effect (Western) + content effect (Korean) = content effect (English) +
  language effect (Korean) = total gap.

Each is a mean of per-dialogue differences with a 95% percentile bootstrap interval over
dialogues (:mod:`koed_core.bootstrap`); all effects of one model and metric share the
same resamples, so their intervals are read together. A translated cell's text is a
translation: unless people checked it, translation quality is part of the language effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from koed_core.bootstrap import resample_indices
from koed_core.dialogues.variants import CELLS

MIN_DIALOGUES_FOR_CI = 2


@dataclass(frozen=True)
class Effect:
    """One comparison, in words: what it is, what it holds fixed, and its formula as
    weights on the four cells."""

    effect: str
    held_fixed: str
    weights: Mapping[str, float]

    def of(self, cells: Mapping[str, np.ndarray]) -> np.ndarray:
        """The per-dialogue values of the comparison."""
        return sum((w * cells[c] for c, w in self.weights.items()), np.zeros(len(cells["en"])))


EFFECTS: tuple[Effect, ...] = (
    Effect("language_effect", "western_content", {"ko-from-en": 1, "en": -1}),
    Effect("language_effect", "korean_content", {"ko": 1, "en-from-ko": -1}),
    Effect(
        "language_effect",
        "average_over_content",
        {"ko": 0.5, "en-from-ko": -0.5, "ko-from-en": 0.5, "en": -0.5},
    ),
    Effect("content_effect", "in_english", {"en-from-ko": 1, "en": -1}),
    Effect("content_effect", "in_korean", {"ko": 1, "ko-from-en": -1}),
    Effect(
        "content_effect",
        "average_over_language",
        {"ko": 0.5, "ko-from-en": -0.5, "en-from-ko": 0.5, "en": -0.5},
    ),
    Effect("interaction", "", {"ko": 1, "en-from-ko": -1, "ko-from-en": -1, "en": 1}),
    Effect("total_gap", "", {"ko": 1, "en": -1}),
)
"""Every comparison reported, in the order shown."""
GROUP = ["model", "metric"]
EFFECT_COLUMNS = [*GROUP, "effect", "held_fixed", "estimate", "ci_low", "ci_high", "n"]
CELL_COLUMNS = [*GROUP, "lang", "mean", "n"]


@dataclass(frozen=True)
class Decomposition:
    """The four cell means and every effect, per model and metric; ``incomplete`` counts
    the dialogues scored in some cells but not all four (left out), per model and metric."""

    cells: pd.DataFrame
    effects: pd.DataFrame
    incomplete: pd.DataFrame


def decompose(frame: pd.DataFrame, seed: int = 0) -> Decomposition:
    """Split the gap of each model and metric in ``frame``.

    Args:
        frame: long-form scores, one row per (model, metric, conv_id, lang) or more
            (several per cell are averaged first: a judge's samples, several raters), with
            ``lang`` among ko, en, en-from-ko and ko-from-en and a numeric ``value``.
        seed: the bootstrap's seed.

    Returns:
        The decomposition; a model and metric lacking a cell in every dialogue has no row.

    Raises:
        ValueError: a column missing, or a lang that is none of the four cells.
    """
    missing = [c for c in [*GROUP, "conv_id", "lang", "value"] if c not in frame]
    if missing:
        raise ValueError(f"the scores lack column(s) {', '.join(missing)}")
    unknown = sorted(set(frame["lang"]) - set(CELLS))
    if unknown:
        raise ValueError(f"unknown cell(s) {', '.join(unknown)}; expected {', '.join(CELLS)}")
    cells: list[dict[str, Any]] = []
    effects: list[dict[str, Any]] = []
    incomplete: list[dict[str, Any]] = []
    if not set(CELLS) <= set(frame["lang"]):  # no model can have all four: no rows at all
        return Decomposition(
            pd.DataFrame(cells, columns=CELL_COLUMNS),
            pd.DataFrame(effects, columns=EFFECT_COLUMNS),
            pd.DataFrame(incomplete, columns=[*GROUP, "left_out"]),
        )
    for (model, metric), part in frame.groupby(GROUP, sort=True):
        if not set(CELLS) <= set(part["lang"]):  # a cell no dialogue has: no row, and no
            continue  # pivot (most stores hold ko and en only: the Gap page runs this)
        wide = part.pivot_table(index="conv_id", columns="lang", values="value", aggfunc="mean")
        if any(c not in wide for c in CELLS):
            continue
        whole = wide[list(CELLS)].dropna()
        incomplete.append({"model": model, "metric": metric, "left_out": len(wide) - len(whole)})
        if whole.empty:
            continue
        values = {c: whole[c].to_numpy(dtype=float) for c in CELLS}
        for lang in CELLS:
            cells.append(
                {"model": model, "metric": metric, "lang": lang}
                | {"mean": float(values[lang].mean()), "n": len(whole)}
            )
        for row in _effects(values, seed):
            effects.append({"model": model, "metric": metric, **row})
    return Decomposition(
        pd.DataFrame(cells, columns=CELL_COLUMNS),
        pd.DataFrame(effects, columns=EFFECT_COLUMNS),
        pd.DataFrame(incomplete, columns=[*GROUP, "left_out"]),
    )


def _effects(values: Mapping[str, np.ndarray], seed: int) -> list[dict[str, Any]]:
    n = len(values["en"])
    draws = resample_indices(n, seed) if n >= MIN_DIALOGUES_FOR_CI else None
    rows = []
    for effect in EFFECTS:
        diffs = effect.of(values)
        low = high = None
        if draws is not None:  # the same draws for every effect of this model and metric
            low, high = (float(v) for v in np.percentile(diffs[draws].mean(axis=1), [2.5, 97.5]))
        rows.append(
            {
                "effect": effect.effect,
                "held_fixed": effect.held_fixed,
                "estimate": float(diffs.mean()),
                "ci_low": low,
                "ci_high": high,
                "n": n,
            }
        )
    return rows


def as_json(result: Decomposition, runs: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    """One object per model and metric, its keys in words (``language_effect``,
    ``content_effect``, ``interaction``, ``total_gap``, each under what it holds fixed),
    with the runs it came from and the two paths that sum to the total gap."""
    out = []
    left = {(r.model, r.metric): int(r.left_out) for r in result.incomplete.itertuples()}
    for (model, metric), part in result.effects.groupby(GROUP, sort=True):
        cells = result.cells[(result.cells["model"] == model) & (result.cells["metric"] == metric)]
        item: dict[str, Any] = {
            "model": model,
            "runs": runs.get(str(model), []),
            "metric": metric,
            "dialogues": int(part["n"].iloc[0]),
            "dialogues_left_out": left.get((model, metric), 0),
            "cell_means": {r.lang: r.mean for r in cells.itertuples()},
        }
        for row in part.itertuples():
            numbers = {"estimate": row.estimate, "ci_low": row.ci_low, "ci_high": row.ci_high}
            numbers["n"] = int(row.n)
            if row.held_fixed:
                item.setdefault(str(row.effect), {})[str(row.held_fixed)] = numbers
            else:
                item[str(row.effect)] = numbers
        item["paths"] = {
            "language_then_content": "language_effect.western_content + content_effect.in_korean",
            "content_then_language": "content_effect.in_english + language_effect.korean_content",
            "both_equal": "total_gap",
        }
        out.append(item)
    return out


def runs_frame(frame: pd.DataFrame, run_ids: list[str], source: str) -> pd.DataFrame:
    """The scores of ``run_ids`` from one source (judge, raters, emotion), ready for
    :func:`decompose`: the runs of one model pooled as that model's four cells.

    Args:
        frame: from :func:`koed_core.results.gaps.score_frame`.
        run_ids: the runs to pool; the runs of a model may split the four cells between
            them (``ko,en`` in one, the variants in another).
        source: which source's scores.

    Raises:
        ValueError: a run not in the frame (no scores from that source), two runs of one
            model answering the same cell, or one model's runs asked with different
            protocols or prompt sets (their cells would not be comparable).
    """
    part = frame[(frame["source"] == source) & frame["run_id"].isin(run_ids)]
    absent = [r for r in run_ids if r not in set(part["run_id"])]
    if absent:
        raise ValueError(f"run {absent[0]} has no {source} scores")
    for model, runs in part.groupby("model"):
        for column in ("protocol", "prompt_set"):
            if runs[column].nunique(dropna=False) > 1:
                values = ", ".join(map(str, runs[column].unique()))
                raise ValueError(
                    f"the runs of {model} differ in {column} ({values}): "
                    "their cells are not comparable"
                )
        owners = runs[["run_id", "lang"]].drop_duplicates()
        twice = owners[owners.duplicated("lang", keep=False)]
        if not twice.empty:
            lang = twice["lang"].iloc[0]
            both = " and ".join(sorted(twice[twice["lang"] == lang]["run_id"]))
            raise ValueError(f"runs {both} of {model} both answer {lang}: give one of them")
    return part
