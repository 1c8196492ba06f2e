"""A translation job: ``koed translate run`` as data (issue 65), started from the Runs page
or the Annotate page's variant section and carried out by a worker, resumable: each
dialogue is kept as it comes back, and the same job taken over after a kill asks only for
the dialogues not kept yet (``koed_core.models.translate``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from koed_core.db import Store
from koed_core.dialogues.subsets import SUBSETS, select
from koed_core.dialogues.variants import VARIANTS
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    job_client,
    job_dataset,
    told,
)
from koed_core.models.request import dialogues_said

SUMMARY = N_(
    "{variant} v{version}: {translated} dialogues ({kept} kept from an interrupted pass), "
    "{failed} failed"
)
SUMMARY_NONE = N_("{variant}: nothing translated, {failed} dialogues failed")
SUMMARY_STOPPED = N_(
    "{variant}: stopped with {kept} dialogues kept; the same job started again asks only for "
    "the rest"
)
SUMMARIES = (SUMMARY, SUMMARY_NONE, SUMMARY_STOPPED)


@dataclass(frozen=True)
class TranslateJob:
    """``koed translate run`` as data: one model translating the chosen dialogues into a
    variant, stored as the variant's next version at the end."""

    kind: ClassVar[str] = "translate"
    variant: str
    model: str
    subset: str = "full"
    sample: int | None = None
    seed: int = 0
    limit: int | None = None
    prompts: str | None = None
    """A translation prompt file (None: the shipped one)."""
    temperature: float | None = 0.0
    """None: the model's own default."""
    max_tokens: int | None = None
    """The cap per text (None: 512; each text gets about three tokens a source character)."""
    data: str | None = None
    dataset_sha256: str | None = None

    def label(self) -> str:
        """The job as people read it, in the page's language (English in a worker)."""
        return _(
            "translate {variant} with {model}: {dialogues}",
            variant=self.variant,
            model=self.model,
            dialogues=dialogues_said(self.subset, self.limit, self.sample, self.seed),
        )

    def problems(self) -> list[str]:
        """What the engine would refuse later, each in a sentence naming the setting."""
        found = []
        if self.variant not in VARIANTS:
            found.append(
                _("{name} must be one of {choices}", name="variant", choices=", ".join(VARIANTS))
            )
        if self.subset not in SUBSETS:
            found.append(
                _("{name} must be one of {choices}", name="subset", choices=", ".join(SUBSETS))
            )
        if self.prompts is not None:
            from koed_core.models.translate import load_translate_prompt

            try:
                load_translate_prompt(self.prompts)
            except KoedError as err:
                found.append(_("translation prompt: {error}", error=err))
        return found

    def stored(self) -> dict[str, Any]:
        """The parameters as the job's row keeps them."""
        return asdict(self)

    def identity(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """Two jobs with the same parameters do the same work (a double press)."""
        return self.kind, tuple(sorted(asdict(self).items()))


def execute_translate(params: TranslateJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed translate run` does with the same parameters: the dialogues kept by an
    interrupted pass are taken as they are, the rest asked, the version made at the end."""
    from koed_core.models.client import GenerationSettings
    from koed_core.models.translate import (
        MAX_TOKENS_CAP,
        TranslateAsk,
        load_translate_prompt,
        translate_all,
    )

    spec = env.resolve(params.model)
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    chosen = select(dataset.dialogues, params.subset, sample=params.sample, seed=params.seed)
    chosen = chosen[: params.limit] if params.limit else chosen
    prompt = load_translate_prompt(params.prompts or "translate")
    settings = GenerationSettings(
        temperature=params.temperature, max_tokens=params.max_tokens or MAX_TOKENS_CAP
    )
    decoding = "model default" if params.temperature is None else params.temperature
    hooks.say(
        f"{params.variant} by {spec.name}: {len(chosen)} dialogues of "
        f"{Path(dataset.path).name}, prompt {prompt.version}, temperature {decoding}"
    )
    with job_client(env, spec, store, hooks) as client:
        report = translate_all(
            store,
            client,
            spec,
            chosen,
            dataset.sha256,
            TranslateAsk(params.variant, prompt, settings),
            hooks=hooks,
        )
    data: dict[str, Any] = {"errors": dict(report.failed), "kept": report.kept}
    if report.stopped:
        kept = report.kept + report.translated  # this pass's too: kept, no version yet
        summary, said = told(SUMMARY_STOPPED, variant=params.variant, kept=kept)
    elif report.version is None:
        summary, said = told(SUMMARY_NONE, variant=params.variant, failed=len(report.failed))
    else:
        version = report.version
        data |= {"version_id": version.id, "version": version.version}
        summary, said = told(
            SUMMARY,
            variant=params.variant,
            version=version.version,
            translated=report.translated,
            kept=report.kept,
            failed=len(report.failed),
        )
    return Result(summary, data | said, len(report.failed), report.stopped)
