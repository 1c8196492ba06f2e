"""Every step where a plan differs from the KoED authors' pipeline, worked out from the code.

`koed reproduce PLAN --differences` prints this; the table in docs/reproduce.md is its
output for plans/paper.toml, and a test fails when the two drift. The authors' side is
what their scripts (simuzin/KoED at 2273b3e) do, stated once here; our side is read from
the plan, the models it names and the steps they resolve to, never written by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from koed_core.judge.request import JudgeSteps
from koed_core.models.prompts import load_prompt_set
from koed_core.models.registry import ModelSpec
from koed_core.results.reproduce import Plan, plan_settings
from koed_core.text.plain_text import one_line

AUTHORS_JUDGE = "gpt-4o"
AUTHORS_DECODING: dict[str, str] = {
    "claude-3-5-sonnet-20240620": "temperature 0.1",
    # top_k 50: its generation_config sets none, so transformers' default applied
    "meta-llama/Llama-3.1-8B-Instruct": "temperature 0.6, top_p 0.9, top_k 50",
    "Qwen/Qwen2-7B-Instruct": "temperature 0.7, top_p 0.8, top_k 20, repetition_penalty 1.05",
    "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct": "greedy",
    "mistralai/Mistral-7B-Instruct-v0.3": "greedy",
}
"""Per model id: how the authors' scripts decoded (Claude: claude.py's temperature; the
open models: a transformers pipeline with the model's own generation_config.json)."""
AUTHORS_FAMILY = {"claude-3-5-sonnet-20240620": "claude"}
ALIASES = {"meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B-Instruct"}
"""Their script's id for Llama 3.1 before Meta renamed the repository."""


@dataclass(frozen=True)
class Difference:
    """One step: what the authors did, what the plan does."""

    step: str
    authors: str
    plan: str


def _decoding(plan: Plan, spec: ModelSpec) -> str:
    settings = plan_settings(plan, spec)
    if settings.temperature is None:
        return "the server's default decoding"
    if settings.temperature == 0:
        return "greedy"
    parts = [f"temperature {settings.temperature:g}"]
    for name in ("top_p", "top_k", "repetition_penalty"):
        value = getattr(settings, name)
        if value is not None:
            parts.append(f"{name} {value:g}")
    return ", ".join(parts)


def differences(plan: Plan, specs: Mapping[str, ModelSpec], judge: ModelSpec) -> list[Difference]:
    """The plan's departures from the authors' pipeline, step by step, in pipeline order."""
    out: list[Difference] = []
    prompts = load_prompt_set(plan.prompts)
    if prompts.profile != "paper":
        out.append(
            Difference(
                "prompt structure",
                "one English task definition for both languages, two calls",
                f"the {prompts.name} set ({'two calls' if prompts.two_calls else 'one call'})",
            )
        )
    out += [
        Difference(
            "their scripts as one pipeline",
            "assumed: generation, post-processing and judging run one after another on one "
            "output (as published they do not chain: the folders they write and read differ, "
            "and the open models' post-processing is commented out in main)",
            "one command runs, post-processes and judges each answer",
        ),
        Difference(
            "turn text",
            "sent as stored: 31 turns of their sample begin or end with spaces",
            "stripped when the file is read (the spaces are not sent)",
        ),
        Difference(
            "gold labels",
            "their sample file: 23 labels in 21 of its 100 dialogues end in a space "
            "('disappointed '); how their scoring matched them: unknown (no script published)",
            "the official file's labels, exact names (none ends in a space)",
        ),
    ]
    out.append(
        Difference(
            "prompt wording",
            "their task definition, guidelines, jeong/han definitions and judge rubric text",
            f"our own words ({prompts.name} set, authors/fenced judge templates); the label "
            "glosses follow their word list; pass your own with --prompts / --judge-template",
        )
    )
    authored = {ALIASES.get(m, m) for m in AUTHORS_DECODING}
    for name in plan.models:
        spec = specs[name]
        steps = plan.steps(spec.family, spec.model or "")
        theirs_family = AUTHORS_FAMILY.get(spec.model, "open")
        if spec.model not in authored:
            out.append(Difference(f"{name}: model", "not among their five models", spec.model))
        else:
            ours = _decoding(plan, spec)
            if ours != AUTHORS_DECODING[spec.model]:
                out.append(Difference(f"{name}: decoding", AUTHORS_DECODING[spec.model], ours))
            if spec.family != theirs_family:
                out.append(
                    Difference(f"{name}: post-processing family", theirs_family, spec.family)
                )
            if theirs_family == "open":
                out.append(
                    Difference(
                        f"{name}: weights",
                        "4-bit (bitsandbytes), transformers pipeline",
                        "whatever the server at its base_url runs (full precision on plain vLLM)",
                    )
                )
                out.append(
                    Difference(
                        f"{name}: revision",
                        "unknown: no model or chat-template revision pinned",
                        "whatever revision the server loaded (pin it: vllm serve --revision, "
                        "and report it)",
                    )
                )
        if spec.substitutes:
            out.append(
                Difference(
                    f"{name}: availability",
                    f"{spec.model} served (2024)",
                    f"retired by its provider: the preflight stops; substitute "
                    f"{', '.join(spec.substitutes)} and report it",
                )
            )
        theirs_step = "authors-repr" if spec.family == "open" else "authors"
        if steps.postprocess not in (theirs_step, "authors-repr"):
            out.append(
                Difference(
                    f"{name}: reply post-processing", "theirs, per family", steps.postprocess
                )
            )
    first = (
        plan.steps(specs[plan.models[0]].family, specs[plan.models[0]].model or "")
        if plan.models
        else None
    )
    if first is not None and first.commas != "raw":
        out.append(Difference("_comma_ in English", "sent as the file has it", "decoded"))
    if first is not None and first.emotion_reader != "authors":
        out.append(
            Difference(
                "emotion reader",
                "English label names and 정/한, whole words, list order",
                "also Korean glosses and stems (extended)",
            )
        )
    textual = any(  # an open model cut as text, not from the repr as theirs was
        specs[m].family == "open"
        and plan.steps(specs[m].family, specs[m].model or "").postprocess == "authors"
        for m in plan.models
    )
    if textual:
        out.append(
            Difference(
                "a reply that opens with a blank line (open models)",
                "judged empty: their cut at the first blank line comes before any text",
                "the reply is stripped first, so its first paragraph is judged",
            )
        )
    if any(
        specs[m].family == "claude"
        and plan.steps(specs[m].family, specs[m].model or "").postprocess.startswith("authors")
        for m in plan.models
    ):
        out.append(
            Difference(
                "a reply that opens with a blank line (Claude)",
                "judged as stored: 'Listener: ' then the blank line, then the reply",
                "the reply is stripped first: 'Listener: ' then its first words",
            )
        )
    judging = JudgeSteps.choose(plan.judge_mode, plan.judge_template, plan.judge_parse)
    # always a row: which snapshot judged the paper is not known, so never "the same"
    out.append(
        Difference(
            "judge model and snapshot",
            "gpt-4o, the undated alias (which snapshot it meant then: unknown)",
            judge.model
            + (
                " (an undated alias too: pin a dated snapshot)"
                if judge.model == AUTHORS_JUDGE
                else ""
            ),
        )
    )
    if plan.judge_mode != "paper":
        out.append(
            Difference("judge mode", "temperature 0.7, feedback then Score", plan.judge_mode)
        )
    if judging.template.name != "authors":
        out.append(Difference("judge template", "authors' structure", judging.template.name))
    if judging.parse != "authors":
        out.append(Difference("judge parse", "split on 'Score:', int, re-ask (5)", judging.parse))
    if any(
        specs[m].family == "open"
        and plan.steps(specs[m].family, specs[m].model or "").postprocess != "authors-repr"
        for m in plan.models
    ):
        out.append(
            Difference(
                "reply call's emotion",
                "open models: the Python repr of the whole message ({'role': ..., 'content': ...})",
                "the emotion answer's text (as their Claude script did)",
            )
        )
    out += [
        Difference(
            "verdict off the 1-5 scale",
            "kept as given (their parser takes any integer)",
            "unscored, with the reason; not asked again",
        ),
        Difference(
            "order of calls",
            "per dialogue: single emotion, single reply, multi emotion, multi reply",
            "each protocol is its own run (calls are independent, so no answer changes)",
        ),
    ]
    families = {specs[m].family for m in plan.models}
    if textual:
        out.append(
            Difference(
                "judged text (open models)",
                "cut from the Python repr of the stored message (process_file): quote marks "
                "around it, \\n as backslash-n",
                "the text itself",
            )
        )
    if "claude" in families:
        # their claude_process_json reads the stored content itself, not its repr: the
        # judged text is ours ("Listener: " + the reply, or after its last "Listener:");
        # said so that nobody carries the open models' quoting over to Claude
        out.append(
            Difference(
                "judged text (Claude)",
                "'Listener: ' + the reply, or what follows its last 'Listener:' (any case) "
                "when it names one (claude_process_json): no repr quoting",
                "the same text (tests read their rule on planted replies); no difference",
            )
        )
    out.append(
        Difference(
            "scores to the paper's tables",
            "unknown: no scoring or aggregation script published",
            "paired Korean-minus-English gaps per dialogue with bootstrap CIs "
            "(koed_core/results/gaps.py)",
        )
    )
    if plan.subset != "paper-100":
        out.append(Difference("dialogues", "their 100-dialogue sample", plan.subset))
    return out


def to_markdown(rows: list[Difference]) -> str:
    """The differences as a Markdown table (the one docs/reproduce.md carries)."""
    lines = ["| step | the authors' pipeline | this plan |", "| --- | --- | --- |"]
    for row in rows:
        cells = [row.step, row.authors, row.plan]
        # one line each: a plan's value with a line break would end the row
        lines.append("| " + " | ".join(one_line(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
