"""Score a run's responses with an LLM judge on the five rubric dimensions."""

import streamlit as st

from components.core import auth, resources, state, terms
from components.core.literal import md
from components.core.terms import MODE_DEFAULT
from components.models import jobs_panel
from components.shared.model_choice import adhoc_model_input, model_label, registry_or_stop
from koed_core import i18n
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.judge.request import JudgeRequest
from koed_core.judge.rubric import dimensions
from koed_core.judge.verdicts import MODES, PARSES, TEMPLATES
from koed_core.models.runs import run_labels

st.title(_("LLM judge"))
auth.require_admin_once_accounts_exist()
adhoc_model_input()
registry = registry_or_stop()
names = run_labels(resources.store())
if not names:
    st.info(_("No runs to judge yet. Start one on the Runs page or with `koed run`."))
    st.stop()

with st.form("judge.start"):
    run_id = st.selectbox(_("Run"), list(reversed(names)), format_func=names.get)  # newest first
    judges = list(registry)
    judge_name = st.selectbox(
        _("Judge model"),
        judges,
        format_func={name: model_label(name) for name in judges}.__getitem__,  # drawn now
        index=judges.index("gpt-4o") if "gpt-4o" in judges else 0,  # the paper's judge
    )
    mode = st.radio(
        _("Mode"),
        MODES,
        horizontal=True,
        format_func=terms.shown(MODES),
        help=_(
            "paper: one call per dimension, feedback then 'Score: n', temperature 0.7 (the "
            "KoED paper). strict: temperature 0, JSON with the rationale first."
        ),
    )
    left, right = st.columns(2)
    template = left.selectbox(
        _("Template (paper mode)"),
        [MODE_DEFAULT, *TEMPLATES],
        key=state.JUDGE_TEMPLATE,
        format_func=terms.term_or(MODE_DEFAULT, TEMPLATES),
        help=_(
            "authors: the KoED authors' structure (criterion in the system message, the "
            "response prefixed 'Listener: ', not fenced). fenced: the dialogue and reply quoted "
            "between markers the judged text cannot forge (use it for adversarial answers). "
            "Strict mode always uses fenced."
        ),
    )
    parse = right.selectbox(
        _("Verdict parser (paper mode)"),
        [MODE_DEFAULT, *PARSES],
        key=state.JUDGE_PARSE,
        format_func=terms.term_or(MODE_DEFAULT, PARSES),
        help=_(
            "authors: theirs (split on 'Score:', then a bare integer; anything else is asked "
            "again, up to 5 times, API errors too). lenient: a final Score line in any usual "
            "form."
        ),
    )
    named = {d.code: f"{d.code} · {d.name(i18n.language())}" for d in dimensions()}
    dims = st.multiselect(_("Dimensions"), list(named), default=list(named), format_func=named.get)
    samples = st.number_input(_("Samples averaged (strict mode)"), 1, 10, 1)
    concurrency = st.number_input(_("Concurrent requests"), 1, 64, 8)
    batch = st.checkbox(
        _("Through the provider's Batch API"),
        help=_(
            "OpenAI and compatible servers with /v1/files and /v1/batches (OpenAI: about half "
            "the price, answers within 24 h)."
        ),
    )
    started = st.form_submit_button(_("Start as a background job"), type="primary")
st.caption(
    _(
        "Judging is a background job (progress in the sidebar's Jobs panel); judging the same "
        "run with the same judge, mode, template and parser skips what is done. Command line, "
        "in the foreground: `koed judge --run RUN_ID --judge NAME --mode paper --template "
        "authors`."
    )
)
if started and not dims:
    st.warning(_("Choose at least one dimension to judge."))
elif started and mode == "strict" and (template != MODE_DEFAULT or parse != MODE_DEFAULT):
    st.warning(
        _(
            "Strict mode has its own template and reader (fenced, JSON): set Template and "
            "Verdict parser back to the mode's, or judge in paper mode."
        )
    )
elif started:
    params = JudgeRequest(
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
        jobs_panel.say_queued(job_id)

jobs_panel.render_jobs_table("judge")
