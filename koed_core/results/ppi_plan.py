"""How many more human ratings a gap needs: with PPI++ and with people alone.

From the ratings so far (a pilot), for each run and dimension's ko - en gap: people
alone need n0 = (2 z sd / W)^2 rated dialogues for a 95% interval of width W (sd: the
spread of the people's per-dialogue gap). PPI++ needs fewer: ppi-python's power analysis
(``ppi_py.ppi_mean_power``, Broska, Howes and van Loon 2024) gives the rated dialogues n
that, with the judge on the other dialogues the runs answered (n + N at most all of them),
reach the same effective sample n0: n = n0 M (1 - rho^2) / (M - rho^2 n0), where rho is
the PPI correlation of the pilot and M the dialogues the judge scored. The judge's scores
are already paid for, so a prediction is given a cost of nearly nothing.

A rated dialogue is its Korean and its English item, each rated by the study's overlap k:
2 k ratings.

n0 meets W *on average* only: the next study's sd varies, and about half of studies of
size n0 end a little wider (issue 64 #3). With normal per-dialogue gaps, (n - 1) s^2 /
sd^2 follows chi-square with n - 1 degrees of freedom, so a study of n meets W with
probability F((n - 1) n / n0*), F that distribution's CDF and n0* = (2 z sd / W)^2 before
rounding up (Kupper and Hafner 1989); ``people_needed_90`` is the smallest n with
probability 0.9 (``ppi_needed_90``: PPI++'s size for that effective n). The pilot's own
sd is uncertain too: ``people_needed_low`` and ``_high`` are n0 at the ends of the sd's
95% chi-square interval from the pilot's n - 1 degrees of freedom. A width that needs
more rated dialogues than the judge scored is out of reach: rating every one of them
gives people's own mean (PPI++ then has nothing left to impute), so no batch is offered
and ``width_reachable``, 2 z sd / sqrt(judged), says the narrowest width there is.

Gain (issue 64 item 3): ``gain_planned`` is what PPI++ is planned to be worth, n0 /
``ppi_needed`` (effective rated dialogues per rated one), and ``gain_ceiling`` what a
judge of this correlation could be worth at most, 1 / (1 - rho^2), with the judge on
unboundedly many dialogues (PPI++'s variance at the best lambda is the people's times
1 - rho^2 N / (N + n)); a better judge (rho) or more judged dialogues (N) move them.

A study that grew by an active batch rated dialogues chosen with unequal, stored
probabilities pi (:mod:`koed_core.results.ppi_active`): its rated dialogues over-represent
those the judge was unsure of, so the pilot's sd and the PPI correlation are read with
weights 1 / pi (numpy's reliability-weighted variance; ppi-python's power analysis takes
the same weights as ``w``), which estimate the population's as a uniform sample's plain
ones do, and the pilot's sd interval uses Kish's effective size (sum w)^2 / sum w^2. The
sizes are then those of a uniform batch, the design the formulas assume.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from koed_core.db import Inclusions, JudgeConfig, Ratings, Store
from koed_core.i18n import _
from koed_core.rating.sampling import refusal
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi, ppi_active
from koed_core.results.ppi_table import human_scores, judged_scores

JUDGE_COST = 1e-6
"""The cost of one more judge score, against 1 for a rated dialogue: already stored."""
COLUMNS = [
    "run_id",
    "metric",
    "rated_now",
    "judged",
    "sd_people",
    "ppi_corr",
    "width_goal",
    "people_needed",
    "ppi_needed",
    "more_people",
    "more_ppi",
    "more_ratings_people",
    "more_ratings_ppi",
    "people_needed_90",
    "ppi_needed_90",
    "people_needed_low",
    "people_needed_high",
    "width_reachable",
    "gain_planned",
    "gain_ceiling",
    "note",
]
ASSURANCE = 0.9
"""The share of studies of the planned size that meet the width, for the ``_90`` sizes."""


def people_needed(sd: float, width: float) -> int:
    """Rated dialogues people alone need for a 95% interval of ``width``: (2 z sd / W)^2."""
    return math.ceil((2 * ppi.Z * sd / width) ** 2)


def people_needed_assured(sd: float, width: float, assurance: float = ASSURANCE) -> int:
    """Rated dialogues for which a people-alone interval is at most ``width`` wide in
    ``assurance`` of studies, ``sd`` taken as the true sd (normal gaps; module docstring)."""
    from scipy.stats import chi2

    exact = (2 * ppi.Z * sd / width) ** 2
    start = max(2, math.ceil(exact))
    sizes = np.arange(start, start + 4 * int(math.sqrt(start)) + 50)  # holds the answer
    met = chi2.cdf((sizes - 1) * sizes / exact, sizes - 1) >= assurance
    return int(sizes[np.argmax(met)])


def pilot_range(sd: float, n_pilot: int, width: float) -> tuple[int, int]:
    """n0 at the ends of the pilot sd's 95% interval (chi-square, n_pilot - 1 df)."""
    from scipy.stats import chi2

    df = n_pilot - 1
    low = sd * math.sqrt(df / chi2.ppf(1 - ppi.ALPHA / 2, df))
    high = sd * math.sqrt(df / chi2.ppf(ppi.ALPHA / 2, df))
    return people_needed(low, width), people_needed(high, width)


def ppi_needed(
    y: np.ndarray, yhat: np.ndarray, n0: int, judged: int, weights: np.ndarray | None = None
) -> tuple[int, float]:
    """Rated dialogues PPI++ needs for people-alone's ``n0``, and the PPI correlation,
    from ppi-python's power analysis with the judge on at most ``judged`` dialogues
    (``weights``: 1 / pi of an active design, ppi-python's ``w``)."""
    import ppi_py

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # n0 > judged: it says n = judged
        found = ppi_py.ppi_mean_power(
            y, yhat, cost_Y=1.0, cost_Yhat=JUDGE_COST, effective_n=n0, n_max=judged, w=weights
        )
    return int(found["n"]), float(found["ppi_corr"])


def pilot_sd(y: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, int]:
    """The pilot's sd of the per-dialogue gap and the size its uncertainty counts: the
    plain sd and n, or under an active design's weights 1 / pi the reliability-weighted
    sd (``numpy.cov`` with ``aweights``) and Kish's effective size (module docstring)."""
    if weights is None:
        return float(np.std(y, ddof=1)), len(y)
    kish = int(np.floor(weights.sum() ** 2 / (weights**2).sum()))
    return float(np.sqrt(np.cov(y, aweights=weights, ddof=1))), max(2, kish)


def plan_cell(
    y: np.ndarray,
    yhat: np.ndarray,
    judged: int,
    width: float,
    overlap: int,
    refused: bool,
    weights: np.ndarray | None = None,
) -> dict[str, object]:
    """One gap's plan from its pilot: people's and judge's per-dialogue gaps on the
    rated dialogues, and how many dialogues the judge scored (``weights``: 1 / pi of
    each rated dialogue under an active design, None for a uniform one)."""
    n_now = len(y)
    if n_now < 3:
        return {"rated_now": n_now, "judged": judged, "note": _("pilot too small: rate 3 or more")}
    sd, n_pilot = pilot_sd(y, weights)
    n0 = people_needed(sd, width)
    n90 = people_needed_assured(sd, width) if sd > 0 else n0
    low, high = pilot_range(sd, n_pilot, width)
    reachable = 2 * ppi.Z * sd / math.sqrt(judged) if judged else None
    row: dict[str, object] = {
        "rated_now": n_now,
        "judged": judged,
        "sd_people": sd,
        "width_goal": width,
        "people_needed": n0,
        "people_needed_90": n90,
        "people_needed_low": low,
        "people_needed_high": high,
        "width_reachable": reachable,
        "note": "",
    }
    if n0 > judged:  # all judged dialogues rated is people alone, and it is not enough
        return {
            **row,
            "note": _(
                "out of reach: the width needs {needed} rated dialogues and only {judged} "
                "were judged; the narrowest within reach is {reachable}",
                needed=n0,
                judged=judged,
                reachable=f"{reachable:.2f}",
            ),
        }
    row.update(
        {
            "more_people": max(0, n0 - n_now),
            "more_ratings_people": max(0, n0 - n_now) * 2 * overlap,
        }
    )
    if refused:
        return {**row, "note": _("PPI refused: the study's dialogues were not chosen at random")}
    if np.std(yhat) == 0 or sd == 0:
        return {**row, "note": _("no PPI plan: the pilot's scores do not vary")}
    n, corr = ppi_needed(y, yhat, n0, judged, weights)
    n_90 = ppi_needed(y, yhat, n90, judged, weights)[0] if n90 <= judged else None
    return {
        **row,
        "ppi_corr": corr,
        "ppi_needed": n,
        "ppi_needed_90": n_90,
        "more_ppi": max(0, n - n_now),
        "more_ratings_ppi": max(0, n - n_now) * 2 * overlap,
        "gain_planned": n0 / n if n else None,
        "gain_ceiling": 1 / (1 - corr**2) if corr**2 < 1 else None,
        "note": ""
        if n90 <= judged
        else _("the size for 9 of 10 studies is out of reach; the average one is not"),
    }


def plan(store: Store, study_id: int, judge: JudgeConfig, width: float) -> pd.DataFrame:
    """The plan of every run and dimension's gap in one study, for interval width W."""
    if width <= 0:
        raise ValueError("the interval width must be positive")
    config = StudyRules(store).config(study_id)
    judged = judged_scores(store, judge, list(config.run_ids), config.langs)
    human = human_scores(Ratings(store).long_scores(study_id))
    refused = refusal(config.sampling) is not None
    inclusion = Inclusions(store).probabilities(study_id)
    active = ppi_active.is_active(inclusion)
    rows = []
    for (run_id, metric), j in judged.groupby(["run_id", "metric"], sort=True):
        h = human[(human["run_id"] == run_id) & (human["metric"] == metric)]
        u = ppi.units(j, h, "gap", {})
        both = u.judge.index.intersection(u.human.index)
        y, yhat = u.human[both].to_numpy(float), u.judge[both].to_numpy(float)
        if active and not set(both) <= set(inclusion):
            note = _("no plan: a rated dialogue has no stored inclusion probability")
            rows.append({"run_id": run_id, "metric": metric, "rated_now": len(y), "note": note})
            continue
        weights = np.array([1 / inclusion[c] for c in both]) if active else None
        cell = plan_cell(y, yhat, len(u.judge), width, config.overlap, refused, weights)
        if config.sampling.method == "stratified" and not cell.get("note"):
            cell["note"] = _("planned as one stratum (a stratified sample's weights left out)")
        if active and not cell.get("note"):
            cell["note"] = _(
                "weighted by the stored inclusion probabilities; sizes as for a uniform batch"
            )
        rows.append({"run_id": run_id, "metric": metric, **cell})
    return pd.DataFrame(rows, columns=COLUMNS)


def next_round_size(table: pd.DataFrame, with_ppi: bool = True, assured: bool = False) -> int:
    """Dialogues to add so that every gap within reach meets the width (the largest need):
    on average, or (``assured``) in 90% of studies."""
    if assured:
        column = "ppi_needed_90" if with_ppi else "people_needed_90"
        needed = pd.to_numeric(table[column], errors="coerce")
        # a size beyond the judged dialogues cannot be rated: that gap is out of reach
        needed = needed.where(needed <= pd.to_numeric(table["judged"], errors="coerce"))
        if with_ppi:  # no PPI++ batch where PPI has none (refused, no plan)
            needed = needed.where(pd.to_numeric(table["more_ppi"], errors="coerce").notna())
        more = needed - pd.to_numeric(table["rated_now"], errors="coerce")
        values = more.clip(lower=0).dropna()
    else:
        column = "more_ppi" if with_ppi else "more_people"
        values = pd.to_numeric(table[column], errors="coerce").dropna()
    return int(values.max()) if not values.empty else 0


def unreachable(table: pd.DataFrame) -> int:
    """How many gaps cannot meet the width however many dialogues are rated."""
    needed = pd.to_numeric(table["people_needed"], errors="coerce")
    return int((needed > pd.to_numeric(table["judged"], errors="coerce")).sum())


def has_round(table: pd.DataFrame, with_ppi: bool = True) -> bool:
    """Whether any gap has a batch at all (PPI++ has none where it is refused)."""
    column = "more_ppi" if with_ppi else "more_people"
    return bool(pd.to_numeric(table[column], errors="coerce").notna().any())
