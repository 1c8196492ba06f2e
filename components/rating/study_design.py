"""How a new study chooses its dialogues, and the planner: how many more ratings reach an
interval width with PPI++ and with people alone, and the next batch of dialogues."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.core import computed, resources, state, tables
from components.core.literal import md
from components.rating.active_batch_form import render_active_batch
from koed_core import i18n
from koed_core.db import Sampling, Store
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.models.runs import run_labels
from koed_core.rating import growth, sampling
from koed_core.rating.bilingual import DESIGN_WORDS
from koed_core.results import ppi_plan

METHOD_WORDS = {
    "all": N_("every answered dialogue"),
    "random": N_("a uniform random sample of dialogues (PPI++ can use it)"),
    "stratified": N_("a random sample within jeong/han and the other dialogues"),
    "manual": N_("dialogues chosen by hand (PPI++ refused)"),
}


def sampling_inputs(where: Any, seed: int) -> Sampling:
    """The design fields of the New study form (inside the form)."""
    method = where.selectbox(
        _("Which dialogues"),
        list(METHOD_WORDS),
        format_func=i18n.choices(METHOD_WORDS).__getitem__,
        help=_(
            "PPI++ corrects the judge by people only if the rated dialogues are a random "
            "sample: a sample's dialogues are chosen by the seed, both languages of each."
        ),
    )
    size = where.number_input(_("Dialogues in the sample (random)"), 1, 100_000, 100)
    strata = where.text_input(
        _("Stratified: jeong/han, other (dialogues from each)"), value="20, 80"
    )
    chosen = where.text_input(_("By hand: conv_ids, comma-separated"), value="")
    if method == "random":
        return Sampling("random", seed=seed, size=int(size))
    if method == "stratified":
        counts = [int(p) for p in strata.replace(" ", "").split(",") if p.isdigit()] + [0, 0]
        return Sampling(
            "stratified", seed=seed, sizes=(("jeong/han", counts[0]), ("other", counts[1]))
        )
    if method == "manual":
        ids = tuple(c.strip() for c in chosen.split(",") if c.strip())
        return Sampling("manual", conv_ids=ids)
    return Sampling("all", seed=seed)


BILINGUAL_WORDS = DESIGN_WORDS


def bilingual_input(where: Any) -> str:
    """How a ko+en study keeps one language version from priming the other."""
    return str(
        where.selectbox(
            _("Both languages of one dialogue"),
            list(BILINGUAL_WORDS),
            format_func=i18n.choices(BILINGUAL_WORDS).__getitem__,
            help=_(
                "A rater who read a dialogue in one language rates its other version "
                "against it. Counterbalanced: the order is recorded with every rating."
            ),
        )
    )


def design_text(study: dict[str, Any]) -> str:
    """How a listed study chose its dialogues, and its bilingual design, in one line."""
    chosen = sampling.describe(Sampling.from_json(study.get("sampling")))
    both = _(BILINGUAL_WORDS.get(study.get("bilingual", "free"), BILINGUAL_WORDS["free"]))
    return chosen + "; " + both


def render_planner(store: Store, studies: dict[int, str]) -> None:
    """The planner of one study and judge configuration; Add the next batch."""
    st.subheader(_("Plan the next batch"), anchor=False)
    if not studies:
        st.caption(_("Needs a study with ratings."))
        return
    left, mid, right = st.columns(3)
    study = left.selectbox(
        _("Study"), list(studies), format_func=studies.get, key=state.STUDIES_PLAN_STUDY
    )
    rules = resources.rules()
    config = rules.config(int(study))
    uses = computed.judge_uses(store, list(config.run_ids))
    if not uses:
        st.caption(_("No judge scored this study's runs yet: judge them, then plan."))
        return
    picked = mid.selectbox(
        _("Judge configuration"),
        range(len(uses)),
        format_func=lambda i: uses[i].config.label,
        key=state.STUDIES_PLAN_JUDGE,
    )
    width = right.number_input(_("Interval width wanted (95%)"), 0.05, 4.0, 0.3, step=0.05)
    st.caption(md(sampling.describe(config.sampling)))
    table = computed.ppi_plan(store, int(study), uses[int(picked or 0)].config, float(width))
    labels = run_labels(store)
    shown = table.assign(run_id=table["run_id"].map(labels)).rename(columns={"run_id": "run"})
    tables.show(shown.drop(columns=["width_goal"]), hide_index=True)
    with_ppi = ppi_plan.next_round_size(table, with_ppi=True)
    alone = ppi_plan.next_round_size(table, with_ppi=False)
    st.caption(
        _(
            "Every gap at this width: {ppi} more dialogues with PPI++ ({ppi_ratings} "
            "ratings), {alone} with people alone ({alone_ratings} ratings). From ppi-python's "
            "power analysis on the ratings so far.",
            ppi=i18n.number(with_ppi),
            ppi_ratings=i18n.number(with_ppi * 2 * config.overlap),
            alone=i18n.number(alone),
            alone_ratings=i18n.number(alone * 2 * config.overlap),
        )
    )
    st.caption(
        _(
            "These sizes meet the width on average: about half of studies of that size end "
            "a little wider. To meet it in 9 of 10 studies: {ppi} more dialogues with PPI++, "
            "{alone} with people alone (people_needed_90; people_needed_low and _high: "
            "what the pilot's own uncertainty allows). Gaps out of reach at this width: "
            "{gone}.",
            ppi=i18n.number(ppi_plan.next_round_size(table, with_ppi=True, assured=True)),
            alone=i18n.number(ppi_plan.next_round_size(table, with_ppi=False, assured=True)),
            gone=i18n.number(ppi_plan.unreachable(table)),
        )
    )
    random_design = config.sampling.method in ("random", "stratified")
    if st.button(
        _("Add the next {n} dialogues (PPI++)", n=with_ppi),
        disabled=not random_design or with_ppi == 0,
    ):
        try:
            grown, added = growth.add_round(rules, int(study), with_ppi)
        except KoedError as err:
            st.error(md(str(err)))
        else:
            st.success(_("Added {n} dialogues.", n=len(added)))
    render_active_batch(int(study), config, uses, int(picked or 0), with_ppi)
