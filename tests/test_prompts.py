"""The paper prompt set against a reference written from the authors' protocol; the
native set unchanged; the paper's emotion extraction."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from koed_core.dialogues.dialogue import Dialogue, Turn
from koed_core.dialogues.labels import all_labels
from koed_core.models.emotions import extract_anywhere, parse_two_calls
from koed_core.models.prompts import (
    PromptSetError,
    build_messages,
    glossed_labels,
    plan_messages,
    prompt_set_version,
    prompt_version,
)
from koed_core.models.protocol import build_task

# A fixed dialogue: three turns in Korean, two in English (the third is Korean-only).
DIALOGUE = Dialogue(
    index=0,
    conv_id="t:1",
    labels=("sad",),
    situation_ko="상황",
    situation_en="situation",
    turns=(
        Turn(position=1, source_idx=1, ko="시험에 떨어졌어.", en="I failed the exam."),
        Turn(position=2, source_idx=2, ko="저런, 많이 속상하겠다.", en="Oh no, that hurts."),
        Turn(position=3, source_idx=3, ko="응, 엄마한테 뭐라고 하지.", en=""),
    ),
)

# Written from the authors' setup: English instructions for both languages, the language
# named, English Speaker/Listener labels, the glossed list, emotion first, then the reply.
REFERENCE_EMOTION_CALL_KO = (
    "Conversation:\n"
    "Speaker: 시험에 떨어졌어.\n"
    "Listener: 저런, 많이 속상하겠다.\n"
    "Speaker: 응, 엄마한테 뭐라고 하지.\n\n"
    "First, only the emotion. 1. Read the conversation and work out how the Speaker feels. "
    "2. Name that feeling with one label from the list. Stop there: do not write the "
    "response yet."
)
REFERENCE_REPLY_STEP_KO = (
    "Identified emotion: Sad\n\n"
    "3. Now write the Listener's next response in Korean, empathetic, taking the identified "
    "emotion into account."
)


def test_paper_set_is_english_for_both_languages_and_asks_twice() -> None:
    ko = plan_messages(build_task(DIALOGUE, "ko"), "single", "paper")
    assert ko.two_calls
    system, user = ko.first
    assert system["content"].startswith("The task: an empathetic conversation in Korean.")
    # the glosses are the authors' word list
    assert "The 34 emotion labels: Afraid (두려움), Angry (화남)," in system["content"]
    assert "choose exactly one" in system["content"]
    assert "short" not in system["content"]  # no length instruction
    assert user["content"] == REFERENCE_EMOTION_CALL_KO
    second = ko.second(build_task(DIALOGUE, "ko"), "Sad")
    assert second[0] == system
    assert second[1]["content"] == REFERENCE_EMOTION_CALL_KO + "\n\n" + REFERENCE_REPLY_STEP_KO
    en = plan_messages(build_task(DIALOGUE, "en"), "single", "paper")
    assert en.first[0]["content"].startswith("The task: an empathetic conversation in English.")
    # English context ends on the Speaker: the last English Listener turn is the reference
    assert en.first[1]["content"].startswith("Conversation:\nSpeaker: I failed the exam.\n\n")
    multi = plan_messages(build_task(DIALOGUE, "ko"), "multi", "paper").first[0]["content"]
    assert "choose every label that fits (at most four)" in multi


def test_jeong_and_han_are_defined_in_the_list() -> None:
    listed = glossed_labels()
    assert listed.count("), ") == 33  # 34 glossed entries
    assert "정 (a warm, lasting attachment" in listed
    assert "한 (a deep, lingering sorrow" in listed


def test_every_entry_of_the_list_is_read_back_as_its_label() -> None:
    """The list named jeong and han in romanisation too, so a model that answered
    "Emotion: jeong" gave the authors' reader (which paper mode uses) no label. Their list
    names the two by the Korean word alone; a model that copies any entry is read right."""
    from koed_core.models.pipeline import read_emotions_authors

    listed = glossed_labels()
    assert not re.search(r"\b(jeong|han)\b", listed, re.IGNORECASE)
    entries = listed.split("), ")
    for label, entry in zip(all_labels(), entries, strict=True):
        assert read_emotions_authors(f"Emotion: {entry})", single=True) == (label.name,), entry


def test_native_set_keeps_the_0_1_0_prompts() -> None:
    task = build_task(DIALOGUE, "ko")
    plan = plan_messages(task, "single", "native")
    assert not plan.two_calls and plan.first == build_messages(task, "single")
    assert prompt_set_version("native") == prompt_version()
    # what 0.1.0 stored with its answers: the set moved into data/ and still hashes so
    assert prompt_version() == "c7154f47940f"
    assert prompt_set_version("paper") != prompt_version()


@pytest.mark.parametrize(
    "text, protocol, expected",
    [
        ("The Speaker seems Sad.", "single", ("sad",)),
        ("sad, and a little afraid", "single", ("afraid",)),  # list order, as the authors read
        ("sad, and a little afraid", "multi", ("afraid", "sad")),
        ("화자는 충격받음 상태입니다", "single", ("devastated",)),  # a Korean gloss
        ("정", "single", ("jeong",)),
        ("걱정이 많아 보여요", "single", ("apprehensive",)),  # 정 inside a word is not jeong
        ("I cannot tell.", "single", ()),
    ],
)
def test_paper_extraction(text: str, protocol: str, expected: tuple[str, ...]) -> None:
    assert extract_anywhere(text, protocol) == expected  # type: ignore[arg-type]


def test_no_label_is_told_apart_from_a_wrong_one() -> None:
    parsed = parse_two_calls("I cannot tell.", "  **Oh** no.  ", "single")
    assert parsed.labels == () and parsed.notes == ("no label given",)
    assert parsed.text == "**Oh** no."
    from koed_core.models.emotions import score_emotions

    assert score_emotions((), frozenset({"sad"})).given is False
    wrong = score_emotions(("joyful",), frozenset({"sad"}))
    assert wrong.given is True and wrong.hit is False


def test_paper_ko_changes_the_instruction_language_alone(tmp_path: Path) -> None:
    """Setting "instruction language: native" once also changed the number of calls, the
    wording, the role names and the label list. paper-ko is the paper set with Korean
    instructions for Korean dialogues: English requests are the paper set's byte for byte,
    Korean ones keep its structure, labels and transcript."""
    from koed_core.models.pipeline import AUTHORS, steps_for
    from koed_core.models.prompts import load_prompt_set

    for protocol in ("single", "multi"):
        en = build_task(DIALOGUE, "en")
        assert plan_messages(en, protocol, "paper-ko").first == (
            plan_messages(en, protocol, "paper").first
        )
        ko = build_task(DIALOGUE, "ko")
        paper, korean = (
            plan_messages(ko, protocol, "paper"),
            plan_messages(ko, protocol, "paper-ko"),
        )
        assert korean.two_calls and paper.two_calls
        assert korean.first[0]["content"] != paper.first[0]["content"]
        assert korean.first[0]["content"].startswith("과제: 한국어로 나누는 공감 대화입니다.")
        assert glossed_labels() in korean.first[0]["content"]  # the same list, in full
        transcript = paper.first[1]["content"].split("\n\n")[0].removeprefix("Conversation:\n")
        assert transcript in korean.first[1]["content"]  # Speaker:/Listener: as the paper's
        assert "The task" not in korean.first[0]["content"] + korean.first[1]["content"]
        second = korean.second(ko, "Emotion: sad")[-1]["content"]
        assert (
            second.startswith(korean.first[1]["content"]) and "파악한 감정: Emotion: sad" in second
        )
    ko_set = load_prompt_set("paper-ko")
    assert ko_set.profile == "paper" and steps_for(ko_set.profile) == AUTHORS
    assert ko_set.version != load_prompt_set("paper").version
    bad = tmp_path / "mine.toml"
    bad.write_text('name = "mine"\nextends = "nope"\n')
    with pytest.raises(PromptSetError, match="extends must name a shipped set"):
        load_prompt_set(bad)
