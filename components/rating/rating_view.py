"""The rater's screens: onboarding, the rubric form with anchors, an item, calibration.

Dialogue and response text are drawn with ``st.text``, so HTML, scripts or markdown in a
model's answer show as the characters they are.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import streamlit as st

from components.core import state, tables
from components.core.literal import md
from koed_core import i18n
from koed_core.db import RatingItem
from koed_core.dialogues.dialogue import Lang
from koed_core.dialogues.variants import text_lang
from koed_core.i18n import N_, _
from koed_core.judge.rubric import SCALE, dimensions
from koed_core.models.protocol import ROLE_NAMES
from koed_core.rating.attention_rules import instruction_in
from koed_core.rating.studies import RaterProfile, RatingError, StudyRules, calibration_items

OTHER = N_("Other")


def language_names() -> dict[str, str]:
    """Each language by its own name, and "other" in the page's language."""
    return {**i18n.NAMES, "other": _(OTHER)}


class Draft(NamedTuple):
    """A submitted rubric form."""

    scores: dict[str, int]
    comment: str


def onboarding_form(username: str) -> RaterProfile | None:
    """Languages and background, asked once; None until submitted."""
    with st.form("rate.onboarding"):
        st.subheader(_("About you"), anchor=False)
        langs = st.multiselect(
            _("I rate dialogues in"),
            ["ko", "en"],
            default=["ko"],
            format_func=language_names().__getitem__,
            placeholder=_("Choose a language"),
        )
        native = st.selectbox(
            _("My native language"), ["ko", "en", "other"], format_func=language_names().__getitem__
        )
        korea = st.number_input(_("Years lived in Korea"), 0.0, 100.0, 0.0, 0.5)
        english = st.number_input(
            _("Years lived in an English-speaking country"), 0.0, 100.0, 0.0, 0.5
        )
        st.caption(_("Stored to break agreement down by background; exported only in aggregate."))
        if not st.form_submit_button(_("Save"), type="primary"):
            return None
    return RaterProfile(username, tuple(langs), native, float(korea), float(english))


SCALE_DIRECTION = N_("Scores go from 1 (lowest) to 5 (highest).")
"""Said wherever scores are chosen or explained: Korean readers know a first grade as the
best one, so a bare 1-5 could be read the other way round."""


def render_rubric(lang: str) -> None:
    """Every dimension with its question and five anchors, in Korean and English side by
    side (the item's language first: a translated variant's is the one it is written
    in), always one click away."""
    lang = text_lang(lang)
    order: tuple[Lang, Lang] = ("ko", "en") if lang == "ko" else ("en", "ko")
    with st.expander(_("Rubric"), icon=":material/rule:"):
        st.markdown("**" + _(SCALE_DIRECTION) + "**")
        for dim in dimensions():
            st.markdown(f"**{md(dim.code)} · {md(dim.name(order[0]))} · {md(dim.name(order[1]))}**")
            for column, side in zip(st.columns(2), order, strict=True):
                column.text(dim.question(side))
                column.text("\n".join(f"{s}: {dim.anchor(s, side)}" for s in SCALE))


def render_item(context: Any, response: str, lang: str, kind: str = "response") -> None:
    """The conversation as the model saw it, then the response under rating; a whole
    episode is the conversation itself, the Listener rated over all its turns. A
    translated variant's item (``ko-from-en``) is the variant's text, with the role
    names of the language it is written in."""
    speaker, listener = ROLE_NAMES[text_lang(lang)]
    if kind == "episode":
        st.markdown(
            "**" + _("A whole conversation: rate the Listener over all of its turns") + "**"
        )
    with st.container(border=True):
        for role, text in context:
            st.text(f"{speaker if role == 'speaker' else listener}: {text}")
    if kind == "episode":
        return
    st.markdown("**" + _("Response") + "**")
    with st.container(border=True):
        st.text(response)


def rubric_form(
    key: str,
    lang: str,
    defaults: dict[str, int] | None = None,
    comment: str = "",
    submit: str | None = None,
) -> Draft | None:
    """Five 1-5 scores, the scale's direction said above them and each score's anchor
    under its button (read without hovering), and a comment; None until submitted
    complete. ``lang``: the item's language or variant (its rubric is in the language
    the variant is written in)."""
    lang = text_lang(lang)
    with st.form(key):
        st.markdown(
            "**" + _(SCALE_DIRECTION) + "** " + _("What each score means is under its button.")
        )
        scores: dict[str, int | None] = {}
        for dim in dimensions():
            value = (defaults or {}).get(dim.code)
            scores[dim.code] = st.radio(
                f"{dim.code} · {dim.name(lang)}: {dim.question(lang)}",
                SCALE,
                horizontal=True,
                index=SCALE.index(value) if value else None,
                key=f"{key}.{dim.code}",
                captions=[md(dim.anchor(s, lang)) for s in SCALE],
            )
        note = st.text_area(_("Comment (optional)"), value=comment, key=f"{key}.comment")
        if not st.form_submit_button(submit or _("Submit rating"), type="primary"):
            return None
    missing = [code for code, score in scores.items() if score is None]
    if missing:
        st.warning(
            _(
                "Score every dimension before submitting; missing: {codes}.",
                codes=md(", ".join(missing)),
            )
        )
        return None
    return Draft({code: int(score) for code, score in scores.items() if score is not None}, note)


def calibration(langs: tuple[str, ...]) -> bool:
    """Walk the rater through the calibration items with feedback; True when finished."""
    items = calibration_items(langs)
    progress = state.calibration_progress()
    if progress["index"] >= len(items):
        return True
    item = items[progress["index"]]
    st.subheader(
        _("Calibration {n} of {total}", n=progress["index"] + 1, total=len(items)), anchor=False
    )
    st.caption(_("Practice items with reference scores. Rate, then compare with the reference."))
    render_rubric(item["lang"])
    render_item(item["context"], item["response"], item["lang"])
    if progress["feedback"] is None:
        draft = rubric_form(f"calibration.{item['id']}", item["lang"])
        if draft is not None:
            progress["feedback"] = draft.scores
            gaps = [abs(draft.scores[code] - ref) for code, ref in item["reference"].items()]
            progress.setdefault("gaps", []).append(sum(gaps) / len(gaps))
            st.rerun()
        return False
    rows = [
        {
            _("dimension"): code,
            _("you"): progress["feedback"][code],
            _("reference"): ref,
            _("difference"): progress["feedback"][code] - ref,
        }
        for code, ref in item["reference"].items()
    ]
    tables.show(rows, hide_index=True)
    st.info(md(item["feedback"]))
    if st.button(_("Next"), type="primary", key=f"calibration.next.{item['id']}"):
        progress.update(index=progress["index"] + 1, feedback=None)
        st.rerun()
    return False


SCROLL_UP = (
    "<script>/* {marker} */"
    "for (const el of [document.querySelector('[data-testid=\"stMain\"]'), "
    "document.scrollingElement]) {{ if (el) el.scrollTo({{top: 0}}); }}</script>"
)


def scroll_to_top(marker: str) -> None:
    """Bring a new item into view from its top: after Submit the browser would stay at the
    form, below the new dialogue and response, and a rater could score without reading.
    The script is ours and constant; ``marker`` (an assignment id) only makes each item's
    copy new, so it runs once per item and not on a rerun of the same one."""
    safe = "".join(ch for ch in marker if ch.isalnum() or ch in "-_")
    st.html(SCROLL_UP.format(marker=safe), unsafe_allow_javascript=True, width="content")


def showing_key(prefix: str) -> str:
    """Where a browser tab keeps the assignment it has on screen."""
    return f"{prefix}.showing"


def finished_here(prefix: str) -> None:
    """This tab finished (rated, flagged, skipped) the item it showed."""
    st.session_state.pop(showing_key(prefix), None)


def _changed_elsewhere(item: RatingItem, prefix: str) -> None:
    """A tab whose item was finished in another tab or window (or handed back after the
    timeout) would otherwise lose a Submit silently: the next run shows the next item and
    the old form's scores go nowhere. Say so, once, above the item that replaced it."""
    before = st.session_state.get(showing_key(prefix))
    if before and before != item.assignment_id:
        st.warning(
            _(
                "The item this tab showed was finished in another tab or window (or it timed "
                "out), so nothing from this tab was saved for it. Here is your next item."
            ),
            icon=":material/tab:",
        )
    st.session_state[showing_key(prefix)] = item.assignment_id


def render_check(instruction: str) -> None:
    """An attention check's instruction, in the reader's language only."""
    said = instruction_in(instruction, i18n.language())
    st.warning(md(said), icon=":material/priority_high:")


def rate_item(rules: StudyRules, item: RatingItem, username: str, prefix: str) -> bool:
    """The rubric, the item and its form; True once the rating is saved (the Rate page and
    a crowd worker's page both rate this way). The time on the item is stored with it."""
    _changed_elsewhere(item, prefix)
    started = state.rate_started()
    started.setdefault(item.assignment_id, time.time())
    scroll_to_top(item.assignment_id)
    render_rubric(item.lang)
    render_item(item.context, item.response, item.lang, item.kind)
    if item.instruction:  # an attention check says what to choose: fair to the rater
        render_check(item.instruction)
    draft = rubric_form(f"{prefix}.{item.assignment_id}", item.lang)
    if draft is None:
        return False
    try:
        rules.save_rating(
            item.assignment_id,
            username,
            draft.scores,
            draft.comment,
            time.time() - started.pop(item.assignment_id, time.time()),
        )
    except RatingError as err:
        st.error(md(str(err)))
        return False
    finished_here(prefix)
    return True
