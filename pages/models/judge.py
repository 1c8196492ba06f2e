"""Score a run's responses with an LLM judge on the five rubric dimensions."""

import streamlit as st

from components import auth, resources
from components.models import client_for, model_label, registry_or_stop, session_api_key_input
from koed_core.errors import KoedError
from koed_core.judge import MODES
from koed_core.judging import judge_run
from koed_core.rubric import codes

st.title("LLM judge")
auth.require_admin_once_accounts_exist()
session_api_key_input()
registry = registry_or_stop()
runs = resources.store().runs()
if runs.empty:
    st.info("No runs to judge yet. Start one on the Runs page or with `koed run`.")
    st.stop()
names = dict(zip(runs["run_id"], runs["name"], strict=False))

with st.form("judge.start"):
    run_id = st.selectbox("Run", list(names), format_func=names.get)
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
    dims = st.multiselect("Dimensions", codes(), default=list(codes()))
    samples = st.number_input("Samples averaged (strict mode)", 1, 10, 1)
    concurrency = st.number_input("Concurrent requests", 1, 64, 8)
    started = st.form_submit_button("Judge", type="primary")
st.caption(
    "Resumable: judging the same run with the same judge and mode skips what is done. "
    "Command line: `koed judge --run RUN_ID --judge NAME --mode paper`."
)
if started and not dims:
    st.warning("Choose at least one dimension to judge.")
elif started:
    spec = registry[judge_name]
    bar = st.progress(0.0, text="Starting...")
    try:
        report = judge_run(
            resources.store(),
            client_for(spec),
            spec,
            run_id,
            mode,
            dims=dims,
            samples=int(samples),
            concurrency=int(concurrency),
            progress=lambda done, total: bar.progress(
                done / max(total, 1), text=f"{done:,} of {total:,} calls"
            ),
        )
    except (KoedError, ValueError) as err:
        bar.empty()
        st.error(str(err))
    else:
        message = (
            f"{report.scored} scored, {report.unscored} unscored (reply did not parse), "
            f"{report.skipped} already done, {report.failed} failed."
        )
        (st.warning if report.failed or report.unscored else st.success)(message)
        for kind, count in report.errors.most_common():
            st.caption(f"{kind}: {count}")
