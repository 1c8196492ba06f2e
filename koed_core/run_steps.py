"""The pipeline steps of a run, each declared once: the one list everything else reads.

A pipeline step is a named choice between a dataset turn and a scored answer (what the
KoED authors' scripts did beside prompting: see :mod:`koed_core.models.pipeline` for what
each one does). Its declaration here says everything the rest of the app needs to know
about it: its values, the value runs had before it was a choice (so a stored run without
it keeps its id and its meaning), the authors' value, whether it only reads a stored answer
another way, and its words for a form, a label and ``--help``.

Built from this list, with no other edit: the request's fields and so the command line's
flags, the Runs form's pickers and its table's columns, the run's stored provenance and
its id (``RunConfig``), the SQL that reads the steps back, run labels, job descriptions,
the sensitivity table's variants, a plan's keys, the paper export and the paper tables.

This module sits below ``db`` (the stored provenance reads it) and imports only the
shared ``i18n``. Everything reads the list through :func:`declared` when it runs, except
the request classes, whose fields are made when ``koed_core.models.request`` is imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from koed_core.i18n import N_


@dataclass(frozen=True)
class PipelineStep:
    """One step's declaration."""

    name: str
    """Its key everywhere: the request field, ``--name`` (dashes), the stored config."""
    choices: tuple[str, ...]
    before: str
    """What runs did before the step was a choice: the native profile's value, and what a
    stored run without the key means (left out of a run's id when so)."""
    authors: tuple[str, ...]
    """The authors' value (the paper profile's) first, then any other value that is also
    theirs (a sensitivity base may have either)."""
    said: str
    """The step in an English sentence: labels, job lines, the sensitivity table."""
    label: str
    """The form's and the Runs table's heading (marked for translation)."""
    words: Mapping[str, str]
    """Each value as the form shows it (marked for translation)."""
    help: str
    """``--help`` and the Runs table's column help (the command line's English)."""
    rereads: bool = False
    """Only reads a stored answer another way (no model call): a run changing only such
    steps starts from another run's raw answers instead of asking the model again."""
    judged_same: bool = False
    """With ``rereads``: the judged text stays byte for byte the base's (only emotion
    recognition moves), so the base's verdicts hold for it."""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():  # it is a column name in SQL and a flag
            raise ValueError(f"a pipeline step's name is an identifier, not {self.name!r}")
        if self.before not in self.choices or not set(self.authors) <= set(self.choices):
            raise ValueError(f"step {self.name}: before and authors must be among its choices")
        if self.judged_same and not self.rereads:
            raise ValueError(f"step {self.name}: judged_same is for a step that rereads")


PIPELINE_STEPS: tuple[PipelineStep, ...] = (
    PipelineStep(
        name="postprocess",
        choices=("authors", "authors-repr", "none"),
        before="none",
        authors=("authors", "authors-repr"),
        said="post-processing",
        label=N_("Post-processing"),
        words={
            "authors": N_("the authors' way"),
            "authors-repr": N_("the authors' way, literally (their open models' repr)"),
            "none": N_("none"),
        },
        help="authors: judge what their post-processing kept (per model family); none: all",
        rereads=True,
    ),
    PipelineStep(
        name="commas",
        choices=("raw", "decoded"),
        before="decoded",
        authors=("raw",),
        said="commas",
        label=N_("Commas"),
        words={"raw": N_("as in the file"), "decoded": N_("decoded")},
        help="raw: English with _comma_ as the file has it",
    ),
    PipelineStep(
        name="emotion_reader",
        choices=("authors", "extended"),
        before="extended",
        authors=("authors",),
        said="emotion reader",
        label=N_("Emotion reader"),
        words={"authors": N_("the authors' way"), "extended": N_("extended")},
        help="authors: English label names and 정/한 only; extended: Korean glosses too",
        rereads=True,
        judged_same=True,
    ),
)
"""Every step, in the order forms, flags and labels show them. A new step is one entry
here and its own code in ``koed_core.models.pipeline``."""


def declared() -> tuple[PipelineStep, ...]:
    """The steps as declared now (read when used, so nothing holds a stale copy)."""
    return PIPELINE_STEPS


def step_names() -> tuple[str, ...]:
    """The steps' names, in their order."""
    return tuple(s.name for s in declared())


def step_named(name: str) -> PipelineStep:
    """The declaration of step ``name``.

    Raises:
        KeyError: no such step.
    """
    for step in declared():
        if step.name == name:
            return step
    raise KeyError(name)


def earlier_steps() -> dict[str, str]:
    """Each step's value before it was a choice (what a run without the key did)."""
    return {s.name: s.before for s in declared()}


def authors_steps() -> dict[str, str]:
    """The authors' value of each step (the paper profile)."""
    return {s.name: s.authors[0] for s in declared()}


def stored_steps(config: Mapping[str, Any]) -> dict[str, str]:
    """A stored run's steps: each its stored value, or (a run made before the step was a
    choice) its earlier value, which is what that run did."""
    return {s.name: str(config.get(s.name) or s.before) for s in declared()}


def rereads_only(names: Iterable[str]) -> bool:
    """Whether changing these settings only reads stored answers another way (each one
    a step that rereads; no model is asked)."""
    steps = {s.name: s for s in declared()}
    return all(n in steps and steps[n].rereads for n in names)


def judged_same(names: Iterable[str]) -> bool:
    """Whether changing these settings leaves every judged text as it was (each one a
    step whose reading leaves the judged text alone)."""
    steps = {s.name: s for s in declared()}
    return all(n in steps and steps[n].judged_same for n in names)


def steps_said(values: Mapping[str, str]) -> str:
    """Steps in an English sentence ("post-processing none, commas raw"), in the
    declared order: labels, job lines and tables say them so."""
    return ", ".join(f"{s.said} {values[s.name]}" for s in declared() if s.name in values)
