"""Is the gap a judge artefact? The judge's gap minus the people's on the same dialogues,
per run, dimension and rater group, with a bootstrap 95% CI (strata weighted as for
people-only in :mod:`koed_core.results.ppi`, each stratum on draws of its own).

A study that grew by an active batch rated the dialogues the judge was unsure of more
often, so a plain mean over them would describe those dialogues, not the study's: there
the three columns are the active design's people-alone estimate
(:func:`koed_core.results.ppi_active.active_people`: each rated dialogue weighted by 1 /
its stored inclusion probability, centred by the design's own term) of the judge's gap,
the people's and their difference over the judged dialogues, with its 95% CLT interval
(linear in the values, so judge minus people is still the difference of the two)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from koed_core.db import Sampling
from koed_core.results import ppi_active
from koed_core.results.ppi import Estimate, Units, _mean_ci, _weights, units

ARTEFACT_COLUMNS = [
    "run_id",
    "metric",
    "rater_group",
    "judge_gap",
    "people_gap",
    "judge_minus_people",
    "ci_low",
    "ci_high",
    "n_people",
    "N_judge",
    "note",
]


def _by_stratum(
    values: pd.Series, u: Units, both: pd.Index, weights: Mapping[str, float]
) -> dict[str, np.ndarray]:
    """``values`` on the units ``both`` scored, split by stratum."""
    where = u.stratum[both]
    return {s: values[both][where == s].to_numpy(float) for s in weights}


def _weighted(
    values: pd.Series, u: Units, both: pd.Index, inclusion: Mapping[str, float]
) -> Estimate:
    """The active design's estimate of ``values``' mean (known on ``both``) over the
    judged dialogues: people-alone's estimator with ``values`` as the rated score."""
    return ppi_active.active_people(Units(u.judge, values[both], u.stratum), inclusion)


def artefact_frame(
    judged: pd.DataFrame,
    human_by_group: Mapping[str, pd.DataFrame],
    sampling: Sampling,
    seed: int = 0,
    inclusion: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Is the gap a judge artefact? Per run, metric and rater group: the judge's gap and
    the people's on the same dialogues (those both scored in both languages), and the
    judge's minus the people's (the judge's bias by language) with a bootstrap 95% CI over
    those dialogues (strata weighted as for people-only); under an active design
    (``inclusion``: conv_id -> stored probability, unequal) weighted by 1 / pi instead
    (module docstring).

    A positive value: the judge puts Korean further above English than people do.
    """
    active = ppi_active.is_active(inclusion)
    rows = []
    for group, human in human_by_group.items():
        for (run_id, metric), h in human.groupby(["run_id", "metric"], sort=True):
            j = judged[(judged["run_id"] == run_id) & (judged["metric"] == metric)]
            u = units(j, h, "gap", dict(sampling.strata))
            both = u.judge.index.intersection(u.human.index)
            if active and len(both):
                assert inclusion is not None
                bias = _weighted(u.judge - u.human, u, both, inclusion)
                judge_gap = _weighted(u.judge, u, both, inclusion).value
                people_gap = _weighted(u.human, u, both, inclusion).value
            else:
                weights = _weights(u)
                bias = _mean_ci(_by_stratum(u.judge - u.human, u, both, weights), weights, seed)
                judge_gap = _mean_ci(_by_stratum(u.judge, u, both, weights), weights, seed).value
                people_gap = _mean_ci(_by_stratum(u.human, u, both, weights), weights, seed).value
            rows.append(
                {
                    "run_id": run_id,
                    "metric": metric,
                    "rater_group": group,
                    "judge_gap": judge_gap,
                    "people_gap": people_gap,
                    "judge_minus_people": bias.value,
                    "ci_low": bias.low,
                    "ci_high": bias.high,
                    "n_people": len(both),
                    "N_judge": len(u.judge),
                    "note": bias.note if len(both) else "no dialogue rated in both",
                }
            )
    return pd.DataFrame(rows, columns=ARTEFACT_COLUMNS)
