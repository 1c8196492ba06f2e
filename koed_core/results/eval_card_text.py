"""The human-evaluation card said in the reader's language (issue 64 item 5).

The card (:mod:`koed_core.results.eval_card`) holds its values as data: codes for keys
(``native_korean``), stored values (``prolific``, ``paper``) and sentences held as their
message and values (:class:`Said`). They become words only when shown, through the
translation catalogs: the Study dashboard says every word in the page's language (a
Korean page in Korean), and the paper export in English, as its files are. Ids, table
names, versions and checklist codes ("ARR D3") stay as they are, beside the words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from koed_core import i18n
from koed_core.db.types import MODE_WORDS
from koed_core.i18n import N_, _
from koed_core.rating.crowd.exclusions import KINDS, REASONS
from koed_core.rating.crowd.links import ATTENTION_FAILS_TO_STOP

NOT_RECORDED = N_("not recorded")

KEY_WORDS = {
    "profiles": N_("raters with a profile"),
    "rate_ko": N_("rating Korean"),
    "rate_en": N_("rating English"),
    "native_korean": N_("native Korean speakers"),
    "native_other": N_("other native languages"),
    "median_years_korea": N_("median years lived in Korea"),
    "median_years_english_country": N_("median years lived in an English-speaking country"),
    "checks_per_rater": N_("checks per rater and language"),
    "checks_rated": N_("checks rated"),
    "pass_rate": N_("share passed"),
    "link": N_("link"),
    "platform": N_("platform"),
    "reward": N_("reward"),
    "currency": N_("currency"),
    "per_hour": N_("per hour"),
    "median_minutes": N_("median minutes"),
    "judge_model": N_("judge model"),
    "judge_mode": N_("mode"),
    "judge_prompt_version": N_("prompt version"),
    "judge_rubric_version": N_("rubric version"),
    "judge_template": N_("template"),
    "judge_parse": N_("verdict parser"),
    "judge_replicate": N_("judged again (number)"),
    "judge_temperature": N_("temperature"),
    "workers": N_("crowd workers"),
    "excluded": N_("excluded"),
}
"""The card's value keys as a reader is told them."""

PLATFORM_WORDS = {"prolific": "Prolific", "mturk": "MTurk"}
LANG_WORDS = {"ko": N_("Korean"), "en": N_("English")}
DECISION_WORDS = {
    "accept": N_("accepted"),
    "reject": N_("rejected"),
    "replace": N_("asked to return"),
    "screen_out": N_("screened out"),
}
VALUE_WORDS: dict[str, Mapping[str, str]] = {
    "platform": PLATFORM_WORDS,
    "judge_mode": MODE_WORDS,
    "lang": LANG_WORDS,
}
"""Stored values said as words, by the key they stand under (an unknown one as stored)."""


@dataclass(frozen=True)
class Said:
    """A sentence held as its message (an ``N_`` entry) and its values, said when shown;
    a value may be another :class:`Said` or a function that says itself then (a study's
    design sentence, from :func:`koed_core.rating.sampling.describe`)."""

    message: str
    values: dict[str, Any] = field(default_factory=dict)

    def say(self) -> str:
        """The sentence in the reader's language, its values filled."""
        return _(self.message, **{k: _said(v) for k, v in self.values.items()})


def _said(value: Any) -> Any:
    if isinstance(value, Said):
        return value.say()
    if callable(value):
        return value()
    return value


def word(key: str, value: Any) -> str:
    """One stored value as a reader reads it (``key``: what it stands under)."""
    if value is None or value == "":
        return _(NOT_RECORDED)
    if isinstance(value, Said):
        return value.say()
    words = VALUE_WORDS.get(key, {})
    if isinstance(value, str) and value in words:
        return i18n.stored_word(value, words) if key == "judge_mode" else _(words[value])
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        digits = 0 if value == int(value) else 3 if abs(value) < 10 else 2
        return i18n.number(value, digits)
    return str(value)


def show_value(key: str, value: Any) -> str:
    """One card cell's text: an item's value (``key``: the item's) in the reader's words,
    "not recorded" where there is none; never a "|" (a Markdown table's cell)."""
    if value in (None, "", [], {}):
        text = _(NOT_RECORDED)
    elif key in SHOWN_BY:
        text = SHOWN_BY[key](value)
    elif isinstance(value, dict):
        text = "; ".join(f"{_key(k)}: {word(k, v)}" for k, v in value.items())
    elif isinstance(value, list):
        text = " / ".join(
            show_value(key, v) if isinstance(v, dict) else word(key, v) for v in value
        )
    else:
        text = word(key, value)
    return text.replace("|", "/")


def _key(key: str) -> str:
    return _(KEY_WORDS[key]) if key in KEY_WORDS else key


def _agreement(value: list[dict[str, Any]]) -> str:
    return " / ".join(
        _(
            "{dimension} in {lang}: alpha {alpha} [{low}, {high}], judge-people kappa {kappa}",
            dimension=r["dimension"],
            lang=word("lang", r["lang"]),
            alpha=word("", r.get("krippendorff_alpha")),
            low=word("", r.get("ci_low")),
            high=word("", r.get("ci_high")),
            kappa=word("", r.get("judge_kappa")),
        )
        for r in value
    )


def _exclusions(value: dict[str, Any]) -> str:
    parts = [
        _(
            "{workers} crowd workers, {excluded} excluded",
            workers=value["workers"],
            excluded=value["excluded"],
        )
    ]
    for r in value.get("kinds", []):
        reason = _(REASONS[r["reason"]], n=ATTENTION_FAILS_TO_STOP)
        if r.get("said"):
            reason = f"{reason}: “{r['said']}”"
        line = _(
            "{kind} ({reason}): {workers} workers, {ratings} of their ratings in the numbers",
            kind=_(KINDS[r["kind"]]),
            reason=reason,
            workers=r["workers"],
            ratings=r["ratings"],
        )
        if r.get("decision"):
            line += "; " + _(
                "the admin's decision: {decision}",
                decision=_(DECISION_WORDS.get(r["decision"], r["decision"])),
            )
        parts.append(line)
    return "; ".join(parts)


SHOWN_BY: dict[str, Callable[[Any], str]] = {
    "agreement": _agreement,
    "exclusions": _exclusions,
}
"""Items whose values read better as sentences than as key: value pairs."""


def show_checklist(arr: str, heds: str) -> str:
    """The checklist questions an item answers: ARR's code, HEDS's section in words."""
    parts = [arr] if arr else []
    if heds:
        parts.append(_("HEDS: {section}", section=_(heds)))
    return "; ".join(parts)
