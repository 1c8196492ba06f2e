"""Whole episodes as study items: raters rate the Listener over a whole conversation, one
item per episode, as the whole-episode judge does (koed_core.judge.episodes). An episode
played in a translated variant (``ko-from-en``) is rateable like a variant reply: a study
in Korean holds it, and a Korean rater reads it, in the variant's own text."""

from __future__ import annotations

from koed_core.db import Runs, Store
from koed_core.db.types import StudyConfig
from koed_core.dialogues.variants import cells_in
from koed_core.i18n import _
from koed_core.judge.episodes import EpisodeText, episodes_of
from koed_core.rating.errors import RatingError


def episode_items(store: Store, config: StudyConfig) -> list[EpisodeText]:
    """Every episode of the study's runs in its languages, in run order: a language
    brings the variant written in it (``ko``: ``ko`` and ``ko-from-en``).

    Raises:
        RatingError: a chosen run is not an episode run, or no episode is there.
    """
    plain = [r for r in config.run_ids if not (Runs(store).run_config(r) or [{}])[0].get("turns")]
    if plain:
        raise RatingError(
            _(
                "whole episodes are rated from episode runs only; not episode runs: {runs}",
                runs=", ".join(plain),
            )
        )
    cells = cells_in(config.langs)
    found = [e for run in config.run_ids for e in episodes_of(store, run) if e.lang in cells]
    if not found:
        raise RatingError(_("the chosen runs have no episode in these languages"))
    return found
