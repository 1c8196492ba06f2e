"""Which scores a number is made of: choosing one judge configuration and one study.

A gap or an agreement figure is computed from exactly one source. When nobody says
which, the most recent judge configuration that scored the chosen runs (and the most
recently rated study) is taken, and the caller says so next to the number. A choice that
matches nothing is refused with the list of what there is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from koed_core.db import JudgeConfig, JudgeConfigUse, Judgments, Ratings, Store
from koed_core.errors import KoedError
from koed_core.i18n import _


class ChoiceError(KoedError):
    """A requested judge configuration or study does not exist; the message lists those that do."""


@dataclass(frozen=True)
class JudgeChoice:
    """The configuration used, and the others that also matched (shown, never mixed in)."""

    config: JudgeConfig
    others: tuple[JudgeConfig, ...]


def _listing(uses: Sequence[JudgeConfigUse]) -> str:
    return "\n".join(
        f"  - {u.config.model} --mode {u.config.mode} --prompt-version "
        f"{u.config.prompt_version} (rubric {u.config.rubric_version}, {u.judgments} "
        f"judgments, last {u.last})"
        for u in uses
    )


def choose_judge(
    store: Store,
    run_ids: Sequence[str] | None = None,
    *,
    model: str | None = None,
    mode: str | None = None,
    prompt_version: str | None = None,
    template: str | None = None,
    parse: str | None = None,
) -> JudgeChoice | None:
    """The most recent judge configuration that scored these runs and fits the filters.

    Returns None when nothing was judged and no filter was given.

    Raises:
        ChoiceError: a filter matches no configuration (the message lists them all).
    """
    uses = Judgments(store).configs(run_ids)
    matches = [
        u
        for u in uses
        if (model is None or u.config.model == model)
        and (mode is None or u.config.mode == mode)
        and (prompt_version is None or u.config.prompt_version.startswith(prompt_version))
        and (template is None or u.config.template == template)
        and (parse is None or u.config.parse == parse)
    ]
    if not matches:
        if not uses and not any((model, mode, prompt_version, template, parse)):
            return None
        asked = ", ".join(
            f"{name} {value}"
            for name, value in (
                ("judge", model),
                ("mode", mode),
                ("prompt version", prompt_version),
                ("template", template),
                ("parse", parse),
            )
            if value
        )
        available = _listing(uses) if uses else "  (no judgments stored yet)"
        raise ChoiceError(f"no judge configuration with {asked}; available:\n{available}")
    return JudgeChoice(matches[0].config, tuple(u.config for u in matches[1:]))


def choose_study(store: Store, study_id: int | None = None) -> int | None:
    """The study whose ratings are used: the one asked for, else the most recently rated.

    Raises:
        ChoiceError: the asked study has no ratings (the message lists those that do).
    """
    rated = Ratings(store).studies_with_ratings()
    if study_id is None:
        return int(rated[0]["id"]) if rated else None
    if any(int(s["id"]) == study_id for s in rated):
        return study_id
    listing = "\n".join(
        f"  - {s['id']}: {s['name']} ({s['raters']} raters, rubric {s['rubric_version']})"
        for s in rated
    )
    raise ChoiceError(
        f"study {study_id} has no ratings; studies with ratings:\n{listing or '  (none yet)'}"
    )


def study_runs(store: Store, study_id: int) -> list[str]:
    """The runs whose responses a study's raters rated."""
    return sorted(set(Ratings(store).long_scores(study_id)["run_id"]))


def study_label(store: Store, study_id: int) -> str:
    """How a study is named next to its numbers."""
    row = Ratings(store).study(study_id)
    if row:
        return _("study {id}: {name}", id=study_id, name=row["name"])
    return _("study {id}", id=study_id)
