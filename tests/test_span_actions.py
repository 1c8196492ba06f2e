"""What the span widget sends is read as a forged message would be: a side
outside its turn, a wrong language, an unknown type, a removal of a span that is not
there; each is one sentence and nothing is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.annotation import span_actions
from components.annotation.span_select import span_key
from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.taxonomy import AnnotationError, load_taxonomy
from koed_core.db import Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.paths import SAMPLE_FILE

DIALOGUE = load_dataset(SAMPLE_FILE).dialogues[0]  # 편의점 / convenience store in turn 3
TURN = DIALOGUE.turns[2]


def _side(side: str, needle: str, **changes: Any) -> dict[str, Any]:
    text = TURN.ko if side == "ko" else TURN.en
    start = text.index(needle)
    return {"lang": side, "position": 3, "start": start, "end": start + len(needle), **changes}


def test_a_well_formed_add_is_read_with_the_dialogues_own_text() -> None:
    message = {
        "ko": _side("ko", "편의점", text="forged"),
        "en": _side("en", "convenience store"),
        "none": False,
        "type": "places",
    }
    span = span_actions.read_add(message, DIALOGUE, load_taxonomy())
    assert (span.ko.text, span.en.text if span.en else None) == ("편의점", "convenience store")
    assert span.type == "places" and not span.no_counterpart


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"ko": _side("ko", "편의점"), "type": "weather"}, "is not a signal type"),
        ({"ko": _side("ko", "편의점"), "type": ["places"]}, "is not a signal type"),
        ({"ko": _side("ko", "편의점", end=999), "type": "places"}, "offsets"),
        ({"ko": _side("ko", "편의점", position=99), "type": "places"}, "has no turn 99"),
        ({"ko": _side("ko", "편의점", lang="en"), "type": "places"}, "could not be read"),
        ({"ko": _side("ko", "편의점", start="0"), "type": "places"}, "could not be read"),
        ({"ko": _side("ko", "편의점", start=True), "type": "places"}, "could not be read"),
        ({"ko": "편의점", "type": "places"}, "could not be read"),
        ({"type": "places"}, "could not be read"),
    ],
)
def test_a_forged_add_is_one_sentence(message: dict[str, Any], said: str) -> None:
    with pytest.raises(AnnotationError, match=said):
        span_actions.read_add(message, DIALOGUE, load_taxonomy())


def test_a_counterpart_in_another_turn_is_refused_when_stored(tmp_path: Path) -> None:
    dataset = load_dataset(SAMPLE_FILE)
    store = AnnotationRules(Store(tmp_path / "k.db"))
    project = store.create_project("p", dataset, [DIALOGUE.conv_id], per_item=1)
    other = DIALOGUE.turns[1].en
    message = {
        "ko": _side("ko", "편의점"),
        "en": {"lang": "en", "position": 2, "start": 0, "end": len(other.split()[0])},
        "type": "places",
    }
    span = span_actions.read_add(message, DIALOGUE, load_taxonomy())
    with pytest.raises(AnnotationError, match="turn"):
        store.save(project, DIALOGUE, "local", None, "", [span])
    assert store.own(project, DIALOGUE.conv_id, "local") is None


def test_removing_a_span_that_is_not_there_changes_nothing(tmp_path: Path) -> None:
    dataset = load_dataset(SAMPLE_FILE)
    store = AnnotationRules(Store(tmp_path / "k.db"))
    project_id = store.create_project("p", dataset, [DIALOGUE.conv_id], per_item=1)
    project = store.project(project_id)
    kept = span_actions.read_add(
        {"ko": _side("ko", "편의점"), "type": "places", "none": True}, DIALOGUE, load_taxonomy()
    )
    store.save(project_id, DIALOGUE, "local", None, "", [kept])
    sheet = span_actions.Sheet.read(store, project, DIALOGUE, "local", load_taxonomy())
    notice = span_actions.apply({"remove": {"key": "3:0:1:food"}}, sheet)
    assert notice == "That span is no longer there; nothing was removed."
    own = store.own(project_id, DIALOGUE.conv_id, "local")
    assert own is not None and [span_key(s) for s in own.spans] == [span_key(kept)]
