"""Multi-turn episodes against the scripted server: turn order, language, what the
Listener never sees, breaks of character, the Speaker's end, SIGKILL and resume, the
gap over turns, the pages and the command line."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components.core import state
from fixtures.fake_openai import AUTHORS_REPLY, SPEAKER_REPLY, FakeOpenAI, is_speaker
from koed_core.db import Store
from koed_core.db.episodes import Episodes
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.labels import by_name
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest
from koed_core.models.backends import make_client
from koed_core.models.episodes import read_states, run_episodes
from koed_core.models.registry import ModelSpec
from koed_core.models.request import EpisodeRequest
from koed_core.models.speaker import check_turn, load_speaker_prompt
from koed_core.paths import SAMPLE_FILE
from koed_core.results.score_sources import choose_judge
from koed_core.results.turn_gaps import turn_frame, turn_gap_table
from tests.conftest import stop_workers, stored_responses, wait_for_job, wait_until

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"max_retries": 1}  # a failing fake answers fast
HANGUL = re.compile(r"[\uac00-\ud7a3]")


def _spec(server: FakeOpenAI, name: str = "fake") -> ModelSpec:
    return ModelSpec(name=name, backend="openai", model=name, base_url=server.base_url)


def _play(server: FakeOpenAI, store: Store, **options: Any):  # type: ignore[no-untyped-def]
    dataset = load_dataset(SAMPLE_FILE)
    listener, speaker = _spec(server), _spec(server, "fake-speaker")
    dialogues = options.pop("dialogues", dataset.dialogues)
    if "prompt_set" in options:
        options["prompts"] = options.pop("prompt_set")
    chosen = {"langs": ("ko", "en"), "turns": 3, "limit": 3, **SETTINGS, **options}
    return run_episodes(
        store,
        (listener, make_client(listener, "k")),
        (speaker, make_client(speaker, "k")),
        dialogues,
        dataset.sha256,
        EpisodeRequest(listener.name, speaker=speaker.name, **chosen),
    )


def _listener_requests(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [b for b in server.requests if not is_speaker(b)]


@pytest.mark.slow
def test_turns_alternate_in_the_dialogues_language(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = Store(tmp_path / "koed.db")
    report = _play(fake_openai, store)
    assert report.succeeded == 6 and report.failed == 0
    # 6 episodes x (3 Listener turns x 2 calls of the paper set + 2 Speaker turns)
    assert len(fake_openai.requests) == 6 * (3 * 2 + 2)
    episodes = Episodes(store)
    for conv_id in episodes.dialogues(report.run_id):
        for lang in ("ko", "en"):
            entries = episodes.transcript(report.run_id, conv_id, lang)
            simulated = [(e["role"], e["turn"]) for e in entries if e["turn"] > 0]
            assert simulated == [
                ("listener", 1),
                ("speaker", 1),
                ("listener", 2),
                ("speaker", 2),
                ("listener", 3),
            ]
            said = [e["text"] for e in entries if e["turn"] > 0 and e["role"] == "speaker"]
            assert said == [SPEAKER_REPLY[lang]] * 2
            assert all(bool(HANGUL.search(e["text"])) == (lang == "ko") for e in entries)
    # each Listener turn answered the episode so far: its last line is the Speaker's turn
    for body in _listener_requests(fake_openai):
        user = body["messages"][-1]["content"]
        if "Identified emotion:" in user:
            continue
        transcript = user.split("Conversation:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert transcript[-1].startswith("Speaker: ")
    # the Korean Speaker is asked in Korean, with the dialogue's Korean situation
    dataset = load_dataset(SAMPLE_FILE)
    ko_speaker = [b for b in fake_openai.requests if is_speaker(b) and "화자" in str(b)]
    assert ko_speaker and all(
        any(d.situation_ko in b["messages"][0]["content"] for d in dataset.dialogues[:3])
        for b in ko_speaker
    )
    # a rerun finds every episode finished and asks nothing
    before = len(fake_openai.requests)
    again = _play(fake_openai, store)
    assert again.skipped == 6 and len(fake_openai.requests) == before


@pytest.mark.slow
def test_the_listener_never_sees_the_situation_or_the_emotion(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    store = Store(tmp_path / "koed.db")
    _play(fake_openai, store, protocol="direct", prompt_set="native", limit=5)
    dataset = load_dataset(SAMPLE_FILE)
    hidden = set()
    for dialogue in dataset.dialogues[:5]:
        hidden |= {dialogue.situation_ko, dialogue.situation_en}
        for name in dialogue.labels:
            hidden |= {name, by_name()[name].ko}
    listener = _listener_requests(fake_openai)
    speaker = [b for b in fake_openai.requests if is_speaker(b)]
    assert listener and speaker
    for body in listener:
        text = json.dumps(body, ensure_ascii=False)
        shown = [word for word in hidden if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)]
        assert not shown, shown
    # ...and they are what the Speaker is told
    told = " ".join(b["messages"][0]["content"] for b in speaker)
    assert all(d.situation_en in told or d.situation_ko in told for d in dataset.dialogues[:5])


def test_a_speaker_breaking_character_is_flagged_and_asked_again(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    dataset = load_dataset(SAMPLE_FILE)
    first, second = dataset.dialogues[0], dataset.dialogues[1]
    asked: dict[str, int] = {}

    def script(body: dict[str, Any]) -> str | None:
        system = body["messages"][0]["content"]
        if not is_speaker(body) or not system.startswith("You are"):
            return None
        for dialogue, always in ((first, False), (second, True)):
            if dialogue.situation_en in system:
                asked[dialogue.conv_id] = asked.get(dialogue.conv_id, 0) + 1
                if always or asked[dialogue.conv_id] == 1:
                    return f"Listener: I feel so {dialogue.labels[0]} about it."
        return None

    fake_openai.reply_fn = script
    store = Store(tmp_path / "koed.db")
    report = _play(fake_openai, store, langs=["en"], limit=2, turns=2)
    states = read_states(store, report.run_id, 2)
    # the first dialogue's Speaker broke once, was asked again and the episode went on
    assert states[(first.conv_id, "en")].status == "complete"
    entries = Episodes(store).transcript(report.run_id, first.conv_id, "en")
    flagged = [e for e in entries if e["breaks"]]
    assert len(flagged) == 1 and not flagged[0]["kept"]
    assert set(flagged[0]["breaks"]) == {"named the emotion", "spoke as the Listener"}
    assert [e["role"] for e in entries if e["turn"] > 0 and e["kept"]] == [
        "listener",
        "speaker",
        "listener",
    ]
    # the second broke twice: the episode ends there, no Listener turn after it
    assert states[(second.conv_id, "en")].status == "broke"
    entries = Episodes(store).transcript(report.run_id, second.conv_id, "en")
    assert [(e["role"], e["kept"]) for e in entries if e["turn"] > 0] == [
        ("listener", True),
        ("speaker", False),
        ("speaker", False),
    ]
    assert Episodes(store).break_counts(report.run_id)["named the emotion"] == 3
    # nothing to redo: a rerun asks nothing more
    before = len(fake_openai.requests)
    _play(fake_openai, store, langs=["en"], limit=2, turns=2)
    assert len(fake_openai.requests) == before


def test_the_speaker_ends_the_conversation(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.reply_fn = lambda body: (
        "Thanks, that helps. Talk soon. [END]" if is_speaker(body) else None
    )
    store = Store(tmp_path / "koed.db")
    report = _play(fake_openai, store, langs=["en"], limit=1, turns=3)
    entries = Episodes(store).transcript(
        report.run_id, load_dataset(SAMPLE_FILE).dialogues[0].conv_id, "en"
    )
    last = [e for e in entries if e["turn"] > 0]
    assert [e["role"] for e in last] == ["listener", "speaker"]
    assert last[-1]["ends"] and last[-1]["text"] == "Thanks, that helps. Talk soon."


def test_check_turn_reads_every_break() -> None:
    prompt = load_speaker_prompt()
    assert check_turn("Speaker: It was a long day.", "en", ["sad"], prompt).breaks == ()
    assert check_turn("그날 정말 슬픈 하루였어.", "ko", ["sad"], prompt).breaks == (
        "named the emotion",
    )
    assert "switched language" in check_turn("It was fine.", "ko", ["sad"], prompt).breaks
    assert "switched language" in check_turn("그래, 고마워.", "en", ["sad"], prompt).breaks
    assert check_turn("", "en", ["sad"], prompt).breaks == ("empty",)
    ended = check_turn("Bye for now. [END]", "en", ["sad"], prompt)
    assert ended.ends and ended.text == "Bye for now." and not ended.breaks
    # 정 and 한 alone are everyday words; 정(情) and 한(恨) name the emotion
    assert check_turn("정말 한 번 더 가 보고 싶어.", "ko", ["jeong", "han"], prompt).breaks == ()
    assert check_turn("그게 한(恨)으로 남았어.", "ko", ["han"], prompt).breaks == (
        "named the emotion",
    )


def test_a_bad_speaker_prompt_file_is_named(tmp_path: Path) -> None:
    from koed_core.models.speaker import SpeakerPromptError

    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[system]\nen = "{situation} {emotions} {end}"\n')
    with pytest.raises(SpeakerPromptError, match=r"mine.toml: needs \[system\] ko"):
        load_speaker_prompt(path)
    path.write_text(
        'name = "mine"\n[system]\nen = "{situation} {emotion} {end}"\n'
        'ko = "{situation} {emotions} {end}"\n'
        '[user]\nen = "{transcript}"\nko = "{transcript}"\n'
    )
    with pytest.raises(SpeakerPromptError, match="does not fill"):
        load_speaker_prompt(path)


def _marked_listener(body: dict[str, Any]) -> str | None:
    """A Listener that marks each reply with its language and turn (the Speaker's lines
    in its transcript count the turns); and a judge that scores by the mark: English 4 at
    every turn, Korean one point lower at each turn (a planted gap of 0, -1, -2)."""
    user = body["messages"][-1]["content"]
    if is_speaker(body):
        return None
    if AUTHORS_REPLY in user:  # the judge
        quoted = user.split(AUTHORS_REPLY)[-1].split("\n\nWrite feedback")[0]
        mark = re.search(r"#(ko|en)(\d)", quoted)
        if mark is None:  # an unmarked reply: a verdict the test would see as wrong
            return "Score: 1"
        turn = int(mark.group(2))
        score = 4 if mark.group(1) == "en" else 4 - (turn - 1)
        return f"Feedback: as planted.\nScore: {score}"
    if "Identified emotion:" in user:
        korean = HANGUL.search(user) is not None
        turn = 1 + sum(user.count(line) for line in SPEAKER_REPLY.values())
        return ("그랬구나, 많이 힘들었겠다." if korean else "Oh, that must be hard.") + (
            f" #{'ko' if korean else 'en'}{turn}"
        )
    return None


@pytest.mark.slow
def test_a_planted_per_turn_gap_is_recovered(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.reply_fn = _marked_listener
    store = Store(tmp_path / "koed.db")
    report = _play(fake_openai, store, limit=6, turns=3)
    judge = _spec(fake_openai, "fake-judge")
    judge_run(
        store,
        make_client(judge, "k"),
        judge,
        JudgeRequest(report.run_id, judge=judge.name, mode="paper", dims=["IP", "CA"]),
    )
    config = choose_judge(store, [report.run_id])
    assert config is not None
    table = turn_gap_table(turn_frame(store, config.config))
    judged = table[table["source"] == "judge"]
    for metric in ("IP", "CA"):
        rows = judged[judged["metric"] == metric].set_index("turn")
        assert list(rows.index) == [1, 2, 3]
        assert rows["gap"].round(6).tolist() == [0.0, -1.0, -2.0]
        assert rows["pairs"].tolist() == [6, 6, 6]
        assert rows.loc[3, "en"] == 4 and rows.loc[3, "ko"] == 2
    # emotion recognition is read at every turn too (the paper set's first call)
    emotion = table[(table["source"] == "emotion") & (table["metric"] == "emotion")]
    assert sorted(emotion["turn"]) == [1, 2, 3]
    # the single-turn gap never takes an episode's turns in
    from koed_core.results.gaps import score_frame

    assert score_frame(store, config.config).empty


@pytest.mark.slow
def test_sigkill_mid_episodes_resumes_with_no_turn_twice(tmp_path: Path) -> None:
    server = FakeOpenAI(latency_s=0.15).start()
    try:
        models = tmp_path / "models.toml"
        models.write_text(
            f'[models.fake]\nbackend = "openai"\nmodel = "fake"\nbase_url = "{server.base_url}"\n'
        )
        db = tmp_path / "koed.db"
        env = {**os.environ, "KOED_MODELS": str(models), "OPENAI_API_KEY": "k"}
        command = [
            sys.executable,
            "-m",
            "koed_core.cli",
            "episodes",
            "--model",
            "fake",
            "--speaker",
            "fake",
            "--turns",
            "3",
            "--limit",
            "4",
            "--concurrency",
            "4",
            "--db",
            str(db),
            "--data",
            str(SAMPLE_FILE),
        ]
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        wait_until(
            lambda: stored_responses(db) >= 6, "six answers stored before the kill", timeout=60
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stored = _count(db, "select count(*) from responses where error is null")
        assert 0 < stored < 8 * 3, stored  # killed part-way
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(db) as conn:
            turns = conn.execute(
                "select conv_id, lang, turn, count(*) from responses group by 1, 2, 3"
            ).fetchall()
            speakers = conn.execute(
                "select conv_id, lang, turn, count(*) from episode_turns where kept = 1 "
                "group by 1, 2, 3"
            ).fetchall()
        assert len(turns) == 8 * 3 and all(n == 1 for *_, n in turns)
        assert len(speakers) == 8 * 2 and all(n == 1 for *_, n in speakers)
        # every Listener turn's context is the episode exactly as stored before it
        store = Store(db)
        run_id = store.rows("select id from runs")[0]["id"]
        for state in read_states(store, run_id, 3).values():
            assert state.status == "complete" and len(state.history) == 5
    finally:
        server.stop()


def _count(db: Path, sql: str) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_command_line_refuses_bad_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from koed_core.cli import main

    def koed(*args: str) -> int:
        try:
            return main(["episodes", "--model", "smollm2", *args, "--db", str(tmp_path / "x.db")])
        except SystemExit as stop:  # argparse's own refusal
            return int(stop.code or 0)

    bad = tmp_path / "speaker.toml"
    bad.write_text("name = 'x'\n")
    for args, said in (
        (("--lang", "fr"), "--lang: takes ko, en, en-from-ko, ko-from-en or several"),
        (("--turns", "11"), "turns must be between 1 and 10"),
        (("--speaker-prompts", str(bad)), "speaker prompts:"),
    ):
        assert koed(*args) == 2, args  # a usage error, before anything runs
        assert said in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


def _episode_db(server: FakeOpenAI, db: Path) -> str:
    store = Store(db)
    report = _play(server, store, limit=2, turns=2)
    judge = _spec(server, "fake-judge")
    judge_run(
        store,
        make_client(judge, "k"),
        judge,
        JudgeRequest(report.run_id, judge=judge.name, mode="paper", dims=["EX"]),
    )
    return report.run_id


def _page(page: str, query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run().switch_page(page).run()


@pytest.mark.slow
def test_episode_pages(fake_openai: FakeOpenAI, fake_registry: Path, tmp_path: Path) -> None:
    run_id = _episode_db(fake_openai, tmp_path / "koed.db")  # KOED_DB points here (conftest)
    at = _page("app_pages/results/episodes.py")
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox[0].value == run_id
    assert at.caption[1].value.startswith("Turn 0 of 2")  # a replay starts before turn 1
    assert SPEAKER_REPLY["en"] not in [t.value for t in at.text]
    at.button[2].click().run()  # the whole episode
    texts = [t.value for t in at.text]
    assert texts.count(SPEAKER_REPLY["ko"]) == 1 and texts.count(SPEAKER_REPLY["en"]) == 1
    # each Listener turn says which emotion it named then (the paper set's first call),
    # each column in its own language
    shown = [m.value for m in at.markdown]
    assert sum("turn 2 · names sad" in m for m in shown) == 1, shown
    assert sum("2번째 발화 · 말한 감정" in m and "sad" in m for m in shown) == 1, shown
    at.button[1].click().run()  # start again
    assert SPEAKER_REPLY["en"] not in [t.value for t in at.text]
    at.button[0].click().run()  # next turn: the first Listener turn and the Speaker's answer
    assert [t.value for t in at.text].count(SPEAKER_REPLY["en"]) == 1
    # the Runs page shows the episode run's turns; the Gap page the gap over turns
    runs = _page("app_pages/models/runs.py")
    assert not runs.exception, [e.value for e in runs.exception]
    assert any("Episodes of this run" in e.label for e in runs.expander)
    assert "turn" in runs.dataframe[-1].value.columns
    # the Runs page queues episodes as a job; a worker plays them
    form = next(e for e in runs.expander if "Multi-turn episodes" in e.label)
    form.selectbox[0].set_value("fake-listener")
    form.selectbox[1].set_value("fake-listener")
    form.number_input[0].set_value(2)
    form.number_input[1].set_value(1)
    try:
        form.button[0].click().run()
        assert not runs.exception, [e.value for e in runs.exception]
        assert runs.success[0].value.startswith("Job #1 queued: episodes fake"), (
            [e.value for e in runs.error],
            [s.value for s in runs.success],
        )
        form.button[0].click().run()  # the same job again (an Enter in a field): refused
        assert any("the same job is already" in e.value for e in runs.error), [
            e.value for e in runs.error
        ]
        store = Store(tmp_path / "koed.db")
        wait_for_job(store, 1)
        made = json.loads(store.rows("select result from jobs where id = 1")[0]["result"])
        states = read_states(store, made["run_id"], 2)
        assert len(states) == 2 and {s.status for s in states.values()} == {"complete"}
    finally:
        stop_workers(tmp_path / "koed.db")
    gap = _page("app_pages/results/gap.py")
    assert not gap.exception, [e.value for e in gap.exception]
    assert any("gap over turns" in e.label for e in gap.expander)


@pytest.mark.slow
def test_the_gap_over_turns_is_drawn_when_its_section_is_opened(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Folded, the section still built its chart and table on every run of the Gap page
    (a full reload included): now they are drawn when a reader opens it."""
    _episode_db(fake_openai, tmp_path / "koed.db")  # KOED_DB points here (conftest)
    gap = _page("app_pages/results/gap.py")
    assert not gap.exception, [e.value for e in gap.exception]
    [folded] = [e for e in gap.expander if "gap over turns" in e.label]
    assert not folded.children and not gap.get("plotly_chart")  # nothing built yet
    gap.session_state[state.GAP_TURN_OPEN] = True  # the reader opens it
    gap.run()
    charts = [c.proto.spec for c in gap.get("plotly_chart")]
    assert len(charts) == 1 and "The gap over turns" in charts[0]
    assert any("pairs" in d.value.columns for d in gap.dataframe)


def test_raters_rate_episode_turns_blind_with_the_episode_so_far(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from fixtures.rating import rater, study

    store = Store(tmp_path / "koed.db")
    report = _play(fake_openai, store, langs=["en"], limit=2, turns=2)
    ratings, study_id = study(store, report.run_id, langs=("en",), attention_checks=0)
    rater(ratings, "mina", langs=("en",))
    seen = []
    while (item := ratings.next_item(study_id, "mina")) is not None:
        seen.append(item)
        ratings.set_aside(item.assignment_id, "mina", "skipped")
    assert len(seen) == 2 * 2  # every Listener turn of every episode is an item
    later = [i for i in seen if any(text == SPEAKER_REPLY["en"] for _, text in i.context)]
    assert len(later) == 2  # the second turns: the simulated Speaker's turn is in the context
    shown = json.dumps([(i.context, i.response) for i in seen])
    assert "fake" not in shown and report.run_id not in shown  # blind: no model, no run


@pytest.mark.slow
def test_a_plan_of_kind_episodes_plays_judges_and_writes_the_gap_over_turns(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.served = ["m-one", "voice", "judge-x"]
    registry = tmp_path / "models.toml"
    registry.write_text(
        "".join(
            f'[models.{name}]\nbackend = "openai"\nmodel = "{name}"\n'
            f'base_url = "{fake_openai.base_url}"\n'
            for name in ("m-one", "voice", "judge-x")
        )
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "episodes test"\nkind = "episodes"\nspeaker = "voice"\nturns = 2\n'
        'subset = "full"\nsample = 3\nprotocols = ["single"]\nmodels = ["m-one"]\n'
        'judge = "judge-x"\n'
    )
    env = {
        **os.environ,
        "KOED_MODELS": str(registry),
        "KOED_DATA": str(SAMPLE_FILE),
        "KOED_DB": str(tmp_path / "k.db"),
    }
    command = [sys.executable, "-m", "koed_core.cli", "reproduce", str(plan)]
    dry = subprocess.run([*command, "--dry-run"], env=env, cwd=ROOT, capture_output=True, text=True)
    # 3 dialogues x 2 languages: 2 turns x 2 calls, 1 Speaker turn, 2 turns x 5 judge calls
    assert f"{fake_openai.base_url}: {6 * (4 + 1 + 10)} requests" in dry.stdout, dry.stdout
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "out"), "--no-images"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "the gap over turns" in done.stdout and "| turn 1 | turn 2 |" in done.stdout
    assert len(fake_openai.requests) == 6 * (4 + 1 + 10)
    written = (tmp_path / "out" / "turn_gaps.csv").read_text()
    assert written.count("\n") > 1 and "voice" in written  # rows, the Speaker named
    with sqlite3.connect(tmp_path / "k.db") as conn:
        assert conn.execute("select count(*) from responses where turn = 2").fetchone()[0] == 6


@pytest.mark.slow
def test_a_listener_that_comes_to_understand_is_counted(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A Listener wrong at turn 1 and right from turn 2 on (in Korean), right throughout
    (in English): came_to_it is 1 for Korean; nothing was missed in English."""
    from koed_core.results.turn_gaps import understanding

    dataset = load_dataset(SAMPLE_FILE)
    chosen = [d for d in dataset.dialogues if "sad" not in d.labels][:3]
    gold = {d.conv_id: d.labels[0] for d in chosen}
    openings = {d.conv_id: (d.turns[0].ko, d.turns[0].en) for d in chosen}

    def script(body: dict[str, Any]) -> str | None:
        user = body["messages"][-1]["content"]
        if is_speaker(body) or "Identified emotion:" in user:
            return None
        if "do not write the response yet" not in user:
            return None
        conv = next(c for c, pair in openings.items() if any(t and t in user for t in pair))
        turn = 1 + sum(user.count(line) for line in SPEAKER_REPLY.values())
        korean = HANGUL.search(user.split("Conversation:")[1]) is not None
        wrong = "sad" if korean and turn == 1 else gold[conv]
        return f"The Speaker feels {wrong.capitalize()}."

    fake_openai.reply_fn = script
    store = Store(tmp_path / "koed.db")
    _play(fake_openai, store, dialogues=chosen, limit=None, turns=3)
    table = understanding(store).set_index("lang")
    assert table.loc["ko", "episodes"] == 3
    assert table.loc["ko", "named_at_first"] == 0 and table.loc["ko", "named_at_last"] == 1
    assert table.loc["ko", "came_to_it"] == 1
    assert table.loc["en", "named_at_first"] == 1 and table.loc["en", "lost_it"] == 0
    assert pd.isna(table.loc["en", "came_to_it"])  # none missed at first: no share to give


@pytest.mark.slow
def test_two_jobs_on_one_run_never_fork_an_episode(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Two processes playing the same episode run at once (a job queued twice): each
    stored turn follows the stored turns before it, whichever job wrote it."""
    import random
    import threading

    fake_openai.latency_s = 0.02
    fake_openai.reply_fn = lambda body: (
        None
        if is_speaker(body)
        or "do not write the response yet" in body["messages"][-1]["content"]
        and "Identified emotion:" not in body["messages"][-1]["content"]
        else f"That must be hard ({random.random():.6f})."
    )
    db = tmp_path / "koed.db"
    Store(db)  # migrated once before the two start
    threads = [
        threading.Thread(target=lambda: _play(fake_openai, Store(db), langs=["en"], limit=4))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store = Store(db)
    run_id = store.rows("select id from runs")[0]["id"]
    rows = store.rows(
        "select conv_id, turn, text, context from responses where error is null order by turn"
    )
    kept = {
        (r["conv_id"], r["turn"]): r["text"]
        for r in store.rows("select conv_id, turn, text from episode_turns where kept = 1")
    }
    by_turn = {(r["conv_id"], r["turn"]): r for r in rows}
    assert len(by_turn) == len(rows) == 4 * 3  # one answer per turn
    for (conv_id, turn), row in by_turn.items():
        if turn == 1:
            continue
        context = json.loads(row["context"])
        assert context[-2:] == [
            ["listener", by_turn[(conv_id, turn - 1)]["text"]],
            ["speaker", kept[(conv_id, turn - 1)]],
        ]
    assert all(s.status == "complete" for s in read_states(store, run_id, 3).values())


def test_a_broken_speaker_attempt_never_replaces_another_jobs_kept_turn(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Finding 31.1, made deterministic: job B's Speaker is asked first; while its answer
    is on the way, job A plays the same episode to its end (its Speaker keeps character).
    B's answer then breaks character. B's broken attempt must not replace A's kept one
    (same run, turn and attempt number), and B must not store a second Speaker line for
    a turn the episode has already passed."""
    import threading

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    db = tmp_path / "koed.db"
    Store(db)
    speaker_calls: list[int] = []
    other: list[threading.Thread] = []

    def script(body: dict[str, Any]) -> str | None:
        if not is_speaker(body):
            return None
        speaker_calls.append(1)
        if len(speaker_calls) == 1:  # B's first Speaker turn: A runs the episode meanwhile
            job_a = threading.Thread(
                target=lambda: _play(fake_openai, Store(db), langs=["en"], limit=1)
            )
            other.append(job_a)
            job_a.start()
            job_a.join()
            return f"Listener: I feel so {dialogue.labels[0]} about it."
        return f"{SPEAKER_REPLY['en']} (line {len(speaker_calls)})"

    fake_openai.reply_fn = script
    _play(fake_openai, Store(db), langs=["en"], limit=1)  # job B
    assert other and not other[0].is_alive()
    store = Store(db)
    run_id = store.rows("select id from runs")[0]["id"]
    kept = store.rows("select turn, text from episode_turns where kept = 1 order by turn, attempt")
    assert [k["turn"] for k in kept] == [1, 2]  # one kept Speaker line per turn
    listeners = {
        r["turn"]: r
        for r in store.rows("select turn, text, context from responses where error is null")
    }
    assert sorted(listeners) == [1, 2, 3]
    for turn in (2, 3):  # each Listener turn answered the Speaker line that is stored
        context = json.loads(listeners[turn]["context"])
        assert context[-1] == ["speaker", kept[turn - 2]["text"]]
    assert read_states(store, run_id, 3)[(dialogue.conv_id, "en")].status == "complete"


@pytest.mark.slow
def test_an_episode_in_a_variant_plays_the_translated_dialogue_and_records_its_version(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """`koed episodes --lang ko-from-en`: the Listener starts from the translation's turns,
    the Speaker is told the translated situation in Korean, every turn is stored under the
    variant, the run records the version it read, and a whole-episode judge is shown the
    translated situation in Korean."""
    from koed_core.dialogues.variants import source_texts
    from koed_core.judge.episodes import judge_whole_episodes
    from koed_core.models.variant_texts import import_lines

    store = Store(tmp_path / "koed.db")
    dataset = load_dataset(SAMPLE_FILE)
    first = dataset.dialogues[0]
    situation, turns = source_texts(first, "ko-from-en")
    line = {
        "conv_id": first.conv_id,
        "variant": "ko-from-en",
        "situation": "번역된 상황",
        "turns": [f"번역 {n}" for n in range(len(turns))],
    }
    [version] = import_lines(store, dataset, [json.dumps(line, ensure_ascii=False)], "J. Kim")
    report = _play(fake_openai, store, langs=("ko", "ko-from-en"), turns=2, limit=1)
    assert report.succeeded == 2 and report.failed == 0
    config = json.loads(store.rows("select config from runs")[0]["config"])
    assert config["variants"] == f"ko-from-en v1 {version.id}"
    entries = Episodes(store).transcript(report.run_id, first.conv_id, "ko-from-en")
    dataset_part = [e["text"] for e in entries if e["turn"] == 0]
    assert dataset_part and all(text.startswith("번역 ") for text in dataset_part)
    assert [e["role"] for e in entries if e["turn"] > 0] == ["listener", "speaker", "listener"]
    told = [b["messages"][0]["content"] for b in fake_openai.requests if is_speaker(b)]
    assert any("번역된 상황" in text for text in told)  # the variant's own situation
    fake_openai.requests.clear()
    judge = _spec(fake_openai, "judge")
    judge_whole_episodes(
        store,
        make_client(judge, "k"),
        judge,
        JudgeRequest(report.run_id, judge="judge", dims=("CA",)),
        {d.conv_id: d for d in dataset.dialogues},
    )
    shown = [json.dumps(b["messages"], ensure_ascii=False) for b in fake_openai.requests]
    assert any("번역된 상황" in text for text in shown)
    assert situation not in " ".join(shown)  # never the English original's situation

    def view(db: str, run_id: str) -> None:
        from components.shared.episode_view import episode_pair
        from koed_core.db import Store
        from koed_core.dialogues.dataset import load_dataset
        from koed_core.paths import SAMPLE_FILE

        episode_pair(Store(db), run_id, load_dataset(SAMPLE_FILE), whole=True)

    at = AppTest.from_function(
        view, kwargs={"db": str(tmp_path / "koed.db"), "run_id": report.run_id}
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    heads = [h.value for h in at.subheader]
    assert "Korean, translated from the English (ko-from-en)" in heads and len(heads) == 3
    assert "화자: 번역 0" in [t.value for t in at.text]
