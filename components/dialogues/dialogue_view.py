"""A dialogue as a ko/en pair: situation, labels, and turns aligned side by side.

Text from the data is drawn with ``st.text`` only, so markup in a dialogue shows as the
characters it is and never runs.
"""

from __future__ import annotations

import streamlit as st

from components.core import resources
from components.core.language import VARIANT_WORDS
from components.core.literal import md
from koed_core import i18n
from koed_core.db.variants import Variants
from koed_core.dialogues.dialogue import Dialogue, LoadWarning, Turn
from koed_core.dialogues.labels import by_name
from koed_core.dialogues.variants import text_lang
from koed_core.i18n import N_, _
from koed_core.models.variant_texts import read_variant

ROLE_BADGE = {
    "speaker": (N_("Speaker"), ":material/record_voice_over:", "blue"),
    "listener": (N_("Listener"), ":material/hearing:", "green"),
}
COLUMN_WIDTHS = [1.7, 5, 5]


def render_labels(dialogue: Dialogue) -> None:
    """The gold labels as chips with their Korean glosses."""
    with st.container(horizontal=True):
        for name in dialogue.labels:
            label = by_name()[name]
            color = "violet" if label.origin == "korean" else "orange"
            st.badge(label.display, color=color, help=label.description or None)


def render_dialogue(dialogue: Dialogue, notes: list[LoadWarning] | None = None) -> None:
    """The whole dialogue: header, situation in both languages, then every turn.

    ``notes`` are the loader's warnings about this record (labels repeated, turns out of
    order), shown so a linguist knows what the file said before it was normalised.
    """
    st.subheader(_("Dialogue {conv_id}", conv_id=md(dialogue.conv_id)), anchor=False)
    render_labels(dialogue)
    for note in notes or []:
        st.caption(_("About this record in the file: {note}", note=md(note.text)))
    shown = _variants(dialogue)
    widths = COLUMN_WIDTHS + [5] * len(shown)
    head = st.columns(widths)
    head[1].markdown("**" + i18n.NAMES["ko"] + " · " + _("KoED reconstruction") + "**")
    head[2].markdown("**" + i18n.NAMES["en"] + " · EmpatheticDialogues**")
    for column, (name, (label, _variant)) in zip(head[3:], shown.items(), strict=True):
        column.markdown("**" + _(VARIANT_WORDS[name]) + " · " + md(label) + "**")
    with st.container(border=True):
        row = st.columns(widths)
        row[0].badge(_("Situation"), icon=":material/description:", color="gray")
        row[1].text(dialogue.situation_ko or _("(none)"))
        row[2].text(dialogue.situation_en or _("(none)"))
        for column, (name, (_label, variant)) in zip(row[3:], shown.items(), strict=True):
            column.text(variant.situation(text_lang(name)) or _("(none)"))
    for turn in dialogue.turns:
        _render_turn(turn, widths, shown)
    added = dialogue.ko_only_turns
    if added:
        st.caption(
            _(
                "{added} of {turns} turns exist only in Korean.",
                added=int(added),
                turns=len(dialogue.turns),
            )
        )


def _variants(dialogue: Dialogue) -> dict[str, tuple[str, Dialogue]]:
    """Each translated variant of this dialogue in its newest version, with the version's
    label (none when no variant translates it)."""
    store = resources.store()
    found = {}
    for name in sorted({v.variant for v in Variants(store).versions()}):
        read = read_variant(store, [dialogue], name)
        if dialogue.conv_id in read.dialogues:
            found[name] = (read.version.label, read.dialogues[dialogue.conv_id])
    return found


def _render_turn(turn: Turn, widths: list[float], shown: dict[str, tuple[str, Dialogue]]) -> None:
    label, icon, color = ROLE_BADGE[turn.role]
    with st.container(border=True):
        row = st.columns(widths)
        row[0].badge(f"{turn.position} · " + _(label), icon=icon, color=color)
        if turn.ko:
            row[1].text(turn.ko)
        else:
            row[1].badge(_("No Korean text"), color="gray")
        if turn.en:
            row[2].text(turn.en)
        else:
            row[2].badge(
                _("Korean-only turn: added in the reconstruction"),
                icon=":material/add_circle:",
                color="red",
            )
        for column, (name, (_label, variant)) in zip(row[3:], shown.items(), strict=True):
            texts = {t.position: t.text(text_lang(name)) for t in variant.turns}
            column.text(texts.get(turn.position) or "—")


SCROLL_JS = """<script>
(() => {{
  const box = window.parent.document.querySelector(".st-key-{key}")
    || document.querySelector(".st-key-{key}");
  if (!box) return;
  box.style.scrollMarginTop = "4.5rem";  // clear of the menu along the top
  box.scrollIntoView({{block: "start", behavior: "instant"}});
}})();
</script><!-- {shown} -->"""
"""Bring the opened dialogue into view (a row clicked lower down opens it above the
table). A constant of ours; the key and conv_id it is filled with are our own."""


def scroll_into_view(key: str, shown: str) -> None:
    """Scroll the container ``key`` to the top of the screen, once each time ``shown``
    (the dialogue opened) changes."""
    safe = "".join(c for c in shown if c.isalnum() or c in ":_-")
    st.html(SCROLL_JS.format(key=key, shown=safe), unsafe_allow_javascript=True)
