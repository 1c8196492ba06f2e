"""The Judge page's form: a judging pass over one run, queued as a background job. The
choices are JudgeRequest's (its modes, templates and parsers); strict mode's own template
and reader are the request's rule, said here in the reader's words before it is queued."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from components.core import state, terms
from components.core.literal import md
from components.core.terms import MODE_DEFAULT
from components.models import jobs_panel
from components.shared.model_choice import model_label
from koed_core import i18n
from koed_core.db.types import JUDGE_TEMPERATURES
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.judge.request import JudgeRequest
from koed_core.judge.rubric import dimensions
from koed_core.judge.verdicts import MODES, PARSES, TEMPLATES
from koed_core.models.registry import ModelSpec


def mode_temps() -> dict[str, str]:
    """Each mode's temperature as the page writes numbers (the default the input says)."""
    return {mode: i18n.number(JUDGE_TEMPERATURES[mode], 1) for mode in MODES}


def _mode_or(
    column: DeltaGenerator, label: str, choices: Sequence[str], key: str, explained: str
) -> str | None:
    """A choice whose first option is the mode's own (None, the request's default), then
    each of ``choices`` by its term."""
    chosen = column.selectbox(
        label,
        [MODE_DEFAULT, *choices],
        key=key,
        format_func=terms.term_or(MODE_DEFAULT, choices),
        help=explained,
    )
    return None if chosen == MODE_DEFAULT else chosen


def start_judge_form(registry: dict[str, ModelSpec], names: dict[str, str]) -> None:
    """Run, judge model, mode, template, parser, temperature (empty: the mode's),
    dimensions, samples; queued as a job."""
    with st.form("judge.start"):
        run_id = st.selectbox(
            _("Run"), list(reversed(names)), format_func=names.get
        )  # newest first
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
        template = _mode_or(
            left,
            _("Template (paper mode)"),
            TEMPLATES,
            state.JUDGE_TEMPLATE,
            _(
                "authors: the KoED authors' structure (criterion in the system message, the "
                "response prefixed 'Listener: ', not fenced). fenced: the dialogue and reply "
                "quoted between markers the judged text cannot forge (use it for adversarial "
                "answers). "
                "Strict mode always uses fenced."
            ),
        )
        parse = _mode_or(
            right,
            _("Verdict parser (paper mode)"),
            PARSES,
            state.JUDGE_PARSE,
            _(
                "authors: theirs (split on 'Score:', then a bare integer; anything else is asked "
                "again, up to 5 times, API errors too). lenient: a final Score line in any usual "
                "form."
            ),
        )
        temperature = st.number_input(
            _("Judge temperature"),
            min_value=0.0,
            max_value=2.0,
            value=None,
            step=0.1,
            key=state.JUDGE_TEMPERATURE,
            placeholder=_("the mode's: {paper} in paper mode, {strict} in strict", **mode_temps()),
            help=_(
                "Empty: the mode's own temperature (paper {paper}, as the KoED authors; strict "
                "{strict}). Another value is part of the judge configuration: its scores are a "
                "source of their own.",
                **mode_temps(),
            ),
        )
        named = {d.code: f"{d.code} · {d.name(i18n.language())}" for d in dimensions()}
        dims = st.multiselect(
            _("Dimensions"),
            list(named),
            default=list(named),
            format_func=named.get,
            placeholder=_("Choose dimensions"),
        )
        samples = st.number_input(_("Samples averaged (strict mode)"), 1, 10, 1)
        concurrency = st.number_input(_("Concurrent requests"), 1, 64, 8)
        batch = jobs_panel.batch_checkbox(st)
        started = st.form_submit_button(_("Start as a background job"), type="primary")
    if not started:
        return
    if not dims:
        st.warning(_("Choose at least one dimension to judge."))
        return
    params = JudgeRequest(
        run_id=run_id,
        judge=judge_name,
        mode=mode,
        dims=tuple(dims),
        samples=int(samples),
        concurrency=int(concurrency),
        batch=batch,
        template=template,
        parse=parse,
        temperature=None if temperature is None else float(temperature),
    )
    try:
        params.steps()  # the request's rule: which template and reader fit the mode
    except KoedError as err:
        st.warning(
            _(
                "Strict mode has its own template and reader (fenced, JSON): set Template and "
                "Verdict parser back to the mode's, or judge in paper mode."
            )
            if mode == "strict"
            else md(str(err))
        )
        return
    jobs_panel.start(params, registry[judge_name])
