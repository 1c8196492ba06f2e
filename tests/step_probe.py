"""Run by tests/test_run_steps.py in a process of its own: declares a dummy pipeline step
before anything else of KoED Studio is imported (the request classes take their fields
when imported), then looks for it everywhere a step must reach and prints what it saw
as JSON. Nothing in this file edits the app; it only adds the one declaration.

Usage: python tests/step_probe.py DATABASE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from koed_core import run_steps

DUMMY = run_steps.PipelineStep(
    name="dummy_step",
    choices=("plain", "fancy"),
    before="plain",
    authors=("fancy",),
    said="dummy step",
    label="Dummy step",
    words={"plain": "plain", "fancy": "fancy"},
    help="fancy: the dummy's other way",
    rereads=True,
)
run_steps.PIPELINE_STEPS = (*run_steps.PIPELINE_STEPS, DUMMY)


def main(db: Path) -> dict[str, object]:
    """What each place that must know the steps shows of the dummy."""
    import pandas as pd

    from koed_core.cli import build_parser
    from koed_core.cli.common import request_from
    from koed_core.db import Runs, Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.backends import make_client
    from koed_core.models.registry import ModelSpec
    from koed_core.models.request import RunRequest
    from koed_core.models.runs import run_benchmark, run_labels
    from koed_core.paths import SAMPLE_FILE
    from koed_core.results import sensitivity
    from koed_core.results.paper_export import provenance
    from koed_core.results.reproduce import parse_plan
    from koed_core.results.reproduce.paper_tables import stored_runs

    seen: dict[str, object] = {}
    args = build_parser().parse_args(["run", "--model", "human", "--dummy-step", "fancy"])
    asked = request_from(args, RunRequest)
    assert asked is not None
    seen["flag"] = asked.step_choices().get("dummy_step")
    seen["problems"] = RunRequest("human", dummy_step="odd").problems()  # type: ignore[call-arg]

    from components.models.runs_view import step_options

    seen["form"] = [list(step_options(s)) for s in run_steps.declared() if s.name == "dummy_step"]

    store = Store(db)
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(name="listener", backend="human")
    run_ids = {}
    for value in ("plain", "fancy"):
        request = RunRequest("human", protocol="single", dummy_step=value)  # type: ignore[call-arg]
        report = run_benchmark(
            store, make_client(spec), spec, dataset.dialogues[:3], dataset.sha256, request
        )
        run_ids[value] = report.run_id
    stored = Runs(store).run_config(run_ids["fancy"])
    assert stored is not None
    seen["stored"] = stored[0].get("dummy_step")
    seen["plain_stored"] = (Runs(store).run_config(run_ids["plain"]) or ({}, None))[0].get(
        "dummy_step"
    )
    labels = run_labels(store)
    seen["labels"] = [labels[run_ids["plain"]], labels[run_ids["fancy"]]]
    table = Runs(store).runs()
    seen["runs_table"] = sorted(set(table["dummy_step"])) if "dummy_step" in table else None

    plan = parse_plan(
        'name = "p"\nmodels = ["m"]\njudge = "j"\n'
        '[variants."dummy step: plain"]\ndummy_step = "plain"\n'
    )
    varied = plan.varied(plan.variants["dummy step: plain"])
    seen["plan_variant"] = varied.run_request("m", "single").step_choices().get("dummy_step")
    configs = {v: stored_config(store, r) for v, r in run_ids.items()}
    seen["sensitivity_groups"] = [
        g for g, keys in sensitivity.run_steps().items() if "dummy_step" in keys
    ]
    seen["sensitivity_name"] = sensitivity._name("dummy step", configs["plain"])
    exported = provenance(store, pd.DataFrame())
    seen["export"] = sorted(row.get("dummy_step") for row in exported["pipeline_steps"])
    seen["paper_tables"] = sorted(label for _, label in stored_runs(store))
    return seen


def stored_config(store: object, run_id: str) -> dict[str, object]:
    """A run's stored configuration."""
    from koed_core.db import Runs, Store

    assert isinstance(store, Store)
    found = Runs(store).run_config(run_id)
    assert found is not None
    return found[0]


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), default=str))
