"""Language or culture, the last pieces (issue 65): the variant version in the Runs table,
whole-episode studies of variant episodes, and the four-cell plan's dry run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import Runs, Store
from koed_core.db.variants import Variants
from koed_core.judge.rubric import codes
from tests.test_variant_studies import four_cell_run

ROOT = Path(__file__).resolve().parents[1]


def test_the_runs_table_names_the_variant_version_each_run_read(tmp_path: Path) -> None:
    """A run in a variant reads one version of it: the stored-runs table says which, on
    the variant's own row (ko and en rows name none)."""
    store = Store(tmp_path / "k.db")
    run_id = four_cell_run(store)
    versions = {v.variant: v for v in Variants(store).versions()}
    rows = Runs(store).runs()
    read = dict(zip(rows["lang"], rows["variant"], strict=True))
    assert read["ko-from-en"] == f"ko-from-en v1 · {versions['ko-from-en'].id}"
    assert read["en-from-ko"] == f"en-from-ko v1 · {versions['en-from-ko'].id}"
    assert pd.isna(read["ko"]) and pd.isna(read["en"])
    assert set(rows["run_id"]) == {run_id}


def test_the_runs_page_shows_the_variant_column_when_a_run_read_one(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    four_cell_run(Store(tmp_path / "koed.db"))  # KOED_DB (conftest)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "lang" in d.value.columns)
    assert list(table.columns[:3]) == ["run", "lang", "variant"]
    named = dict(zip(table["lang"], table["variant"], strict=True))
    assert named["en-from-ko"].startswith("en-from-ko v1 · ")
    assert named["ko-from-en"].startswith("ko-from-en v1 · ")
    assert " v" not in str(named["ko"]) and " v" not in str(named["en"])


@pytest.mark.slow
def test_a_whole_episode_study_holds_the_variant_episodes_for_the_rater_of_their_language(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Episodes played in ko and ko-from-en: a study of whole episodes in Korean holds
    both (ko-from-en was left out: the study's languages were matched as cells), and the
    Korean rater reads the ko-from-en episode in the translation's own text."""
    from fixtures.rating import rater, study
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.variants import source_texts
    from koed_core.models.backends import make_client
    from koed_core.models.episodes import run_episodes
    from koed_core.models.registry import ModelSpec
    from koed_core.models.request import EpisodeRequest
    from koed_core.models.variant_texts import import_lines
    from koed_core.paths import SAMPLE_FILE

    store = Store(tmp_path / "koed.db")
    dataset = load_dataset(SAMPLE_FILE)
    first = dataset.dialogues[0]
    _situation, turns = source_texts(first, "ko-from-en")
    line = {"conv_id": first.conv_id, "variant": "ko-from-en", "situation": "번역된 상황"}
    line["turns"] = [f"번역 {n}" for n in range(len(turns))]
    import_lines(store, dataset, [json.dumps(line, ensure_ascii=False)], "J. Kim")
    listener, speaker = (
        ModelSpec(name=n, backend="openai", model=n, base_url=fake_openai.base_url)
        for n in ("fake", "fake-speaker")
    )
    report = run_episodes(
        store,
        (listener, make_client(listener, "k")),
        (speaker, make_client(speaker, "k")),
        [first],
        dataset.sha256,
        EpisodeRequest("fake", speaker="fake-speaker", langs=("ko", "ko-from-en"), turns=2),
    )
    assert report.failed == 0
    ratings, study_id = study(
        store, report.run_id, whole_episodes=True, attention_checks=0, langs=("ko",)
    )
    rater(ratings, "mina", ("ko",))
    seen = {}
    while (item := ratings.next_item(study_id, "mina")) is not None:
        seen[item.lang] = item
        ratings.save_rating(item.assignment_id, "mina", dict.fromkeys(codes(), 3), "")
    assert set(seen) == {"ko", "ko-from-en"} and {i.kind for i in seen.values()} == {"episode"}
    variant = [text for role, text in seen["ko-from-en"].context]
    assert variant[0] == "번역 0" and seen["ko"].context[0][1] != "번역 0"


def _translated(dialogues: list, variant: str) -> list[str]:  # type: ignore[type-arg]
    from koed_core.dialogues.variants import source_texts

    lines = []
    for d in dialogues:
        situation, turns = source_texts(d, variant)
        line = {"conv_id": d.conv_id, "variant": variant, "situation": "T " + situation}
        line["turns"] = ["T " + t for t in turns]
        lines.append(json.dumps(line, ensure_ascii=False))
    return lines


@pytest.mark.slow
def test_the_four_cell_plan_s_dry_run_says_which_variant_versions_its_runs_would_read(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`koed reproduce plans/language-or-culture.toml --dry-run`: before the variants
    exist it names each missing one with the command (and requests) that makes it, and
    exits 1; once they exist it names each version, who made it and how many of the
    plan's 100 dialogues it translates (a thin version makes a thin cell)."""
    from koed_core.cli import main
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.subsets import select
    from koed_core.models.variant_texts import import_lines

    db = tmp_path / "k.db"
    plan = str(ROOT / "plans" / "language-or-culture.toml")
    args = ["reproduce", plan, "--dry-run", "--data", str(official_file), "--db", str(db)]
    assert main(args) == 1
    out = capsys.readouterr()
    assert "800 requests" in out.out  # the listener's: 4 cells x 100 dialogues x 2 calls
    assert (
        "en-from-ko: no version yet; make it first: koed translate run --variant en-from-ko "
        "--model MODEL --subset paper-100 (" in out.out
    )
    assert "the plan cannot run yet" in out.err
    dataset = load_dataset(official_file)
    chosen = list(select(dataset.dialogues, "paper-100"))
    store = Store(db)
    import_lines(store, dataset, _translated(chosen, "en-from-ko"), "J. Kim")
    import_lines(store, dataset, _translated(chosen[:3], "ko-from-en"), "J. Kim")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "by J. Kim (person): 100 of the 100 dialogues\n" in out
    assert "by J. Kim (person): 3 of the 100 dialogues; 97 not translated would be left out" in out


def _rated_study(store: Store, run_id: str, count: int, size: int) -> int:
    """A random study of ``size`` of the run's dialogues, its four cells rated at the
    planted quality (a Korean rater ko and ko-from-en, an English one en and en-from-ko)."""
    import re

    from fixtures.planted_cells import planted_dialogues
    from koed_core.db import RaterProfile, Sampling, StudyConfig
    from koed_core.rating.studies import StudyRules

    ratings = StudyRules(store)
    design = Sampling(method="random", seed=1, size=size)
    config = StudyConfig(
        name="cells", run_ids=(run_id,), overlap=1, attention_checks=0, sampling=design
    )
    study = ratings.create_study(config, planted_dialogues(count))
    for lang in ("ko", "en"):
        ratings.save_profile(RaterProfile(lang, (lang,), lang, 30.0, 30.0))
        ratings.mark_calibrated(lang)
        while (item := ratings.next_item(study, lang)) is not None:
            quality = float(re.findall(r"quality (\d+\.\d+)", item.response)[0])
            score = int(min(5, max(1, round(quality))))
            ratings.save_rating(item.assignment_id, lang, dict.fromkeys(codes(), score))
    return study


@pytest.mark.slow
def test_the_gap_page_splits_the_gap_by_people_and_by_ppi_when_a_study_covers_the_cells(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A study rated 6 of the 12 dialogues in all four cells: the Language or culture?
    section offers judge only, people only and PPI++ (PPI++ first, as the gap section),
    says n rated and N judged, and each estimator's table is over its own dialogues."""
    from streamlit.testing.v1 import AppTest

    from fixtures.planted_cells import planted_cells

    store, run_id = planted_cells(tmp_path / "koed.db", fake_openai, count=12)  # KOED_DB
    _rated_study(store, run_id, 12, 6)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    picker = at.radio(key="gap.decompose.estimator")
    assert list(picker.options) == [
        "judge only",
        "people only",
        "PPI++ (judge corrected by people)",
    ]
    assert picker.value == "ppi"
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "people rated 6 dialogues of this run in all four cells (n); the judge scored 12" in (
        captions
    )

    def effects() -> pd.DataFrame:
        return next(d.value for d in at.dataframe if "effect" in d.value.columns)

    ppi = effects()
    assert set(ppi["n"]) == {6} and set(ppi["N_judge"]) == {12}
    total = ppi[ppi["effect"] == "Total gap (Korean minus English)"]
    assert total["estimate"].notna().all()
    assert ((total["ci_low"] <= total["estimate"]) & (total["estimate"] <= total["ci_high"])).all()
    picker.set_value("human").run()
    assert not at.exception, [e.value for e in at.exception]
    assert set(effects()["n"]) == {6} and "N_judge" not in effects().columns
    at.radio(key="gap.decompose.estimator").set_value("judge").run()
    assert set(effects()["n"]) == {12}
