"""`koed reproduce`: the plan, the dry run, and a reproduction against the scripted server
standing in for five models and the judge, killed once and resumed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fixtures.fake_openai import AUTHORS_REPLY, HANGUL, FakeOpenAI
from koed_core.paths import SAMPLE_FILE
from koed_core.results.reproduce import PlanError, load_plan
from tests.conftest import stored_responses, wait_until

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["m-one", "m-two", "m-three", "m-four", "m-five"]


def scripted_models(
    path: Path, base_url: str, names: Iterable[str], provenance: Mapping[str, str] | None = None
) -> Path:
    """A models.toml whose every model is served by the scripted server at ``base_url``."""
    path.write_text(
        "".join(
            f'[models.{name}]\nbackend = "openai"\nmodel = "{name}"\nbase_url = "{base_url}"\n'
            + (f'provenance = "{provenance[name]}"\n' if provenance else "")
            for name in names
        )
    )
    return path


def reproduce_env(registry: Path, db: Path) -> dict[str, str]:
    """What a ``koed`` process is started with: the registry, the sample, its database."""
    return {
        **os.environ,
        "KOED_MODELS": str(registry),
        "KOED_DATA": str(SAMPLE_FILE),
        "KOED_DB": str(db),
        "PYTHONPATH": str(ROOT),
    }


def koed_reproduce(plan: Path, out: Path | None = None) -> list[str]:
    """``koed reproduce PLAN`` as a terminal starts it; with ``out``, writing its tables
    there without figures."""
    command = [sys.executable, "-m", "koed_core.cli", "reproduce", str(plan)]
    return [*command, "--out", str(out), "--no-images"] if out else command


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a command to its end, its output kept for the assertions."""
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def _setup(tmp_path: Path, server: FakeOpenAI) -> tuple[Path, dict[str, str]]:
    server.served = [*MODELS, "judge-x"]  # the preflight finds every id in the list
    provenance = {n: "korean-centric" if n == "m-three" else "western" for n in server.served}
    registry = scripted_models(tmp_path / "models.toml", server.base_url, server.served, provenance)
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "test table"\nsubset = "full"\nsample = 3\nseed = 1\n'
        f"models = {MODELS!r}\n".replace("'", '"')
        + 'judge = "judge-x"\nconcurrency = 2\njudge_concurrency = 2\n'
    )
    return plan, reproduce_env(registry, tmp_path / "k.db")


def test_the_shipped_plan_is_the_papers() -> None:
    plan = load_plan(ROOT / "plans" / "paper.toml")
    assert plan.subset == "paper-100" and plan.prompts == "paper" and plan.judge == "gpt-4o"
    assert set(plan.protocols) == {"single", "multi"} and set(plan.langs) == {"ko", "en"}
    assert len(plan.models) == 5 and "exaone-3.0-7.8b" in plan.models


def test_the_four_cell_plan_asks_every_cell_of_the_papers_models() -> None:
    plan = load_plan(ROOT / "plans" / "language-or-culture.toml")
    assert plan.langs == ("ko", "en", "en-from-ko", "ko-from-en")
    assert plan.models == load_plan(ROOT / "plans" / "paper.toml").models


def test_a_bad_plan_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmodels = ["a"]\njudge = "j"\nlangs = ["fr"]\n')
    with pytest.raises(PlanError, match="langs must be among ko, en, en-from-ko and ko-from-en"):
        load_plan(bad)
    bad.write_text('name = "x"\nmodel = ["a"]\njudge = "j"\n')
    with pytest.raises(PlanError, match="unknown key"):
        load_plan(bad)


@pytest.mark.slow
def test_dry_run_counts_requests_per_server(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    plan, env = _setup(tmp_path, fake_openai)
    done = run([*koed_reproduce(plan), "--dry-run"], env)
    assert done.returncode == 0, done.stderr
    # 5 models x 2 protocols x 2 languages x 3 dialogues, two calls each (paper prompts);
    # the judge: 60 responses x 5 dimensions; all on one server here
    assert f"{fake_openai.base_url}: 420 requests" in done.stdout
    assert fake_openai.requests == []  # a dry run sends nothing


@pytest.mark.slow
def test_a_retired_model_stops_the_plan_before_anything_is_sent(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    plan, env = _setup(tmp_path, fake_openai)
    registry = Path(env["KOED_MODELS"])
    text = registry.read_text().replace(
        'model = "m-two"\n', 'model = "m-two"\nsubstitutes = ["m-two-2025"]\n'
    )
    registry.write_text(text)
    fake_openai.served = ["m-one", "m-three", "m-four", "m-five", "judge-x"]  # m-two unlisted
    fake_openai.retired = {"m-two"}
    done = run([*koed_reproduce(plan), "--out", str(tmp_path)], env)
    assert done.returncode != 0
    assert "stopped before sending anything" in done.stderr
    assert "m-two" in done.stderr and "m-two-2025" in done.stderr  # the substitute, named
    # the listed models were not called; m-two got one 1-token probe, nothing else
    assert [r["model"] for r in fake_openai.requests] == ["m-two"]
    assert fake_openai.requests[0]["max_tokens"] == 1
    assert stored_responses(tmp_path / "k.db") == 0


@pytest.mark.slow
def test_reproduce_killed_and_resumed(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.latency_s = 0.05
    plan, env = _setup(tmp_path, fake_openai)
    out = tmp_path / "out"
    command = koed_reproduce(plan, out)
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db = tmp_path / "k.db"
    wait_until(lambda: stored_responses(db) >= 15, "fifteen answers stored before the kill")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    stored = stored_responses(db)
    assert 15 <= stored < 60, "the reproduction should have been killed mid-way"
    sent_before = len(fake_openai.requests)
    again = run(command, env)
    assert again.returncode == 0, again.stderr
    table = pd.read_csv(out / "paper_table.csv")
    assert len(table) == 10 and set(table["model"]) == set(MODELS)
    for column in ("ED ER", "KoED ER", "ED emotion", "KoED emotion", "gap", "ci_low"):
        assert table[column].notna().all(), column
    assert set(table["judge_model"]) == {"judge-x"}
    with sqlite3.connect(db) as conn:
        responses, distinct = conn.execute(
            "select count(*), count(distinct run_id || conv_id || lang) from responses"
        ).fetchone()
        judged = conn.execute(
            "select count(distinct response_id || dimension) from judgments where score is not null"
        ).fetchone()[0]
    assert responses == distinct == 60 and judged == 300
    # nothing stored was asked again: at most the calls in flight at the kill are repeated
    # (5 models x 2 concurrent items x 2 calls, plus 5 judging passes x 2)
    assert len(fake_openai.requests) <= 420 + 30
    assert len(fake_openai.requests) - sent_before <= 420 - stored * 2 + 30
    assert (out / "paper_table.tex").read_text().startswith("% test table")
    assert "| model | protocol |" in (out / "paper_table.md").read_text()
    assert "paper_table.csv" in (out / "README.md").read_text()
    # the paper's claims, checked on what is stored: no call, each claim decided or not
    sent = len(fake_openai.requests)
    claimed = run([*command, "--claims"], env)
    assert claimed.returncode == 0, claimed.stderr
    assert len(fake_openai.requests) == sent
    said = (out / "claims.md").read_text()
    assert said in claimed.stdout and said.startswith("## The paper's claims")
    assert "Models consistently underperform on KoED" in said and "judge: judge-x" in said
    assert said.count("runs: ") == 3 and "Dataset sha256: " in said
    assert "the abstract: " in said and "Decision rule" in said
    # ... and the bundle's README lists claims.md and prints every verdict in it
    readme = (out / "README.md").read_text()
    assert "| claims.md |" in readme and said.strip() in readme
    assert "paper_table.csv" in readme  # still listed beside it


@pytest.mark.slow
def test_an_unreachable_model_is_left_out_and_the_others_go_on(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    plan, env = _setup(tmp_path, fake_openai)
    registry = Path(env["KOED_MODELS"])
    registry.write_text(
        registry.read_text() + '\n[models.gone]\nbackend = "openai"\nmodel = "gone"\n'
        'base_url = "http://127.0.0.1:9/v1"\n'
    )
    plan.write_text(
        plan.read_text()
        .replace('models = ["m-one", ', 'models = ["gone", "m-one", ')
        .replace("sample = 3", "sample = 1")
    )
    done = run(koed_reproduce(plan, tmp_path / "o"), env)
    assert done.returncode == 1  # something was left out: said, and the exit says it too
    assert "left out: gone: server not reachable" in done.stderr
    table = pd.read_csv(tmp_path / "o" / "paper_table.csv")
    assert set(table["model"]) == set(MODELS)  # the five others were run and judged


def _by_dimension(body: dict[str, Any]) -> str | None:
    """The judge: Korean EX never scored, other Korean dimensions 2; English EX 5, the
    rest 3. Matched by (dialogue, dimension) the gap is exactly 2 - 3 = -1."""
    user = body["messages"][-1]["content"]
    if AUTHORS_REPLY not in user:
        return None
    system = body["messages"][0]["content"]
    korean = HANGUL.search(user.split(AUTHORS_REPLY)[0]) is not None
    explorations = "(EX)" in system
    if korean:
        return "Feedback: none." if explorations else "Feedback: fine.\nScore: 2"
    return f"Feedback: fine.\nScore: {5 if explorations else 3}"


@pytest.mark.slow
def test_the_tables_gap_pairs_by_dialogue_and_dimension(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A dimension scored in one language only is left out of both."""
    plan, env = _setup(tmp_path, fake_openai)
    plan.write_text(
        plan.read_text()
        .replace('models = ["m-one", "m-two", "m-three", "m-four", "m-five"]', "")
        .replace("sample = 3", 'sample = 2\nmodels = ["m-one"]\nprotocols = ["single"]')
    )
    fake_openai.reply_fn = _by_dimension
    out = tmp_path / "out"
    done = run(koed_reproduce(plan, out), env)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "paper_table.csv")
    assert table["gap"].tolist() == [-1.0]
    assert table["pairs"].tolist() == [2] and table["dimension_pairs"].tolist() == [8]
    said = (out / "paper_table.md").read_text()
    assert "gap (KoED-ED, rubric mean, paired by dialogue x dimension)" in said
