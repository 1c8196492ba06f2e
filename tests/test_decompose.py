"""Language or culture? The gap split over the four cells (issue 65): hand-computed values,
the two paths summing to the total, planted effects recovered end to end, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fixtures.fake_openai import FakeOpenAI
from fixtures.planted_cells import PLANTED, TRUE, planted_cells
from koed_core.cli import main
from koed_core.results import gaps
from koed_core.results.decompose import as_json, decompose, runs_frame


def _frame(rows: dict[str, dict[str, float]], model: str = "m", metric: str = "EX") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": model, "metric": metric, "conv_id": conv, "lang": lang, "value": value}
            for conv, cells in rows.items()
            for lang, value in cells.items()
        ]
    )


def _effects(result) -> dict[tuple[str, str], float]:  # type: ignore[no-untyped-def]
    return {(r.effect, r.held_fixed): r.estimate for r in result.effects.itertuples()}


def test_known_values_and_both_paths_sum_to_the_total() -> None:
    # d1: en 4, en-from-ko 3, ko-from-en 4, ko 2; d2: en 5, en-from-ko 5, ko-from-en 3, ko 2
    # language (Western) = mean(4-4, 3-5) = -1; language (Korean) = mean(2-3, 2-5) = -2
    # content (English) = mean(3-4, 5-5) = -0.5; content (Korean) = mean(2-4, 2-3) = -1.5
    # interaction = -2 - (-1) = -1 = -1.5 - (-0.5); total = mean(2-4, 2-5) = -2.5
    # d3 lacks ko-from-en: left out of every number.
    frame = _frame(
        {
            "d1": {"en": 4, "en-from-ko": 3, "ko-from-en": 4, "ko": 2},
            "d2": {"en": 5, "en-from-ko": 5, "ko-from-en": 3, "ko": 2},
            "d3": {"en": 1, "en-from-ko": 1, "ko": 5},
        }
    )
    result = decompose(frame)
    got = _effects(result)
    assert got == pytest.approx(
        {
            ("language_effect", "western_content"): -1.0,
            ("language_effect", "korean_content"): -2.0,
            ("language_effect", "average_over_content"): -1.5,
            ("content_effect", "in_english"): -0.5,
            ("content_effect", "in_korean"): -1.5,
            ("content_effect", "average_over_language"): -1.0,
            ("interaction", ""): -1.0,
            ("total_gap", ""): -2.5,
        }
    )
    total = got[("total_gap", "")]
    assert got[("language_effect", "western_content")] + got[
        ("content_effect", "in_korean")
    ] == pytest.approx(total, abs=1e-12)
    assert got[("content_effect", "in_english")] + got[
        ("language_effect", "korean_content")
    ] == pytest.approx(total, abs=1e-12)
    assert set(result.effects["n"]) == {2}
    assert result.incomplete["left_out"].tolist() == [1]
    cells = dict(zip(result.cells["lang"], result.cells["mean"], strict=True))
    assert cells == {"en": 4.5, "en-from-ko": 4.0, "ko-from-en": 3.5, "ko": 2.0}


def test_one_dialogue_has_no_interval_and_a_missing_cell_no_row() -> None:
    one = decompose(_frame({"d1": {"en": 4, "en-from-ko": 3, "ko-from-en": 4, "ko": 2}}))
    assert one.effects["ci_low"].isna().all() and len(one.effects) == 8
    three = decompose(_frame({"d1": {"en": 4, "en-from-ko": 3, "ko": 2}}))
    assert three.effects.empty and three.cells.empty
    with pytest.raises(ValueError, match="unknown cell"):
        decompose(_frame({"d1": {"en": 4, "fr": 3}}))


def test_a_model_lacking_a_cell_is_left_out_before_any_pivot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Most stores hold ko and en only, and the Gap page splits on every run: a pivot per
    run and metric there (48 on the bench's database, 0.2 s) only to find a cell missing."""
    ko_en = pd.concat(
        _frame({f"d{i}": {"en": 4, "ko": 2} for i in range(5)}, model, metric)
        for model in ("a", "b")
        for metric in ("EX", "CA")
    )
    whole = _frame({"d1": {"en": 4, "en-from-ko": 3, "ko-from-en": 4, "ko": 2}}, "c")
    pivots: list[int] = []
    real = pd.DataFrame.pivot_table

    def counted(self: pd.DataFrame, *args: object, **kwargs: object) -> pd.DataFrame:
        pivots.append(len(self))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pd.DataFrame, "pivot_table", counted)
    result = decompose(pd.concat([ko_en, whole]))
    assert pivots == [4]  # model c's four cells only
    assert set(result.effects["model"]) == {"c"} and set(result.incomplete["model"]) == {"c"}


def test_runs_of_one_model_pool_their_cells_but_never_answer_one_twice() -> None:
    base = {"model": "m", "metric": "EX", "source": "judge", "protocol": "direct"}
    base["prompt_set"] = "native"
    rows = [
        {**base, "run_id": "a", "conv_id": "d1", "lang": "ko", "value": 2},
        {**base, "run_id": "a", "conv_id": "d1", "lang": "en", "value": 4},
        {**base, "run_id": "b", "conv_id": "d1", "lang": "en-from-ko", "value": 3},
        {**base, "run_id": "b", "conv_id": "d1", "lang": "ko-from-en", "value": 3},
    ]
    frame = pd.DataFrame(rows)
    pooled = decompose(runs_frame(frame, ["a", "b"], "judge"))
    assert _effects(pooled)[("total_gap", "")] == -2
    twice = pd.DataFrame([*rows, {**rows[0], "run_id": "b"}])
    with pytest.raises(ValueError, match="runs a and b of m both answer ko"):
        runs_frame(twice, ["a", "b"], "judge")
    other = pd.DataFrame([*rows[:2], *[{**r, "protocol": "single"} for r in rows[2:]]])
    with pytest.raises(ValueError, match="differ in protocol"):
        runs_frame(other, ["a", "b"], "judge")
    with pytest.raises(ValueError, match="run c has no judge scores"):
        runs_frame(frame, ["a", "c"], "judge")


@pytest.mark.slow
def test_planted_effects_are_recovered_inside_their_intervals(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A planted model answers each cell at a known mean (language and content markers
    decide it) and a planted judge reads it with noise: every effect's 95% interval holds
    its planted value, the cells' means are near theirs, and the judge was shown the
    translated dialogue the model saw."""
    store, run_id = planted_cells(tmp_path / "k.db", fake_openai, count=40)
    frame = gaps.score_frame(store, judge=_judge(store, run_id))
    result = decompose(runs_frame(frame, [run_id], "judge"))
    assert set(result.effects["metric"]) == {"EX", "CA"}
    for row in result.effects.itertuples():
        planted = PLANTED[(row.effect, row.held_fixed)]
        assert row.ci_low <= planted <= row.ci_high, (row.metric, row.effect, row.held_fixed)
        assert row.n == 40
    for row in result.cells.itertuples():
        assert abs(row.mean - TRUE[row.lang]) < 0.4, (row.metric, row.lang)
    judged = [r for r in fake_openai.requests if "Score" in r["messages"][0]["content"]]
    shown = [r["messages"][-1]["content"] for r in judged]
    assert any("Translated line 1 [korean content]" in text for text in shown)
    assert any("번역된 말 1 [western content]" in text for text in shown)


def _judge(store, run_id):  # type: ignore[no-untyped-def]
    from koed_core.results import score_sources

    choice = score_sources.choose_judge(store, [run_id])
    assert choice is not None
    return choice.config


@pytest.mark.slow
def test_koed_gap_decompose_prints_and_writes_json_in_words(
    tmp_path: Path, fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.db"
    _store, run_id = planted_cells(db, fake_openai, count=12)
    assert main(["gap", "--decompose", "--run", run_id, "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["metric"] for d in data} == {"EX", "CA"}
    first = data[0]
    assert set(first["language_effect"]) == {
        "western_content",
        "korean_content",
        "average_over_content",
    }
    assert set(first["content_effect"]) == {"in_english", "in_korean", "average_over_language"}
    assert set(first["interaction"]) == {"estimate", "ci_low", "ci_high", "n"}
    assert first["runs"] == [run_id] and first["dialogues"] == 12
    path = first["language_effect"]["western_content"]["estimate"]
    path += first["content_effect"]["in_korean"]["estimate"]
    assert path == pytest.approx(first["total_gap"]["estimate"])
    assert set(first["cell_means"]) == {"en", "en-from-ko", "ko-from-en", "ko"}
    assert main(["gap", "--decompose", "--run", run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "language_effect (western_content)" in out and "interaction" in out
    assert main(["gap", "--decompose", "--run", "nope", "--db", str(db)]) == 1
    assert "no run nope in k.db" in capsys.readouterr().err
    assert main(["gap", "--decompose", "--db", str(db)]) == 1
    assert "--run RUN" in capsys.readouterr().err


def test_as_json_names_what_each_effect_holds_fixed() -> None:
    frame = _frame(
        {
            "d1": {"en": 4, "en-from-ko": 3, "ko-from-en": 4, "ko": 2},
            "d2": {"en": 5, "en-from-ko": 5, "ko-from-en": 3, "ko": 2},
        }
    )
    [item] = as_json(decompose(frame), {"m": ["run-1"]})
    assert item["interaction"]["estimate"] == pytest.approx(-1.0)
    assert item["language_effect"]["korean_content"]["n"] == 2
    assert item["dialogues_left_out"] == 0


@pytest.mark.slow
def test_the_gap_page_answers_language_or_culture(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    """The Empathy gap page draws the section for a run with the four cells: its chart,
    the cell means, every effect named in words with its interval, and who translated."""
    from streamlit.testing.v1 import AppTest

    from components.core import state

    planted_cells(tmp_path / "koed.db", fake_openai, count=12)  # KOED_DB (conftest)
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Language or culture?" in [s.value for s in at.subheader]
    captions = " ".join(c.value for c in at.caption)
    # the caption is shown literally (md): its hyphens are escaped in the markdown source
    shown = captions.replace("\\", "")
    assert "en-from-ko v1, its latest change by planted translator; 0 turns checked" in shown
    effects = next(d.value for d in at.dataframe if "effect" in d.value.columns)
    assert "Language effect, Korean content" in set(effects["effect"])
    assert "Total gap (Korean minus English)" in set(effects["effect"])
    cells = next(d.value for d in at.dataframe if "en-from-ko" in d.value.columns)
    assert set(cells["metric"]) == {"EX", "CA"}
    at.toggle(key=state.TALK).set_value(True).run()  # talk mode: the split beside the gap
    assert not at.exception, [e.value for e in at.exception]
    titles = [json.loads(c.proto.spec)["layout"]["title"] for c in at.get("plotly_chart")]
    assert any("Language or culture?" in str(t) for t in titles)


@pytest.mark.slow
def test_the_paper_export_holds_the_split_and_its_chart(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    from koed_core.results.decompose_export import DECOMPOSE_FILES
    from koed_core.results.paper_export import export_bundle, listed_files

    store, run_id = planted_cells(tmp_path / "k.db", fake_openai, count=12)
    out = tmp_path / "export"
    export_bundle(store, out)
    assert set(DECOMPOSE_FILES) <= set(listed_files((out / "README.md").read_text()))
    rows = pd.read_csv(out / "language_or_culture.csv")
    effects = rows[rows["kind"] == "effect"]
    assert set(effects["run_id"]) == {run_id} and set(effects["metric"]) == {"EX", "CA"}
    frame = gaps.score_frame(store, judge=_judge(store, run_id))
    expected = decompose(runs_frame(frame, [run_id], "judge")).effects
    got = effects.set_index(["metric", "effect", effects["held_fixed"].fillna("")])["estimate"]
    for row in expected.itertuples():
        assert got[(row.metric, row.effect, row.held_fixed)] == pytest.approx(row.estimate)
    assert set(rows[rows["kind"] == "cell"]["lang"]) == {"en", "en-from-ko", "ko-from-en", "ko"}
    assert (out / "language_or_culture.svg").read_text().startswith("<svg")


def _people_and_judge(seed: int = 3, count: int = 200, rated: int = 60) -> pd.DataFrame:
    """People score each cell at its planted mean plus the dialogue's level and noise; the
    judge reads people's score with noise but 0.8 too low in ko-from-en (a judge that
    misreads translated Korean): judge and people differ in the language effect."""
    from fixtures.planted_cells import TRUE

    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        level = rng.normal(0, 0.5)
        for lang, mean in TRUE.items():
            person = mean + level + rng.normal(0, 0.3)
            judged = person + rng.normal(0, 0.3) - (0.8 if lang == "ko-from-en" else 0.0)
            base = {"model": "m", "metric": "EX", "conv_id": f"d{i:03d}", "lang": lang}
            rows.append(base | {"source": "judge", "value": judged})
            if i < rated:
                rows.append(base | {"source": "raters", "value": person})
    return pd.DataFrame(rows)


def test_ppi_splits_the_gap_paired_by_dialogue_and_its_paths_still_sum() -> None:
    """PPI++ for the four cells: each effect a mean of per-dialogue values, the judge on
    every dialogue corrected by people on those rated in all four; one lambda (the total
    gap's, as ppi-python tunes it) for all, so both paths sum exactly to the total gap."""
    import ppi_py

    from koed_core.results.decompose_ppi import decompose_ppi

    frame = _people_and_judge()
    result = decompose_ppi(frame, {})
    got = _effects(result)
    western, korean = ("language_effect", "western_content"), ("content_effect", "in_korean")
    assert got[western] + got[korean] == pytest.approx(got[("total_gap", "")], abs=1e-12)
    assert got[("content_effect", "in_english")] + got[
        ("language_effect", "korean_content")
    ] == pytest.approx(got[("total_gap", "")], abs=1e-12)
    total = result.effects.set_index(["effect", "held_fixed"]).loc[("total_gap", "")]
    assert (total["n"], total["N_judge"]) == (60, 200)
    # the total gap's interval is ppi-python's own (lambda tuned by ppi_mean_ci itself)
    wide = {s: frame[frame["source"] == s].pivot(index="conv_id", columns="lang", values="value")
            for s in ("judge", "raters")}  # fmt: skip
    judge_gap = (wide["judge"]["ko"] - wide["judge"]["en"]).to_numpy()
    people_gap = (wide["raters"]["ko"] - wide["raters"]["en"]).to_numpy()
    low, high = ppi_py.ppi_mean_ci(people_gap, judge_gap[:60], judge_gap[60:], alpha=0.05)
    assert (total["ci_low"], total["ci_high"]) == pytest.approx((low[0], high[0]))
    # the judge's bias in ko-from-en is corrected: PPI's interval holds people's value
    # over all 200 dialogues (-0.2, the planted one), the judge alone's (-1.0) is far off
    ppi_row = result.effects.set_index(["effect", "held_fixed"]).loc[western]
    judge_only = _effects(decompose(frame[frame["source"] == "judge"]))[western]
    assert ppi_row["ci_low"] <= -0.2 <= ppi_row["ci_high"] and judge_only < ppi_row["ci_low"]
    assert set(result.cells["lang"]) == {"en", "en-from-ko", "ko-from-en", "ko"}


def test_ppi_split_is_refused_for_dialogues_chosen_by_hand() -> None:
    from koed_core.results.decompose_ppi import decompose_ppi

    result = decompose_ppi(_people_and_judge(count=20, rated=8), {}, refusal="chosen by hand")
    assert result.effects["estimate"].isna().all()
    assert set(result.effects["note"]) == {"chosen by hand"}


@pytest.mark.slow
def test_koed_gap_decompose_by_people_and_by_ppi_from_a_study_of_the_four_cells(
    tmp_path: Path, fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """A study built on the four-cell run holds its variant replies; people rate them (a
    Korean rater ko and ko-from-en, an English rater en and en-from-ko, each reply at its
    planted quality); `--estimator human` and `--estimator ppi` split the gap from them."""
    import re

    from fixtures.planted_cells import planted_dialogues
    from koed_core.db import RaterProfile, Sampling, StudyConfig
    from koed_core.rating.studies import StudyRules

    db = tmp_path / "k.db"
    store, run_id = planted_cells(db, fake_openai, count=12)
    ratings = StudyRules(store)
    design = Sampling(method="random", seed=1, size=6)
    config = StudyConfig(
        name="cells", run_ids=(run_id,), overlap=1, attention_checks=0, sampling=design
    )
    study = ratings.create_study(config, planted_dialogues(12))
    for lang in ("ko", "en"):
        ratings.save_profile(RaterProfile(lang, (lang,), lang, 30.0, 30.0))
        ratings.mark_calibrated(lang)
        while (item := ratings.next_item(study, lang)) is not None:
            quality = float(re.findall(r"quality (\d+\.\d+)", item.response)[0])
            score = int(min(5, max(1, round(quality))))
            ratings.save_rating(
                item.assignment_id, lang, dict.fromkeys(("EX", "IP", "ER", "EEA", "CA"), score)
            )
    base = ["gap", "--decompose", "--run", run_id, "--db", str(db), "--study", str(study)]
    assert main([*base, "--estimator", "human", "--json"]) == 0
    people = {d["metric"]: d for d in json.loads(capsys.readouterr().out)}
    assert people["EX"]["dialogues"] == 6 and people["EX"]["estimator"] == "human"
    assert main([*base, "--estimator", "ppi", "--json"]) == 0
    both = {d["metric"]: d for d in json.loads(capsys.readouterr().out)}
    first = both["EX"]
    assert first["estimator"] == "ppi" and (first["dialogues"], first["dialogues_judged"]) == (
        6,
        12,
    )
    path = first["language_effect"]["western_content"]["estimate"]
    path += first["content_effect"]["in_korean"]["estimate"]
    assert path == pytest.approx(first["total_gap"]["estimate"])
    assert main([*base, "--estimator", "ppi"]) == 0
    out = capsys.readouterr().out
    assert "PPI++ (the judge corrected by people)" in out and "n 6 / N 12 dialogues" in out
