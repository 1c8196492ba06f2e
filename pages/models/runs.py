"""Run a model over KoED in both languages and watch the stored runs."""

import streamlit as st

from components import auth, resources, state
from components.models import client_for, model_label, registry_or_stop, session_api_key_input
from components.source_banner import load_or_stop, render_source_banner
from koed_core.errors import KoedError
from koed_core.llm import GenerationSettings
from koed_core.prompts import PROMPT_SETS
from koed_core.protocol import PROTOCOLS
from koed_core.registry import decoding
from koed_core.runner import DEFAULT_CONCURRENCY, run_benchmark
from koed_core.subsets import SUBSETS, select

st.title("Runs")
auth.require_admin_once_accounts_exist()
source, dataset = load_or_stop()
render_source_banner(source, dataset)
session_api_key_input()
registry = registry_or_stop()

with st.form("runs.start"):
    st.subheader("Start or resume a run", anchor=False)
    left, right = st.columns(2)
    name = left.selectbox("Model", list(registry), key=state.RUNS_MODEL, format_func=model_label)
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
    subset = left.selectbox("Dialogues", SUBSETS, help="paper-100 needs the official file")
    sample = left.number_input("Stratified sample of N (0 = no sample)", 0, len(dataset), 0)
    seed = left.number_input("Sample seed", 0, 1_000_000, 0)
    limit = right.number_input("First N of them (0 = all)", 0, len(dataset), min(5, len(dataset)))
    concurrency = right.number_input("Concurrent requests", 1, 64, DEFAULT_CONCURRENCY)
    own = right.checkbox("The model's decoding from models.toml", value=True)
    temperature = right.slider("Temperature (if not)", 0.0, 1.5, 0.7, 0.1)
    max_tokens = right.number_input("Max new tokens (if not)", 16, 2048, 256, 16)
    started = st.form_submit_button("Run", type="primary")
st.caption(
    "The same model, protocol and settings resume the same run: finished answers are "
    "skipped. Leaving the page stops a run; start it again to go on. The command line does "
    "the same: `koed run --model NAME --lang ko,en --protocol single`."
)
if started:
    spec = registry[name]
    if not langs:
        st.warning("Pick at least one language.")
    else:
        bar = st.progress(0.0, text="Starting...")
        temp, tokens = (
            decoding(spec) if own else decoding(spec, float(temperature), int(max_tokens))
        )
        try:
            report = run_benchmark(
                resources.store(),
                client_for(spec),
                spec,
                select(dataset.dialogues, subset, sample=int(sample) or None, seed=int(seed)),
                dataset.sha256,
                langs=langs,
                protocol=protocol,
                settings=GenerationSettings(temperature=temp, max_tokens=tokens),
                limit=limit or None,
                prompt_set=prompts if protocol != "direct" else "native",
                concurrency=int(concurrency),
                progress=lambda done, total: bar.progress(
                    done / max(total, 1), text=f"{done:,} of {total:,} answers"
                ),
            )
        except KoedError as err:
            bar.empty()
            st.error(str(err))
        else:
            message = (
                f"Run {report.run_id}: {report.succeeded} answered, {report.skipped} "
                f"already done, {report.failed} failed."
            )
            (st.warning if report.failed else st.success)(message)
            for kind, count in report.errors.most_common():
                st.caption(f"{kind}: {count}")

st.subheader("Stored runs", anchor=False)
runs = resources.store().runs()
if runs.empty:
    st.info(
        "No runs yet. Start one above, or from a terminal: "
        "`koed run --model smollm2 --lang ko,en --limit 5`."
    )
    st.stop()
st.dataframe(
    runs,
    hide_index=True,
    column_config={
        "run_id": "Run",
        "name": "Model",
        "accuracy": st.column_config.NumberColumn(
            "Emotion recognition (hit rate)", format="%.2f", help="single runs"
        ),
        "f1": st.column_config.NumberColumn(
            "Emotion recognition (F1)", format="%.2f", help="multi runs"
        ),
        "jaccard": st.column_config.NumberColumn("Emotion recognition (Jaccard)", format="%.2f"),
        "mean_latency_s": st.column_config.NumberColumn("Mean seconds", format="%.2f"),
    },
)
run_id = st.selectbox("Responses of run", runs["run_id"].unique().tolist(), key=state.RUNS_SELECTED)
responses = resources.store().responses(run_id)
columns = ["conv_id", "lang", "text", "predicted", "gold", "hit", "f1", "error", "latency_s"]
st.dataframe(
    responses[[c for c in columns if c in responses.columns]],
    hide_index=True,
    column_config={
        "predicted": "Emotion named",
        "gold": "Gold labels",
        "hit": "Recognised",
        "text": "Reply",
        "latency_s": st.column_config.NumberColumn("Seconds", format="%.2f"),
    },
)
