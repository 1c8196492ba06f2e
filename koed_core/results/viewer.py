"""Who is looking at the results, and the one decision of what they may see.

While a study is open, no page a visitor, rater or crowd worker can reach names the models
of its runs or shows numbers about them (DESIGN.md, "Who sees what"). What may be shown is
decided per study: a closed study is published, with its runs, even where an open study
holds the same runs (its gap and the judge artefact are the closed study's numbers; the
open study's ratings stay closed). Outside any study's numbers (the paper's table, the
perception split, a demo) a run under an open study stays hidden. Every results path
asks :meth:`Viewer.allowed`, the way datasette asks its single ``allowed()``; the answer
to anything it was not told about is no. A viewer is built once per page from the
signed-in person with :func:`viewer_for`; code that has none uses :func:`blind_viewer`,
what a visitor gets, so forgetting the viewer shows less, never more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pandas as pd

from koed_core.db import Ratings, Store, StudyConfig

Action = Literal["see-run", "see-study", "see-words"]
"""What a page asks: a run's numbers and model name, a study's ratings, or words people
or models wrote about responses (response texts, judge rationales, raters' comments)."""


@dataclass(frozen=True)
class Viewer:
    """A person looking at results: their role and what is closed to them right now."""

    role: str
    """admin, rater, annotator or visitor (nobody signed in)."""
    hidden_runs: frozenset[str]
    """Runs with a response in a study still being rated (empty for an admin)."""
    published_studies: frozenset[int] | None
    """Studies whose ratings may be shown: the closed ones; None for every study (admins)."""
    published_runs: frozenset[tuple[int, str]] = frozenset()
    """(study, run) of each published study's runs: in that study's numbers they are
    shown, whatever other study also holds them."""

    @property
    def sees_all(self) -> bool:
        """An admin's view: every run, study and word."""
        return self.role == "admin"

    def allowed(self, action: Action, resource: str | int | None = None) -> bool:
        """May this viewer see ``resource`` (a run id or a study id) for ``action``?

        Args:
            action: what the page wants to show.
            resource: the run id for ``see-run``, the study id for ``see-study``.

        Returns:
            True for an admin; otherwise True only for a run under no open study, a
            closed study, and never for words about responses or an unknown action.
        """
        if self.sees_all:
            return True
        if action == "see-run":
            return resource is not None and str(resource) not in self.hidden_runs
        if action == "see-study":
            published = self.published_studies or frozenset()
            return isinstance(resource, int) and resource in published
        return False

    def hidden_in(self, study: int | None) -> frozenset[str]:
        """The runs left out of numbers about ``study`` (None: numbers of no one study).

        A published study's own runs are shown in its numbers; a study this viewer may
        not see shows none of the runs under an open study, its own among them.
        """
        if self.sees_all:
            return frozenset()
        if study is None or not self.allowed("see-study", study):
            return self.hidden_runs
        return self.hidden_runs - {run for s, run in self.published_runs if s == study}

    def shown(
        self, frame: pd.DataFrame, column: str = "run_id", study: int | None = None
    ) -> pd.DataFrame:
        """The rows of ``frame`` whose run (in ``column``) this viewer may see, in numbers
        about ``study`` (None: numbers of no one study, where the run decides)."""
        if self.sees_all or frame.empty:
            return frame
        # the rule of allowed("see-run"), vectorised: a score frame has many rows per run
        hidden = self.hidden_in(study)
        return frame[frame[column].notna() & ~frame[column].astype(str).isin(hidden)]

    def key(
        self,
    ) -> tuple[bool, tuple[str, ...], tuple[int, ...] | None, tuple[tuple[int, str], ...]]:
        """What the viewer sees, as a cache key: a rater and a visitor share entries."""
        published = (
            None if self.published_studies is None else tuple(sorted(self.published_studies))
        )
        runs = tuple(sorted(self.published_runs))
        return self.sees_all, tuple(sorted(self.hidden_runs)), published, runs


def viewer_for(role: str, store: Store) -> Viewer:
    """The viewer of a person with ``role`` (``visitor`` when nobody is signed in)."""
    if role == "admin":
        return Viewer("admin", frozenset(), None)
    ratings = Ratings(store)
    closed = [s for s in ratings.studies() if s["closed"]]
    runs = frozenset(
        (int(s["id"]), run) for s in closed for run in StudyConfig.from_json(s["config"]).run_ids
    )
    hidden = frozenset(ratings.runs_under_open_studies())
    return Viewer(role, hidden, frozenset(int(s["id"]) for s in closed), runs)


def blind_viewer(store: Store) -> Viewer:
    """What a visitor may see: the default of every results path given no viewer."""
    return viewer_for("visitor", store)
