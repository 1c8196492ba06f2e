"""The Runs page's pieces: the form that queues a run, the plan panel that queues a
reproduction, and the stored runs with their responses."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from components.models import jobs_panel
from components.shared import episode_view, resources, state, tables
from components.shared.literal import md
from components.shared.model_choice import model_label
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.subsets import SUBSETS, select
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.jobs.kinds import EpisodeJob, ReproduceJob, RunJob
from koed_core.models.episodes import DEFAULT_TURNS, MAX_TURNS
from koed_core.models.pipeline import COMMAS, EMOTION_READERS, POSTPROCESS
from koed_core.models.prompts import PROMPT_SETS
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.registry import ModelSpec
from koed_core.models.runs import DEFAULT_CONCURRENCY, run_labels
from koed_core.results.reproduce import parse_plan

PLANS = Path(__file__).resolve().parents[2] / "plans"
PROFILE = "the prompt set's"


def start_run_form(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """Model, languages, protocol, prompts, dialogues and decoding; queued as a job."""
    with st.form("runs.start"):
        st.subheader("Start or resume a run", anchor=False)
        left, right = st.columns(2)
        name = left.selectbox(
            "Model", list(registry), key=state.RUNS_MODEL, format_func=model_label
        )
        langs = left.multiselect("Languages", ["ko", "en"], default=["ko", "en"])
        protocol = left.radio("Protocol", PROTOCOLS, horizontal=True)
        prompts = left.radio(
            "Prompt set",
            PROMPT_SETS,
            horizontal=True,
            help="paper: the KoED authors' setup (English instructions for both languages, "
            "emotion then reply in two calls). native: instructions in the dialogue's language, "
            "one call. Direct runs use native.",
        )
        with left.expander("Pipeline steps", icon=":material/tune:"):
            st.caption(
                "Profile: the paper set takes the KoED authors' step at each; native keeps "
                "the whole reply, decoded commas and the extended reader."
            )
            postprocess = st.selectbox(
                "Post-processing", [PROFILE, *POSTPROCESS], key=state.RUNS_POSTPROCESS
            )
            commas = st.selectbox("Commas", [PROFILE, *COMMAS], key=state.RUNS_COMMAS)
            reader = st.selectbox(
                "Emotion reader", [PROFILE, *EMOTION_READERS], key=state.RUNS_READER
            )
        subset = left.selectbox("Dialogues", SUBSETS, help="paper-100 needs the official file")
        sample = left.number_input("Stratified sample of N (0 = no sample)", 0, len(dataset), 0)
        seed = left.number_input("Sample seed", 0, 1_000_000, 0)
        limit = right.number_input(
            "First N of them (0 = all)", 0, len(dataset), min(5, len(dataset))
        )
        concurrency = right.number_input("Concurrent requests", 1, 64, DEFAULT_CONCURRENCY)
        own = right.checkbox("The model's decoding from models.toml", value=True)
        temperature = right.slider("Temperature (if not)", 0.0, 1.5, 0.7, 0.1)
        max_tokens = right.number_input("Max new tokens (if not)", 16, 2048, 256, 16)
        batch = right.checkbox(
            "Through the provider's Batch API",
            help="OpenAI and compatible servers with /v1/files and /v1/batches: the requests go "
            "out as batch jobs (OpenAI: about half the price, answers within 24 h).",
        )
        started = st.form_submit_button("Start as a background job", type="primary")
    st.caption(
        "A run is a background job: leave the page, close the tab or restart the server and it "
        "goes on (progress in the sidebar's Jobs panel). The same model, protocol and settings "
        "resume the same run: finished answers are skipped. Command line, in the foreground: "
        "`koed run --model NAME --lang ko,en --protocol single`."
    )
    if started:
        spec = registry[name]
        if not langs:
            st.warning("Pick at least one language.")
        else:
            params = RunJob(
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
                postprocess=None if postprocess == PROFILE else postprocess,
                commas=None if commas == PROFILE else commas,
                emotion_reader=None if reader == PROFILE else reader,
            )
            try:
                select(dataset.dialogues, subset, sample=params.sample, seed=params.seed)
                jobs_panel.check_may_queue(spec)
                job_id = jobs_panel.queue(params)
            except KoedError as err:
                st.error(md(str(err)))
            else:
                st.success(f"Job #{md(job_id)} queued: {md(params.label())}.")


def episodes_panel(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """Multi-turn episodes queued as a job: a Listener, a simulated Speaker, turns."""
    with st.expander("Multi-turn episodes (a simulated Speaker)", icon=":material/repeat:"):
        answering = [name for name, spec in registry.items() if spec.backend != "human"]
        with st.form("runs.episodes"):
            left, right = st.columns(2)
            listener = left.selectbox(
                "Listener (the model under test)", answering, format_func=model_label
            )
            default = answering.index("smollm2") if "smollm2" in answering else 0
            speaker = right.selectbox(
                "Speaker (plays the KoED speaker)",
                answering,
                index=default,
                format_func=model_label,
                help="Told the situation and the emotion, in the dialogue's language; the "
                "Listener is told neither. The offline smollm2 tries the pipeline, it gives "
                "no results worth citing.",
            )
            turns = left.number_input("Listener turns per episode", 1, MAX_TURNS, DEFAULT_TURNS)
            langs = left.multiselect("Episode languages", ["ko", "en"], default=["ko", "en"])
            protocol = right.radio("Listener protocol", PROTOCOLS[:2], horizontal=True)
            subset = right.selectbox("Episode dialogues", SUBSETS, key=state.RUNS_EPISODE_SUBSET)
            limit = right.number_input(
                "Episodes of the first N dialogues (0 = all)",
                0,
                len(dataset),
                min(5, len(dataset)),
            )
            started = st.form_submit_button("Start the episodes as a background job")
        st.caption(
            "Each episode starts from the dataset's context and goes on turn by turn; a "
            "Speaker turn that breaks character (names the emotion, changes language, speaks "
            "as the Listener) is flagged and asked once more. Judge the run as any other; "
            "command line: `koed episodes --model NAME --speaker NAME --turns 3`."
        )
        if started:
            if not langs:
                st.warning("Pick at least one language.")
                return
            params = EpisodeJob(
                model=listener,
                speaker=speaker,
                turns=int(turns),
                langs=tuple(langs),
                protocol=protocol,
                subset=subset,
                limit=int(limit) or None,
                dataset_sha256=dataset.sha256,
            )
            try:
                select(dataset.dialogues, subset)
                jobs_panel.check_may_queue(registry[listener])
                jobs_panel.check_may_queue(registry[speaker])
                job_id = jobs_panel.queue(params)
            except KoedError as err:
                st.error(md(str(err)))
            else:
                st.success(f"Job #{md(job_id)} queued: {md(params.label())}.")


def reproduce_panel(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """A plan file from plans/, shown, and queued as one reproduction job."""
    with st.expander("Reproduce the paper's table (a plan)", icon=":material/replay:"):
        plans = sorted(p.name for p in PLANS.glob("*.toml"))
        if not plans:
            st.caption("No plan files in plans/.")
        else:
            chosen = PLANS / st.selectbox("Plan", plans, key=state.RUNS_PLAN)
            text = chosen.read_text(encoding="utf-8")
            st.code(text, language="toml")
            st.caption(
                "Runs every model of the plan (each at its own concurrency), judges each run as "
                "it finishes and fills the table; as a job, resumable. Estimate first with "
                f"`koed reproduce plans/{md(chosen.name)} --dry-run`."
            )
            if st.button("Start the reproduction as a job", key=state.RUNS_REPRODUCE):
                try:
                    plan = parse_plan(text, chosen.name)
                    for model in (*plan.models, plan.judge):
                        if model in registry:
                            jobs_panel.check_may_queue(registry[model])
                    job_id = jobs_panel.queue(
                        ReproduceJob(
                            plan=f"plans/{chosen.name}",
                            plan_text=text,
                            dataset_sha256=dataset.sha256,
                        )
                    )
                except KoedError as err:
                    st.error(md(str(err)))
                else:
                    st.success(f"Job #{md(job_id)} queued: reproduce {md(chosen.name)}.")


def stored_runs(dataset: Dataset) -> None:
    """Every stored run, and the responses of the one picked (an episode run's episodes
    too, ko and en side by side)."""
    st.subheader("Stored runs", anchor=False)
    runs = resources.store().runs()
    if runs.empty:
        st.info(
            "No runs yet. Start one above, or from a terminal: "
            "`koed run --model smollm2 --lang ko,en --limit 5`."
        )
        return
    labels = run_labels(resources.store())
    shown = runs.assign(
        run=runs["run_id"].map(labels),
        kind=runs["kind"].map(
            {"batch": "benchmark run", "live": "saved from Chat", "episodes": "episodes"}
        ),
    ).drop(columns=["run_id", "name"])
    tables.show(
        shown[["run", *[c for c in shown.columns if c != "run"]]],
        hide_index=True,
        column_config={
            "run": st.column_config.TextColumn("Run", width="large"),
            "kind": "Kind",
            "protocol": "Protocol",
            "provenance": "Provenance",
            "lang": "Language",
            "responses": "Responses",
            "errors": "Errors",
            "postprocess": st.column_config.TextColumn(
                "Post-processing",
                help="authors: what the KoED authors' post-processing kept of each reply is "
                "judged and rated (rule per family); none: the whole reply",
            ),
            "family": "Family",
            "commas": st.column_config.TextColumn(
                "Commas", help="raw: English sent with _comma_ as the file has it"
            ),
            "emotion_reader": st.column_config.TextColumn(
                "Emotion reader",
                help=_(
                    "authors: English label names (and jeong, han) only; extended: Korean "
                    "glosses too"
                ),
            ),
            "no_label": "No label named",
            "dataset_sha256": None,
            "updated": "Updated (UTC)",
            "accuracy": st.column_config.NumberColumn(
                "Emotion hit rate",
                format="%.2f",
                help="single runs; an answer naming no label is a miss (the paper's reading)",
            ),
            "f1": st.column_config.NumberColumn(
                "Emotion F1",
                format="%.2f",
                help="multi runs; an answer naming no label scores 0 (the paper's reading)",
            ),
            "accuracy_answered": st.column_config.NumberColumn(
                "Hit rate, answered only", format="%.2f", help="over answers that named a label"
            ),
            "f1_answered": st.column_config.NumberColumn(
                "F1, answered only", format="%.2f", help="over answers that named a label"
            ),
            "jaccard": st.column_config.NumberColumn(
                "Emotion recognition (Jaccard)", format="%.2f"
            ),
            "mean_latency_s": st.column_config.NumberColumn("Mean seconds", format="%.2f"),
        },
    )
    newest_first = list(reversed(labels))
    run_id = st.selectbox(
        "Responses of run", newest_first, format_func=labels.get, key=state.RUNS_SELECTED
    )
    responses = resources.store().responses(run_id)
    episodes = bool(responses["turn"].notna().any()) if "turn" in responses else False
    if episodes:
        with st.expander("Episodes of this run, ko and en side by side", expanded=True):
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
            "predicted": "Emotion named",
            "gold": "Gold labels",
            "hit": "Recognised",
            "text": st.column_config.TextColumn(
                "Reply as judged",
                help="after the run's post-processing: what judges and raters see",
            ),
            "raw": st.column_config.TextColumn("Raw reply", help="as the model gave it"),
            "parse_notes": "Notes",
            "turn": st.column_config.NumberColumn("Turn", help="the episode's Listener turn"),
            "latency_s": st.column_config.NumberColumn("Seconds", format="%.2f"),
        },
    )
