"""Language or culture, by PPI++: the judge's split of the gap corrected by people's.

:mod:`koed_core.results.decompose` splits the gap (ko - en) into a language effect, a
content effect and their interaction from one source of scores. Here the source is the
judge corrected by people, as :mod:`koed_core.results.ppi` corrects the plain gap: per
model and metric, a **unit is a dialogue** scored in all four cells (``en``,
``en-from-ko``, ``ko-from-en``, ``ko``), and each effect is a mean of per-dialogue
values (the effect's weights on the dialogue's four scores, paired by dialogue):

- the judge's value on every dialogue it scored in all four cells (N);
- people's value on the dialogues whose four replies were all rated in the study (n; a
  rated reply's score is the mean of its k ratings), a subset of those N;
- PPI++ (``ppi_py.ppi_mean_ci`` through :func:`koed_core.results.ppi.ppi`): the judge's
  mean over the N - n dialogues nobody rated in full, corrected by judge-minus-people on
  the n rated ones, weighted by the study's strata where it drew a stratified sample.

One power-tuning lambda per stratum serves every effect and cell mean of a model and
metric: the total gap's, as ppi-python tunes it. With the same lambda and the same
rated and unrated dialogues the PPI++ point estimate is linear in the per-dialogue
values, so the two paths through the square still sum exactly to the total gap, as
they do for one source alone. The intervals are PPI++'s (normal, 95%), each effect its
own. Valid only where the dialogues rated in all four cells are a random sample of
those the judge scored (the study's design, :mod:`koed_core.rating.sampling`): a study
whose dialogues were chosen by hand is refused, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from koed_core.dialogues.variants import CELLS
from koed_core.results import ppi
from koed_core.results.decompose import CELL_COLUMNS, EFFECTS, GROUP, Decomposition

PPI_EFFECT_COLUMNS = [
    *GROUP,
    "effect",
    "held_fixed",
    "estimate",
    "ci_low",
    "ci_high",
    "n",
    "N_judge",
    "note",
]
"""The decomposition's effect columns, ``n`` the dialogues people rated in all four
cells, ``N_judge`` those the judge scored in all four."""
TOTAL = next(e for e in EFFECTS if e.effect == "total_gap")
"""The comparison whose tuned lambda every other one shares."""


def decompose_ppi(
    frame: pd.DataFrame, strata: Mapping[str, str], refusal: str | None = None
) -> Decomposition:
    """PPI++ of every effect of the gap's split, per model and metric.

    Args:
        frame: long-form scores (``koed_core.results.gaps.score_frame``) of the runs to
            split, holding the judge's rows (source ``judge``) and the study's (source
            ``raters``, each reply's mean rating): model, metric, conv_id, lang, value.
        strata: conv_id -> stratum of a stratified study (empty: one stratum).
        refusal: why PPI may not be used with this study's design (None: it may); every
            row then carries it as its note, with no estimate.

    Returns:
        The four cells' PPI++ means and every effect; ``incomplete`` counts the
        dialogues judged in all four cells that people rated in some but not all of
        them (their ratings are not used; the judge's scores are).
    """
    cells, effects, incomplete = [], [], []
    scored = frame[frame["source"].isin(["judge", "raters"])]
    for (model, metric), part in scored.groupby(GROUP, sort=True):
        judge = _wide(part[part["source"] == "judge"])
        people = _wide(part[part["source"] == "raters"])
        if judge.empty or people.empty:
            continue
        rated = people.index.intersection(judge.index)
        some = part[(part["source"] == "raters") & part["conv_id"].isin(judge.index)]
        incomplete.append(
            {"model": model, "metric": metric, "left_out": some["conv_id"].nunique() - len(rated)}
        )
        stratum = pd.Series([strata.get(c, "all") for c in judge.index], index=judge.index)
        lams = (
            None
            if refusal
            else ppi.ppi_lambdas(_units(EFFECTS[-1].weights, judge, people, stratum))
        )
        for lang in CELLS:
            est = ppi.ppi(_units({lang: 1.0}, judge, people, stratum), refusal, lams)
            cells.append(
                {"model": model, "metric": metric, "lang": lang, "mean": est.value, "n": len(rated)}
            )
        for effect in EFFECTS:
            est = ppi.ppi(_units(effect.weights, judge, people, stratum), refusal, lams)
            effects.append(
                {"model": model, "metric": metric, "effect": effect.effect}
                | {"held_fixed": effect.held_fixed, "estimate": est.value, "ci_low": est.low}
                | {"ci_high": est.high, "n": len(rated), "N_judge": len(judge), "note": est.note}
            )
    return Decomposition(
        pd.DataFrame(cells, columns=CELL_COLUMNS),
        pd.DataFrame(effects, columns=PPI_EFFECT_COLUMNS),
        pd.DataFrame(incomplete, columns=[*GROUP, "left_out"]),
    )


def _wide(part: pd.DataFrame) -> pd.DataFrame:
    """conv_id x cell, the dialogues scored in all four cells only."""
    if part.empty:
        return pd.DataFrame(columns=list(CELLS))
    wide = part.pivot_table(index="conv_id", columns="lang", values="value", aggfunc="mean")
    if any(c not in wide for c in CELLS):
        return pd.DataFrame(columns=list(CELLS))
    return wide[list(CELLS)].dropna()


def _units(
    weights: Mapping[str, float], judge: pd.DataFrame, people: pd.DataFrame, stratum: pd.Series
) -> ppi.Units:
    """One comparison's per-dialogue values: the judge's on every dialogue it scored in
    all four cells, people's on those of them rated in all four."""
    rated = people.loc[people.index.intersection(judge.index)]

    def value(wide: pd.DataFrame) -> pd.Series:
        total = sum((w * wide[c].astype(float) for c, w in weights.items()), np.zeros(len(wide)))
        return pd.Series(total, index=wide.index, dtype=float)

    return ppi.Units(value(judge), value(rated), stratum)
