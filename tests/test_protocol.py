"""The paper's listener protocol: context, reference, prompts; and label parsing/scoring."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from koed_core.dialogues.dataset import load_dataset, parse_dataset
from koed_core.models import prompts, protocol
from koed_core.models.emotions import parse_reply, score_emotions
from koed_core.models.prompts import build_messages
from koed_core.models.protocol import build_task
from koed_core.paths import SAMPLE_FILE


def _dialogue(turns: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    record = {
        "conv_id": "c",
        "ko_situation": "상황 비밀",
        "situation": "secret situation",
        "emotion": ["sad", "lonely"],
        "dialogue": [{"ko_utter": ko, "utter": en} for ko, en in turns],
    }
    return parse_dataset(json.dumps([record]).encode()).dialogues[0]


@pytest.mark.parametrize(
    ("turns", "lang", "context", "reference"),
    [
        # ends on a Listener turn: it becomes the reference
        ([("가", "a"), ("나", "b"), ("다", "c"), ("라", "d")], "en", ["a", "b", "c"], "d"),
        ([("가", "a"), ("나", "b"), ("다", "c"), ("라", "d")], "ko", ["가", "나", "다"], "라"),
        # ends on a Speaker turn: the whole dialogue is context, no reference
        ([("가", "a"), ("나", "b"), ("다", "c")], "en", ["a", "b", "c"], None),
        # Korean-only turns vanish from the English context
        ([("가", "a"), ("나", "b"), ("다", ""), ("라", "")], "en", ["a"], "b"),
        ([("가", "a"), ("나", "b"), ("다", ""), ("라", "")], "ko", ["가", "나", "다"], "라"),
        # a turn missing in the middle: the rest alternate again (a S, c L, d S)
        ([("가", "a"), ("나", ""), ("다", "c"), ("라", "d")], "en", ["a", "c", "d"], None),
        ([("가", "a")], "ko", ["가"], None),
    ],
)
def test_context_ends_on_a_speaker_turn(turns, lang, context, reference) -> None:  # type: ignore[no-untyped-def]
    task = build_task(_dialogue(turns), lang)
    assert [t.text for t in task.turns] == context
    assert task.turns[-1].role == "speaker"
    assert [t.role for t in task.turns] == ["speaker", "listener"] * (len(context) // 2) + [
        "speaker"
    ] * (len(context) % 2)
    assert task.reference == reference


@pytest.mark.parametrize("lang", ["ko", "en"])
@pytest.mark.parametrize("proto", protocol.PROTOCOLS)
def test_listener_sees_neither_labels_nor_situation(lang: str, proto: str) -> None:
    task = build_task(_dialogue([("가", "a"), ("나", "b"), ("다", "c")]), lang)  # type: ignore[arg-type]
    messages = build_messages(task, proto)  # type: ignore[arg-type]
    text = json.dumps(messages, ensure_ascii=False)
    assert "secret situation" not in text and "상황 비밀" not in text
    user = messages[-1]["content"]
    speaker, listener = protocol.ROLE_NAMES[lang]
    assert user.splitlines()[1].startswith(f"{speaker}: ")
    assert user.splitlines()[-1] == f"{listener}:"
    names_labels = "jeong" in messages[0]["content"]
    assert names_labels == (proto != "direct")


def test_prompt_version_is_a_hash_of_the_prompts(tmp_path: Path) -> None:
    from koed_core.models.prompts import PROMPTS_DIR, PromptSetError, load_prompt_set

    before = prompts.prompt_version()
    assert before == prompts.prompt_version() and len(before) == 12
    shipped = (PROMPTS_DIR / "paper.toml").read_text(encoding="utf-8")
    mine = tmp_path / "mine.toml"
    mine.write_text(shipped.replace('name = "paper"', 'name = "mine"'), encoding="utf-8")
    assert load_prompt_set(mine).version != load_prompt_set("paper").version
    edited = shipped.replace("Stop there", "Be brief. Stop there")
    mine.write_text(edited, encoding="utf-8")
    task = build_task(load_dataset(SAMPLE_FILE).dialogues[0], "en")
    from koed_core.models.prompts import plan_messages

    assert "Be brief." in plan_messages(task, "single", str(mine)).first[1]["content"]
    mine.write_text(
        shipped.replace("Conversation:\n{transcript}", "Conversation:\n{transcrpit}", 1),
        encoding="utf-8",
    )
    with pytest.raises(PromptSetError, match="placeholder we do not fill"):
        load_prompt_set(mine)


@pytest.mark.parametrize(
    ("raw", "proto", "labels", "text", "unknown"),
    [
        ("Emotion: sad\nResponse: I'm sorry.", "single", ("sad",), "I'm sorry.", ()),
        (
            "**Emotion:** Lonely\n**Response:** That must hurt.",
            "single",
            ("lonely",),
            "That must hurt.",
            (),
        ),
        (
            "Emotion: anxious, apprehensive and afraid\nResponse: Hard.",
            "multi",
            ("anxious", "apprehensive", "afraid"),
            "Hard.",
            (),
        ),
        ("Emotion: anxious, apprehensive\nResponse: Hard.", "single", ("anxious",), "Hard.", ()),
        ("Emotion: happy, sad\nResponse: ok", "multi", ("sad",), "ok", ("happy",)),
        (
            "Emotion: I think the speaker feels nostalgic\nResponse: Aw.",
            "single",
            ("nostalgic",),
            "Aw.",
            (),
        ),
        ("감정: 슬픔\n응답: 많이 힘들었겠다.", "single", ("sad",), "많이 힘들었겠다.", ()),
        ("감정: 슬픔과 외로움\n응답: 힘들었겠다", "multi", ("sad", "lonely"), "힘들었겠다", ()),
        ("Emotion: 정(情)\nResponse: 좋은 인연이네.", "single", ("jeong",), "좋은 인연이네.", ()),
        (
            "Emotion: 한\nResponse: 그 한을 어찌 다 알까.",
            "single",
            ("han",),
            "그 한을 어찌 다 알까.",
            (),
        ),
        (
            "Emotion: jealous(질투 나는)\nResponse: 서운했겠다.",
            "single",
            ("jealous",),
            "서운했겠다.",
            (),
        ),
        (
            "Emotion: 기쁨, 자랑스러움, 감사, 설렘, 희망\nResponse: 축하해!",
            "multi",
            ("joyful", "proud", "grateful", "excited"),
            "축하해!",
            (),
        ),
        ("Emotion: 행복\nResponse: 좋겠다", "single", (), "좋겠다", ("행복",)),
        ("I'm so sorry to hear that.", "single", (), "I'm so sorry to hear that.", ()),
        # direct names no emotion; a Response: prefix is still taken off
        ("Emotion: sad\nResponse: I'm sorry.", "direct", (), "I'm sorry.", ()),
        (
            "I hear you. 한 번 더 얘기해 줄래?",
            "direct",
            (),
            "I hear you. 한 번 더 얘기해 줄래?",
            (),
        ),
    ],
)
def test_parse_reply(raw, proto, labels, text, unknown) -> None:  # type: ignore[no-untyped-def]
    parsed = parse_reply(raw, proto)
    assert parsed.labels == labels
    assert parsed.text == text
    assert parsed.unknown == unknown


def test_parse_notes_say_what_was_off() -> None:
    assert parse_reply("Just a reply", "single").notes == ("no 'Emotion:' line",)
    many = parse_reply("Emotion: sad, lonely, afraid, anxious, angry\nResponse: x", "multi")
    assert many.labels == ("sad", "lonely", "afraid", "anxious")
    assert many.notes == ("5 labels given, kept the first 4",)


@pytest.mark.parametrize(
    ("predicted", "gold", "hit", "p", "r", "f1", "j"),
    [
        # one right of one predicted, gold has two: P=1/1, R=1/2, F1=2*1*.5/1.5=2/3, J=1/2
        (("sad",), {"sad", "lonely"}, True, 1.0, 0.5, 2 / 3, 0.5),
        # two predicted, one right: P=1/2, R=1/2, F1=1/2, J=|{sad}|/|{sad,afraid,lonely}|=1/3
        (("afraid", "sad"), {"sad", "lonely"}, False, 0.5, 0.5, 0.5, 1 / 3),
        (("sad", "lonely"), {"sad", "lonely"}, True, 1.0, 1.0, 1.0, 1.0),
        (("han",), {"jeong"}, False, 0.0, 0.0, 0.0, 0.0),
        ((), {"jeong"}, False, 0.0, 0.0, 0.0, 0.0),
    ],
)
def test_emotion_scores(predicted, gold, hit, p, r, f1, j) -> None:  # type: ignore[no-untyped-def]
    score = score_emotions(predicted, frozenset(gold))
    assert score.hit is hit
    assert (score.precision, score.recall) == pytest.approx((p, r))
    assert (score.f1, score.jaccard) == pytest.approx((f1, j))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("Conversation:\n{transcript}\n\nFirst, only the emotion", "First, only the emotion"),
            "has no {transcript}",
        ),
        (
            (
                "Conversation:\n{transcript}\n\nFirst, only the emotion",
                "Conversation:\n{transcript}\n{emotion}\nFirst, only the emotion",
            ),
            "placeholder we do not fill there",
        ),
        (("two_calls = true", 'two_calls = "yes"'), "must be true or false"),
        (('label = "{Name} ({gloss})"', 'label = "{Name} ({glos})"'), "use {name} {Name} {gloss}"),
        # Widths, conversions and attributes passed the fill check
        (
            ("Conversation:\n{transcript}", "Conversation:\n{transcript:>300000000}"),
            "{transcript:>300000000}: a placeholder takes no width",
        ),
        (
            ("Conversation:\n{transcript}", "Conversation:\n{transcript!r}"),
            "{transcript!r}: a placeholder takes no width, format or conversion",
        ),
        (
            ("Conversation:\n{transcript}", "{transcript.__class__}\n{transcript}"),
            "placeholder we do not fill there ({transcript.__class__})",
        ),
        (('label = "{Name} ({gloss})"', 'label = "{Name:>99999} ({gloss})"'), "takes no width"),
    ],
)
def test_a_broken_prompt_file_is_refused_when_loaded(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    from koed_core.models.prompts import PROMPTS_DIR, PromptSetError, load_prompt_set

    shipped = (PROMPTS_DIR / "paper.toml").read_text(encoding="utf-8")
    assert change[0] in shipped
    broken = tmp_path / "broken.toml"
    broken.write_text(shipped.replace(change[0], change[1], 1), encoding="utf-8")
    with pytest.raises(PromptSetError, match=re.escape(message)):
        load_prompt_set(broken)


def test_a_one_call_answer_is_read_with_the_runs_emotion_reader() -> None:
    """One-call runs read labels with the Korean-alias reader whatever the
    run's emotion_reader said, while the stored config said "authors"."""
    raw = "Emotion: 슬픔, lonely\nResponse: 많이 속상했겠다."
    assert parse_reply(raw, "multi").labels == ("sad", "lonely")
    authors = parse_reply(raw, "multi", "authors")
    assert authors.labels == ("lonely",)  # their reader: English names and 정/한 only
    assert authors.text == "많이 속상했겠다."
    assert parse_reply("감정: 정\nResponse: 그랬구나.", "single", "authors").labels == ("jeong",)
    assert parse_reply("Emotion: 슬픔\nResponse: x", "single", "authors").notes == (
        "no label given",
    )
