"""The annotator's page pieces: pick a dialogue, mark spans, choose the category.

Every span added is saved at once as a draft (nothing is lost on a reload or a crash);
"Submit" hands the annotation in. Only the annotator's own work is ever read here, until
the dialogue is complete (the blindness is in ``AnnotationStore``, not in what this page
chooses to draw).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from components.annotation.span_select import span_selector
from components.shared import auth, resources, state, tables
from components.shared.adaptation_gap import category_name
from components.shared.literal import md
from koed_core.annotation.projects import SUBMITTED, Annotation, AnnotationStore
from koed_core.annotation.spans import Side, Span, find, side_at, turn_text
from koed_core.annotation.taxonomy import (
    CATEGORIES,
    HANDCRAFTED,
    AnnotationError,
    Taxonomy,
    fixed_category,
)
from koed_core.db.types import short_hash
from koed_core.dialogues.adaptation import SITUATION_POSITION, percentile
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.dialogue import Dialogue

LOCAL = "local"
"""Whose annotation it is while no accounts exist (one person's app)."""
SUGGEST_PERCENTILE = 25


def annotator() -> str:
    """The logged-in annotator, or :data:`LOCAL` in one person's app."""
    current = auth.start_state()
    if not current.accounts_exist and not current.accounts_problem:
        return LOCAL
    account = auth.require()
    if account.role not in ("annotator", "admin"):
        st.error("This page is for annotators and admins only.")
        st.stop()
    return account.username


def suggestions(dataset: Dataset, dialogue: Dialogue) -> dict[int, str]:
    """Turns of this dialogue whose ko/en similarity is in the file's lowest quarter
    (the Adaptation page's encoder), as hints; empty until similarities are computed."""
    sims = resources.cached_similarities(dataset)
    if sims is None:
        return {}
    turns = sims[sims["position"] != SITUATION_POSITION].copy()
    turns["percentile"] = percentile(turns["similarity"])
    own = turns[
        (turns["conv_id"] == dialogue.conv_id) & (turns["percentile"] <= SUGGEST_PERCENTILE)
    ]
    return {
        int(r.position): f"suggested: drifts (similarity {r.similarity:.2f}, p{r.percentile:.0f})"
        for r in own.itertuples()
    }


def read_selection(
    dialogue: Dialogue, chosen: dict[str, Any]
) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(lang, side, notice) from the span selector's message. The message comes from the
    browser, so it is read as a forged one would be: the language, a whole-number turn
    and offsets inside that turn's text, the text taken from the dialogue itself (never
    from the message). Anything else is a notice, one sentence, and no side."""
    if chosen.get("error"):
        return None, None, str(chosen["error"])[:200]
    lang, fields = chosen.get("lang"), [chosen.get(k) for k in ("position", "start", "end")]
    if lang not in ("ko", "en") or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in fields
    ):
        return None, None, "The selection could not be read; select the text again."
    position, start, end = (int(str(v)) for v in fields)
    try:
        side = side_at(dialogue, lang, position, start, end)
    except AnnotationError as err:
        return None, None, str(err)[:200]
    return str(lang), side.as_dict(), None


def _take(dialogue: Dialogue, pending: dict[str, Any], chosen: dict[str, Any] | None) -> None:
    """Keep what was just selected in the span selector as the pending side, or say why
    not (``read_selection``)."""
    if chosen is None:
        return
    lang, side, notice = read_selection(dialogue, chosen)
    if notice:
        pending["notice"] = notice
    elif lang:
        pending[lang] = side
    st.rerun()  # draw the selection as pending, or the notice


def _describe(span: Span, taxonomy: Taxonomy) -> dict[str, Any]:
    kind = taxonomy.get(span.type)
    return {
        "turn": span.ko.position,
        "Korean": span.ko.text,
        "type": kind.label if kind else span.type,
        "English": span.en.text if span.en else "(no counterpart)" if span.no_counterpart else "",
        "origin": span.origin,
    }


def span_table(spans: tuple[Span, ...], taxonomy: Taxonomy) -> None:
    """The spans as a table (texts shown literally)."""
    if not spans:
        st.caption("No spans marked.")
        return
    tables.show(pd.DataFrame([_describe(s, taxonomy) for s in spans]), hide_index=True)


def _save(
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    category: str | None,
    note: str,
    spans: list[Span],
    submit: bool = False,
) -> bool:
    try:
        annotations.save(project["id"], dialogue, who, category, note, spans, submit=submit)
    except AnnotationError as err:
        st.error(md(str(err)), icon=":material/error:")
        return False
    return True


def _typed_selection(dialogue: Dialogue, pending: dict[str, Any]) -> None:
    """The keyboard way: name the turn and type the text (found in code points)."""
    with (
        st.expander("Mark a span by typing it (keyboard, or when dragging is awkward)"),
        st.form("annotate.typed", border=False),
    ):
        positions = [SITUATION_POSITION, *(t.position for t in dialogue.turns)]
        position = st.selectbox(
            "Turn", positions, key=state.ANN_TYPED_TURN, help="0 is the situation"
        )
        ko = st.text_input("Korean text, exactly as in the turn", key=state.ANN_TYPED_KO)
        occurrence = st.number_input(
            "Which occurrence", min_value=1, max_value=50, value=1, key=state.ANN_TYPED_AT
        )
        en = st.text_input(
            "English counterpart in the same turn (empty: none chosen)", key=state.ANN_TYPED_EN
        )
        if st.form_submit_button("Select these"):
            try:
                start, end = find(turn_text(dialogue, "ko", position), ko, int(occurrence))
                pending["ko"] = side_at(dialogue, "ko", position, start, end).as_dict()
                if en:
                    es, ee = find(turn_text(dialogue, "en", position), en)
                    pending["en"] = side_at(dialogue, "en", position, es, ee).as_dict()
            except AnnotationError as err:
                st.error(md(str(err)), icon=":material/error:")


def _side(raw: dict[str, Any] | None) -> Side | None:
    return Side(raw["position"], raw["start"], raw["end"], raw["text"]) if raw else None


def annotate(
    annotations: AnnotationStore, project: dict[str, Any], dataset: Dataset, dialogue: Dialogue
) -> None:
    """The annotation of one dialogue by the current annotator."""
    who = annotator()
    taxonomy = annotations.taxonomy(project)
    own = annotations.own(project["id"], dialogue.conv_id, who)
    items = annotations.items(project["id"], who)
    item = items[items["conv_id"] == dialogue.conv_id].iloc[0]
    if own is not None and own.submitted and item["complete"]:
        _complete(annotations, project, dialogue, own, who, taxonomy)
        return
    if not item["open"]:
        st.warning(f"{md(dialogue.conv_id)} already has its annotators: choose another one.")
        return
    spans = list(own.spans) if own else []
    category = own.category if own else None
    note = own.note if own else ""
    kept = own is not None and own.submitted  # an edit of a submitted answer stays submitted
    pending = state.annotation_pending(project["id"], dialogue.conv_id)
    if own is not None and own.submitted:
        st.success(
            "Submitted. You may still change it until every annotator has submitted.",
            icon=":material/check:",
        )
    hints = suggestions(dataset, dialogue)
    st.caption(
        "Drag over a span of a **Korean** turn, then over the **English** words it replaces "
        "in the same turn (or tick *No English counterpart*); choose its type and add it. "
        "Yellow: your spans; blue: their English counterparts; green: selected, not added yet."
        + (
            " Dashed turns are *suggestions*: their ko/en similarity is in this file's "
            "lowest quarter (the Adaptation page's encoder). They are hints only, never stored."
            if hints
            else ""
        )
    )
    _take(dialogue, pending, span_selector(dialogue, spans, pending, hints, state.ANN_SELECTOR))
    _typed_selection(dialogue, pending)
    _model_suggestions(annotations, project, dialogue, who, taxonomy, category, note, spans, kept)
    ko, en = _side(pending["ko"]), _side(pending["en"])
    if pending.get("notice"):
        st.warning(md(pending.pop("notice")), icon=":material/warning:")
    if ko or en:
        st.button("Clear the selection", on_click=pending.update, kwargs={"ko": None, "en": None})
    left, right = st.columns(2)
    with left:
        st.markdown("**Korean span**")
        st.text(f"turn {ko.position}: {ko.text}" if ko else "(select text in a Korean turn)")
    with right:
        st.markdown("**English counterpart**")
        st.text(f"turn {en.position}: {en.text}" if en else "(none selected)")
    with st.form("annotate.add", border=True, clear_on_submit=True):
        kind = st.selectbox(
            "Signal type",
            list(taxonomy.codes),
            format_func=partial(_type_label, taxonomy),
            key=state.ANN_TYPE,
        )
        none = st.checkbox("No English counterpart", key=state.ANN_NONE)
        if st.form_submit_button("Add span", disabled=False):
            if ko is None:
                st.error("Select a span in a Korean turn first.")
            else:
                new = Span(ko=ko, type=kind, en=None if none else en, no_counterpart=none)
                if _save(annotations, project, dialogue, who, category, note, [*spans, new], kept):
                    pending.update(ko=None, en=None)
                    st.rerun()
    st.markdown(f"**Your spans** ({md(len(spans))})")
    span_table(tuple(spans), taxonomy)
    if spans:
        labels = [
            f"{i + 1}. turn {s.ko.position}: {s.ko.text} ({s.type})" for i, s in enumerate(spans)
        ]
        gone = st.multiselect(
            "Remove spans",
            range(len(spans)),
            format_func=labels.__getitem__,
            # A fresh key whenever the spans change: a choice never points at another span.
            key=f"{state.ANN_REMOVE}.{short_hash([s.key for s in spans])}",
        )
        if gone and st.button("Remove the chosen spans"):
            kept_spans = [s for i, s in enumerate(spans) if i not in set(gone)]
            if _save(annotations, project, dialogue, who, category, note, kept_spans, kept):
                st.rerun()
    _category_form(annotations, project, dialogue, who, category, note, spans)


def _type_label(taxonomy: Taxonomy, code: str) -> str:
    kind = taxonomy.get(code)
    return f"{kind.label}: {kind.hint}" if kind and kind.hint else (kind.label if kind else code)


def _category_label(code: str) -> str:
    return CATEGORIES[code]


def _category_form(
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    category: str | None,
    note: str,
    spans: list[Span],
) -> None:
    fixed = fixed_category(dialogue)
    with st.form("annotate.category", border=True):
        if fixed is not None:
            st.info(
                "A jeong/han dialogue: the KoED authors wrote it from scratch, so its "
                "category is *handcrafted* (known from the file).",
                icon=":material/info:",
            )
            chosen = fixed
        else:
            options = [c for c in CATEGORIES if c != HANDCRAFTED]
            chosen = st.radio(
                "Adaptation category",
                options,
                index=options.index(category) if category in options else None,
                format_func=_category_label,
                key=f"{state.ANN_CATEGORY}.{dialogue.conv_id}",
            )
        text = st.text_area(
            "Note (what the reconstruction changed, doubts)",
            value=note,
            max_chars=4000,
            key=f"{state.ANN_NOTE}.{dialogue.conv_id}",
        )
        draft, submit = st.columns(2)
        saved = draft.form_submit_button("Save draft")
        handed = submit.form_submit_button("Submit", type="primary")
    if (saved or handed) and _save(
        annotations, project, dialogue, who, chosen, text, spans, submit=handed
    ):
        st.toast("Submitted." if handed else "Draft saved.")
        st.rerun()


def _complete(
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    own: Annotation,
    who: str,
    taxonomy: Taxonomy,
) -> None:
    """A complete dialogue: the annotator's own answer, frozen, beside the others'."""
    st.success(
        "Every annotator has submitted this dialogue: the answers are frozen for the "
        "reviewer, and you may now see the others'.",
        icon=":material/lock:",
    )
    span_selector(dialogue, own.spans, None, {}, state.ANN_SELECTOR)
    answers = [("Yours", own)] + [
        (f"Annotator {i + 2}", a)
        for i, a in enumerate(annotations.others(project["id"], dialogue.conv_id, who))
    ]
    for title, answer in answers:  # one below the other: the span tables need the width
        answer_block(title, answer, taxonomy)


def answer_block(title: str, answer: Annotation, taxonomy: Taxonomy) -> None:
    """One annotator's answer: category in words, note and spans (texts literally)."""
    st.markdown(f"**{md(title)}**")
    st.text(f"category: {category_name(answer.category)}")
    if answer.note:
        st.text(f"note: {answer.note}")
    span_table(answer.spans, taxonomy)


def item_label(items: pd.DataFrame) -> dict[str, str]:
    """conv_id -> how the picker shows it: your status and how many have submitted."""
    out = {}
    for r in items.itertuples():
        yours = None if pd.isna(r.yours) else str(r.yours)
        mine = {None: "new", "draft": "draft", SUBMITTED: "submitted"}.get(yours, str(yours))
        done = " · complete" if r.complete else ""
        out[r.conv_id] = f"{r.conv_id} · yours: {mine}{done}"
    return out


def go_to(conv_id: str) -> None:
    """Open this dialogue (a button's callback, before the picker is drawn)."""
    st.session_state[state.ANN_ITEM] = conv_id


def _model_suggestions(
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    taxonomy: Taxonomy,
    category: str | None,
    note: str,
    spans: list[Span],
    kept: bool,
) -> None:
    """Ask a model for candidate signals; each is a suggestion until accepted."""
    from components.shared.model_choice import allowed_models, client_for, registry_or_stop
    from koed_core.annotation.spans import span_from_dict, span_to_dict
    from koed_core.annotation.suggest import suggest
    from koed_core.models.client import ModelError

    held = f"annotate.suggested.{project['id']}.{dialogue.conv_id}"
    with st.expander("Candidate signals from a model (suggestions, optional)"):
        models = {  # the human reference replays dataset turns: it has nothing to suggest
            n: spec
            for n, spec in allowed_models(registry_or_stop()).items()
            if spec.backend != "human"
        }
        name = st.selectbox("Model", list(models), key="annotate.suggest.model")
        if st.button("Ask for candidates", key="annotate.suggest.ask") and name:
            try:
                with st.spinner(f"Asking {md(name)}..."):
                    found = suggest(client_for(models[name]), dialogue, taxonomy, name)
            except ModelError as err:
                st.error(md(str(err)), icon=":material/error:")
            else:
                st.session_state[held] = [span_to_dict(s) for s in found.spans]
                if found.dropped:
                    st.caption(
                        f"{md(found.dropped)} candidate(s) left out: not in the dialogue as "
                        "written, or of a type the taxonomy lacks."
                    )
        offered = [span_from_dict(raw, "suggestion") for raw in st.session_state.get(held, [])]
        marked = {s.key for s in spans}
        offered = [s for s in offered if s.key not in marked]
        if not offered and held in st.session_state:
            st.caption("No candidate left to accept.")
        for i, span in enumerate(offered):
            left, right = st.columns([5, 1])
            english = span.en.text if span.en else "no counterpart"
            left.text(
                f"suggested · turn {span.ko.position}: {span.ko.text} [{span.type}] → {english}"
            )
            if right.button("Accept", key=f"annotate.accept.{i}") and _save(
                annotations, project, dialogue, who, category, note, [*spans, span], kept
            ):
                st.rerun()
