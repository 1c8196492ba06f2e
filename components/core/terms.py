"""The names of choices a page shows as they are stored (protocol ``single``, prompt set
``paper``, judge mode ``strict``, template ``fenced``): on a Korean page each comes with
its Korean word first and the stored name after it, as the labels do ("슬픈 (sad)"), so a
Korean reader is never left with English alone and a link or a command still matches."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from koed_core import i18n
from koed_core.db import JudgeConfig
from koed_core.dialogues.labels import display, gloss
from koed_core.i18n import N_, _

WORDS = {
    "single": N_("single label"),
    "multi": N_("several labels"),
    "direct": N_("reply only"),
    "paper": N_("the paper's"),
    "native": N_("in the dialogue's language"),
    "strict": N_("strict"),
    "authors": N_("the authors'"),
    "fenced": N_("fenced"),
    "lenient": N_("lenient"),
    "json": N_("JSON"),
}
"""Stored choice values and what they are, in words a translator can put in Korean."""
MODE_DEFAULT = N_("the mode's (paper: authors)")
"""The Judge page's first template and parser choice: whatever the mode takes."""


def term(value: str) -> str:
    """A stored choice value as a page shows it: the value itself on an English page,
    "Korean (value)" on a Korean one (a value with no entry: as it is)."""
    if i18n.language() != "ko" or value not in WORDS:
        return value
    korean = _(WORDS[value])
    return f"{korean} ({value})"


def label(name: str) -> str:
    """An emotion label as a page shows it: the name on an English page, the name with
    its Korean gloss (``sad · 슬픈``) on a Korean one."""
    return display(name) if i18n.language() == "ko" else name


def label_gloss(name: str) -> str:
    """The label's Korean gloss on a Korean page (for hovers): '' on an English one."""
    return gloss(name) if i18n.language() == "ko" else ""


def judge_name(config: JudgeConfig) -> str:
    """A judge configuration for a picker, in the reader's words (the export and the
    command line keep ``config.label``)."""
    name = _(
        "{model} · {mode} mode · {template} template · {parse} parse · prompt {prompt} · "
        "rubric {rubric}",
        model=config.model,
        mode=term(config.mode),
        template=term(config.template),
        parse=term(config.parse),
        prompt=config.prompt_version[:8],
        rubric=config.rubric_version[:8],
    )
    if config.replicate:
        name += " · " + _("judged again #{n}", n=config.replicate)
    return name


def shown(values: Sequence[str]) -> Callable[[str], str]:
    """A widget's ``format_func``: each value's ``term``, settled now, in this run's
    language (a format function is also called outside the run, where the page's
    language is not set: AppTest's reruns are)."""
    return {value: term(value) for value in values}.__getitem__


def term_or(default: str, values: Sequence[str]) -> Callable[[str], str]:
    """``shown`` for a choice list that starts with ``default`` (an ``N_`` message)."""
    return ({value: term(value) for value in values} | {default: _(default)}).__getitem__
