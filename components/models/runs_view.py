"""The Runs page's pieces: the form that queues a run, the plan panel that queues a
reproduction, and the stored runs with their responses."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from components.core import language, resources, state, tables, terms
from components.core.literal import md
from components.models import jobs_panel
from components.shared import episode_view
from components.shared.model_choice import model_label
from koed_core import i18n
from koed_core.db import Runs
from koed_core.db.variants import Variants
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.subsets import SUBSETS
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.jobs.kinds import ReproduceJob
from koed_core.models.prompts import PROMPT_SETS
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.registry import ModelSpec
from koed_core.models.request import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TURNS,
    MAX_TURNS,
    EpisodeRequest,
    RunRequest,
)
from koed_core.models.runs import run_labels
from koed_core.results.reproduce import parse_plan
from koed_core.run_steps import PipelineStep, declared

PLANS = Path(__file__).resolve().parents[2] / "plans"
PROFILE = N_("the prompt set's")
"""The option that leaves a pipeline step to the prompt set (a value the code compares)."""
KINDS = {
    "batch": N_("benchmark run"),
    "live": N_("saved from Chat"),
    "episodes": N_("episodes"),
}


SUBSET_WORDS = {"full": N_("all dialogues")}
"""Subsets with a word for a name; paper-100 and jeong-han-80 are names of their own."""


def step_options(step: PipelineStep) -> dict[str, str]:
    """A pipeline step's options as the picker shows them: the prompt set's choice, then
    each value in the reader's words with its code (what `koed run` takes, as the stored
    run names it) in parentheses. The words are the step's own (``koed_core.run_steps``)."""
    return {
        PROFILE: _(PROFILE),
        **{code: _(step.words[code]) + f"({code})" for code in step.choices},
    }


def _step_pickers() -> dict[str, str | None]:
    """One picker per declared pipeline step; what each is set to (None: the prompt
    set's profile), by step name."""
    chosen: dict[str, str | None] = {}
    for step in declared():
        options = step_options(step)
        value = st.selectbox(
            _(step.label),
            list(options),
            key=state.runs_step(step.name),
            format_func=options.__getitem__,
        )
        chosen[step.name] = None if value == PROFILE else value
    return chosen


def step_columns() -> dict[str, Any]:
    """The Runs table's column per declared pipeline step: its heading, and its values
    in the reader's words as the help."""
    return {
        step.name: st.column_config.TextColumn(
            _(step.label),
            help="; ".join(code + ": " + _(step.words[code]) for code in step.choices),
        )
        for step in declared()
    }


def _subsets() -> Callable[[str], str]:
    """Subset pickers' labels, drawn now in the reader's language (see ``_models``)."""
    return {
        name: _(SUBSET_WORDS[name]) if name in SUBSET_WORDS else name for name in SUBSETS
    }.__getitem__


def _models(names: Iterable[str]) -> Callable[[str], str]:
    """Model pickers' labels, drawn now in the reader's language (Streamlit may format an
    option again outside the page run: see ``i18n.choices``)."""
    return {name: model_label(name) for name in names}.__getitem__


def _variants() -> list[str]:
    """The translated variants that have a version (``koed translate``)."""
    return sorted({v.variant for v in Variants(resources.store()).versions()})


def start_run_form(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """Model, languages, protocol, prompts, dialogues and decoding; queued as a job."""
    with st.form("runs.start"):
        st.subheader(_("Start or resume a run"), anchor=False)
        left, right = st.columns(2)
        name = left.selectbox(
            _("Model"), list(registry), key=state.RUNS_MODEL, format_func=_models(registry)
        )
        langs = language.languages_picker(left, _("Languages"), variants=_variants())
        protocol = left.radio(
            _("Protocol"), PROTOCOLS, horizontal=True, format_func=terms.shown(PROTOCOLS)
        )
        prompts = left.radio(
            _("Prompt set"),
            PROMPT_SETS,
            horizontal=True,
            format_func=terms.shown(PROMPT_SETS),
            help=_(
                "paper: the KoED authors' setup (English instructions for both languages, "
                "emotion then reply in two calls). native: instructions in the dialogue's "
                "language, one call. Direct runs use native."
            ),
        )
        with left.expander(_("Pipeline steps"), icon=":material/tune:"):
            st.caption(
                _(
                    "Profile: the paper set takes the KoED authors' step at each; native keeps "
                    "the whole reply, decoded commas and the extended reader."
                )
            )
            steps = _step_pickers()
        subset = left.selectbox(
            _("Dialogues"),
            SUBSETS,
            format_func=_subsets(),
            help=_("paper-100 needs the official file"),
        )
        sample = left.number_input(_("Stratified sample of N (0 = no sample)"), 0, len(dataset), 0)
        seed = left.number_input(_("Sample seed"), 0, 1_000_000, 0)
        limit = right.number_input(
            _("First N of them (0 = all)"), 0, len(dataset), min(5, len(dataset))
        )
        concurrency = right.number_input(_("Concurrent requests"), 1, 64, DEFAULT_CONCURRENCY)
        own = right.checkbox(_("The model's decoding from models.toml"), value=True)
        temperature = right.slider(_("Temperature (if not)"), 0.0, 1.5, 0.7, 0.1)
        max_tokens = right.number_input(_("Max new tokens (if not)"), 16, 2048, 256, 16)
        batch = jobs_panel.batch_checkbox(right)
        started = st.form_submit_button(_("Start as a background job"), type="primary")
    st.caption(
        _(
            "A run is a background job: leave the page, close the tab or restart the server "
            "and it goes on (progress in the sidebar's Jobs panel). The same model, protocol "
            "and settings resume the same run: finished answers are skipped. Command line, in "
            "the foreground: `koed run --model NAME --lang ko,en --protocol single`."
        )
    )
    if started:
        spec = registry[name]
        if not langs:
            st.warning(_("Pick at least one language."))
        else:
            params = RunRequest(
                model=name,
                langs=tuple(langs),
                protocol=protocol,
                prompts=prompts if protocol != "direct" else "native",
                subset=subset,
                sample=int(sample) or None,
                seed=int(seed),
                limit=int(limit) or None,
                concurrency=int(concurrency),
                temperature=None if own else float(temperature),
                max_tokens=None if own else int(max_tokens),
                batch=batch,
                dataset_sha256=dataset.sha256,
                **steps,
            )
            jobs_panel.start(params, spec, check=partial(params.dialogues, dataset.dialogues))


def episodes_panel(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """Multi-turn episodes queued as a job: a Listener, a simulated Speaker, turns."""
    with st.expander(_("Multi-turn episodes (a simulated Speaker)"), icon=":material/repeat:"):
        answering = [name for name, spec in registry.items() if spec.backend != "human"]
        with st.form("runs.episodes"):
            left, right = st.columns(2)
            listener = left.selectbox(
                _("Listener (the model under test)"), answering, format_func=_models(answering)
            )
            default = answering.index("smollm2") if "smollm2" in answering else 0
            speaker = right.selectbox(
                _("Speaker (plays the KoED speaker)"),
                answering,
                index=default,
                format_func=_models(answering),
                help=_(
                    "Told the situation and the emotion, in the dialogue's language; the "
                    "Listener is told neither. The offline smollm2 tries the pipeline, it "
                    "gives no results worth citing."
                ),
            )
            turns = left.number_input(_("Listener turns per episode"), 1, MAX_TURNS, DEFAULT_TURNS)
            langs = language.languages_picker(left, _("Episode languages"), variants=_variants())
            protocol = right.radio(
                _("Listener protocol"),
                PROTOCOLS[:2],
                horizontal=True,
                format_func=terms.shown(PROTOCOLS[:2]),
            )
            subset = right.selectbox(
                _("Episode dialogues"),
                SUBSETS,
                format_func=_subsets(),
                key=state.RUNS_EPISODE_SUBSET,
            )
            limit = right.number_input(
                _("Episodes of the first N dialogues (0 = all)"),
                0,
                len(dataset),
                min(5, len(dataset)),
            )
            started = st.form_submit_button(_("Start the episodes as a background job"))
        st.caption(
            _(
                "Each episode starts from the dataset's context and goes on turn by turn; a "
                "Speaker turn that breaks character (names the emotion, changes language, "
                "speaks as the Listener) is flagged and asked once more. Judge the run as any "
                "other; command line: `koed episodes --model NAME --speaker NAME --turns 3`."
            )
        )
        if started:
            if not langs:
                st.warning(_("Pick at least one language."))
                return
            params = EpisodeRequest(
                model=listener,
                speaker=speaker,
                turns=int(turns),
                langs=tuple(langs),
                protocol=protocol,
                subset=subset,
                limit=int(limit) or None,
                dataset_sha256=dataset.sha256,
            )
            jobs_panel.start(
                params,
                registry[listener],
                registry[speaker],
                check=partial(params.dialogues, dataset.dialogues),
            )


def reproduce_panel(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """A plan file from plans/, shown, and queued as one reproduction job."""
    with st.expander(_("Reproduce the paper's table (a plan)"), icon=":material/replay:"):
        plans = sorted(p.name for p in PLANS.glob("*.toml"))
        if not plans:
            st.caption(_("No plan files in plans/."))
        else:
            chosen = PLANS / st.selectbox(_("Plan"), plans, key=state.RUNS_PLAN)
            text = chosen.read_text(encoding="utf-8")
            st.code(text, language="toml")
            st.caption(
                _(
                    "Runs every model of the plan (each at its own concurrency), judges each "
                    "run as it finishes and fills the table; as a job, resumable. Estimate "
                    "first with `koed reproduce plans/{plan} --dry-run`.",
                    plan=md(chosen.name),
                )
            )
            if st.button(_("Start the reproduction as a job"), key=state.RUNS_REPRODUCE):
                try:
                    plan = parse_plan(text, chosen.name)
                except KoedError as err:
                    st.error(md(str(err)))
                else:
                    jobs_panel.start(
                        ReproduceJob(
                            plan=f"plans/{chosen.name}",
                            plan_text=text,
                            dataset_sha256=dataset.sha256,
                        ),
                        *(registry[m] for m in (*plan.models, plan.judge) if m in registry),
                    )


def stored_runs(dataset: Dataset) -> None:
    """Every stored run, and the responses of the one picked (an episode run's episodes
    too, ko and en side by side)."""
    st.subheader(_("Stored runs"), anchor=False)
    runs = Runs(resources.store()).runs()
    if runs.empty:
        st.info(
            _(
                "No runs yet. Start one above, or from a terminal: "
                "`koed run --model smollm2 --lang ko,en --limit 5`."
            )
        )
        return
    labels = run_labels(resources.store())
    shown = runs.assign(
        run=runs["run_id"].map(labels),
        kind=runs["kind"].map(i18n.choices(KINDS)),
    ).drop(columns=["run_id", "name"])
    if shown["variant"].isna().all():  # no run read a translated variant: no column for it
        shown = shown.drop(columns=["variant"])
    # a run has a row per language (and the variant version it read): never scrolled
    first = [c for c in ("run", "lang", "variant") if c in shown.columns]
    tables.show(
        shown[[*first, *[c for c in shown.columns if c not in first]]],
        hide_index=True,
        column_config={
            "run": st.column_config.TextColumn(
                _("Run"), width=label_width(shown["run"]), pinned=True
            ),
            "kind": _("Kind"),
            "protocol": _("Protocol"),
            "provenance": _("Provenance"),
            "lang": st.column_config.TextColumn(_("Language"), pinned=True),
            "variant": st.column_config.TextColumn(
                _("Variant read"),
                help=_(
                    "a translated variant's version and its id, as the run recorded it: "
                    "translating or importing again makes a new version (koed translate list)"
                ),
            ),
            "responses": _("Responses"),
            "errors": _("Errors"),
            **step_columns(),
            "family": _("Family"),
            "no_label": _("No label named"),
            "dataset_sha256": None,
            "updated": _("Updated (UTC)"),
            "accuracy": st.column_config.NumberColumn(
                _("Emotion hit rate"),
                format="%.2f",
                help=_("single runs; an answer naming no label is a miss (the paper's reading)"),
            ),
            "f1": st.column_config.NumberColumn(
                _("Emotion F1"),
                format="%.2f",
                help=_("multi runs; an answer naming no label scores 0 (the paper's reading)"),
            ),
            "accuracy_answered": st.column_config.NumberColumn(
                _("Hit rate, answered only"),
                format="%.2f",
                help=_("over answers that named a label"),
            ),
            "f1_answered": st.column_config.NumberColumn(
                _("F1, answered only"), format="%.2f", help=_("over answers that named a label")
            ),
            "jaccard": st.column_config.NumberColumn(
                _("Emotion recognition (Jaccard)"), format="%.2f"
            ),
            "mean_latency_s": st.column_config.NumberColumn(_("Mean seconds"), format="%.2f"),
        },
    )
    newest_first = list(reversed(labels))
    run_id = st.selectbox(
        _("Responses of run"), newest_first, format_func=labels.get, key=state.RUNS_SELECTED
    )
    responses = Runs(resources.store()).responses(run_id)
    episodes = bool(responses["turn"].notna().any()) if "turn" in responses else False
    if episodes:
        with st.expander(_("Episodes of this run, ko and en side by side"), expanded=True):
            episode_view.episode_pair(
                resources.store(), run_id, dataset, key=state.RUNS_EPISODE_VIEW, whole=True
            )
    columns = [
        "conv_id",
        "lang",
        *(["turn"] if episodes else []),
        "text",
        "raw",
        "predicted",
        "gold",
        "hit",
        "f1",
        "parse_notes",
        "error",
        "latency_s",
    ]
    tables.show(
        responses[[c for c in columns if c in responses.columns]],
        hide_index=True,
        column_config={
            "predicted": _("Emotion named"),
            "gold": _("Gold labels"),
            "hit": _("Recognised"),
            "text": st.column_config.TextColumn(
                _("Reply as judged"),
                help=_("after the run's post-processing: what judges and raters see"),
            ),
            "raw": st.column_config.TextColumn(_("Raw reply"), help=_("as the model gave it")),
            "parse_notes": _("Notes"),
            "error": _("error"),
            "turn": st.column_config.NumberColumn(_("Turn"), help=_("the episode's Listener turn")),
            "latency_s": st.column_config.NumberColumn(_("Seconds"), format="%.2f"),
        },
    )


def label_width(labels: pd.Series) -> int:
    """Pixels for a column of run labels to show the longest whole (two runs of a model
    differ at the end of their labels: the date, the protocol), up to half a 1366 screen."""
    longest = max((len(str(label)) for label in labels.dropna()), default=10)
    return min(16 + 7 * longest, 640)
