"""Filter semantics, table-driven on a hand-built corpus, then checked on the official file."""

from __future__ import annotations

from pathlib import Path

import pytest

from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.dialogue import Dialogue, Turn
from koed_core.dialogues.filters import DialogueFilter, FilterIndex, to_params


def _dialogue(conv_id: str, labels: tuple[str, ...], turns: list[tuple[str, str]]) -> Dialogue:
    return Dialogue(
        index=0,
        conv_id=conv_id,
        situation_ko=f"{conv_id} 상황",
        situation_en=f"{conv_id} situation",
        labels=labels,
        turns=tuple(Turn(position=i, ko=ko, en=en) for i, (ko, en) in enumerate(turns, 1)),
    )


CORPUS = [
    _dialogue(
        "a", ("sad", "lonely"), [("엄마가 보고 싶어", "I miss my mom"), ("그렇구나", "I see")]
    ),
    _dialogue("b", ("sad",), [("슬퍼", "so sad"), ("왜?", "why?"), ("그냥", "")]),
    _dialogue("c", ("lonely", "afraid"), [("무서워", "scared")]),
    _dialogue("d", ("han",), [("할머니의 한", "grandma's grief"), ("마음 아프다", "")]),
    _dialogue(
        "e",
        ("jeong",),
        [("정이 들었어", "grew fond"), ("좋다", "nice"), ("응", "yes"), ("그래", "ok")],
    ),
]
INDEX = FilterIndex(CORPUS)


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (DialogueFilter(), "abcde"),
        (DialogueFilter(labels=frozenset({"sad"})), "ab"),
        (DialogueFilter(labels=frozenset({"sad", "lonely"}), mode="all"), "a"),
        (DialogueFilter(labels=frozenset({"sad", "lonely"}), mode="any"), "abc"),
        (DialogueFilter(labels=frozenset({"sad"}), mode="exact"), "b"),
        (DialogueFilter(labels=frozenset({"lonely", "sad"}), mode="exact"), "a"),
        (DialogueFilter(labels=frozenset({"lonely"}), mode="exact"), ""),
        (DialogueFilter(origin="korean"), "de"),
        (DialogueFilter(origin="ed"), "abc"),
        (DialogueFilter(origin="korean", labels=frozenset({"han"})), "d"),
        (DialogueFilter(text="엄마"), "a"),
        (DialogueFilter(text="MOM"), "a"),
        (DialogueFilter(text="한"), "d"),
        (DialogueFilter(text="situation"), "abcde"),
        (DialogueFilter(text="  scared "), "c"),
        (DialogueFilter(text="mom我"), ""),
        (DialogueFilter(min_turns=3), "be"),
        (DialogueFilter(max_turns=2), "acd"),
        (DialogueFilter(min_turns=2, max_turns=3), "abd"),
        (DialogueFilter(ko_only_turns=True), "bd"),
        (DialogueFilter(ko_only_turns=False), "ace"),
        (DialogueFilter(labels=frozenset({"sad", "han"}), mode="any", ko_only_turns=True), "bd"),
    ],
)
def test_filter_semantics(flt: DialogueFilter, expected: str) -> None:
    assert "".join(d.conv_id for d in INDEX.filter(flt)) == expected


def test_text_match_never_spans_two_turns() -> None:
    # "mom" ends turn 1 and "I see" starts turn 2 of dialogue a.
    assert INDEX.filter(DialogueFilter(text="mom I see")) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": frozenset({"happy"})}, "unknown label(s) happy"),
        ({"mode": "some"}, "unknown match mode 'some'"),
        ({"origin": "chinese"}, "unknown origin 'chinese'"),
    ],
)
def test_bad_filter_values_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DialogueFilter(**kwargs)  # type: ignore[arg-type]


def test_describe_states_the_mode() -> None:
    flt = DialogueFilter(labels=frozenset({"sad", "han"}), mode="exact", text="엄마")
    assert flt.describe() == "emotion is exactly han, sad; text contains '엄마'"
    assert DialogueFilter().describe() == "no filter"


def test_params_use_the_widget_keys() -> None:
    flt = DialogueFilter(labels=frozenset({"sad", "han"}), mode="exact", ko_only_turns=False)
    assert to_params(flt, "c1") == {
        "labels": ["han", "sad"],
        "mode": "exact",
        "ko_only": "without",
        "d": "c1",
    }
    assert to_params(DialogueFilter()) == {}


def test_modes_nest_on_the_official_file(official_file: Path) -> None:
    index = FilterIndex(load_dataset(official_file).dialogues)
    labels = frozenset({"anxious", "apprehensive"})
    exact = index.filter(DialogueFilter(labels=labels, mode="exact"))
    every = index.filter(DialogueFilter(labels=labels, mode="all"))
    some = index.filter(DialogueFilter(labels=labels, mode="any"))
    assert 0 < len(exact) <= len(every) < len(some)
    assert set(map(id, exact)) <= set(map(id, every)) <= set(map(id, some))
    assert len(index.filter(DialogueFilter(origin="korean"))) == 80
    korean = index.filter(DialogueFilter(text="할머니"))
    assert korean and all(
        "할머니" in d.situation_ko + "".join(t.ko for t in d.turns) for d in korean
    )
