"""Every script in bench/ at its small size (``--smoke``): it runs to its end and prints
each ``name: value`` line it promises, with a number for the value. A bench whose page,
flow or function changed under it fails here, not in the hands of whoever runs it next.

No figure is held to a goal: a smoke run's sizes are too small for its timings to mean
anything. Only what is not a timing is checked beyond the lines: the crowd study's
simulated workers meet no crash and no completion code without work, and its worker in
Chromium gets to the code. A bench not listed in ``EXPECTED`` yet still runs: it must
finish and print at least one ``name: value`` line with a number.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^(?P<name>[a-zA-Z][a-zA-Z0-9_]*): (?P<value>\S+)(?:\s+#.*)?$")

SMOKE_PAGES = ("explorer", "chat")
"""bench/pages.py's SMOKE_PAGES, by file name."""

EXPECTED: dict[str, list[str]] = {
    "agreement": ["ratings", "agreement_s_100k", "alt_test_s_100k", "alt_test_passes",
                  "peak_rss_mb"],
    "annotation": [
        "dialogues", "save_median_s", "items_s", "final_s", "agreement_s", "export_s",
        "drag_to_panel_s", "enter_to_span_s", "bare_rerun_s",
    ],
    "chat": ["panes_s", "backoff_s"],
    "episodes": [
        "warm_up_s", "episodes", "episodes_per_s", "ideal_episodes_per_s", "ratio_to_ideal",
    ],
    "explorer": [
        "load_s", "filter_ms_1360", "index_build_s_25k", "filter_ms_25k",
        "explorer_first_run_s", "explorer_filter_rerun_s",
    ],
    "jobs": ["answers", "foreground_s", "background_s", "queued_to_running_s", "overhead_ratio"],
    "pages": [
        *(f"page_{page}{ko}_s" for ko in ("", "_ko") for page in SMOKE_PAGES),
        "page_language_switch_s", "page_first_load_s",
        *(f"first_{page}_s" for page in SMOKE_PAGES), "page_full_reload_s",
        "page_full_reload_max_s",
        *(f"script_{page}{ko}_s" for ko in ("", "_ko") for page in SMOKE_PAGES),
        "adaptation_s", "adaptation_texts_per_s",
    ],
    "ppi": [
        "draws", "dialogues", "judge_covered", "judge_coverage", "judge_width", "human_covered",
        "human_coverage", "human_width", "ppi_covered", "ppi_coverage", "ppi_width",
        "ppi_to_people_width", "effective_n_ratio", "simulation_s", "plan_people_needed",
        "plan_ppi_needed", "ppi_python_needed", "planner_matches", "table_s_one_run",
        "page_table_s_one_run", "gain_ceiling_mean", "gain_to_ceiling", "plan_people_needed_90",
        "plan_met_share_n0", "plan_met_share_n90", "strata_width_ratio",
        "planted_build_s",
        "planted_estimates_s",
        "active_covered", "active_uniform_covered", "active_width", "active_uniform_width",
        "active_to_uniform_width", "active_tracking_covered", "active_tracking_uniform_covered",
        "active_tracking_width", "active_tracking_uniform_width",
        "active_tracking_to_uniform_width",
    ],
    "raters": [
        "think_s", "raters", "ratings_saved", "p50_submit_s", "p95_submit_s", "server_rss_mb",
    ],
    "reproduce": ["reproduce_s", "slowest_alone_s", "ratio_to_slowest"],
    "runs": [
        "first_request_s", "requests_per_s", "ratio_to_ideal", "speedup_vs_sequential",
        "peak_rss_mb",
    ],
    "serve": [
        "processes", "raters_back_to_back", "submits_per_s_1", "submits_per_s_N", "scale_ratio",
        "p95_1_s", "p95_N_s", "p95_4_raters_s", "acknowledged", "stored",
        "reconnects_after_kill", "lost_after_kill", "unfinished_submits", "burst_workers",
        "burst_places", "burst_held", "burst_told_full", "burst_other", "burst_places_stored",
        "places_exact", "burst_finished", "burst_acknowledged", "burst_stored", "burst_lost",
        "burst_stored_unacknowledged", "burst_crashes", "burst_page_loads", "p95_page_s",
    ],
    "study": [
        "items", "k", "finished_items", "ratings", "places_max", "workers", "joined",
        "codes_without_work", "codes_completed", "codes_screened_out", "codes_failed_checks",
        "calibration_passed", "calibration_stopped", "fail_checks_workers",
        "fail_checks_failed", "fail_checks_stopped", "careful_checks_failed",
        "second_tab_submits", "refusals", "refused_full", "refused_place_gone",
        "refused_other_session", "refused_nothing_left", "refused_second_tab",
        "refused_rating", "refused_other", "stalled_minutes", "full_minutes",
        "median_completion_min", "hourly_pay", "estimated_hourly_pay",
        "browser_workers_done", "crashes", "sim_minutes", "burst_people", "places_link",
        "places_after_burst", "prolific_full", "turned_away", "burst_joined", "wall_s",
    ],
}  # fmt: skip
"""Per bench, the lines its smoke run must print (bench/pages.py's pages are its
``SMOKE_PAGES``; bench/chat.py leaves the embedded model out)."""

BENCHES = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))
IN_CHROMIUM = {"annotation", "pages", "study"}
"""Benches that drive Chromium (marked browser). Every other bench starts a Python process
of its own, most a server too: marked slow, out of the fast lane like the other tests that
start processes."""


def _mark(name: str) -> pytest.MarkDecorator:
    return pytest.mark.browser if name in IN_CHROMIUM else pytest.mark.slow


def smoke(name: str) -> dict[str, float]:
    """Run ``bench/NAME.py --smoke`` from the repository root; its ``name: value`` lines."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    printed = {
        found["name"]: found["value"]
        for found in map(LINE.match, done.stdout.splitlines())
        if found is not None
    }
    expected = EXPECTED.get(name, [])
    missing = [n for n in expected if n not in printed]
    assert not missing, f"bench/{name}.py --smoke did not print {missing}\n{said}"
    values = {n: _number(printed[n]) for n in expected or printed}
    if not expected:  # not listed yet: at least one figure
        values = {n: value for n, value in values.items() if math.isfinite(value)}
        assert values, f"bench/{name}.py --smoke printed no `name: number` line\n{said}"
    unreadable = [n for n, value in values.items() if not math.isfinite(value)]
    assert not unreadable, f"bench/{name}.py --smoke printed no number for {unreadable}\n{said}"
    return values


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


GROUPS = {
    "pages": ("pages", "ppi", "reproduce"),
    "serve": ("serve", "jobs"),
    "study": ("study", "annotation"),
}
"""Which file of tests/bench_smoke/ runs which bench: the suite runs whole files on each
worker, so the slow benches are spread over files that start first (the folder sorts
before tests/browser/). Every bench not named here runs in test_other_benches.py."""


def cases(group: str | None) -> list[object]:
    """The benches of ``group`` (None: every bench no group names), as marked params."""
    grouped = {name for names in GROUPS.values() for name in names}
    names = GROUPS[group] if group else [n for n in BENCHES if n not in grouped]
    return [pytest.param(name, marks=_mark(name)) for name in names if name in BENCHES]


def check(name: str) -> None:
    """Run the bench small, and check what its lines promise beyond timings."""
    values = smoke(name)
    if name == "study":  # not timings: what the study's rules promise its workers
        assert values["crashes"] == 0
        assert values["codes_without_work"] == 0
        assert values["careful_checks_failed"] == 0  # only those told otherwise fail
        assert values["browser_workers_done"] == 1  # the whole visit in Chromium
        kinds = [n for n in values if n.startswith("refused_")]
        assert values["refusals"] == sum(values[n] for n in kinds)
        # the launch burst through Prolific's API: places exact, nobody with one turned away
        assert values["places_after_burst"] == values["places_link"]
        # everyone Prolific let in (a full arm offers itself to nobody more) got a place
        assert values["turned_away"] == 0
        assert values["burst_joined"] == values["burst_people"] - values["prolific_full"]
        assert 0 < values["burst_joined"] <= values["places_link"]
    if name == "serve":  # not timings: nothing acknowledged is lost, every rater finished
        assert values["lost_after_kill"] == 0 and values["unfinished_submits"] == 0
        assert values["stored"] >= values["acknowledged"] > 0
        # the launch burst on a capped link: exactly its places held, the rest told it is
        # full, everyone with a place finished, every acknowledged rating stored once
        assert values["places_exact"] == 1 and values["burst_other"] == 0
        assert values["burst_held"] == values["burst_places"] == values["burst_places_stored"]
        told = values["burst_workers"] - values["burst_places"]
        assert values["burst_told_full"] == told > 0
        assert values["burst_finished"] == values["burst_held"] and values["burst_crashes"] == 0
        assert values["burst_lost"] == 0 and values["burst_stored_unacknowledged"] == 0
        assert values["burst_stored"] == values["burst_acknowledged"] > 0
    if name == "ppi":  # not timings: the planner agrees with ppi-python, the judge is off
        assert values["planner_matches"] == 1 and values["judge_covered"] == 0
        # issue 64: the 90% size meets the width more often than n0, strata draw apart,
        # and the gain never passes its ceiling by more than a small sample's noise
        assert values["plan_met_share_n90"] > values["plan_met_share_n0"]
        assert 0.85 <= values["strata_width_ratio"] <= 1.15
        assert values["gain_to_ceiling"] <= 1.1
