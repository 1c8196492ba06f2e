"""The ``paper`` profile against the KoED authors' pipeline, request by request.

A small KoED-format file of our own (English with ``_comma_``, an even turn count, a
Korean-only turn) is run and judged against the scripted server; every request it logged
is held against ``tests/authors_structure.py``, which restates the authors' scripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_openai import FakeOpenAI, Step
from koed_core.db import Runs, Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest
from koed_core.models.backends import make_client
from koed_core.models.pipeline import postprocessed, read_emotions_authors, steps_for
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from tests import authors_structure as authors

RECORDS = [
    {
        "conv_id": "t:1",
        "ko_situation": "시험을 망쳤다.",
        "situation": "I failed_comma_ badly.",
        "emotion": "disappointed",
        "dialogue": [
            {
                "utter_idx": 1,
                "ko_utter": "시험 결과가 나왔는데, 떨어졌어.",
                "utter": "Results came_comma_ I failed.",
            },
            {
                "utter_idx": 2,
                "ko_utter": "저런, 많이 속상하겠다.",
                "utter": "Oh no_comma_ that hurts.",
            },
            {
                "utter_idx": 3,
                "ko_utter": "정말 열심히 했거든.",
                "utter": "I studied so hard_comma_ really.",
            },
            {
                "utter_idx": 4,
                "ko_utter": "다음엔 잘 될 거야.",
                "utter": "Next time, it'll go well.",
            },
        ],
    },
    {
        "conv_id": "t:2",
        "ko_situation": "할머니가 보고 싶다.",
        "situation": "I miss my grandmother.",
        "emotion": "jeong",
        "dialogue": [
            {
                "utter_idx": 1,
                "ko_utter": "할머니 댁에 다녀왔어.",
                "utter": "I visited my grandma_comma_ finally.",
            },
            {"utter_idx": 2, "ko_utter": "오랜만이었겠네!", "utter": ""},
            {
                "utter_idx": 3,
                "ko_utter": "응, 김치를 잔뜩 싸 주셨어.",
                "utter": "She packed food for me.",
            },
        ],
    },
]
EMOTION = "The Speaker feels Disappointed (실망함). 기대했던 일이 잘 안 됐어요."
OPEN_REPLY = "Listener: Oh no, I'm so sorry.\n\nWhat happened?"
CLAUDE_REPLY = "Here is the next turn.\nListener: That must really hurt."


@pytest.fixture
def koed_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(RECORDS, ensure_ascii=False), encoding="utf-8")
    return path


def _spec(server: FakeOpenAI, family: str = "open", model: str = "m") -> ModelSpec:
    return ModelSpec(
        name=f"m-{family}", backend="openai", model=model, base_url=server.base_url, family=family
    )


def _run(
    store: Store,
    server: FakeOpenAI,
    path: Path,
    family: str = "open",
    model: str = "m",
    **steps: str,
) -> str:
    dataset = load_dataset(path)
    spec = _spec(server, family, model)
    report = run_benchmark(
        store,
        make_client(spec, None),
        spec,
        dataset.dialogues,
        dataset.sha256,
        RunRequest(spec.name, langs=("en", "ko"), protocol="single", concurrency=1, **steps),
    )
    assert report.failed == 0
    return report.run_id


@pytest.mark.slow
def test_the_paper_profile_sends_what_the_authors_sent(
    fake_openai: FakeOpenAI, koed_file: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "a.db")
    items = [(r, lang) for r in RECORDS for lang in ("en", "ko")]
    fake_openai.queue(*[Step(text=t) for _ in items for t in (EMOTION, OPEN_REPLY)])
    run_id = _run(store, fake_openai, koed_file)
    listener = list(fake_openai.requests)
    assert len(listener) == 2 * len(items)
    for n, (record, lang) in enumerate(items):
        emotion_call, reply_call = listener[2 * n], listener[2 * n + 1]  # in this order
        authors.check_emotion_call(emotion_call, record["dialogue"], lang)
        authors.check_reply_call(reply_call, emotion_call, EMOTION, lang)
    assert "_comma_" in listener[0]["messages"][1]["content"]  # English as the file has it

    rows = list(
        store.db.query("select * from responses where run_id = ? order by conv_id, lang", [run_id])
    )
    judged = authors.judged_text_open(OPEN_REPLY)
    assert judged == "Oh no, I'm so sorry."
    for row in rows:
        assert row["raw"] == OPEN_REPLY and row["text"] == judged  # both kept
        # their reader: English names (and 정, 한) only; 기대 is not "anticipating"
        assert json.loads(row["predicted"]) == ["disappointed"]
    config = json.loads(store.db.execute("select config from runs").fetchone()[0])
    assert (config["postprocess"], config["commas"], config["emotion_reader"]) == (
        "authors",  # "m" is none of their four open models: the text itself is cut
        "raw",
        "authors",
    )

    # the judge: five calls per response in the criteria's order, then the next response
    fake_openai.requests.clear()
    fake_openai.queue(
        *[Step(text="Feedback: Kind.\nScore: **4**")] * 5,  # rejected 5 times, then rescued
        Step(400, text="bad request"),  # an API error uses an attempt; the next is asked
    )
    judge = ModelSpec(
        name="gpt-4o", backend="openai", model="gpt-4o", base_url=fake_openai.base_url
    )
    report = judge_run(
        store,
        make_client(judge, None),
        judge,
        JudgeRequest(run_id, judge=judge.name, mode="paper", concurrency=1),
    )
    assert report.failed == 0 and report.unscored == 0
    calls = fake_openai.requests
    order = [(r["id"], r["conv_id"], r["lang"]) for r in rows]
    extra = 4 + 1  # the four re-asks of the first criterion, the one after the API error
    assert len(calls) == len(order) * 5 + extra
    expected = []
    for _, conv_id, lang in order:
        record = next(r for r in RECORDS if r["conv_id"] == conv_id)
        expected += [(c, record, lang) for c in authors.CRITERIA]
    expected[1:1] = [expected[0]] * 4  # the re-asks
    expected[6:6] = [expected[5]]  # the second criterion, asked again after the API error
    for request, (criterion, record, lang) in zip(calls, expected, strict=True):
        authors.check_judge_call(request, criterion, record["dialogue"], lang, judged)
    first = list(
        store.db.query(
            "select attempt, score, unscored_reason from judgments where response_id = ? "
            "and dimension = 'EX' order by attempt",
            [rows[0]["id"]],
        )
    )
    # rejected by their parser five times, then rescued as their post-processing did
    assert [r["attempt"] for r in first] == [0, 1, 2, 3, 4]
    assert [r["score"] for r in first] == [None] * 4 + [4.0]
    assert "invalid literal for int()" in first[0]["unscored_reason"]
    kinds = {
        r[0] for r in store.db.execute("select distinct template || '/' || parse from judgments")
    }
    assert kinds == {"authors/authors"}


@pytest.mark.slow
def test_claude_keeps_the_last_listener_segment_and_other_choices_are_other_runs(
    fake_openai: FakeOpenAI, koed_file: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "c.db")
    fake_openai.queue(*[Step(text=t) for _ in range(4) for t in (EMOTION, CLAUDE_REPLY)])
    claude = _run(store, fake_openai, koed_file, family="claude")
    texts = {
        r[0] for r in store.db.execute("select text from responses where run_id = ?", [claude])
    }
    assert texts == {authors.judged_text_claude(CLAUDE_REPLY)} == {"That must really hurt."}
    fake_openai.requests.clear()
    fake_openai.queue(*[Step(text=t) for _ in range(4) for t in (EMOTION, OPEN_REPLY)])
    decoded = _run(
        store,
        fake_openai,
        koed_file,
        postprocess="none",
        commas="decoded",
        emotion_reader="extended",
    )
    assert decoded != claude
    sent = fake_openai.requests[0]["messages"][1]["content"]
    assert "_comma_" not in sent and "Results came, I failed." in sent
    rows = list(store.db.query("select text, predicted from responses where run_id = ?", [decoded]))
    assert {r["text"] for r in rows} == {OPEN_REPLY}  # no post-processing: all of it
    # the extended reader also reads Korean stems: 기대 comes first in the list's order
    assert {tuple(json.loads(r["predicted"])) for r in rows} == {("anticipating",)}


@pytest.mark.parametrize(
    ("reply", "family"),
    [
        ("Listener: Oh no.\n\nWhat happened?", "open"),
        ("I hear you.\n\nListener: That is hard.\n\nTell me more.", "open"),
        ("No label at all, one line.", "open"),
        ("That's awful.\nlistener: I'm here.\nListener: Take care.", "claude"),
        ("Plain answer.\n\nSecond paragraph.", "claude"),
    ],
)
def test_post_processing_matches_the_restated_rule(reply: str, family: str) -> None:
    rule: Any = authors.judged_text_open if family == "open" else authors.judged_text_claude
    assert postprocessed(reply, steps_for("paper", family, postprocess="authors")) == rule(reply)
    literal: Any = authors.judged_text_open_repr if family == "open" else rule
    exaone = "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct"
    assert postprocessed(reply, steps_for("paper", family, model=exaone)) == literal(reply)
    assert postprocessed(reply, steps_for("paper", family, postprocess="none")) == reply.strip()


@pytest.mark.parametrize(
    ("text", "single", "expected"),
    [
        ("Disappointed (실망함). 기대했던 일이", True, ("disappointed",)),
        ("sad, and a little afraid", True, ("afraid",)),  # the list's order, not the text's
        ("sad, and a little afraid", False, ("afraid", "sad")),
        ("화자는 정을 느낀다", True, ()),  # 정 inside a word is not the label
        ("감정: 정", True, ("jeong",)),
        ("It is sadness.", True, ()),  # whole words only
        ("두려움", True, ()),  # a Korean gloss alone is not read by them
    ],
)
def test_the_authors_emotion_reader(text: str, single: bool, expected: tuple[str, ...]) -> None:
    assert read_emotions_authors(text, single) == expected


def test_raters_read_commas_where_the_judge_read_the_file(
    fake_openai: FakeOpenAI, koed_file: Path, tmp_path: Path
) -> None:
    from fixtures.rating import rater, study

    store = Store(tmp_path / "r.db")
    fake_openai.queue(*[Step(text=t) for _ in range(4) for t in (EMOTION, "Oh no_comma_ truly.")])
    run_id = _run(store, fake_openai, koed_file)
    stored = store.db.execute("select context from responses where lang = 'en' limit 1")
    assert "_comma_" in stored.fetchone()[0]  # kept for the judge, as the authors had it
    ratings, study_id = study(store, run_id, attention_checks=0, langs=("en",))
    rater(ratings, "mina")
    item = ratings.next_item(study_id, "mina")
    assert item is not None and item.lang == "en"
    shown = " ".join(text for _, text in item.context) + " " + item.response
    assert "_comma_" not in shown and "," in shown  # what a person reads: commas


@pytest.mark.parametrize(
    ("reply", "score", "asks_again"),
    [
        ("Feedback: Warm.\nScore: 4", 4.0, False),
        ("Feedback: Warm.\nScore:  ４ ", 4.0, False),  # Python's int reads any digit, as theirs
        ("Feedback: Warm.\nScore: 7", None, False),  # they kept it; we do not, nor re-ask
        ("Feedback: Warm.\nScore: **4**", None, True),  # rejected: asked again
        ("Feedback: Warm.\nScore: 4/5", None, True),
        ("Feedback: Warm.\nscore: 4", None, True),  # their split is case-sensitive
        ("Score: 5\nFeedback: the reply says Score: 1", None, True),  # two Score: parts
        ("", None, True),
    ],
)
def test_the_authors_parser_on_hostile_verdicts(
    reply: str, score: float | None, asks_again: bool
) -> None:
    from koed_core.judge.verdicts import parse_verdict

    verdict = parse_verdict(reply, "paper", "authors")
    assert verdict.score == score
    if score is None:
        assert verdict.unscored_reason and verdict.ask_again is asks_again


def test_the_bold_rescue_reads_only_what_their_post_processing_read() -> None:
    from koed_core.judge.verdicts import parse_verdict, rescue_authors

    assert rescue_authors(parse_verdict("Score: **4**", "paper", "authors")).score == 4.0
    assert rescue_authors(parse_verdict("Score: 4/5", "paper", "authors")).score is None
    assert rescue_authors(parse_verdict("Score: **9**", "paper", "authors")).score is None


def test_a_reply_the_authors_cut_empties_is_kept_raw_and_never_judged(
    fake_openai: FakeOpenAI, koed_file: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "e.db")
    fake_openai.queue(*[Step(text=t) for _ in range(4) for t in (EMOTION, "Listener:\n\nHi.")])
    run_id = _run(store, fake_openai, koed_file)
    rows = list(store.db.query("select raw, text, parse_notes from responses"))
    assert {r["raw"] for r in rows} == {"Listener:\n\nHi."} and {r["text"] for r in rows} == {""}
    assert all("post-processing kept no text" in r["parse_notes"] for r in rows)
    assert Runs(store).answered([run_id]) == []  # nothing for a judge or a rater to score


@pytest.mark.parametrize(
    ("reply", "judged"),
    [
        ("\n\nI am so sorry.", "'"),  # opens with a blank line: their cut keeps a quote
        ("It's fine.\nReally.", '"It\'s fine.\\nReally."'),  # repr quotes, a literal \n
        ("That hurts.\n\nTell me.", "'That hurts."),  # cut at the repr's \n\n
        ("Sure. Listener: hi\n\nbye", "hi"),
    ],
)
def test_the_open_models_literal_path_on_the_scripted_server(
    fake_openai: FakeOpenAI, koed_file: Path, tmp_path: Path, reply: str, judged: str
) -> None:
    """The paper profile for open models sends the emotion answer to the
    reply call as the repr of its message dict, and judges the text cut from the repr of
    the stored message, as their open_source.py and process_file did."""
    store = Store(tmp_path / "r.db")
    fake_openai.queue(*[Step(text=t) for _ in range(4) for t in (EMOTION, reply)])
    run_id = _run(store, fake_openai, koed_file, model="LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct")
    sent = fake_openai.requests
    for emotion_call, reply_call in zip(sent[::2], sent[1::2], strict=True):
        added = reply_call["messages"][1]["content"][len(emotion_call["messages"][1]["content"]) :]
        assert str({"role": "assistant", "content": EMOTION}) in added
    texts = {
        r[0] for r in store.db.execute("select text from responses where run_id = ?", [run_id])
    }
    assert texts == {judged} == {authors.judged_text_open_repr(reply)}
