"""The Alternative Annotator Test (issue 64 item 2): the definitions by hand, a planted
judge that can replace a rater and one that cannot, and the cases with no test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_1samp
from statsmodels.stats.multitest import multipletests

from koed_core.results import alt_test


def _planted(judge_noise: float, raters: int = 5, items: int = 80, seed: int = 4):
    """``raters`` raters score every item around its latent quality (noise 0.9, whole
    scores 1-5); the judge reads the latent quality with ``judge_noise``."""
    rng = np.random.default_rng(seed)
    latent = rng.uniform(1.5, 4.5, items)
    rows = [
        {"item": f"i{n}", "rater": f"r{r}", "dimension": "ER", "lang": "ko",
         "score": int(np.clip(np.rint(latent[n] + rng.normal(0, 0.9)), 1, 5))}
        for n in range(items) for r in range(raters)
    ]  # fmt: skip
    judge = pd.DataFrame(
        {"item": [f"i{n}" for n in range(items)], "dimension": "ER",
         "score": np.clip(latent + rng.normal(0, judge_noise, items), 1, 5)}
    )  # fmt: skip
    return pd.DataFrame(rows), judge


def test_wins_follow_the_definition_on_one_item() -> None:
    # raters a=2, b=4, c=4; judge 4. Leaving a out: others (4, 4): judge RMSE 0, a's 2,
    # the judge wins alone. Leaving b out: others (2, 4): judge RMSE sqrt(2), b's sqrt(2):
    # a tie, both win. Same for c.
    ratings = pd.DataFrame({"item": ["i"] * 3, "rater": ["a", "b", "c"], "score": [2, 4, 4]})
    found = alt_test.wins(ratings, pd.Series({"i": 4.0})).set_index("rater")
    assert found.loc["a", "judge_wins"] and not found.loc["a", "rater_wins"]
    assert found.loc["b", "judge_wins"] and found.loc["b", "rater_wins"]


def test_a_judge_that_reads_quality_better_than_a_rater_passes() -> None:
    ratings, judge = _planted(judge_noise=0.2)
    table = alt_test.alt_test_table(ratings, judge)
    row = table.iloc[0]
    assert row["passes"] and row["winning_rate"] >= 0.5 and row["raters_tested"] == 5
    assert "could replace" in row["alt_test_reading"]
    # the winning rate is Benjamini-Yekutieli over the raters' one-sided t-tests, by hand
    found = alt_test.wins(ratings.drop(columns=["dimension", "lang"]),
                          judge.set_index("item")["score"])  # fmt: skip
    p = []
    for _rater, mine in found.groupby("rater"):
        diff = mine["rater_wins"].astype(float) - mine["judge_wins"].astype(float)
        p.append(ttest_1samp(diff, alt_test.EPSILON, alternative="less").pvalue)
    expected = multipletests(p, alpha=0.05, method="fdr_by")[0].mean()
    assert row["winning_rate"] == pytest.approx(expected)
    alone = alt_test.alt_test(ratings, judge.set_index("item")["score"])
    order = list(pd.unique(found["rater"]))  # the p-values come in first-seen order
    by_name = dict(zip(sorted(order), p, strict=True))
    assert alone.p_values == pytest.approx([by_name[r] for r in order])
    advantage = found.groupby("rater")["judge_wins"].mean().mean()
    assert row["advantage_probability"] == pytest.approx(advantage)


def test_a_judge_that_reads_little_cannot_replace_a_rater() -> None:
    ratings, judge = _planted(judge_noise=2.5)
    row = alt_test.alt_test_table(ratings, judge).iloc[0]
    assert row["passes"] is False or row["passes"] == False  # noqa: E712
    assert row["winning_rate"] < 0.5 and "cannot replace" in row["alt_test_reading"]


def test_too_few_raters_or_items_is_said_never_a_number() -> None:
    ratings, judge = _planted(judge_noise=0.2, raters=2)
    row = alt_test.alt_test_table(ratings, judge).iloc[0]
    assert row["winning_rate"] is None or pd.isna(row["winning_rate"])
    assert row["alt_test_reading"].startswith("undefined") and row["raters_tested"] == 2
    few, judge = _planted(judge_noise=0.2, items=12)
    row = alt_test.alt_test_table(few, judge).iloc[0]
    assert row["alt_test_reading"].startswith("undefined") and row["raters_tested"] == 0
    assert row["advantage_probability"] is not None  # the measure needs no test


def test_groups_get_rows_of_their_own() -> None:
    ratings, judge = _planted(judge_noise=0.2, raters=6)
    groups = {f"r{r}": "native ko" if r < 3 else "not native ko" for r in range(6)}
    table = alt_test.alt_test_table(ratings, judge, groups)
    assert list(table["group"]) == ["all", "native ko", "not native ko"]
    assert list(table["raters"]) == [6, 3, 3]


@pytest.mark.slow
def test_koed_agreement_the_page_and_the_export_carry_the_test(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 64 item 2: in `koed agreement`, on the Agreement page and in the paper
    export; on the planted study (two ratings an item, 15 items a rater and cell) every
    row says why there is no test, never a number."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from fixtures.planted import planted_store
    from koed_core.cli import main
    from koed_core.rating.studies import StudyRules
    from koed_core.results.paper_export import listed_files

    planted = planted_store(tmp_path / "koed.db", dialogues=60, fraction=0.4)  # KOED_DB
    StudyRules(planted.store).close(planted.study_id)
    db = ["--db", planted.store.path]
    assert main(["agreement", "--study", str(planted.study_id), *db]) == 0
    said = capsys.readouterr().out
    assert "Alternative Annotator Test" in said and "undefined:" in said
    out = tmp_path / "bundle"
    assert main(["export", "--out", str(out), "--no-images", *db]) == 0
    exported = pd.read_csv(out / "alt_test.csv")
    assert set(exported["study_id"]) == {planted.study_id} and exported["winning_rate"].isna().all()
    assert "alt_test.csv" in listed_files((out / "README.md").read_text(encoding="utf-8"))
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=90).run()
    at = at.switch_page("app_pages/results/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Could the judge replace one of the raters?" in [s.value for s in at.subheader]
    assert "Alternative Annotator Test (CSV)" in [b.label for b in at.get("download_button")]
