"""The annotator's page pieces: pick a dialogue, mark spans, choose the category.

Every span added is saved at once as a draft (nothing is lost on a reload or a crash);
"Submit" hands the annotation in. Only the annotator's own work is ever read here, until
the dialogue is complete (the blindness is in ``AnnotationRules``, not in what this page
chooses to draw).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from components.annotation import span_actions, worklist
from components.annotation.curation import curation_view
from components.annotation.span_form import (
    guidelines_panel,
    other_ways,
    type_name,
    widget_types,
)
from components.annotation.span_select import span_selector
from components.core import auth, language, resources, state, tables
from components.core.literal import md, without_paths
from components.shared.adaptation_gap import category_name
from koed_core import i18n
from koed_core.annotation.projects import DRAFT, SUBMITTED, Annotation, AnnotationRules
from koed_core.annotation.spans import PERSON, Span
from koed_core.annotation.taxonomy import (
    CATEGORIES,
    HANDCRAFTED,
    AnnotationError,
    Taxonomy,
    fixed_category,
)
from koed_core.dialogues.adaptation import SITUATION_POSITION, percentile
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.i18n import N_, _

LOCAL = "local"
"""Whose annotation it is while no accounts exist (one person's app)."""
SUGGEST_PERCENTILE = 25
SUGGESTED = "suggestion:"
"""How an accepted model suggestion's origin starts (the model's name follows)."""
STATUS = {None: N_("new"), DRAFT: N_("draft"), SUBMITTED: N_("submitted")}
"""An annotator's own status on a dialogue, as the picker says it."""
HOW_TO = N_(
    "Drag over a span of a **Korean** turn: a panel opens beside it. Drag over the "
    "**English** words it replaces in the same turn (or tick *No English counterpart*), "
    "pick its type (keys 1-9) and press Enter. Click a span and press Delete to remove it; "
    "Ctrl+Z undoes. Each type has its colour (the legend); blue: English counterparts; "
    "green: selected, not added yet."
)
DASHED = N_(
    "Dashed turns are *suggestions*: their ko/en similarity is in this file's lowest "
    "quarter (the Adaptation page's encoder). They are hints only, never stored."
)


def annotator() -> str:
    """The logged-in annotator, or :data:`LOCAL` in one person's app. An admin gets a
    sentence, never a place: an admin reads every draft in the export, so an admin's
    answer could not be blind (the store refuses it too)."""
    current = auth.start_state()
    if not current.accounts_exist and not current.accounts_problem:
        return LOCAL
    account = auth.require()
    if account.role == "admin":
        st.info(
            _(
                "Admins do not annotate: an admin sees every annotator's answer, so an "
                "admin's answer would not be blind. Annotate with an annotator account "
                "(`koed users add NAME --role annotator`); adjudicate complete dialogues on "
                "the Annotation projects page."
            )
        )
        st.stop()
    if account.role != "annotator":
        st.error(_("This page is for annotators only."))
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
        int(r.position): _(
            "suggested: drifts (similarity {similarity}, p{percentile})",
            similarity=i18n.number(r.similarity, 2),
            percentile=i18n.number(r.percentile),
        )
        for r in own.itertuples()
    }


def _origin(origin: str) -> str:
    if origin == PERSON:
        return _("person")
    if origin.startswith(SUGGESTED):
        return _("suggested by {model}", model=origin.removeprefix(SUGGESTED))
    return origin


def _describe(span: Span, taxonomy: Taxonomy) -> dict[str, Any]:
    kind = taxonomy.get(span.type)
    none = _("(no counterpart)") if span.no_counterpart else ""
    return {
        _("turn"): span.ko.position,
        _("Korean"): span.ko.text,
        _("type"): type_name(kind) if kind else span.type,
        _("English"): span.en.text if span.en else none,
        _("origin"): _origin(span.origin),
        _("comment"): span.comment,
    }


def span_table(spans: tuple[Span, ...], taxonomy: Taxonomy) -> None:
    """The spans as a table (texts shown literally)."""
    if not spans:
        st.caption(_("No spans marked."))
        return
    tables.show(pd.DataFrame([_describe(s, taxonomy) for s in spans]), hide_index=True)


def _save(
    annotations: AnnotationRules,
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


def annotate(
    annotations: AnnotationRules, project: dict[str, Any], dataset: Dataset, dialogue: Dialogue
) -> None:
    """The annotation of one dialogue by the current annotator."""
    who = annotator()
    taxonomy = annotations.taxonomy(project)
    own = annotations.own(project["id"], dialogue.conv_id, who)
    items = annotations.items(project["id"], who)
    item = items[items["conv_id"] == dialogue.conv_id].iloc[0]
    if own is not None and own.submitted and item["complete"]:
        _complete(annotations, project, dialogue, own, who, taxonomy)
        worklist.spans_panel(annotations, project, dataset, who)
        return
    if not item["open"]:
        st.warning(
            _(
                "{conv_id} already has its annotators: choose another one.",
                conv_id=md(dialogue.conv_id),
            )
        )
        return
    spans = list(own.spans) if own else []
    category = own.category if own else None
    note = own.note if own else ""
    kept = own is not None and own.submitted  # an edit of a submitted answer stays submitted
    if own is not None and own.submitted:
        st.success(
            _("Submitted. You may still change it until every annotator has submitted."),
            icon=":material/check:",
        )
    hints = suggestions(dataset, dialogue)
    st.caption(_(HOW_TO) + " " + _(DASHED) if hints else _(HOW_TO))
    _span_work(annotations, project, dataset, dialogue, who, taxonomy, hints, own is not None)
    _model_suggestions(annotations, project, dialogue, who, taxonomy, category, note, spans, kept)
    _category_form(annotations, project, dialogue, who, category, note, spans)


@st.fragment
def _span_work(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dataset: Dataset,
    dialogue: Dialogue,
    who: str,
    taxonomy: Taxonomy,
    hints: dict[int, str],
    had_answer: bool,
) -> None:
    """The span widget, its notices and the annotator's spans: a fragment, so an add, a
    removal or an undo reruns this part only (the widget's callback has stored it). The
    first span makes an answer where there was none: then the whole page runs again, so
    the picker's status says so at once. Everything else on the page that saves spans
    reads them afresh in its own full run. "My spans" across the project is drawn here,
    so its count follows an add. A fragment has no page around it to catch a
    failure, so it says one sentence itself, as the page boundary would (app.py); and its
    own run starts in English unless told the reader's language."""
    language.start()
    try:
        _spans_part(annotations, project, dialogue, who, taxonomy, hints, had_answer)
        worklist.spans_panel(annotations, project, dataset, who)
    except KoedError as err:
        st.error(md(str(err) if auth.is_admin() else without_paths(err)), icon=":material/error:")


def _spans_part(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    taxonomy: Taxonomy,
    hints: dict[int, str],
    had_answer: bool,
) -> None:
    own = annotations.own(project["id"], dialogue.conv_id, who)
    if (own is not None) != had_answer:
        st.rerun()
    sheet = span_actions.Sheet.of(annotations, project, dialogue, who, taxonomy, own)
    spans = list(sheet.spans)
    pending = state.annotation_pending(project["id"], dialogue.conv_id)
    last = st.session_state.get(state.ANN_LAST_TYPE)
    key = f"{state.ANN_SELECTOR}.{project['id']}.{dialogue.conv_id}"
    handler = partial(span_actions.on_widget, annotations, project, dialogue, who, taxonomy, key)
    span_selector(
        dialogue, spans, pending, hints, key, widget_types(taxonomy), last, on_event=handler
    )
    notice = st.session_state.pop(state.ANN_NOTICE, None)
    if notice:
        st.warning(md(notice), icon=":material/warning:")
    if pending.get("notice"):
        st.warning(md(pending.pop("notice")), icon=":material/warning:")
    guidelines_panel(taxonomy)
    st.markdown(_("**Your spans** ({n})", n=i18n.number(len(spans))))
    span_table(tuple(spans), taxonomy)
    with st.expander(_("Other ways to mark and remove spans (typing, the form, several at once)")):
        other_ways(sheet, pending)


def _category_form(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    category: str | None,
    note: str,
    spans: list[Span],
) -> None:
    """The category and the note, each saved as a draft the moment it changes (as spans
    are), so switching dialogue loses nothing; Submit hands the answer in."""
    fixed = fixed_category(dialogue)
    keys = (f"{state.ANN_CATEGORY}.{dialogue.conv_id}", f"{state.ANN_NOTE}.{dialogue.conv_id}")
    autosave = partial(_autosave, annotations, project, dialogue, who, fixed, keys)
    chosen: str | None
    with st.container(border=True, key="annotate_answer"):
        if fixed is not None:
            st.info(
                _(
                    "A jeong/han dialogue: the KoED authors wrote it from scratch, so its "
                    "category is *handcrafted* (known from the file)."
                ),
                icon=":material/info:",
            )
            chosen = fixed
        else:
            options = [c for c in CATEGORIES if c != HANDCRAFTED]
            chosen = st.radio(
                _("Adaptation category"),
                options,
                index=options.index(category) if category in options else None,
                format_func=i18n.choices(CATEGORIES).__getitem__,
                key=keys[0],
                on_change=autosave,
            )
        text = st.text_area(
            _("Note (what the reconstruction changed, doubts)"),
            value=note,
            max_chars=4000,
            key=keys[1],
            on_change=autosave,
        )
        st.caption(_("The category and the note are saved as a draft as you change them."))
        draft, submit = st.columns(2)
        saved = draft.button(_("Save draft"))
        handed = submit.button(_("Submit"), type="primary")
    if (saved or handed) and _save(
        annotations, project, dialogue, who, chosen, text, spans, submit=handed
    ):
        st.toast(_("Submitted.") if handed else _("Draft saved."))
        st.rerun()


def _autosave(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    fixed: str | None,
    keys: tuple[str, str],
) -> None:
    """Store the category and note as they now read, with the spans as stored (a
    submitted answer stays submitted); a refusal is said on the page."""
    own = annotations.own(project["id"], dialogue.conv_id, who)
    category = fixed or st.session_state.get(keys[0])
    note = str(st.session_state.get(keys[1]) or "")
    spans = list(own.spans) if own else []
    try:
        annotations.save(
            project["id"], dialogue, who, category, note, spans, submit=bool(own and own.submitted)
        )
    except KoedError as err:
        st.session_state[state.ANN_NOTICE] = without_paths(err)[:300]


def _complete(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dialogue: Dialogue,
    own: Annotation,
    who: str,
    taxonomy: Taxonomy,
) -> None:
    """A complete dialogue: the annotator's own answer, frozen, beside the others'."""
    st.success(
        _(
            "Every annotator has submitted this dialogue: the answers are frozen for the "
            "reviewer, and you may now see the others'."
        ),
        icon=":material/lock:",
    )
    answers = [(_("Yours"), own)] + [
        (_("Other annotator {n}", n=i + 1), a)  # blind: no names, numbered from 1
        for i, a in enumerate(annotations.others(project["id"], dialogue.conv_id, who))
    ]
    curation_view(dialogue, answers, taxonomy, key=f"curation.{dialogue.conv_id}")
    with st.expander(_("Each answer as a table"), expanded=False):
        for title, answer in answers:
            answer_block(title, answer, taxonomy)


def answer_block(title: str, answer: Annotation, taxonomy: Taxonomy) -> None:
    """One annotator's answer: category in words, note and spans (texts literally)."""
    st.markdown(f"**{md(title)}**")
    st.text(_("category: {category}", category=category_name(answer.category)))
    if answer.note:
        st.text(_("note: {note}", note=answer.note))
    span_table(answer.spans, taxonomy)


def _model_suggestions(
    annotations: AnnotationRules,
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
    with st.expander(_("Candidate signals from a model (suggestions, optional)")):
        models = {  # the human reference replays dataset turns: it has nothing to suggest
            n: spec
            for n, spec in allowed_models(registry_or_stop()).items()
            if spec.backend != "human"
        }
        name = st.selectbox(_("Model"), list(models), key="annotate.suggest.model")
        if st.button(_("Ask for candidates"), key="annotate.suggest.ask") and name:
            try:
                with st.spinner(_("Asking {model}...", model=md(name))):
                    found = suggest(client_for(models[name]), dialogue, taxonomy, name)
            except ModelError as err:
                st.error(md(str(err)), icon=":material/error:")
            else:
                st.session_state[held] = [span_to_dict(s) for s in found.spans]
                if found.dropped:
                    st.caption(
                        _(
                            "{n} candidate(s) left out: not in the dialogue as written, or of "
                            "a type the taxonomy lacks.",
                            n=i18n.number(found.dropped),
                        )
                    )
        offered = [span_from_dict(raw, "suggestion") for raw in st.session_state.get(held, [])]
        marked = {s.key for s in spans}
        offered = [s for s in offered if s.key not in marked]
        if not offered and held in st.session_state:
            st.caption(_("No candidate left to accept."))
        for i, span in enumerate(offered):
            left, right = st.columns([5, 1])
            left.text(
                _(
                    "suggested · turn {position}: {text} [{type}] → {english}",
                    position=span.ko.position,
                    text=span.ko.text,
                    type=span.type,
                    english=span.en.text if span.en else _("no counterpart"),
                )
            )
            if right.button(_("Accept"), key=f"annotate.accept.{i}") and _save(
                annotations, project, dialogue, who, category, note, [*spans, span], kept
            ):
                st.rerun()
