"""The admin's annotation pieces: create a project, adjudicate, agreement and export.

The reviewer (an admin: the authors' stage 3) sees the annotators' answers side by
side only for complete dialogues, and records the final answer: a category and the spans
to keep, taken from either annotator.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from components.annotation.annotation_view import LOCAL, answer_block
from components.annotation.curation import curation_view, pool_key
from components.annotation.span_form import type_name
from components.core import resources, state, tables
from components.core.literal import md
from koed_core import i18n
from koed_core.annotation import agreement, formats
from koed_core.annotation.projects import Annotation, AnnotationRules
from koed_core.annotation.spans import Span
from koed_core.annotation.taxonomy import (
    CATEGORIES,
    HANDCRAFTED,
    AnnotationError,
    Taxonomy,
    load_taxonomy,
    taxonomy_from_bytes,
)
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.subsets import SUBSETS, SubsetError, select
from koed_core.i18n import N_, _
from koed_core.rating import accounts
from koed_core.text import csv_safe

PROGRESS_COLUMNS = {
    "project": N_("project"),
    "name": N_("name"),
    "dialogues": N_("dialogues"),
    "complete": N_("complete"),
    "adjudicated": N_("adjudicated"),
    "per_item": N_("per dialogue"),
    "annotators": N_("annotators"),
    "taxonomy_version": N_("taxonomy"),
    "closed": N_("closed"),
}
FORMAT_NAMES = {
    formats.JSONL: N_("JSONL (KoED Studio's own)"),
    formats.WEBANNO: N_("for INCEpTION (WebAnno TSV 3.3)"),
    formats.BRAT: N_("for brat (standoff .txt and .ann)"),
    formats.LABEL_STUDIO: N_("for Label Studio (its JSON export)"),
}
AGREEMENT_COLUMNS = {
    "measure": N_("measure"),
    "type": N_("type"),
    "value": N_("value"),
    "ci_low": N_("ci_low"),
    "ci_high": N_("ci_high"),
    "n": N_("n"),
    "detail": N_("detail"),
    "taxonomy_version": N_("taxonomy_version"),
}
MEASURES = {
    "category kappa": N_("category kappa"),
    "span F1 exact": N_("span F1 exact"),
    "span F1 overlap": N_("span F1 overlap"),
    "span F1 location exact": N_("span F1 location exact (any type)"),
    "span F1 location overlap": N_("span F1 location overlap (any type)"),
    agreement.ALL_TYPES: N_("all types"),
}
"""The agreement table's measures as a page shows them (its CSV keeps these names)."""
SUBSET_NAMES = {name: name for name in SUBSETS} | {"full": N_("full")}


def _annotator_accounts() -> list[str]:
    config = resources.settings()
    try:
        users = accounts.list_users(config.users_path)
    except accounts.UserError:
        return []
    # annotators only: an admin reviews, and sees every answer, so cannot annotate blind
    return sorted(u["username"] for u in users if u["role"] == "annotator")


def _taxonomy_upload(upload: Any) -> Taxonomy:
    """The uploaded taxonomy; anything wrong with it (size, encoding, TOML, nesting, a
    field) is an AnnotationError naming the file."""
    return taxonomy_from_bytes(upload.getvalue(), upload.name)


def create_form(annotations: AnnotationRules, dataset: Dataset, slot: Any = st) -> None:
    """A new project: dialogues, annotators per dialogue, who, which taxonomy. What came
    of a press is said in ``slot`` (above the form's expander, which closes once a project
    exists: a message inside it would be hidden)."""
    # emptied once created: a second press must not make the same project again
    with st.form("projects.create", clear_on_submit=True):
        name = st.text_input(_("Project name"))
        left, right = st.columns(2)
        subset = left.selectbox(
            _("Dialogues from"),
            SUBSETS,
            key=state.PROJECT_SUBSET,
            format_func=i18n.choices(SUBSET_NAMES).__getitem__,
        )
        limit = right.number_input(_("First N of them (0: all)"), min_value=0, value=20)
        typed = st.text_area(
            _("Or these conv_ids, one per line (instead of the subset)"), height=80
        )
        per_item = left.number_input(
            _("Annotators per dialogue"), min_value=1, max_value=10, value=2
        )
        people = _annotator_accounts()
        chosen = right.multiselect(
            _("Annotators (none chosen: any annotator account)"),
            people,
            placeholder=_("any annotator account"),
            help=_("Accounts with the annotator role (koed users add NAME --role annotator)"),
        )
        upload = st.file_uploader(
            _("Taxonomy (empty: the shipped one, data/annotation/taxonomy.toml)"), type=["toml"]
        )
        if not st.form_submit_button(_("Create the project"), type="primary"):
            return
    if not name.strip() and state.PROJECT_CREATED in st.session_state:
        # the emptied form sent again (a double press): nothing new, the last result
        _say_created(slot, *st.session_state[state.PROJECT_CREATED])
        return
    if name.strip() in {str(p["name"]) for p in annotations.projects()}:
        slot.error(
            _("A project named {name} exists already; give this one another name.", name=md(name)),
            icon=":material/error:",
        )
        return
    try:
        ids = [line.strip() for line in typed.splitlines() if line.strip()]
        if not ids:
            ids = [d.conv_id for d in select(dataset.dialogues, subset)]
            ids = ids[: int(limit)] if limit else ids
        taxonomy = _taxonomy_upload(upload) if upload is not None else load_taxonomy()
        project_id = annotations.create_project(name, dataset, ids, int(per_item), chosen, taxonomy)
    except (AnnotationError, SubsetError) as err:
        st.session_state.pop(state.PROJECT_CREATED, None)
        slot.error(md(str(err)), icon=":material/error:")
        return
    st.session_state[state.PROJECT_CREATED] = (project_id, len(ids))
    _say_created(slot, project_id, len(ids))


def _say_created(slot: Any, project_id: int, n: int) -> None:
    slot.success(_("Project {id} created with {n} dialogues.", id=md(project_id), n=i18n.number(n)))


def progress(annotations: AnnotationRules) -> pd.DataFrame:
    """One row per project: dialogues, complete, adjudicated, taxonomy (to show: the
    headers in the page's language)."""
    frame = pd.DataFrame(annotations.progress())
    if frame.empty:
        return frame
    frame["annotators"] = frame["annotators"].replace({"any": _("any")})
    return frame.rename(columns=i18n.choices(PROGRESS_COLUMNS))


def _span_label(span: Span, names: dict[str, str]) -> str:
    return _(
        "turn {position}: {text} [{type}] → {english}",
        position=span.ko.position,
        text=span.ko.text,
        type=names.get(span.type, span.type),
        english=span.en.text if span.en else _("no counterpart"),
    )


def _apply_click(kept_key: str, clicked: dict[str, Any], pool: dict[str, Span]) -> None:
    """One click in the curation view: an annotator's span into the final answer, or a
    final span out of it. Said as "in" or "out", never "the other way": a click the
    reviewer makes again because the page was slow to answer changes nothing more. The
    key comes from the browser: only a pooled span counts."""
    key = clicked.get("key")
    if not isinstance(key, str) or key not in pool:
        st.warning(_("That span is not among the annotators' spans; nothing changed."))
        return
    kept = list(st.session_state[kept_key])
    if clicked.get("final") is True:
        wanted = [k for k in kept if k != key]
    else:
        wanted = kept if key in kept else [*kept, key]
    if wanted != kept:
        st.session_state[kept_key] = wanted
        st.rerun()


def _pool_labels(pool: dict[str, Span], taxonomy: Taxonomy) -> dict[str, str]:
    """What the reviewer reads for each pooled span (its type by name, not code); where
    two read alike (the same words at two places), each says where it is, in characters
    of its turn."""
    names = {kind.code: type_name(kind) for kind in taxonomy.types}
    plain = {key: _span_label(span, names) for key, span in pool.items()}
    counts = Counter(plain.values())
    labels = {}
    for key, label in plain.items():
        span = pool[key]
        if counts[label] > 1:
            where = (
                _(
                    "ko characters {ko_start}-{ko_end}, en {en_start}-{en_end}",
                    ko_start=span.ko.start,
                    ko_end=span.ko.end,
                    en_start=span.en.start,
                    en_end=span.en.end,
                )
                if span.en is not None
                else _(
                    "ko characters {ko_start}-{ko_end}",
                    ko_start=span.ko.start,
                    ko_end=span.ko.end,
                )
            )
            label = f"{label} ({where})"
        labels[key] = label
    return labels


def _label_of(labels: dict[str, str], key: str) -> str:
    return labels[key]


def adjudicate(
    annotations: AnnotationRules, project: dict[str, Any], dataset: Dataset, reviewer: str
) -> None:
    """The reviewer's view of one complete dialogue and the final-answer form."""
    items = annotations.items(project["id"])
    ready = items[items["complete"]]
    if ready.empty:
        st.info(
            _(
                "No dialogue is complete yet: the reviewer sees a dialogue once all its "
                "annotators have submitted."
            )
        )
        return
    marks = {
        r.conv_id: _("{conv_id} · adjudicated", conv_id=r.conv_id) if r.adjudicated else r.conv_id
        for r in ready.itertuples()
    }
    conv_id = st.selectbox(
        _("Complete dialogue"), list(marks), format_func=marks.__getitem__, key=state.REVIEW_ITEM
    )
    dialogue = dataset.get(conv_id)
    if dialogue is None:
        st.error(_("{conv_id} is not in the loaded dataset.", conv_id=md(conv_id)))
        return
    taxonomy = annotations.taxonomy(project)
    answers = annotations.submitted(project["id"], conv_id)
    final = annotations.adjudication(project["id"], conv_id)
    pool: dict[str, Span] = {}
    for answer in answers:
        for span in answer.spans:
            pool.setdefault(pool_key(span), span)
    labels = _pool_labels(pool, taxonomy)
    everyone = [
        key
        for key, span in pool.items()
        if all(span.key in {s.key for s in a.spans} for a in answers)
    ]
    default_spans = [pool_key(s) for s in final.spans if pool_key(s) in pool] if final else everyone
    # per project and dialogue: two projects may hold the same dialogue, and a reviewer
    # switching between them must not carry one project's final answer into the other
    kept_key = f"{state.REVIEW_SPANS}.{project['id']}.{conv_id}"
    if kept_key not in st.session_state:
        st.session_state[kept_key] = default_spans
    clicked = curation_view(
        dialogue,
        [(a.annotator, a) for a in answers],
        taxonomy,
        final=st.session_state[kept_key],
        key=f"curation.{project['id']}.{conv_id}",
    )
    if clicked is not None:
        _apply_click(kept_key, clicked, pool)
    with st.expander(_("Each answer as a table"), expanded=False):
        for answer in answers:
            answer_block(answer.annotator, answer, taxonomy)
    categories = (
        [c for c in CATEGORIES if c != HANDCRAFTED]
        if not dialogue.korean_emotion
        else [HANDCRAFTED]
    )
    given = [a.category for a in answers]
    default = final.category if final else (given[0] if len(set(given)) == 1 else None)
    with st.form(f"review.{project['id']}.{conv_id}"):
        st.markdown(
            _("**Final answer** (recorded; saving replaces it)") if final else _("**Final answer**")
        )
        category = st.radio(
            _("Category"),
            categories,
            index=categories.index(default) if default in categories else None,
            format_func=i18n.choices(CATEGORIES).__getitem__,
            key=f"{state.REVIEW_CATEGORY}.{conv_id}",
        )
        keep = st.multiselect(
            _("Spans to keep (preselected: those every annotator marked alike)"),
            list(pool),
            format_func=labels.__getitem__,
            key=kept_key,
            placeholder=_("no span kept"),
        )
        note = st.text_area(
            _("Reviewer's note"),
            value=final.note if final else "",
            key=f"{state.REVIEW_NOTE}.{conv_id}",
        )
        if not st.form_submit_button(_("Record the final answer"), type="primary"):
            return
    if category is None:
        st.error(_("Choose the final category."))
        return
    try:
        annotations.adjudicate(
            project["id"], dialogue, reviewer, category, note, [pool[k] for k in keep]
        )
    except AnnotationError as err:
        st.error(md(str(err)), icon=":material/error:")
        return
    st.toast(_("Final answer recorded."))
    st.rerun()


def agreement_section(
    annotations: AnnotationRules, project: dict[str, Any], dataset: Dataset
) -> None:
    """Kappa on the category and span F1, with the export of the project."""
    answers = annotations.annotations(project["id"])
    table = agreement.agreement_table(answers, project)
    st.caption(
        _(
            "Category: Cohen's kappa when the same two people annotated every dialogue, else "
            "Fleiss' kappa, with a bootstrap 95% CI over dialogues (jeong/han dialogues left "
            "out: the file decides them). Spans: F1 between annotators, exact (same turn, "
            "offsets and type) and overlapping (same turn and type, texts overlap); "
            "location: the same with the type ignored."
        )
    )
    taxonomy = annotations.taxonomy(project)
    shown = _shown_agreement(table, taxonomy)
    # the type's name (code and gloss) and the taxonomy version whole: left to the grid,
    # they were cut at 1366 px by a long detail column
    widths = {_("measure"): 230, _("type"): 220, _("taxonomy_version"): 140}
    wide = {name: st.column_config.TextColumn(name, width=w) for name, w in widths.items()}
    tables.show(shown, column_config=wide, hide_index=True)
    confusion_section(answers, taxonomy)
    with i18n.speaking("en"):  # a file for scripts and papers: English, as every export
        english = agreement.agreement_table(answers, project)
    st.download_button(
        _("Download the agreement table (CSV)"),
        csv_safe.to_csv(english),
        file_name=f"annotation-agreement-{project['id']}.csv",
        mime="text/csv",
        key=f"projects.agreement.{project['id']}",
    )
    chosen = st.selectbox(
        _("Export format"),
        formats.FORMATS,
        format_func=i18n.choices(FORMAT_NAMES).__getitem__,
        key=f"projects.format.{project['id']}",
        help=_(
            "JSONL is KoED Studio's own; WebAnno TSV opens in INCEpTION, brat standoff in "
            "brat, Label Studio JSON in Label Studio. Each comes with the agreement table "
            "and the taxonomy; docs/annotation.md says how a dialogue becomes a document."
        ),
    )
    if st.button(
        _("Prepare the export (annotations, agreement, taxonomy)"),
        key=f"projects.export.{project['id']}",
    ):
        with tempfile.TemporaryDirectory() as work, i18n.speaking("en"):
            files = formats.export(
                annotations, project["id"], dataset, resources.server_key(), Path(work), chosen
            )
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for file in files:
                    archive.write(file, file.relative_to(work))
        st.download_button(
            _("Download the export (zip)"),
            buffer.getvalue(),
            file_name=f"annotations-{project['id']}-{chosen}.zip",
            mime="application/zip",
            key=f"projects.zip.{project['id']}",
        )


def confusion_section(answers: Sequence[Annotation], taxonomy: Taxonomy) -> None:
    """Which types annotators chose for the same words: where a taxonomy's lines blur."""
    confusion = agreement.type_confusion(answers)
    if confusion.empty:
        return
    st.markdown("**" + _("Types chosen for the same words") + "**")
    st.caption(
        _(
            "Pairs of spans whose texts overlap, between two annotators of a dialogue: a "
            "row's type by one, a column's by the other (counted both ways). The diagonal "
            "is agreement; off it, types worth a clearer guideline; (no span): words only "
            "one annotator marked."
        )
    )
    short = "ko" if i18n.language() == "ko" else "en"
    names = {
        code: getattr(kind, short) for code in confusion.index if (kind := taxonomy.get(code))
    } | {agreement.NO_SPAN: _("(no span)")}  # one name each: ten columns fit at 1366 px
    shown = confusion.rename(index=names, columns=names).reset_index(names=_("type"))
    pinned = {_("type"): st.column_config.TextColumn(_("type"), pinned=True)}
    tables.show(shown, column_config=pinned, hide_index=True)


def _shown_agreement(table: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    """The agreement table as the page shows it: headers, measures and types in the
    page's language (the download keeps the English names scripts read)."""
    names = i18n.choices(MEASURES) | {kind.code: type_name(kind) for kind in taxonomy.types}
    shown = table.drop(columns=["annotation_project"])
    for column in ("measure", "type"):
        shown[column] = shown[column].map(lambda value: names.get(value, value))
    return shown.rename(columns=i18n.choices(AGREEMENT_COLUMNS))


def revise_form(annotations: AnnotationRules, project: dict[str, Any]) -> None:
    """Upload a revised taxonomy for an open project (guidelines rewritten, types added;
    every code kept): new annotations take it, earlier ones keep their version."""
    from koed_core.annotation.revision import revise_taxonomy

    if project["closed"]:
        return
    with st.expander(_("Revise this project's taxonomy"), expanded=False):
        st.caption(
            _(
                "A TOML file like data/annotation/taxonomy.toml, with a new version: every "
                "current type kept (annotations name them), guidelines and examples "
                "rewritten, types added. Now on taxonomy {version}.",
                version=md(project["taxonomy_version"]),
            )
        )
        upload = st.file_uploader(
            _("Revised taxonomy (TOML)"), type=["toml"], key=f"{state.REVIEW_PROJECT}.taxonomy"
        )
        if upload is not None and st.button(_("Use the revised taxonomy")):
            try:
                version = revise_taxonomy(annotations, project["id"], _taxonomy_upload(upload))
            except AnnotationError as err:
                st.error(md(str(err)), icon=":material/error:")
                return
            st.toast(_("Taxonomy {version} is now this project's.", version=md(version)))
            st.rerun()


def reviewer_name(username: str | None) -> str:
    """The reviewer stored with a final answer (``local`` in one person's app)."""
    return username or LOCAL
