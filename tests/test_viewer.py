"""One viewer decides what results may be shown, and forgetting it shows less, never more.

The database is a copy of the 0.1.0 fixture: both of its runs are under study 1, which is
still open, and both have judge scores and ratings.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from koed_core.db import Store
from koed_core.rating.studies import StudyRules
from koed_core.results.viewer import Viewer, blind_viewer, viewer_for

RUNS = {"9d350d301481ea01a307", "aaf4aab98055d3fe0f7d"}


def test_the_viewer_says_no_to_what_it_was_not_told_about(site: Path) -> None:
    store = Store(site)
    visitor, admin = blind_viewer(store), viewer_for("admin", store)
    assert visitor.hidden_runs == RUNS and visitor.published_studies == frozenset()
    assert not any(visitor.allowed("see-run", run) for run in RUNS)
    assert visitor.allowed("see-run", "a-run-under-no-study")
    assert not visitor.allowed("see-run", None)
    assert not visitor.allowed("see-study", 1) and not visitor.allowed("see-words")
    assert not visitor.allowed("see-study", "1")  # a study id is an int, nothing else
    assert all(admin.allowed("see-run", run) for run in RUNS)
    assert admin.allowed("see-study", 1) and admin.allowed("see-words")
    frame = pd.DataFrame({"run_id": [*sorted(RUNS), "other", None]})
    assert list(visitor.shown(frame)["run_id"]) == ["other"]
    assert len(admin.shown(frame)) == 4
    # a rater and a visitor see the same, so they share what the pages keep
    assert viewer_for("rater", store).key() == visitor.key() != admin.key()
    StudyRules(store).close(1)
    published = blind_viewer(store)
    assert published.hidden_runs == frozenset() and published.allowed("see-study", 1)
    assert not published.allowed("see-words")  # closing publishes numbers, never words
    assert Viewer("rater", frozenset(), None).allowed("see-study", 1) is False


def _forgetful_results_page() -> None:
    """A results page written by someone who never heard of blinding: it calls every
    cached computation with what it has and shows all it gets."""
    import streamlit as st

    from components.core import computed, resources

    store = resources.store()
    judge = computed.judge_uses(store, None)[0].config
    frames = {
        "score_frame": computed.score_frame(store, judge, 1),
        "paper_table": computed.paper_table(store, "", judge),
        "turn_gap_table": computed.turn_gap_table(store, judge, 1),
        "agreement_table": computed.agreement_table(store, 1, judge),
        "disagreements": computed.disagreements(store, 1, judge, "ER"),
        "gap_estimates": computed.gap_estimates(store, 1, judge).estimates,
        "artefact": computed.gap_estimates(store, 1, judge).artefact,
    }
    for name, frame in frames.items():
        st.subheader(name)
        st.dataframe(frame)


def _shown(at: AppTest) -> dict[str, pd.DataFrame]:
    names = [h.value for h in at.subheader]
    return dict(zip(names, [d.value for d in at.dataframe], strict=True))


@pytest.mark.slow
def test_a_results_page_that_never_mentions_the_rule_shows_nothing_of_an_open_study(
    site: Path,
) -> None:
    at = AppTest.from_function(_forgetful_results_page, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _shown(at)
    assert len(shown) == 7
    for name, frame in shown.items():
        assert frame.empty or not RUNS & set(frame.get("run_id", pd.Series()).astype(str)), name
        assert not any(run in frame.to_csv() for run in RUNS), name
    assert shown["score_frame"].empty and shown["agreement_table"].empty
    assert shown["disagreements"].empty
    # the same page once the study is closed: the numbers were there, and are published
    StudyRules(Store(site)).close(1)
    after = _shown(AppTest.from_function(_forgetful_results_page, default_timeout=60).run())
    assert set(after["score_frame"]["run_id"]) >= RUNS
    assert not after["agreement_table"].empty
    assert after["disagreements"].empty  # words stay an admin's even then
