"""The gap three ways on the pages (AppTest, on the planted pipeline): the Gap page's
estimator choice with PPI++ named in the chart title, captions and file names; the
Agreement page's judge-minus-people table per rater group; the Studies page's design
choice and planner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from components.core.literal import md
from fixtures.planted import planted_store
from koed_core.rating.studies import StudyRules
from tests.test_rating_pages import _as, accounts  # noqa: F401 - the fixture is used by name

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def planted(tmp_path: Path):
    found = planted_store(tmp_path / "koed.db", dialogues=60, fraction=0.4)  # KOED_DB (conftest)
    StudyRules(found.store).close(found.study_id)  # published: visitors see it
    return found


def _page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    return at.switch_page(page).run()


def _titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


@pytest.mark.slow
def test_the_gap_page_offers_three_estimates_and_names_ppi(planted) -> None:
    at = _page("app_pages/results/gap.py")
    assert not at.exception, [e.value for e in at.exception]
    choice = next(r for r in at.radio if r.label == "Estimate")
    assert choice.value == "ppi" and list(choice.options) == [
        "judge only",
        "people only",
        "PPI++ (judge corrected by people)",
    ]
    assert any(t.startswith("PPI++ (judge corrected by people): Korean minus") for t in _titles(at))
    captions = " ".join(c.value for c in at.caption)
    shown = "Shown: " + md("PPI++ (judge corrected by people)")  # literal on the page
    assert shown in captions and "mean of its k ratings" in captions
    assert "uniform random sample of 24 of 60" in captions
    labels = [b.label for b in at.get("download_button")]
    assert "PPI++ (judge corrected by people) (CSV)" in labels
    side = next(d.value for d in at.dataframe if "ppi_estimate" in d.value.columns)
    assert {"judge_estimate", "human_estimate", "n_effective"} <= set(side.columns)
    assert len(side) == 2 * 5
    choice.set_value("judge").run()
    assert any(t.startswith("judge only: Korean minus") for t in _titles(at))
    assert "judge only (CSV)" in [b.label for b in at.get("download_button")]


@pytest.mark.slow
def test_the_agreement_page_asks_whether_the_gap_is_a_judge_artefact(planted) -> None:
    at = _page("app_pages/results/agreement.py")
    assert not at.exception, [e.value for e in at.exception]
    assert "Is the gap a judge artefact?" in [s.value for s in at.subheader]
    table = at.dataframe[-1].value
    assert {"judge_minus_people", "ci_low", "ci_high"} <= set(table.columns)
    ca = table[table["metric"] == "CA"]
    assert (ca["judge_minus_people"] > 0.5).all()  # the planted +1 on Korean CA
    raters = next(s for s in at.segmented_control if s.label == "Raters")
    raters.set_value("native ko").run()
    assert not at.exception
    assert len(at.dataframe[-1].value) == 10


@pytest.mark.slow
def test_the_studies_page_plans_and_builds_a_random_study(planted, accounts: Path) -> None:  # noqa: F811
    at = _as("boss")
    at.switch_page("app_pages/rating/studies.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Plan the next batch" in [s.value for s in at.subheader]
    captions = " ".join(c.value for c in at.caption)
    assert "more dialogues with PPI++" in captions
    at.text_input[0].input("second")
    at.multiselect[0].set_value(list(planted.run_ids))
    next(s for s in at.selectbox if s.label == "Which dialogues").set_value("random")
    next(n for n in at.number_input if n.label.startswith("Dialogues in the sample")).set_value(10)
    next(b for b in at.button if b.label == "Create study").click().run()
    assert not at.exception, [e.value for e in at.exception]
    config = StudyRules(planted.store).config(2)
    assert config.sampling.method == "random" and len(config.sampling.conv_ids) == 10
    assert config.bilingual == "separate"  # a ko+en study's default: no rater sees both
    listed = next(d.value for d in at.dataframe if "sampling" in d.value.columns)
    assert listed["sampling"].str.contains("uniform random sample of 10").any()


@pytest.mark.slow
def test_the_gap_page_says_why_ppi_is_refused(tmp_path: Path) -> None:
    manual = planted_store(tmp_path / "koed.db", dialogues=40, method="manual")
    StudyRules(manual.store).close(manual.study_id)
    at = _page("app_pages/results/gap.py")
    assert not at.exception, [e.value for e in at.exception]
    assert any("PPI refused" in w.value and "chosen by hand" in w.value for w in at.warning)
    assert not any(t.startswith("PPI++") for t in _titles(at))  # no chart of a refused PPI
    next(r for r in at.radio if r.label == "Estimate").set_value("human").run()
    assert any(t.startswith("people only: Korean minus") for t in _titles(at))


@pytest.mark.slow
def test_the_studies_page_offers_an_active_batch_beside_the_uniform_one(
    planted,
    accounts: Path,  # noqa: F811
) -> None:
    """Issue 64 item 4: "koed study plan --build --active (and the Studies page)". Beside
    the uniform batch's button the planner says in words what an active batch does and
    its planned size; a judge with one score per response is refused in one sentence; with
    strict-mode samples the batch is added and every probability stored."""
    from koed_core.db import Inclusions
    from tests.test_active_batch import _add_samples

    at = _as("boss")
    at.switch_page("app_pages/rating/studies.py").run()
    next(n for n in at.number_input if n.label.startswith("Interval width")).set_value(0.8).run()
    assert not at.exception, [e.value for e in at.exception]
    uniform = next(b for b in at.button if b.label.startswith("Add the next"))
    size = int(uniform.label.split()[3])
    assert size > 0
    active = next(b for b in at.button if b.label.startswith("Add an active batch"))
    assert active.label == f"Add an active batch of about {size} dialogues"
    assert not active.disabled
    said = " ".join(c.value for c in at.caption)
    assert f"Or an active batch: about {size} dialogues" in said
    assert "least sure of" in said and "probability is stored" in said
    unsure = next(s for s in at.selectbox if s.label == "Where the judge is unsure")
    assert unsure.options[0] == "the judge's own strict-mode samples"
    active.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error] == [
        md(
            "the judge gave one score per response, so nothing says where it is unsure: judge "
            "the runs in strict mode with two or more samples, or name a second judge "
            "configuration to compare with"
        )
    ]
    assert Inclusions(planted.store).probabilities(planted.study_id) == {}
    _add_samples(planted.store, planted.judge)  # the judge's means move: so may the size
    at.run()
    active = next(b for b in at.button if b.label.startswith("Add an active batch"))
    size = int(active.label.split()[-2])
    active.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.success[0].value.startswith("Added ")
    assert f"(about {size} planned), drawn with known probabilities" in at.success[0].value
    stored = Inclusions(planted.store).probabilities(planted.study_id)
    assert len(stored) == 60 and len(set(stored.values())) > 1
    assert StudyRules(planted.store).config(planted.study_id).sampling.method == "active"
