"""A pipeline step is declared once (``koed_core.run_steps``) and reaches everything that
reads a run's steps with no other edit: the command line, the Runs form, the stored
provenance and the run's id, the label, the Runs table, a sensitivity plan, the paper
export and the paper tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from koed_core.db.types import DECODING_KEYS, Decoding, RunConfig
from koed_core.models.client import GenerationSettings
from koed_core.models.pipeline import Steps
from koed_core.run_steps import judged_same, rereads_only

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_dummy_step_declared_once_reaches_every_place(tmp_path: Path) -> None:
    """The probe declares the step before anything imports the request classes (their
    fields are made at import), in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KOED_DB": str(tmp_path / "koed.db")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "step_probe.py"), str(tmp_path / "probe.db")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["flag"] == "fancy"  # --dummy-step, with its own values
    assert seen["problems"] == ["dummy_step must be one of plain, fancy"]
    assert seen["form"] == [["the prompt set's", "plain", "fancy"]]
    assert seen["stored"] == "fancy" and seen["plain_stored"] == "plain"
    plain, fancy = seen["labels"]
    assert plain.endswith("dummy step plain") and fancy.endswith("dummy step fancy")
    assert seen["runs_table"] == ["fancy", "plain"]
    assert seen["plan_variant"] == "plain"
    assert seen["sensitivity_groups"] == ["dummy step"]
    assert seen["sensitivity_name"] == "dummy step: plain"
    assert seen["export"] == ["fancy", "plain"]
    # the paper set takes the authors' value (fancy): the run that differs is named by it
    assert any(label.endswith("(dummy step plain)") for label in seen["paper_tables"])


def test_a_run_at_every_earlier_step_keeps_the_id_it_had() -> None:
    """A run stored by an earlier release keeps its id: the steps stored flat, and a step
    at its earlier value left out of the hash, as before the steps were values."""
    config = RunConfig(
        "m", "openai", "m", None, "x", "single", "v1", Decoding(0.7, 256), "sha",
        steps=tuple(Steps().chosen().items()),
    )  # fmt: skip
    assert config.run_id == "8283f879e32e9b08023c"  # what 0.4 gave this run
    stored = config.stored()
    assert stored["postprocess"] == "none" and "steps" not in stored
    raw = RunConfig(
        "m", "openai", "m", None, "x", "single", "v1", Decoding(0.7, 256), "sha",
        steps=(("commas", "raw"),),
    )  # fmt: skip
    assert raw.stored()["commas"] == "raw" and raw.run_id == "53a549e6ed4b79007b0e"


def test_which_steps_only_read_stored_answers_is_said_by_each_step() -> None:
    assert rereads_only(["postprocess", "emotion_reader"]) and not rereads_only(["commas"])
    assert judged_same(["emotion_reader"]) and not judged_same(["postprocess"])
    assert not rereads_only(["temperature"])


@pytest.mark.parametrize(
    ("decoding", "other", "run_id"),
    [  # each id as the code before decoding was one value computed it
        (Decoding(0.7, 256), {}, "8283f879e32e9b08023c"),
        (Decoding(None, 256), {}, "7318daf27bf4d3cc36b9"),
        (Decoding(0.1, 512, top_p=0.9), {}, "578d3e51ecf1fc4358a7"),
        (
            Decoding(0.6, 256, top_p=0.9, top_k=50, repetition_penalty=1.1),
            {"prompt_set": "paper", "steps": (("commas", "raw"),)},
            "c62372c13f5eaf0273ea",
        ),
        (Decoding(0.0, 128), {"kind": "live"}, "1c0a1676912b2728abaf"),
    ],
)
def test_decoding_is_one_value_stored_flat_with_the_ids_runs_had(
    decoding: Decoding, other: dict[str, Any], run_id: str
) -> None:
    """Temperature, token limit, top_p, top_k and repetition penalty travel as one value;
    a run's row keeps them flat, as every release did, so ids and old rows read the same."""
    config = RunConfig(
        model_name="m", backend="openai", model_id="m", base_url=None, provenance="x",
        protocol="single", prompt_version="v1", decoding=decoding, dataset_sha256="sha",
        **other,
    )  # fmt: skip
    assert config.run_id == run_id
    stored = config.stored()
    assert "decoding" not in stored
    assert [stored[k] for k in DECODING_KEYS] == [getattr(decoding, k) for k in DECODING_KEYS]
    again = RunConfig.from_stored(json.loads(json.dumps(stored)))  # as a row gives it back
    assert again.stored() == stored and again.run_id == run_id
    settings = GenerationSettings(**{k: getattr(decoding, k) for k in DECODING_KEYS})
    assert settings.decoding == decoding
