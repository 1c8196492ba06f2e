"""Are the gap's intervals honest? The planted simulation, at full size.

Each draw plants 1,360 dialogues (KoED's count): a people's Korean-minus-English gap of
-0.3, a judge that adds 0.5 to every Korean answer, raters with noise (k = 3, whole
scores), a uniform random 20% of the dialogues rated in both languages. Over the draws
it counts how often each estimator's 95% interval covers the planted gap (PPI++ should
be near 95%, the judge alone near 0%) and their mean widths; then the planner on one
pilot against ppi-python's power analysis recomputed here, one run's whole table timed
(``table_s_one_run``: five dimensions, en, ko and gap, three estimators), and the whole
pipeline on a planted database (120 dialogues, two runs, a study). Prints ``name: value``
lines.

    python bench/ppi.py [--smoke]

``--smoke``: 300 dialogues and 20 draws, in a few seconds (the suite runs it).
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.planted import SIM_GAP, planted_store, simulated_draw  # noqa: E402
from koed_core.db import Sampling  # noqa: E402
from koed_core.results import ppi, ppi_plan  # noqa: E402


def coverage(draws: int, dialogues: int) -> dict[str, float]:
    """Coverage counts and mean widths of the three estimators over ``draws`` draws."""
    rng = np.random.default_rng(2026)
    covered = dict.fromkeys(ppi.ESTIMATORS, 0)
    widths: dict[str, list[float]] = {name: [] for name in ppi.ESTIMATORS}
    worth: list[float] = []
    ceilings: list[float] = []
    for draw in range(draws):
        judged, human = simulated_draw(rng, dialogues=dialogues)
        for row in ppi.estimate_cell(judged, human, Sampling("random"), "gap", seed=draw):
            name = str(row["estimator"])
            low, high = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
            covered[name] += low <= SIM_GAP <= high
            widths[name].append(high - low)
            if name == "ppi":
                worth.append(float(row["n_effective"]) / float(row["n_people"]))  # type: ignore[arg-type]
                ceilings.append(float(row["gain_ceiling"]))  # type: ignore[arg-type]
    figures: dict[str, float] = {"draws": draws, "dialogues": dialogues}
    for name in ppi.ESTIMATORS:
        figures[f"{name}_covered"] = covered[name]
        figures[f"{name}_coverage"] = covered[name] / draws
        figures[f"{name}_width"] = float(np.mean(widths[name]))
    figures["ppi_to_people_width"] = figures["ppi_width"] / figures["human_width"]
    figures["effective_n_ratio"] = float(np.mean(worth))
    # issue 64 item 3: the gain achieved against the ceiling its rho and n/N allow
    figures["gain_ceiling_mean"] = float(np.mean(ceilings))
    figures["gain_to_ceiling"] = float(np.mean(np.array(worth) / np.array(ceilings)))
    return figures


def planner_check(dialogues: int, width: float = 0.2) -> dict[str, float]:
    """The planner on one pilot draw, and ppi-python's power analysis recomputed."""
    import ppi_py

    judged, human = simulated_draw(np.random.default_rng(7), dialogues=dialogues)
    u = ppi.units(judged, human, "gap", {})
    both = u.judge.index.intersection(u.human.index)
    y, yhat = u.human[both].to_numpy(float), u.judge[both].to_numpy(float)
    cell = ppi_plan.plan_cell(y, yhat, len(u.judge), width, 3, refused=False)
    n0 = math.ceil((2 * ppi.Z * np.std(y, ddof=1) / width) ** 2)
    again = ppi_py.ppi_mean_power(y, yhat, 1.0, 1e-6, effective_n=n0, n_max=len(u.judge))
    # issue 64 #3: the share of next studies of each size that meet the width, the pilot's
    # sd taken as the truth (normal gaps): about half at n0, nine in ten at the 90% size
    sd = float(np.std(y, ddof=1))
    draws = np.random.default_rng(3)

    def met(n: int) -> float:
        sds = draws.normal(0, sd, (2000, n)).std(axis=1, ddof=1)
        return float(np.mean(2 * ppi.Z * sds / math.sqrt(n) <= width))

    n90 = int(cell["people_needed_90"])  # type: ignore[call-overload]
    return {
        "plan_people_needed_90": float(n90),
        "plan_met_share_n0": met(n0),
        "plan_met_share_n90": met(n90),
        "plan_people_needed": float(cell["people_needed"]),  # type: ignore[arg-type]
        "plan_ppi_needed": float(cell["ppi_needed"]),  # type: ignore[arg-type]
        "ppi_python_needed": float(again["n"]),
        "planner_matches": float(cell["ppi_needed"] == again["n"] and cell["people_needed"] == n0),
    }


def strata_check(seed: int = 0) -> dict[str, float]:
    """Issue 64 #7: two equal strata's bootstrap interval against the analytic width (1
    when each stratum draws on its own; about 1.4 when they shared their draws)."""
    values = np.random.default_rng(seed).normal(0, 1, 200)
    est = ppi._mean_ci({"a": values, "b": values.copy()}, {"a": 0.5, "b": 0.5}, seed)
    assert est.low is not None and est.high is not None and est.se is not None
    return {"strata_width_ratio": (est.high - est.low) / (2 * ppi.Z * est.se)}


def active_check(draws: int, dialogues: int) -> dict[str, float]:
    """Issue 64 item 4: the active batch against a uniform one of the same expected size
    (20%; the active one a uniform 5% pilot, then a batch by the judge's sample spread),
    in two planted worlds: ``active_*`` with this bench's raters (k = 3, noise 0.8), and
    ``active_tracking_*`` with careful raters (k = 5, noise 0.3) and the judge unsure on
    20% of dialogues, where its uncertainty is most of the error. Coverage of the planted
    gap and mean widths of PPI++ (uniform: ``ppi_py``; active: weighted by 1 / pi)."""
    import fixtures.planted_active as planted_active

    figures: dict[str, float] = {}
    worlds = {"active": (0.3, 0.8, 3), "active_tracking": (0.2, 0.3, 5)}
    for name, (share, noise, k) in worlds.items():
        planted_active.UNSURE_SHARE = share
        rng = np.random.default_rng(64)
        covered = dict.fromkeys(("active", "uniform"), 0)
        widths: dict[str, list[float]] = {"active": [], "uniform": []}
        for _ in range(draws):
            for design in ("active", "uniform"):
                judged, human, inclusion = planted_active.unsure_draw(
                    rng, dialogues, active=design == "active", rater_noise=noise, k=k
                )
                common = ppi.shared(judged, human, {}, inclusion if design == "active" else None)
                rows = ppi.estimate_cell(
                    judged, human, Sampling("random"), "gap", interval=False, common=common
                )
                row = next(r for r in rows if r["estimator"] == "ppi")
                low, high = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
                covered[design] += low <= SIM_GAP <= high
                widths[design].append(high - low)
        figures[f"{name}_covered"] = covered["active"]
        figures[f"{name}_uniform_covered"] = covered["uniform"]
        figures[f"{name}_width"] = float(np.mean(widths["active"]))
        figures[f"{name}_uniform_width"] = float(np.mean(widths["uniform"]))
        figures[f"{name}_to_uniform_width"] = float(
            np.mean(widths["active"]) / np.mean(widths["uniform"])
        )
    planted_active.UNSURE_SHARE = 0.3
    return figures


def table_time(dialogues: int) -> dict[str, float]:
    """One run's whole table (five dimensions; en, ko and gap; three estimators) at this
    many dialogues: what the Gap page computes per run when the database changed."""
    import pandas as pd

    rng = np.random.default_rng(11)
    judged, human = [], []
    for metric in ("EX", "IP", "ER", "EEA", "CA"):
        j, h = simulated_draw(rng, dialogues=dialogues)
        judged.append(j.assign(run_id="r", metric=metric))
        human.append(h.assign(run_id="r", metric=metric))
    judged_all, human_all = pd.concat(judged), pd.concat(human)
    started = time.perf_counter()
    ppi.estimate_frame(judged_all, human_all, Sampling("random"))
    whole = time.perf_counter() - started
    started = time.perf_counter()  # as the Gap page asks: the means' intervals left out
    ppi.estimate_frame(judged_all, human_all, Sampling("random"), mean_intervals=False)
    return {"table_s_one_run": whole, "page_table_s_one_run": time.perf_counter() - started}


def pipeline() -> dict[str, float]:
    """The planted database end to end: build, then the three estimates' table."""
    from koed_core.results import ppi_table

    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        planted = planted_store(Path(folder) / "koed.db")
        built = time.perf_counter()
        ppi_table.gap_estimates(planted.store, planted.study_id, planted.judge)
        done = time.perf_counter()
    return {"planted_build_s": built - started, "planted_estimates_s": done - built}


def main() -> None:
    smoke = "--smoke" in sys.argv[1:]
    draws, dialogues = (20, 300) if smoke else (400, 1360)
    started = time.perf_counter()
    figures = coverage(draws, dialogues)
    figures["simulation_s"] = time.perf_counter() - started
    figures |= planner_check(dialogues, width=0.35 if smoke else 0.2)
    figures |= strata_check()
    figures |= active_check(10 if smoke else 200, dialogues)
    figures |= table_time(dialogues)
    figures |= pipeline()
    for name, value in figures.items():
        print(f"{name}: {value:.4g}" if isinstance(value, float) else f"{name}: {value}")


if __name__ == "__main__":
    main()
