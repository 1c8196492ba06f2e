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


ROLES = ("visitor", "rater", "annotator", "admin")


@pytest.fixture
def shared_runs(tmp_path: Path) -> tuple[Store, dict[str, int], tuple[str, str]]:
    """Three rated studies of the planted pipeline's two runs (west, korean): "shared" is
    closed and holds both, "open" is still being rated and holds west too, "closed"
    holds korean alone and is closed. The issue's case is "shared": a closed study whose
    runs also belong to an open one."""
    from fixtures.planted import planted_store, rate_another
    from koed_core.db import Sampling, StudyConfig

    planted = planted_store(tmp_path / "koed.db", dialogues=24, fraction=0.5)
    west, korean = planted.run_ids
    store, rules = planted.store, StudyRules(planted.store)
    sample = Sampling(method="random", seed=3, size=8)
    studies = {
        "shared": planted.study_id,
        "open": rate_another(
            store, StudyConfig(name="open", run_ids=(west,), overlap=1, sampling=sample)
        ),
        "closed": rate_another(
            store, StudyConfig(name="closed", run_ids=(korean,), overlap=1, sampling=sample)
        ),
    }
    rules.close(studies["shared"])
    rules.close(studies["closed"])
    return store, studies, (west, korean)


# Who sees which study's numbers: the runs in its gap, for a visitor, a rater and an
# annotator (one answer: none of them may see more than a visitor) and for an admin.
WHO_SEES = {
    "shared": ({"west", "korean"}, {"west", "korean"}),  # closed = published, west too
    "closed": ({"korean"}, {"korean"}),
    "open": (set(), {"west"}),  # being rated: nothing, for everyone but an admin
}


@pytest.mark.slow
def test_who_sees_which_studys_numbers(
    shared_runs: tuple[Store, dict[str, int], tuple[str, str]],
) -> None:
    from components.core import computed
    from fixtures.planted import JUDGE

    store, studies, (west, korean) = shared_runs
    names = {west: "west", korean: "korean"}
    for role in ROLES:
        viewer = viewer_for(role, store)
        for study, seen in WHO_SEES.items():
            expected, study_id = seen[role == "admin"], studies[study]
            result = computed.gap_estimates(store, study_id, JUDGE, viewer)
            assert {names[r] for r in result.estimates["run_id"]} == expected, (role, study)
            assert {names[r] for r in result.artefact["run_id"]} == expected, (role, study)
            frame = computed.score_frame(store, JUDGE, study_id, viewer)
            rated = frame[frame["source"] == "raters"]
            assert {names[r] for r in rated["run_id"]} == expected, (role, study)
            assert set(frame["run_id"].map(names)) >= expected  # the judge's scores beside
            inputs = computed.agreement_inputs(store, study_id, JUDGE, viewer)
            assert inputs.ratings.empty == (not expected), (role, study)
            assert viewer.allowed("see-study", study_id) == (role == "admin" or study != "open")
        # numbers of no one study (the paper's table): the run decides, west is under "open"
        alone = computed.score_frame(store, JUDGE, None, viewer)
        everyone = {"west", "korean"} if role == "admin" else {"korean"}
        assert set(alone["run_id"].map(names)) == everyone, role


@pytest.mark.slow
def test_a_visitor_reads_a_closed_studys_gap_though_an_open_study_shares_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site_accounts: Path
) -> None:
    """The issue's case: as admin the artefact table held every pair, while a visitor
    read "No single-reply scores yet" and "no dialogue has both scores"."""
    import shutil

    from fixtures.planted import planted_store, rate_another
    from koed_core.db import Sampling, StudyConfig

    shutil.copy(site_accounts, tmp_path / "accounts.yaml")  # accounts: nobody signed in
    monkeypatch.setenv("KOED_USERS", str(tmp_path / "accounts.yaml"))
    monkeypatch.setenv("KOED_COOKIE_KEY", "k" * 40)
    planted = planted_store(tmp_path / "koed.db", dialogues=24, fraction=0.5)  # KOED_DB
    sample = Sampling(method="random", seed=3, size=8)
    config = StudyConfig(name="open", run_ids=planted.run_ids[:1], overlap=1, sampling=sample)
    rate_another(planted.store, config)  # still being rated, west's responses in it
    StudyRules(planted.store).close(planted.study_id)
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(m.value for m in [*at.info, *at.caption])
    assert "No single-reply scores" not in said and "still being rated" not in said
    side = next(d.value for d in at.dataframe if "ppi_estimate" in d.value.columns)
    assert len(side) == 2 * 5  # both runs (west under the open study too), five dimensions
    at.switch_page("app_pages/results/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "No dialogue has both" not in " ".join(c.value for c in at.caption)
    artefact = at.dataframe[-1].value
    assert "judge_minus_people" in artefact.columns
    assert len(artefact) == 2 * 5  # both runs, five dimensions, all raters


@pytest.mark.slow
def test_runs_hidden_from_a_visitor_never_read_as_missing(site: Path) -> None:
    """Every run of the 0.1.0 site is under its open study: a visitor is told the numbers
    wait for the study to close, not to run `koed run` (an admin sees them)."""
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(i.value for i in at.info)
    assert "No scores you may see yet: 2 run(s) belong to a study still being rated" in said
    assert "No single-reply scores yet" not in said and "koed run" not in said
