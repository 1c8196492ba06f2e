"""Every number from one source: regressions for the 0.1.0 findings, each on the
upgraded 0.1.0 fixture or on a database built here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from fixtures.rating import SCORES
from koed_core.config import Settings, read_secrets
from koed_core.db import Judgments, RaterProfile, Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeError, JudgeRequest
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from koed_core.rating.studies import StudyConfig, StudyRules
from koed_core.results import demo, gaps, score_sources

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "koed-0.1.0.db"
LISTENER_RUN = "9d350d301481ea01a307"  # fake-listener, judged by gpt-4o (4) and judge-b (1)


@pytest.fixture
def old(tmp_path: Path) -> Path:
    path = tmp_path / "koed.db"
    shutil.copy(FIXTURE, path)
    return path


def koed(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "koed_core.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.slow
def test_export_keeps_each_judge_configuration_apart(old: Path, tmp_path: Path) -> None:
    result = koed("export", "--out", str(tmp_path / "out"), "--no-images", KOED_DB=str(old))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "out" / "gaps.csv")
    judged = table[(table["source"] == "judge") & (table["run_id"] == LISTENER_RUN)]
    assert {"judge_model", "judge_mode", "judge_prompt_version"} <= set(table.columns)
    by_judge = judged.groupby(["judge_model", "judge_prompt_version"])["ko"].agg(set)
    # gpt-4o scored 4 and judge-b 1 everywhere; the older prompt version scored ER 2
    assert by_judge.to_dict() == {
        ("gpt-4o", "950b7728fa11"): {4.0},
        ("gpt-4o", "oldversion00"): {2.0},
        ("judge-b", "950b7728fa11"): {1.0},
    }
    assert not set(judged["ko"]) & {2.5, 3.5}  # 0.1.0 averaged 4 and 1, 4 and 3
    agreement = pd.read_csv(tmp_path / "out" / "agreement.csv")
    assert set(agreement["judge_model"]) == {"gpt-4o", "judge-b"}
    assert len(agreement.drop_duplicates(["judge_model", "judge_prompt_version"])) == 3


@pytest.mark.slow
def test_gap_page_shows_one_prompt_version(old: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(old)
    newest = score_sources.choose_judge(store, [LISTENER_RUN])
    assert newest is not None
    frame = gaps.score_frame(store, judge=newest.config)
    er = frame[(frame["source"] == "judge") & (frame["metric"] == "ER")]
    assert set(er.loc[er["run_id"] == LISTENER_RUN, "value"]) in ({4.0}, {2.0}, {1.0})
    both = pd.concat([frame, gaps.score_frame(store, judge=newest.others[0])])
    with pytest.raises(ValueError, match="more than one judge source"):
        gaps.gap_table(both[both["source"] == "judge"])
    monkeypatch.setenv("KOED_DB", str(old))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    picker = at.selectbox(key="gap.judge")
    assert len(picker.options) == 3
    assert sum("oldversi" in option for option in picker.options) == 1
    table = next(d.value for d in at.dataframe if "source" in d.value.columns)
    assert table["judge_prompt_version"].nunique() == 1
    paper = at.dataframe[0].value  # the paper's table: a row per model and protocol
    assert {"ED ER", "KoED ER", "gap"} <= set(paper.columns) and len(paper) == 2
    assert not set(table["ko"]) & {2.5, 3.5}


@pytest.mark.slow
def test_agreement_cli_no_longer_crashes_on_two_prompt_versions(old: Path) -> None:
    result = koed("agreement", "--judge", "gpt-4o", KOED_DB=str(old))
    assert result.returncode == 0, result.stderr
    assert "judge: gpt-4o · paper" in result.stdout
    assert "also stored (not mixed in" in result.stdout
    chosen = koed("agreement", "--prompt-version", "oldversion", KOED_DB=str(old))
    assert chosen.returncode == 0 and "prompt oldversi" in chosen.stdout
    missing = koed("agreement", "--judge", "nobody", KOED_DB=str(old))
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "no judge configuration with judge nobody" in missing.stderr
    assert "gpt-4o --mode paper --prompt-version 950b7728fa11" in missing.stderr


@pytest.mark.slow
def test_agreement_mode_strict_without_judge_uses_strict(
    fake_openai: FakeOpenAI, old: Path
) -> None:
    store = Store(old)
    spec = ModelSpec(
        name="strict-judge", backend="openai", model="j", base_url=fake_openai.base_url
    )
    from koed_core.models.backends import make_client

    judge_run(
        store,
        make_client(spec),
        spec,
        JudgeRequest(LISTENER_RUN, judge=spec.name, mode="strict", dims=["ER"]),
    )
    judge_run(
        store,
        make_client(spec),
        spec,
        JudgeRequest(LISTENER_RUN, judge=spec.name, mode="paper", dims=["ER"]),
    )  # newer
    result = koed("agreement", "--mode", "strict", KOED_DB=str(old))
    assert result.returncode == 0, result.stderr
    assert "judge: strict-judge · strict" in result.stdout


@pytest.mark.slow
def test_provenance_comes_from_the_runs(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    db = tmp_path / "k.db"
    store = Store(db)
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(name="fake", backend="openai", model="m", base_url=fake_openai.base_url)
    from koed_core.models.backends import make_client

    official_sha = "aa4938164ce7c0c2bb4006d4c8f5ad65f168b3d99c718492810fffd30ef0b8b2"
    run_benchmark(
        store,
        make_client(spec),
        spec,
        dataset.dialogues[:2],
        official_sha,
        RunRequest(spec.name, langs=("ko", "en"), protocol="single"),
    )
    result = koed(
        "export", "--out", str(tmp_path / "out"), "--no-images", KOED_DB=str(db)
    )  # KOED_DATA unset
    assert result.returncode == 0, result.stderr
    provenance = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert provenance["dataset_sha256"] == [official_sha] and "warning" not in provenance
    # every run's pipeline steps: the paper profile's are the authors'
    [steps] = provenance["pipeline_steps"]
    assert (steps["prompt_set"], steps["postprocess"], steps["commas"]) == (
        "paper",
        "authors",
        "raw",
    )
    assert steps["emotion_reader"] == "authors" and steps["family"] == "open"
    assert steps["max_tokens"] == 256  # the decoding whole, one value stored flat
    from koed_core.models.prompts import prompt_set_version

    assert steps["prompt_version"] == prompt_set_version("paper")  # which wording, exactly
    run_benchmark(
        store,
        make_client(spec),
        spec,
        dataset.dialogues[:2],
        dataset.sha256,
        RunRequest(spec.name, langs=("ko",), protocol="single"),
    )
    koed("export", "--out", str(tmp_path / "out2"), "--no-images", KOED_DB=str(db))
    provenance = json.loads((tmp_path / "out2" / "provenance.json").read_text())
    assert sorted(provenance["dataset_sha256"]) == sorted([official_sha, dataset.sha256])
    assert "2 different datasets" in provenance["warning"]


@pytest.mark.slow
def test_export_of_an_empty_database(tmp_path: Path) -> None:
    result = koed(
        "export", "--out", str(tmp_path / "out"), "--no-images", KOED_DB=str(tmp_path / "empty.db")
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert pd.read_csv(tmp_path / "out" / "gaps.csv").empty


def test_a_second_study_never_overwrites_the_first(old: Path) -> None:
    store = Store(old)
    rules = StudyRules(store)
    before = store.rows("select * from ratings where study_id = 1 order by id")
    second = rules.create_study(
        StudyConfig(
            name="again", run_ids=(LISTENER_RUN, "aaf4aab98055d3fe0f7d"), attention_checks=0
        ),
        load_dataset(SAMPLE_FILE),
    )
    for _ in range(20):
        item = rules.next_item(second, "alice")
        if item is None:
            break
        rules.save_rating(item.assignment_id, "alice", {k: 1 for k in SCORES}, "second study")
    assert store.rows("select * from ratings where study_id = 1 order by id") == before
    assert store.rows("select count(*) as n from ratings where study_id = ?", [second])[0]["n"] > 0
    last = rules.last_rated(1, "alice")
    assert last is not None and "second study" not in last[2]


def test_n_of_m_counts_only_what_the_rater_can_get(old: Path) -> None:
    store = Store(old)
    rules = StudyRules(store)
    study = rules.create_study(
        StudyConfig(
            name="k1", run_ids=(LISTENER_RUN,), langs=("ko",), overlap=1, attention_checks=0
        ),
        load_dataset(SAMPLE_FILE),
    )
    for name in ("first", "second"):
        rules.save_profile(RaterProfile(name, ("ko",), "ko", 20.0, 0.0))
    while (item := rules.next_item(study, "first")) is not None:
        rules.save_rating(item.assignment_id, "first", dict(SCORES))
    assert rules.done(study, "first") == rules.workload(study, "first") == 4
    # everything already has its one rater: "0 of 0", not "0 of 4" with no next item
    assert rules.workload(study, "second") == 0 and rules.next_item(study, "second") is None


def test_no_dimension_judges_nothing(old: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(old)
    spec = ModelSpec(name="x", backend="openai", model="x", base_url="http://127.0.0.1:9/v1")
    from koed_core.models.backends import make_client

    with pytest.raises(JudgeError, match="at least one dimension"):
        judge_run(
            store,
            make_client(spec),
            spec,
            JudgeRequest(LISTENER_RUN, judge=spec.name, mode="paper", dims=[]),
        )
    monkeypatch.setenv("KOED_DB", str(old))
    before = store.count("judgments")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/judge.py").run()
    at.multiselect[0].set_value([])
    next(b for b in at.button if b.label == "Start as a background job").click().run()
    assert not at.exception
    assert any("at least one dimension" in w.value for w in at.warning)
    assert Store(old).count("judgments") == before


def test_demo_live_asks_with_the_runs_own_key(
    tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "k.db")
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(
        name="claude-like",
        backend="openai",
        model="c",
        base_url=fake_openai.base_url,
        api_key_env="ANTHROPIC_API_KEY",
    )
    from koed_core.models.backends import make_client

    report = run_benchmark(
        store,
        make_client(spec, "anthropic-key"),
        spec,
        dataset.dialogues[:1],
        dataset.sha256,
        RunRequest(spec.name, langs=("ko", "en"), protocol="single"),
    )
    rebuilt = demo.run_spec(store, report.run_id, {})
    assert rebuilt.api_key_env == "ANTHROPIC_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key-must-not-leave")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key")
    from components.shared.model_choice import key_for

    assert key_for(rebuilt) == "anthropic-key"
    # a 0.1.0 run kept no key name: replay only, unless models.toml has the same model
    old = tmp_path / "old.db"
    shutil.copy(FIXTURE, old)
    with pytest.raises(Exception, match="without the name of its API key"):
        demo.run_spec(Store(old), LISTENER_RUN, {})


@pytest.mark.slow
def test_app_and_cli_agree_on_settings_given_only_in_secrets(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".streamlit").mkdir(parents=True)
    db = tmp_path / "from-secrets.db"
    (project / ".streamlit" / "secrets.toml").write_text(
        f'KOED_DB = "{db}"\nKOED_DATA_URL = "http://127.0.0.1:1/k.json"\n'
        '[auth]\ncookie_key = "' + "c" * 40 + '"\n'
    )
    names = ("KOED_DB", "KOED_DATA_URL", "KOED_COOKIE_KEY")
    env = {k: v for k, v in os.environ.items() if k not in names}
    env["PYTHONPATH"] = str(ROOT)
    probe = "from components.core import resources; s = resources.settings(); print(repr(s))"
    app = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )
    cli = Settings.from_sources(env, read_secrets(project, tmp_path / "nohome"))
    assert app.returncode == 0, app.stderr
    assert app.stdout.strip() == repr(cli) and cli.db_path == db and cli.cookie_key
    shown = subprocess.run(
        [sys.executable, "-m", "koed_core.cli", "settings"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )
    assert f"KOED_DB\t{db}\t(secrets.toml)" in shown.stdout
    assert "c" * 40 not in shown.stdout  # the cookie key is never printed
    exported = subprocess.run(
        [
            sys.executable,
            "-m",
            "koed_core.cli",
            "export",
            "--out",
            str(tmp_path / "out"),
            "--no-images",
        ],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    assert db.is_file()  # the CLI opened the database named in secrets.toml


def test_judgments_query_never_averages_configurations(old: Path) -> None:
    store = Store(old)
    for use in Judgments(store).configs():
        scores = Judgments(store).scores(use.config, [LISTENER_RUN])
        assert scores.groupby(["response_id", "dimension"]).size().max() == 1
        assert set(scores["score"]) <= {1.0, 2.0, 4.0} and scores["score"].nunique() == 1
