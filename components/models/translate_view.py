"""The Runs page's "Translate a variant" panel: ``koed translate run`` queued as a
background job (issue 65), its progress in the jobs list and the sidebar's panel, and
resumable: a job taken over after a kill asks only for the dialogues not kept yet."""

from __future__ import annotations

import streamlit as st

from components.core import language, state
from components.models import jobs_panel
from components.models.runs_view import SUBSET_WORDS
from components.shared.model_choice import model_label
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.subsets import SUBSETS
from koed_core.dialogues.variants import VARIANTS
from koed_core.i18n import _
from koed_core.jobs.kinds import TranslateJob
from koed_core.models.registry import ModelSpec


def translate_panel(registry: dict[str, ModelSpec], dataset: Dataset) -> None:
    """Variant, model, dialogues and decoding; queued as a translation job."""
    with st.expander(_("Translate a variant (a background job)"), icon=":material/translate:"):
        translating = [name for name, spec in registry.items() if spec.backend != "human"]
        with st.form("runs.translate"):
            left, right = st.columns(2)
            variant = left.selectbox(
                _("Variant"),
                list(VARIANTS),
                format_func={v: language.language_words(v) for v in VARIANTS}.__getitem__,
                key=state.RUNS_TRANSLATE_VARIANT,
            )
            model = left.selectbox(
                _("Translating model"),
                translating,
                format_func={name: model_label(name) for name in translating}.__getitem__,
                key=state.RUNS_TRANSLATE_MODEL,
            )
            subset = right.selectbox(
                _("Dialogues to translate"),
                SUBSETS,
                format_func={
                    name: _(SUBSET_WORDS[name]) if name in SUBSET_WORDS else name
                    for name in SUBSETS
                }.__getitem__,
            )
            limit = right.number_input(
                _("Translate the first N of them (0 = all)"),
                0,
                len(dataset),
                min(5, len(dataset)),
                key=state.RUNS_TRANSLATE_LIMIT,
            )
            greedy = right.checkbox(_("Greedy decoding (temperature 0)"), value=True)
            started = st.form_submit_button(_("Start the translation as a background job"))
        st.caption(
            _(
                "One call per text (the situation, then each turn), so the speaker structure "
                "and the turn count stay the source's. Each dialogue is kept as it comes back: "
                "a job stopped or killed halfway asks only for the rest when it runs again, "
                "and the variant's next version is made at the end. Command line: `koed "
                "translate run --variant en-from-ko --model NAME --subset paper-100`."
            )
        )
        if not started:
            return
        params = TranslateJob(
            variant=variant,
            model=model,
            subset=subset,
            limit=int(limit) or None,
            temperature=0.0 if greedy else None,
            dataset_sha256=dataset.sha256,
        )
        jobs_panel.start(params, registry[model])
