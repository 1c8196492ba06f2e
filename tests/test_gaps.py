"""The gap: hand-computed values and CIs, tables from a real database, empty states, export."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest
from koed_core.models.backends import make_client
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from koed_core.results import gaps, score_sources
from koed_core.results.decompose_export import DECOMPOSE_FILES
from koed_core.results.eval_card_export import CARD_FILES
from koed_core.results.paper_export import FILES, export_bundle, listed_files
from koed_core.results.ppi_export import PPI_FILES

ROOT = Path(__file__).resolve().parents[1]


def test_paired_gap_known_values() -> None:
    # en=[3,4,5], ko=[2,4,3]: differences -1, 0, -2 -> gap -1.0; every bootstrap mean of
    # three draws from {-2,-1,0} lies in [-2, 0].
    gap, low, high = gaps.paired_gap(np.array([3, 4, 5]), np.array([2, 4, 3]))
    assert gap == pytest.approx(-1.0)
    assert -2 <= low <= gap <= high <= 0
    same = gaps.paired_gap(np.array([1.0, 2, 3]), np.array([1.5, 2.5, 3.5]))
    assert same == pytest.approx((0.5, 0.5, 0.5))  # identical differences: no spread
    with pytest.raises(ValueError, match="both languages"):
        gaps.paired_gap(np.array([]), np.array([]))


def _frame(
    rows: list[tuple[str, str, str, float]], model: str = "m", provenance: str = "western"
) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run_id": f"run-{model}",
                "model": model,
                "provenance": provenance,
                "protocol": "single",
                "reference": 0,
                "source": "judge",
                "metric": metric,
                "conv_id": conv,
                "lang": lang,
                "value": value,
            }
            for conv, lang, metric, value in rows
        ]
    )


def test_gap_table_pairs_by_dialogue_and_breaks_down() -> None:
    frame = pd.concat(
        [
            _frame(
                [
                    ("c1", "en", "ER", 4),
                    ("c1", "ko", "ER", 3),
                    ("c2", "en", "ER", 5),
                    ("c2", "ko", "ER", 2),
                    ("c3", "en", "ER", 1),
                ]
            ),  # c3 has no Korean answer
            _frame(
                [
                    ("c1", "en", "ER", 3),
                    ("c1", "ko", "ER", 4),
                    ("c2", "en", "ER", 3),
                    ("c2", "ko", "ER", 4),
                ],
                model="exaone",
                provenance="korean-centric",
            ),
        ]
    )
    table = gaps.gap_table(frame).set_index("model")
    # m: (3-4 + 2-5)/2 = -2 over c1, c2 only; en mean over the same pairs = 4.5
    assert table.loc["m", "gap"] == pytest.approx(-2.0) and table.loc["m", "pairs"] == 2
    assert table.loc["m", "en"] == pytest.approx(4.5) and table.loc["m", "ko"] == pytest.approx(2.5)
    assert table.loc["exaone", "gap"] == pytest.approx(1.0)
    by_label = gaps.gap_table(frame, {"c1": ["sad", "lonely"], "c2": ["sad"]}, "label")
    m = by_label[by_label["model"] == "m"].set_index("label")
    assert m.loc["sad", "gap"] == pytest.approx(-2.0) and m.loc["lonely", "gap"] == pytest.approx(
        -1.0
    )
    assert m.loc["lonely", "pairs"] == 1


def _store_with_runs(db: Path, server: FakeOpenAI) -> Store:
    store = Store(db)
    dataset = load_dataset(SAMPLE_FILE)
    for spec in (
        ModelSpec(
            name="fake-west",
            backend="openai",
            model="m",
            base_url=server.base_url,
            provenance="western",
        ),
        ModelSpec(name="human", backend="human"),
    ):
        run_benchmark(
            store,
            make_client(spec),
            spec,
            dataset.dialogues[:6],
            dataset.sha256,
            RunRequest(spec.name, langs=("ko", "en"), protocol="single"),
        )
    judge = ModelSpec(name="fake-judge", backend="openai", model="j", base_url=server.base_url)
    for run_id in [r["id"] for r in store.db.query("select id from runs")]:
        judge_run(
            store, make_client(judge), judge, JudgeRequest(run_id, judge=judge.name, mode="paper")
        )
    return store


@pytest.mark.slow
def test_score_frame_from_a_real_database(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = _store_with_runs(tmp_path / "koed.db", fake_openai)
    choice = score_sources.choose_judge(store)
    assert choice is not None
    frame = gaps.score_frame(store, judge=choice.config)
    assert set(frame["source"]) == {"judge", "emotion"}
    assert set(frame.loc[frame["source"] == "emotion", "model"]) == {"fake-west"}  # human: unscored
    table = gaps.gap_table(frame)
    human = table[table["model"] == "human"]
    assert set(human["reference"]) == {1} and set(human["metric"]) == {
        "EX",
        "IP",
        "ER",
        "EEA",
        "CA",
    }
    emotion = table[(table["source"] == "emotion")].iloc[0]
    # the fake always answers "sad"; none of dialogues 1-6 has sad in its gold set: 0 vs 0
    assert (emotion["en"], emotion["ko"], emotion["gap"]) == (0.0, 0.0, 0.0)


@pytest.mark.slow
def test_export_folder_holds_what_its_readme_lists(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = _store_with_runs(tmp_path / "koed.db", fake_openai)
    out = tmp_path / "export"
    files = export_bundle(store, out)
    readme = (out / "README.md").read_text()
    every = sorted([*FILES, *PPI_FILES, *DECOMPOSE_FILES, *CARD_FILES])  # three ways, split, card
    assert sorted(listed_files(readme)) == sorted(p.name for p in out.iterdir()) == every
    assert all(p.stat().st_size > 0 for p in files)
    png = Image.open(io.BytesIO((out / "gap_judge.png").read_bytes()))
    assert png.format == "PNG" and png.size == (1200, 700)
    svg = (out / "gap_judge.svg").read_text()
    assert (
        svg.startswith("<svg") and "fake-west (western)" in svg and "human (human reference)" in svg
    )
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["dataset_sha256"] == [load_dataset(SAMPLE_FILE).sha256]
    assert "mina" not in (out / "raters.json").read_text()


@pytest.mark.slow
def test_cli_export(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    _store_with_runs(tmp_path / "koed.db", fake_openai)
    result = subprocess.run(
        [sys.executable, "-m", "koed_core.cli", "export", "--out", str(tmp_path / "paper")]
        + ["--no-images"],
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    every = [*FILES, *PPI_FILES, *DECOMPOSE_FILES, *CARD_FILES]
    tables = sorted(name for name in every if not name.endswith((".svg", ".png")))
    assert f"wrote {len(tables)} files" in result.stdout
    # --no-images: the README lists what is there and says the charts were not drawn
    readme = (tmp_path / "paper" / "README.md").read_text(encoding="utf-8")
    assert sorted(listed_files(readme)) == sorted(p.name for p in (tmp_path / "paper").iterdir())
    assert sorted(listed_files(readme)) == tables
    assert "Chart images were not drawn" in readme


def _page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    return at.switch_page(page).run()


@pytest.mark.slow
def test_gap_and_demo_pages_explain_empty_states() -> None:
    gap = _page("app_pages/results/gap.py")
    assert "koed run --model smollm2 --lang ko,en" in gap.info[0].value
    demo = _page("app_pages/results/demo.py")
    assert "Store two runs in both languages" in demo.info[0].value
    assert not gap.exception and not demo.exception


@pytest.mark.slow
def test_gap_page_with_runs(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    _store_with_runs(tmp_path / "koed.db", fake_openai)  # KOED_DB (conftest)
    at = _page("app_pages/results/gap.py")
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart")
    judged = at.dataframe[-1].value  # the numbers behind the chart: the judge first
    assert set(judged["source"]) == {"judge"} and set(judged["model"]) == {"fake-west", "human"}
    at.selectbox(key="gap.source").set_value("emotion").run()
    table = at.dataframe[-1].value
    # the human reference names no emotion, so it is absent here
    assert set(table["model"]) == {"fake-west"} and set(table["source"]) == {"emotion"}
    at.selectbox(key="gap.breakdown").set_value("jeong/han vs the rest").run()
    assert not at.exception
    assert [b.label for b in at.get("download_button")] == [
        "Table (CSV)",
        "Chart (PNG)",
        "Chart (SVG)",
        "Export for a paper (zip)",
    ]


@pytest.mark.slow
def test_demo_page_replays_stored_answers(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    _store_with_runs(tmp_path / "koed.db", fake_openai)
    at = _page("app_pages/results/demo.py")
    at.slider(key="demo.pace").set_value(40)
    at.button(key="demo.play").click().run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert "That sounds really hard. Do you want to tell me more about it?" in texts
    assert any(t.startswith("Speaker") is False and "정말 속상했겠다" in t for t in texts)
    assert any("Replay of stored answers" in c.value for c in at.main.caption)


@pytest.mark.slow
def test_demo_live_mode_asks_the_runs_models(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    _store_with_runs(tmp_path / "koed.db", fake_openai)
    requests_before = len(fake_openai.requests)
    at = _page("app_pages/results/demo.py")
    at.toggle(key="demo.live").set_value(True).run()
    at.button(key="demo.ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the fake-west run's model answered live in both languages; the human reference replays
    assert len(fake_openai.requests) - requests_before == 2
    assert "That sounds really hard. Do you want to tell me more about it?" in [
        t.value for t in at.text
    ]
    assert any(c.value.startswith("Live:") for c in at.main.caption)


def test_one_pair_has_no_confidence_interval() -> None:
    gap, low, high = gaps.paired_gap(np.array([3.0]), np.array([4.0]))
    assert gap == 1.0 and low is None and high is None
    frame = pd.DataFrame(
        [
            {
                "run_id": "r",
                "model": "m",
                "provenance": "western",
                "protocol": "single",
                "reference": 0,
                "source": "emotion",
                "metric": "emotion",
                "conv_id": "c1",
                "lang": lang,
                "value": value,
            }
            for lang, value in (("en", 1.0), ("ko", 0.0))
        ]
    )
    row = gaps.gap_table(frame).iloc[0]
    assert row["pairs"] == 1 and pd.isna(row["ci_low"]) and "no CI: 1 pair" in row["ci_note"]


@pytest.mark.slow
def test_a_zero_gap_is_drawn_and_the_talk_style_fits_a_slide() -> None:
    from koed_core.db import JudgeConfig
    from koed_core.results.figures import gap_figure

    rows = [
        {"run_id": "r1", "run_label": "m · single", "model": "m", "provenance": "western",
         "protocol": "single", "prompt_set": "paper", "reference": False, "metric": metric,
         "gap": gap, "en": 3.0, "ko": 3.0 + gap, "pairs": 10, "ci_low": gap - 0.1,
         "ci_high": gap + 0.1}
        for metric, gap in (("EX", 0.0), ("IP", -0.4))
    ]  # fmt: skip
    judge = JudgeConfig("gpt-4o", "paper", "54a51469" * 8, "47c2cc18" * 8)
    page = gap_figure(pd.DataFrame(rows), "gap", talk=False, subtitle=f"judge {judge.label}")
    slide = gap_figure(pd.DataFrame(rows), "gap", talk=True, subtitle=f"judge {judge.spoken}")
    bar = page.data[0]
    assert list(bar.y) == [0.0, -0.4] and bar.marker.line.width >= 2  # 0 shows as a line
    assert slide.layout.font.size > page.layout.font.size
    assert slide.layout.legend.orientation == "h"  # under the bars, not beside them
    assert "54a51469" not in slide.layout.title.subtitle.text
    assert "gpt-4o, paper mode" in slide.layout.title.subtitle.text


@pytest.mark.slow
def test_a_study_being_rated_keeps_its_models_from_visitors(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While fake-west's answers are being rated, a visitor (a worker typing /gap) sees
    neither its name nor its scores; the admin sees both; once the study closes, all do."""
    from koed_core.db import StudyConfig
    from koed_core.rating import accounts
    from koed_core.rating.studies import StudyRules

    store = _store_with_runs(tmp_path / "koed.db", fake_openai)
    users = tmp_path / "accounts.yaml"
    accounts.add_user(users, "boss", "admin", "Boss", "boss-password-1")
    monkeypatch.setenv("KOED_USERS", str(users))
    monkeypatch.setenv("KOED_COOKIE_KEY", "k" * 40)
    west = store.rows("select id from runs where name = 'fake-west'")[0]["id"]
    study_id = StudyRules(store).create_study(
        StudyConfig(name="open", run_ids=(west,)), load_dataset(SAMPLE_FILE)
    )
    visitor = _page("app_pages/results/gap.py")
    assert not visitor.exception, [e.value for e in visitor.exception]
    shown = visitor.dataframe[-1].value
    assert set(shown["model"]) == {"human"}
    shown = visitor.caption[0].value.replace("\\", "")  # drawn through md(): escaped
    assert "1 run(s) in a study still being rated are left out" in shown
    paper = " ".join(str(d.value.to_dict()) for d in visitor.dataframe)
    assert "fake-west" not in paper
    admin = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    admin.session_state["authentication_status"] = True
    admin.session_state["username"] = "boss"
    admin.run()
    admin.switch_page("app_pages/results/gap.py").run()
    assert set(admin.dataframe[-1].value["model"]) == {"fake-west", "human"}
    StudyRules(store).close(study_id)
    visitor.run()
    assert set(visitor.dataframe[-1].value["model"]) == {"fake-west", "human"}
