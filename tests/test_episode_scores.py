"""Episodes scored whole: a whole-episode judge configuration, the Speaker
checked per language, the oracle Listener as the upper reference; against the scripted
server with planted verdicts whose right answer is known."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_openai import FakeOpenAI, is_speaker
from koed_core.cli import main
from koed_core.db import Judgments, Runs, Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge import episodes as whole
from koed_core.judge.request import JudgeRequest
from koed_core.judge.rubric import rubric_version
from koed_core.models.backends import make_client
from koed_core.models.episodes import run_episodes
from koed_core.models.registry import ModelSpec
from koed_core.models.request import EpisodeRequest
from koed_core.models.runs import run_labels
from koed_core.paths import SAMPLE_FILE
from koed_core.results import episode_scores

SETTINGS = {"max_retries": 1}  # a failing fake answers fast
WHOLE = {"en": 4, "ko": 2}
"""Planted whole-episode scores: every rubric dimension; UND one point higher."""
SPEAKER = {"en": {"SIT": 5, "HID": 4, "NAT": 5}, "ko": {"SIT": 3, "HID": 4, "NAT": 2}}


def _spec(server: FakeOpenAI, name: str) -> ModelSpec:
    return ModelSpec(name=name, backend="openai", model=name, base_url=server.base_url)


def _planted(body: dict[str, Any]) -> str | None:
    """The judge's verdicts as planted; every other request as the scripted server says."""
    if is_speaker(body):
        return None
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if not system.startswith("You evaluate a whole conversation"):
        return None
    lang = "ko" if "in Korean" in user else "en"
    if '"SIT"' in user:
        return json.dumps({"rationale": "as planted", **SPEAKER[lang]})
    score = WHOLE[lang] + (1 if "Quality: UND" in user else 0)
    return f'{{"rationale": "as planted", "score": {score}}}'


def _play(server: FakeOpenAI, store: Store, **options: Any) -> str:
    dataset = load_dataset(SAMPLE_FILE)
    listener, speaker = _spec(server, "fake"), _spec(server, "fake-speaker")
    report = run_episodes(
        store,
        (listener, make_client(listener, "k")),
        (speaker, make_client(speaker, "k")),
        dataset.dialogues,
        dataset.sha256,
        EpisodeRequest(
            listener.name,
            speaker=speaker.name,
            langs=("ko", "en"),
            turns=2,
            limit=3,
            **SETTINGS,
            **options,
        ),
    )
    assert report.failed == 0
    return report.run_id


def _dialogues() -> dict[str, Any]:
    return {d.conv_id: d for d in load_dataset(SAMPLE_FILE).dialogues}


@pytest.mark.slow
def test_an_episode_judged_whole_recovers_the_planted_gap(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.reply_fn = _planted
    store = Store(tmp_path / "koed.db")
    run_id = _play(fake_openai, store)
    judge = _spec(fake_openai, "fake-judge")
    before = len(fake_openai.requests)
    report = whole.judge_whole_episodes(
        store, make_client(judge, "k"), judge, JudgeRequest(run_id, judge=judge.name), _dialogues()
    )
    # 3 dialogues x 2 languages, one call per dimension and one for UND
    assert report.scored == 6 * 6 and report.unscored == report.failed == 0
    asked = fake_openai.requests[before:]
    assert len(asked) == 36
    config = whole.whole_config("fake-judge")
    table = episode_scores.whole_table(store, config).set_index("metric")
    assert set(table.index) == {"EX", "IP", "ER", "EEA", "CA", "UND"}
    assert (table["pairs"] == 3).all()
    rubric = table.loc[["EX", "IP", "ER", "EEA", "CA"]]
    assert (rubric["gap"] == WHOLE["ko"] - WHOLE["en"]).all() and (rubric["en"] == 4).all()
    assert table.loc["UND", "ko"] == 3 and table.loc["UND", "en"] == 5
    assert set(table["judge_mode"]) == {"episode"} and set(table["run_id"]) == {run_id}
    assert not table["oracle"].any()
    assert table["dataset_sha256"].notna().all()
    # the judge reads the whole conversation: every Listener and Speaker turn kept
    ex = [b for b in asked if "Quality: EX" in b["messages"][-1]["content"]]
    assert len(ex) == 6
    for body in ex:
        user = body["messages"][-1]["content"]
        assert user.count("Listener: ") >= 2 and "<<<CONVERSATION>>>" in user
    # UND alone is told what the Speaker lived through (to judge whether it was grasped)
    dataset = load_dataset(SAMPLE_FILE)
    situations = {d.situation_en for d in dataset.dialogues} | {
        d.situation_ko for d in dataset.dialogues
    }
    und = [b["messages"][-1]["content"] for b in asked if "Quality: UND" in str(b)]
    assert len(und) == 6 and all(any(s in u for s in situations) for u in und)
    assert not any(any(s in b["messages"][-1]["content"] for s in situations) for b in ex)
    # its own configuration: never offered as a single reply's judge, rubric unchanged
    assert config.rubric_version == rubric_version()
    assert all(u.config.mode != "episode" for u in Judgments(store).configs())
    assert episode_scores.configs(store, "episode") == [config]
    # resumable: asked again, nothing is sent
    sent = len(fake_openai.requests)
    again = whole.judge_whole_episodes(
        store, make_client(judge, "k"), judge, JudgeRequest(run_id, judge=judge.name), _dialogues()
    )
    assert again.skipped == 36 and len(fake_openai.requests) == sent


@pytest.mark.slow
def test_the_speaker_is_checked_per_language(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.reply_fn = _planted
    store = Store(tmp_path / "koed.db")
    run_id = _play(fake_openai, store)
    judge = _spec(fake_openai, "fake-judge")
    before = len(fake_openai.requests)
    report = whole.check_speakers(
        store, make_client(judge, "k"), judge, JudgeRequest(run_id, judge=judge.name), _dialogues()
    )
    kept = store.db.execute(
        "select count(*) from episode_turns where run_id = ? and kept = 1", [run_id]
    ).fetchone()[0]
    assert kept == 6 and report.scored == kept  # 2 turns: one Speaker turn per episode
    asked = fake_openai.requests[before:]
    for body in asked:  # the turn checked is marked, and it is the conversation's last
        quoted = body["messages"][-1]["content"].split("<<<CONVERSATION>>>")[1]
        lines = [x for x in quoted.split("<<<END CONVERSATION>>>")[0].splitlines() if x]
        assert lines[-1].startswith("Speaker (LAST): ")
        assert sum("(LAST)" in x for x in lines) == 1
    table = episode_scores.speaker_table(store, whole.speaker_config("fake-judge"))
    by = table.set_index("metric")
    assert set(by.index) == {"SIT", "HID", "NAT"}
    for check in ("SIT", "HID", "NAT"):
        assert by.loc[check, "en"] == SPEAKER["en"][check]
        assert by.loc[check, "ko"] == SPEAKER["ko"][check]
        assert by.loc[check, "gap"] == SPEAKER["ko"][check] - SPEAKER["en"][check]
    assert set(table["judge_mode"]) == {"speaker"}
    # a verdict missing a score is stored unscored with the reason, never as a number
    fake_openai.reply_fn = lambda body: (
        '{"rationale": "x", "SIT": 9, "HID": 4}' if '"SIT"' in str(body) else None
    )
    other = tmp_path / "other.db"
    store2 = Store(other)
    run2 = _play(fake_openai, store2)
    bad = whole.check_speakers(
        store2, make_client(judge, "k"), judge, JudgeRequest(run2, judge=judge.name), _dialogues()
    )
    assert bad.unscored == 6 and bad.scored == 0
    reasons = {
        r[0] for r in store2.db.execute("select unscored_reason from judgments where score is null")
    }
    assert reasons == {"no score from 1 to 5 for SIT, NAT"}


@pytest.mark.slow
def test_the_oracle_listener_is_told_and_a_run_of_its_own(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    store = Store(tmp_path / "koed.db")
    plain = _play(fake_openai, store)
    sent = len(fake_openai.requests)
    oracle = _play(fake_openai, store, oracle=True)
    assert oracle != plain
    asked = [b for b in fake_openai.requests[sent:] if not is_speaker(b)]
    dataset = load_dataset(SAMPLE_FILE)
    first_three = dataset.dialogues[:3]
    assert asked
    for body in asked:  # every Listener request of the oracle run starts with the note
        note = body["messages"][0]
        assert note["role"] == "system"
        korean = re.search(r"[\uac00-\ud7a3]", body["messages"][-1]["content"]) is not None
        told = [d.situation_ko if korean else d.situation_en for d in first_three]
        assert any(s in note["content"] for s in told)
    assert "oracle Listener" in run_labels(store)[oracle]
    assert "oracle" not in run_labels(store)[plain]
    config = json.loads(
        store.db.execute("select config from runs where id = ?", [oracle]).fetchone()[0]
    )
    assert config["oracle"]  # the note's version, stored with the run


@pytest.mark.slow
def test_the_command_line_judges_episodes_whole_and_refuses_a_plain_run(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    fake_openai.reply_fn = _planted
    registry = tmp_path / "models.toml"
    registry.write_text(
        f'[models.fake-judge]\nbackend = "openai"\nmodel = "fake-judge"\n'
        f'base_url = "{fake_openai.base_url}"\n'
    )
    monkeypatch.setenv("KOED_MODELS", str(registry))
    monkeypatch.setenv("KOED_DATA", str(SAMPLE_FILE))
    db = tmp_path / "koed.db"
    store = Store(db)
    run_id = _play(fake_openai, store)
    code = main(
        ["judge", "--run", run_id, "--judge", "fake-judge", "--whole-episode", "--db", str(db)]
    )
    assert code == 0
    assert "whole episodes of run" in capsys.readouterr().out
    assert len(episode_scores.whole_table(Store(db), whole.whole_config("fake-judge"))) == 6
    code = main(
        ["judge", "--run", run_id, "--judge", "fake-judge", "--speaker-check", "--db", str(db)]
    )
    assert code == 0
    assert len(episode_scores.speaker_table(Store(db), whole.speaker_config("fake-judge"))) == 3
    # a single-reply run is not an episode run: one sentence, no judge call
    assert (
        main(["run", "--model", "fake-judge", "--limit", "1", "--lang", "en", "--db", str(db)]) == 0
    )
    [plain] = [r for r in Runs(Store(db)).run_table()["run_id"] if r != run_id]
    capsys.readouterr()
    sent = len(fake_openai.requests)
    code = main(
        ["judge", "--run", plain, "--judge", "fake-judge", "--whole-episode", "--db", str(db)]
    )
    assert code != 0 and len(fake_openai.requests) == sent
    assert "is not an episode run" in capsys.readouterr().err


@pytest.mark.slow
def test_raters_rate_whole_episodes_apart_from_turns(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from fixtures.rating import SCORES, rater, seeded_store, study
    from koed_core.db import Ratings
    from koed_core.rating.studies import RatingError

    store = Store(tmp_path / "koed.db")
    run_id = _play(fake_openai, store)
    ratings, study_id = study(store, run_id, whole_episodes=True, attention_checks=0)
    rater(ratings, "mina")
    rater(ratings, "joon")
    items = []
    for who in ("mina", "joon"):
        while (item := ratings.next_item(study_id, who)) is not None:
            items.append(item)
            assert ratings.workload(study_id, who, kind="response") == 6  # work, not checks
            planted = {k: (4 if item.lang == "en" else 3) for k in SCORES}
            ratings.save_rating(item.assignment_id, who, planted, "")
    # one item per episode (3 dialogues x 2 languages), each the whole conversation
    assert len(items) == 2 * 6 and {i.kind for i in items} == {"episode"}
    for item in items:
        roles = [role for role, _text in item.context]
        assert roles.count("listener") >= 2 and roles[-1] == "listener"
        assert item.response == ""
        assert "fake" not in json.dumps(item.context) and run_id not in json.dumps(item.context)
    table = episode_scores.rated_whole_table(store, study_id).set_index("metric")
    assert set(table.index) == set(SCORES) and (table["gap"] == -1).all()
    assert (table["pairs"] == 3).all() and (table["study_id"] == study_id).all()
    # never read as turn ratings: the per-reply and turn-by-turn sources leave them out
    assert Ratings(store).long_scores(study_id).empty
    # a study of whole episodes needs episode runs: said in one sentence
    _store, plain = seeded_store(tmp_path / "plain.db", dialogues=2)
    with pytest.raises(RatingError, match="episode runs only"):
        study(_store, plain, whole_episodes=True)


@pytest.mark.slow
def test_the_export_and_the_episodes_page_carry_the_whole_episode_scores(
    fake_openai: FakeOpenAI, tmp_path: Path, fake_registry: Path
) -> None:
    from streamlit.testing.v1 import AppTest

    from koed_core.results.paper_export import FILES, export_bundle

    fake_openai.reply_fn = _planted
    store = Store(tmp_path / "koed.db")  # KOED_DB points here (conftest)
    run_id = _play(fake_openai, store)
    oracle = _play(fake_openai, store, oracle=True)
    judge = _spec(fake_openai, "fake-judge")
    for run in (run_id, oracle):
        whole.judge_whole_episodes(
            store, make_client(judge, "k"), judge, JudgeRequest(run, judge=judge.name), _dialogues()
        )
    whole.check_speakers(
        store, make_client(judge, "k"), judge, JudgeRequest(run_id, judge=judge.name), _dialogues()
    )
    out = tmp_path / "bundle"
    export_bundle(store, out, images=False)
    assert {"episode_scores.csv", "speaker_checks.csv"} <= set(FILES)
    import pandas as pd

    scores = pd.read_csv(out / "episode_scores.csv")
    assert set(scores["run_id"]) == {run_id, oracle}
    assert set(scores["judge_mode"]) == {"episode"} and scores["dataset_sha256"].notna().all()
    assert set(scores[scores["run_id"] == oracle]["oracle"]) == {True}
    checks = pd.read_csv(out / "speaker_checks.csv")
    assert set(checks["metric"]) == {"SIT", "HID", "NAT"}
    # the planted oracle scores as the run does: no headroom on any dialogue
    room = episode_scores.headroom(store, whole.whole_config("fake-judge"), run_id, oracle)
    assert len(room) == 6 and (room["headroom"] == 0).all()
    assert episode_scores.oracle_for(store, run_id) == oracle
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=60).run()
    at = at.switch_page("app_pages/results/episodes.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox[0].set_value(run_id).run()
    labels = [e.label for e in at.expander]
    assert "The episode as a whole" in labels and "How well the Speaker played each side" in labels
    frames = [d.value for d in at.dataframe]
    assert any("headroom" in f.columns for f in frames)
    speaker = next(f for f in frames if "metric" in f.columns and "SIT" in set(f["metric"]))
    assert list(speaker.set_index("metric").loc["NAT", ["en", "ko"]]) == [5, 2]
    # the oracle run itself is the reference: it is never told it has none beside it
    assert episode_scores.oracle_for(store, oracle) is None and episode_scores.is_oracle(
        store, oracle
    )
    at.selectbox[0].set_value(oracle).run()
    captions = " ".join(c.value for c in at.caption)
    assert "This run is the oracle Listener" in captions and "No oracle run beside" not in captions


@pytest.mark.slow
def test_the_oracle_note_is_stored_in_the_prompt_as_it_was_sent(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """What is stored is what was sent, the oracle's note included."""
    store = Store(tmp_path / "koed.db")
    oracle = _play(fake_openai, store, oracle=True)
    sent = [b["messages"] for b in fake_openai.requests if not is_speaker(b)]
    stored = [
        json.loads(row[0])
        for row in store.db.execute(
            "select prompt from responses where run_id = ? and turn is not null", [oracle]
        )
    ]
    assert stored
    for prompt in stored:
        assert prompt[0]["role"] == "system" and prompt in sent  # the note, byte for byte
