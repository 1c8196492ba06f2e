"""Score a run's responses with an LLM judge on the five rubric dimensions."""

import streamlit as st

from components.models import jobs_panel
from components.shared import auth, resources, state
from components.shared.literal import md
from components.shared.model_choice import adhoc_model_input, model_label, registry_or_stop
from koed_core.errors import KoedError
from koed_core.jobs.kinds import JudgeJob
from koed_core.judge.rubric import dimensions
from koed_core.judge.verdicts import MODES, PARSES, TEMPLATES
from koed_core.models.runs import run_labels

MODE_DEFAULT = "the mode's (paper: authors)"

st.title("LLM judge")
auth.require_admin_once_accounts_exist()
adhoc_model_input()
registry = registry_or_stop()
names = run_labels(resources.store())
if not names:
    st.info("No runs to judge yet. Start one on the Runs page or with `koed run`.")
    st.stop()

with st.form("judge.start"):
    run_id = st.selectbox("Run", list(reversed(names)), format_func=names.get)  # newest first
    judges = list(registry)
    judge_name = st.selectbox(
        "Judge model",
        judges,
        format_func=model_label,
        index=judges.index("gpt-4o") if "gpt-4o" in judges else 0,  # the paper's judge
    )
    mode = st.radio(
        "Mode",
        MODES,
        horizontal=True,
        help="paper: one call per dimension, feedback then 'Score: n', temperature "
        "0.7 (the KoED paper). strict: temperature 0, JSON with the rationale first.",
    )
    left, right = st.columns(2)
    template = left.selectbox(
        "Template (paper mode)",
        [MODE_DEFAULT, *TEMPLATES],
        key=state.JUDGE_TEMPLATE,
        help="authors: the KoED authors' structure (criterion in the system message, the "
        "response prefixed 'Listener: ', not fenced). fenced: the dialogue and reply quoted "
        "between markers the judged text cannot forge (use it for adversarial answers). "
        "Strict mode always uses fenced.",
    )
    parse = right.selectbox(
        "Verdict parser (paper mode)",
        [MODE_DEFAULT, *PARSES],
        key=state.JUDGE_PARSE,
        help="authors: theirs (split on 'Score:', then a bare integer; anything else is asked "
        "again, up to 5 times, API errors too). lenient: a final Score line in any usual form.",
    )
    named = {d.code: f"{d.code} · {d.en}" for d in dimensions()}
    dims = st.multiselect("Dimensions", list(named), default=list(named), format_func=named.get)
    samples = st.number_input("Samples averaged (strict mode)", 1, 10, 1)
    concurrency = st.number_input("Concurrent requests", 1, 64, 8)
    batch = st.checkbox(
        "Through the provider's Batch API",
        help="OpenAI and compatible servers with /v1/files and /v1/batches (OpenAI: about "
        "half the price, answers within 24 h).",
    )
    started = st.form_submit_button("Start as a background job", type="primary")
st.caption(
    "Judging is a background job (progress in the sidebar's Jobs panel); judging the same "
    "run with the same judge, mode, template and parser skips what is done. Command line, in "
    "the foreground: `koed judge --run RUN_ID --judge NAME --mode paper --template authors`."
)
if started and not dims:
    st.warning("Choose at least one dimension to judge.")
elif started and mode == "strict" and (template != MODE_DEFAULT or parse != MODE_DEFAULT):
    st.warning(
        "Strict mode has its own template and reader (fenced, JSON): set Template and "
        "Verdict parser back to the mode's, or judge in paper mode."
    )
elif started:
    params = JudgeJob(
        run_id=run_id,
        judge=judge_name,
        mode=mode,
        dims=tuple(dims),
        samples=int(samples),
        concurrency=int(concurrency),
        batch=batch,
        template=None if template == MODE_DEFAULT or mode == "strict" else template,
        parse=None if parse == MODE_DEFAULT or mode == "strict" else parse,
    )
    try:
        jobs_panel.check_may_queue(registry[judge_name])
        job_id = jobs_panel.queue(params)
    except KoedError as err:
        st.error(md(str(err)))
    else:
        st.success(f"Job #{md(job_id)} queued: {md(jobs_panel.label_of(job_id))}.")

jobs_panel.render_jobs_table("judge")
