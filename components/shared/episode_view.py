"""An episode on screen: the dataset's turns it started from, then each Listener turn and
the simulated Speaker's answer, flagged turns marked; ko and en side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from components.core import tables, terms
from components.core.language import VARIANT_WORDS
from components.core.literal import md
from koed_core import i18n
from koed_core.db import Store
from koed_core.db.episodes import Episodes
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.variants import CELLS, VARIANTS, text_lang
from koed_core.i18n import N_, _
from koed_core.models.protocol import ROLE_NAMES
from koed_core.results import turn_gaps


def shown_entries(entries: Sequence[dict[str, Any]], upto: int | None) -> list[dict[str, Any]]:
    """The entries up to Listener turn ``upto`` and the Speaker's answer to it (all of
    them for None)."""
    if upto is None:
        return list(entries)
    return [e for e in entries if e["turn"] <= upto]


BROKE = {
    True: N_("{role} broke character ({breaks}): flagged, not kept; asked again"),
    False: N_("{role} broke character ({breaks}): flagged, not kept"),
}


def render_episode(
    entries: Sequence[dict[str, Any]], lang: str, upto: int | None = None, talk: bool = False
) -> None:
    """One language's episode (or a translated variant's, with the role names of the
    language it is written in). Text from models and the dataset is shown literally."""
    speaker, listener = ROLE_NAMES[text_lang(lang)]
    if not entries:
        st.caption(_("No episode in this language."))
        return
    start = [e for e in entries if e["turn"] == 0]
    later = [e for e in entries if e["turn"] > 0]
    if talk:  # on a projector, one exchange: what the Speaker last said, and the answers
        step = upto or 0
        before = [e for e in [*start, *later] if e["turn"] < max(step, 1) and e["kept"]]
        if before:
            last = before[-1]
            role = speaker if last["role"] == "speaker" else listener
            st.text(f"{role}: {last['text']}")
        later = [e for e in later if e["turn"] == step]
    else:
        with st.container(height=180, border=True):
            st.caption(_("The dataset's turns the episode starts from"))
            for entry in start:
                role = speaker if entry["role"] == "speaker" else listener
                st.text(f"{role}: {entry['text']}")
        later = shown_entries(later, upto)
    for entry in later:
        role = speaker if entry["role"] == "speaker" else listener
        if entry.get("error"):
            st.error(
                _(
                    "{role}, turn {turn}: failed ({error})",
                    role=md(role),
                    turn=md(entry["turn"]),
                    error=md(entry["error"]),
                )
            )
            continue
        if entry["breaks"]:
            again = entry.get("attempt", 1) == 1
            st.warning(
                _(
                    BROKE[again],
                    role=md(role),
                    breaks=md(", ".join(entry["breaks"])),
                ),
                icon=":material/flag:",
            )
        label = (
            _("{role} · turn {turn}", role=role, turn=entry["turn"])
            if entry["role"] == "listener"
            else role
        )
        if entry.get("named"):  # which emotion the Listener would name now
            named = ", ".join(terms.label(name) for name in entry["named"])
            label += " · " + _("names {labels}", labels=named)
        if entry["ends"]:
            label += " · " + _("ends the conversation")
        st.markdown("**" + md(label) + "**")
        st.text(entry["text"] or "")


def _go_to(step_key: str, step: int) -> None:
    """A replay button's callback: it runs before the page, so every button is drawn
    for the step it leads to."""
    st.session_state[step_key] = step


def episode_pair(
    store: Store,
    run_id: str,
    dataset: Dataset,
    talk: bool = False,
    key: str = "episode",
    pick_in: Any = None,
    whole: bool = False,
) -> None:
    """Pick a dialogue of an episode run (in ``pick_in``, e.g. the folded choices of talk
    mode); its ko and en episodes side by side, replayed turn by turn (Next turn) or
    shown whole (``whole``: at first; else from its start, as a replay). In talk mode one
    exchange at a time, so that it fits a 1280x720 projector."""
    episodes = Episodes(store)
    conv_ids = episodes.dialogues(run_id)
    if not conv_ids:
        st.caption(_("No episode of this run has a Listener turn yet."))
        return
    names = {
        conv: f"{conv} · {d.situation_en[:70]}" if (d := dataset.get(conv)) else conv
        for conv in conv_ids
    }
    conv_id = (pick_in or st).selectbox(
        _("Dialogue"), conv_ids, format_func=names.get, key=f"{key}.dialogue"
    )
    # ko and en always; a translated variant beside them where the run played it
    found = {lang: episodes.transcript(run_id, conv_id, lang) for lang in CELLS}
    pair = {
        lang: found[lang]
        for lang in ("ko", "en", *VARIANTS)
        if lang in i18n.LANGUAGES or found[lang]
    }
    longest = max((e["turn"] for entries in pair.values() for e in entries), default=0)
    step_key = f"{key}.step.{run_id}.{conv_id}"
    if step_key not in st.session_state:  # a replay starts before turn 1
        st.session_state[step_key] = longest if whole and not talk else 0
    step = int(st.session_state[step_key])
    buttons = st.container(horizontal=True, vertical_alignment="center")
    buttons.button(
        _("Next turn"),
        key=f"{key}.next",
        type="primary",
        disabled=step >= longest,
        on_click=_go_to,
        args=(step_key, min(step + 1, longest)),
    )
    buttons.button(_("Start again"), key=f"{key}.restart", on_click=_go_to, args=(step_key, 0))
    buttons.button(_("Whole episode"), key=f"{key}.all", on_click=_go_to, args=(step_key, longest))
    buttons.caption(_("Turn {step} of {last}", step=int(step), last=int(longest)))
    for column, lang in zip(st.columns(len(pair)), pair, strict=True):
        with column:
            named = _(VARIANT_WORDS[lang]) if lang in VARIANT_WORDS else i18n.NAMES[lang]
            st.subheader(named, anchor=False)
            # each column's own words in its language, as its role names are (화자, Speaker)
            with i18n.speaking(text_lang(lang)):
                render_episode(pair[lang], lang, upto=step, talk=talk)


def understanding(store: Store, run_id: str) -> None:
    """Did the Listener come to understand what the Speaker felt: the emotion it named
    at the first and at the last Listener turn of each episode, per language."""
    table = turn_gaps.understanding(store, [run_id])
    if table.empty:
        return
    with st.expander(_("Did the Listener come to understand what the Speaker felt?")):
        st.caption(
            _(
                "Over episodes with an emotion answer at their first and last Listener "
                "turns (the paper's prompt set asks for it at every turn): the share naming "
                "a gold label at the first turn and at the last; of those that missed it at "
                "first, the share that had it by the end; of those right at first, the share "
                "that lost it. The export writes this as episode_understanding.csv."
            )
        )
        tables.show(
            table.drop(columns=["run_id", "run_label", "speaker", "dataset_sha256"]),
            hide_index=True,
            column_config={
                "lang": _("Language"),
                "episodes": _("Episodes"),
                "named_at_first": st.column_config.NumberColumn(_("At turn 1"), format="%.2f"),
                "named_at_last": st.column_config.NumberColumn(_("At the last"), format="%.2f"),
                "came_to_it": st.column_config.NumberColumn(
                    _("Came to it"),
                    format="%.2f",
                    help=_("of the episodes that missed it at turn 1"),
                ),
                "lost_it": st.column_config.NumberColumn(
                    _("Lost it"), format="%.2f", help=_("of the episodes right at turn 1")
                ),
            },
        )
