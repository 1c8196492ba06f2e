"""`koed reproduce PLAN --differences`: worked out from the code, and docs/reproduce.md
carries its output for the shipped plan."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from koed_core.models.registry import load_registry
from koed_core.paths import DEFAULT_REGISTRY
from koed_core.results.differences import differences, to_markdown
from koed_core.results.reproduce import load_plan

ROOT = Path(__file__).resolve().parents[1]


def _shipped() -> tuple[object, dict, object]:
    plan = load_plan(ROOT / "plans" / "paper.toml")
    registry = load_registry(DEFAULT_REGISTRY)
    return plan, {m: registry[m] for m in plan.models}, registry[plan.judge]


def test_the_docs_table_is_the_commands_output() -> None:
    plan, specs, judge = _shipped()
    docs = (ROOT / "docs" / "reproduce.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- differences:start -->\n(.*?)<!-- differences:end -->", docs, re.S)
    assert found, "docs/reproduce.md lost its differences table"
    assert found.group(1) == to_markdown(differences(plan, specs, judge)), (
        "docs/reproduce.md drifted: paste `koed reproduce plans/paper.toml --differences`"
    )


def test_the_shipped_plan_takes_the_authors_step_everywhere_it_can() -> None:
    plan, specs, judge = _shipped()
    steps = {row.step for row in differences(plan, specs, judge)}
    for choice in ("reply post-processing", "_comma_", "emotion reader", "judge template"):
        assert not any(choice in step for step in steps), choice
    assert not any(step.endswith(": decoding") for step in steps)  # written out per model


@pytest.mark.parametrize(
    ("change", "step"),
    [
        ({"postprocess": "none"}, "claude-3.5-sonnet: reply post-processing"),
        ({"commas": "decoded"}, "_comma_ in English"),
        ({"emotion_reader": "extended"}, "emotion reader"),
        ({"judge_template": "fenced"}, "judge template"),
        ({"judge_parse": "lenient"}, "judge parse"),
        ({"temperature": "default"}, "llama-3.1-8b: decoding"),
        ({"prompts": "native"}, "prompt structure"),
        ({"subset": "full"}, "dialogues"),
    ],
)
def test_each_flipped_choice_is_named(change: dict[str, str], step: str) -> None:
    plan, specs, judge = _shipped()
    rows = {row.step: row for row in differences(replace(plan, **change), specs, judge)}
    assert step in rows
    if step.endswith("decoding"):
        assert rows[step].authors == "temperature 0.6, top_p 0.9"
        assert rows[step].plan == "the server's default decoding"
