"""A run's settings and a judging pass's are declared once: the command line,
the jobs, the plans and the Runs form are built from the request classes, and two
requests asking the same work compare equal."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path

import pytest

from koed_core.cli import build_parser
from koed_core.cli.common import request_from
from koed_core.db import Store
from koed_core.db.jobs import Jobs
from koed_core.errors import KoedError
from koed_core.jobs.kinds import params_of
from koed_core.judge.request import JudgeRequest
from koed_core.models.request import EpisodeRequest, RunRequest
from koed_core.results.reproduce import VARIANT_KEYS, parse_plan
from koed_core.run_steps import PIPELINE_STEPS, step_names

ROOT = Path(__file__).resolve().parents[1]
MOST_PARAMETERS = 8


def _parsed(*argv: str) -> object:
    args = build_parser().parse_args(list(argv))
    cls = {"run": RunRequest, "episodes": EpisodeRequest, "judge": JudgeRequest}[argv[0]]
    return request_from(args, cls)


def test_two_requests_asking_the_same_work_are_equal() -> None:
    base = RunRequest("openai:m", limit=3)
    same = [
        RunRequest("openai:m", limit=3, prompts="paper"),  # single's default set, written out
        RunRequest("openai:m", limit=3, concurrency=1, batch_size=5),  # how fast, not what
        RunRequest("openai:m", limit=3, data="/elsewhere/KoED.json"),  # the sha names data
    ]
    other = [
        RunRequest("openai:m", limit=4),
        RunRequest("openai:m", limit=3, prompts="native"),
        RunRequest("openai:m", limit=3, commas="raw"),
        RunRequest("openai:m", limit=3, replicate=1),
        EpisodeRequest("openai:m", limit=3),  # episodes are other work
    ]
    assert all(base == r and hash(base) == hash(r) for r in same)
    assert all(base != r for r in other)
    direct = RunRequest("openai:m", protocol="direct", prompts="paper")
    assert direct == RunRequest("openai:m", protocol="direct") and direct.prompt_name() == "native"
    judged = JudgeRequest("r1", judge="openai:j", concurrency=2)
    assert judged == JudgeRequest("r1", judge="openai:j") != JudgeRequest("r1", parse="lenient")


def test_the_command_line_is_built_from_the_request_fields() -> None:
    for command, cls, left_out in (
        ("run", RunRequest, ()),
        ("episodes", EpisodeRequest, ("batch", "batch_size", "replicate")),
        ("judge", JudgeRequest, ()),
    ):
        parser = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        dests = {a.dest for a in parser._actions}
        offered = {f.name for f in fields(cls) if f.metadata.get("flag") is not None}
        assert offered - set(left_out) <= dests, (command, offered - dests)
    for step in PIPELINE_STEPS:  # every pipeline step is a flag with the step's own values
        flag = "--" + step.name.replace("_", "-")
        value = step.choices[0]
        asked = _parsed("run", "--model", "openai:m", flag, value)
        assert isinstance(asked, RunRequest) and getattr(asked, step.name) == value
    asked = _parsed(
        "run", "--model", "openai:m", "--lang", "ko", "--limit", "2", "--temperature", "default"
    )
    assert asked == RunRequest("openai:m", langs=("ko",), limit=2, temperature="default")
    judged = _parsed("judge", "--run", "r", "--dimensions", "ER", "EX")
    assert isinstance(judged, JudgeRequest) and judged.dims == ("ER", "EX")
    args = build_parser().parse_args(["judge", "--run", "r", "--judge-template", "x.toml"])
    assert args.template == str(Path("x.toml").resolve())  # a file: its absolute path


def test_a_request_the_engine_would_refuse_is_refused_with_its_sentence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _parsed("run", "--model", "human", "--family", "claude") is None
    assert "family is for openai:MODEL_ID" in capsys.readouterr().err
    assert _parsed("judge", "--run", "r", "--whole-episode", "--speaker-check") is None
    assert "choose one" in capsys.readouterr().err
    assert EpisodeRequest("openai:m", batch=True).problems()  # a conversation is asked live
    assert RunRequest("openai:m", commas="nope").problems() == [
        "commas must be one of raw, decoded"
    ]


def test_jobs_queued_by_the_last_release_read_back_as_requests(tmp_path: Path) -> None:
    """A job row keeps the request's fields by name: the rows 0.4 wrote (RunJob,
    EpisodeJob, JudgeJob) are read as today's requests, values unchanged."""
    jobs = Jobs(Store(tmp_path / "k.db"))
    old = {
        "run": {"model": "openai:m", "langs": ["ko"], "protocol": "multi", "prompts": None,
                "subset": "full", "sample": None, "seed": 0, "limit": 2, "concurrency": 8,
                "temperature": None, "max_tokens": None, "batch": False, "batch_size": 1000,
                "data": None, "dataset_sha256": "abc", "postprocess": "none", "commas": None,
                "emotion_reader": None, "family": None},
        "episodes": {"model": "openai:m", "speaker": "smollm2", "turns": 2, "langs": ["en"],
                     "oracle": True, "speaker_prompts": None, "speaker_temperature": None},
        "judge": {"run_id": "r1", "judge": "gpt-4o", "mode": "paper", "dims": ["ER"],
                  "samples": 1, "concurrency": 8, "batch": False, "batch_size": 1000,
                  "template": None, "parse": "lenient", "replicate": 0,
                  "whole_episode": False, "speaker_check": False},
    }  # fmt: skip
    for kind, params in old.items():
        job = jobs.get(jobs.enqueue(kind, kind, params, None))
        assert job is not None
        read = params_of(job)
        assert read.kind == kind
        for name, value in params.items():
            got = getattr(read, name)
            assert (list(got) if isinstance(got, tuple) else got) == value, (kind, name)


def test_a_plan_takes_every_pipeline_step_as_a_key_and_a_variant() -> None:
    steps = "\n".join(f'{f.name} = "{f.choices[-1]}"' for f in PIPELINE_STEPS)
    plan = parse_plan(f'name = "p"\nmodels = ["m"]\njudge = "j"\n{steps}\n')
    assert dict(plan.pipeline) == {f.name: f.choices[-1] for f in PIPELINE_STEPS}
    asked = plan.run_request("m", "single")
    assert all(getattr(asked, name) == plan.pipeline[name] for name in step_names())
    assert set(step_names()) <= set(VARIANT_KEYS)
    varied = plan.varied({"commas": "decoded", "temperature": 0.0})
    assert varied.pipeline["commas"] == "decoded" and varied.temperature == 0.0
    assert json.dumps(sorted(plan.pipeline))  # a plain table, as the file has it


def test_a_plan_key_is_a_request_field_with_the_requests_default_and_kind() -> None:
    """Plan re-declared about 17 settings with defaults of its own and no max_tokens.
    Each key that is a request field now takes the request's default (a reproduction's
    own said once, ``REPRODUCTION``) and kind; max_tokens and the judge's temperature
    are plan keys because they are request fields."""
    from koed_core.results.reproduce.plan import (
        PLAN_KINDS,
        REPRODUCTION,
        Plan,
        request_for,
    )

    keyed = {f.name: f for f in fields(Plan) if "request" in f.metadata}
    assert {"max_tokens", "judge_temperature", "temperature", "subset"} <= set(keyed)
    for key, f in keyed.items():
        cls, name = request_for(key)
        theirs = {g.name: g for g in fields(cls)}[name]
        assert f.default == REPRODUCTION.get(key, theirs.default), key
        assert str(f.type) == PLAN_KINDS.get(key, str(theirs.type)), key
    plan = parse_plan('name = "p"\nmodels = ["m"]\njudge = "j"\nmax_tokens = 512\n'
                      "judge_temperature = 0.3\n")  # fmt: skip
    assert plan.run_request("m", "single").max_tokens == 512
    assert plan.judge_request("r").temperature == 0.3
    assert plan.judge_config("j").temperature == 0.3
    with pytest.raises(KoedError, match=r"wrong kind of value for max_tokens \(a whole number\)"):
        parse_plan('name = "p"\nmodels = ["m"]\njudge = "j"\nmax_tokens = "512"\n')
    with pytest.raises(KoedError, match="judge_temperature must be a number from 0 to 2"):
        parse_plan('name = "p"\nmodels = ["m"]\njudge = "j"\njudge_temperature = 3\n')


@pytest.mark.slow
def test_no_core_function_takes_more_than_eight_parameters() -> None:
    """Requests and hooks carry settings: a function of more is a setting list grown
    again (``self`` and ``cls`` not counted)."""
    wide = []
    for path in sorted((ROOT / "koed_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                count = len(names) + bool(a.vararg) + bool(a.kwarg)
                count -= bool(names and names[0] in ("self", "cls"))
                if count > MOST_PARAMETERS:
                    wide.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({count})")
    assert not wide, wide


@pytest.mark.slow
def test_the_runs_form_has_a_picker_per_step_and_queues_what_it_shows(
    fake_registry: Path, tmp_path: Path
) -> None:
    """The Runs form draws its step pickers from the declared steps: each one set here is in the
    queued request, as the command line's flag would put it."""
    from streamlit.testing.v1 import AppTest

    from components.core import state
    from tests.conftest import stop_workers

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/runs.py").run()
    chosen = {f.name: f.choices[-1] for f in PIPELINE_STEPS}
    for name, value in chosen.items():
        at.selectbox(key=state.runs_step(name)).set_value(value)
    at.selectbox(key=state.RUNS_MODEL).set_value("fake-listener")
    try:
        next(b for b in at.button if b.label == "Start as a background job").click().run()
        assert not at.exception, [e.value for e in at.exception]
        job = Jobs(Store(tmp_path / "koed.db")).get(1)
        asked = params_of(job)
        assert isinstance(asked, RunRequest) and asked.step_choices() == chosen
    finally:
        stop_workers(tmp_path / "koed.db")
