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
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from koed_core.db import JudgeConfig, Ratings, Store
from koed_core.rating.sampling import refusal
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi
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
    "note",
]


def people_needed(sd: float, width: float) -> int:
    """Rated dialogues people alone need for a 95% interval of ``width``: (2 z sd / W)^2."""
    return math.ceil((2 * ppi.Z * sd / width) ** 2)


def ppi_needed(y: np.ndarray, yhat: np.ndarray, n0: int, judged: int) -> tuple[int, float]:
    """Rated dialogues PPI++ needs for people-alone's ``n0``, and the PPI correlation,
    from ppi-python's power analysis with the judge on at most ``judged`` dialogues."""
    import ppi_py

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # n0 > judged: it says n = judged
        found = ppi_py.ppi_mean_power(
            y, yhat, cost_Y=1.0, cost_Yhat=JUDGE_COST, effective_n=n0, n_max=judged
        )
    return int(found["n"]), float(found["ppi_corr"])


def plan_cell(
    y: np.ndarray, yhat: np.ndarray, judged: int, width: float, overlap: int, refused: bool
) -> dict[str, object]:
    """One gap's plan from its pilot: people's and judge's per-dialogue gaps on the
    rated dialogues, and how many dialogues the judge scored."""
    n_now = len(y)
    if n_now < 3:
        return {"rated_now": n_now, "judged": judged, "note": "pilot too small: rate 3 or more"}
    sd = float(np.std(y, ddof=1))
    n0 = people_needed(sd, width)
    row: dict[str, object] = {
        "rated_now": n_now,
        "judged": judged,
        "sd_people": sd,
        "width_goal": width,
        "people_needed": n0,
        "more_people": max(0, n0 - n_now),
        "more_ratings_people": max(0, n0 - n_now) * 2 * overlap,
        "note": "" if n0 <= judged else "people alone cannot reach it: too few dialogues",
    }
    if refused:
        return {**row, "note": "PPI refused: the study's dialogues were not chosen at random"}
    if np.std(yhat) == 0 or sd == 0:
        return {**row, "note": "no PPI plan: the pilot's scores do not vary"}
    n, corr = ppi_needed(y, yhat, n0, judged)
    return {
        **row,
        "ppi_corr": corr,
        "ppi_needed": n,
        "more_ppi": max(0, n - n_now),
        "more_ratings_ppi": max(0, n - n_now) * 2 * overlap,
    }


def plan(store: Store, study_id: int, judge: JudgeConfig, width: float) -> pd.DataFrame:
    """The plan of every run and dimension's gap in one study, for interval width W."""
    if width <= 0:
        raise ValueError("the interval width must be positive")
    config = StudyRules(store).config(study_id)
    judged = judged_scores(store, judge, list(config.run_ids), config.langs)
    human = human_scores(Ratings(store).long_scores(study_id))
    refused = refusal(config.sampling) is not None
    rows = []
    for (run_id, metric), j in judged.groupby(["run_id", "metric"], sort=True):
        h = human[(human["run_id"] == run_id) & (human["metric"] == metric)]
        u = ppi.units(j, h, "gap", {})
        both = u.judge.index.intersection(u.human.index)
        y, yhat = u.human[both].to_numpy(float), u.judge[both].to_numpy(float)
        cell = plan_cell(y, yhat, len(u.judge), width, config.overlap, refused)
        if config.sampling.method == "stratified" and not cell.get("note"):
            cell["note"] = "planned as one stratum (a stratified sample's weights left out)"
        rows.append({"run_id": run_id, "metric": metric, **cell})
    return pd.DataFrame(rows, columns=COLUMNS)


def next_batch_size(table: pd.DataFrame, with_ppi: bool = True) -> int:
    """Dialogues to add so that every gap reaches the width (the largest need)."""
    column = "more_ppi" if with_ppi else "more_people"
    values = pd.to_numeric(table[column], errors="coerce").dropna()
    return int(values.max()) if not values.empty else 0
