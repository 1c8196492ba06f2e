"""The gap split into perception and response, on the scripted server: a
listener that names the gold emotion for some dialogues and answers well only then, a
judge that scores the good answer 5 and the other 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import AUTHORS_REPLY, FakeOpenAI
from koed_core.db import Judgments, Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest
from koed_core.models.backends import make_client
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from koed_core.results.perception import perception_table

ROOT = Path(__file__).resolve().parents[1]

DIALOGUES = load_dataset(SAMPLE_FILE).dialogues[:8]


def _gold(text: str) -> tuple[str, str, str] | None:
    """(conv_id, lang, gold label) of the dialogue a request quotes."""
    for d in DIALOGUES:
        for lang in ("en", "ko"):
            first = d.turns[0].en if lang == "en" else d.turns[0].ko
            if first and first in text:
                return d.conv_id, lang, sorted(d.labels)[0]
    return None


def _planted(body: dict[str, Any]) -> str | None:
    """English: the gold label named for every dialogue; Korean: for the even ones only.
    A reply after the right emotion says GOOD; the judge scores GOOD 5, anything else 2."""
    user = body["messages"][-1]["content"]
    if AUTHORS_REPLY in user:
        return f"Feedback: ok.\nScore: {5 if 'GOOD' in user.split(AUTHORS_REPLY)[-1] else 2}"
    found = _gold(user)
    if found is None:
        return None
    conv_id, lang, gold = found
    right = (
        lang == "en" or DIALOGUES.index(next(d for d in DIALOGUES if d.conv_id == conv_id)) % 2 == 0
    )
    if "Identified emotion:" in user:
        return "GOOD reply." if f"The Speaker feels {gold}." in user else "A reply."
    if "do not write the response yet" in user:
        return f"The Speaker feels {gold if right else 'nostalgic'}."
    return None


@pytest.mark.slow
def test_the_gap_splits_into_perception_and_response(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.reply_fn = _planted
    store = Store(tmp_path / "koed.db")  # the app's too (conftest)
    spec = ModelSpec(name="m", backend="openai", model="m", base_url=fake_openai.base_url)
    dataset = load_dataset(SAMPLE_FILE)
    report = run_benchmark(
        store,
        make_client(spec, None),
        spec,
        DIALOGUES,
        dataset.sha256,
        RunRequest(spec.name, langs=("en", "ko"), protocol="single", concurrency=2),
    )
    judge = ModelSpec(name="j", backend="openai", model="j", base_url=fake_openai.base_url)
    judge_run(
        store,
        make_client(judge, None),
        judge,
        JudgeRequest(report.run_id, judge=judge.name, mode="paper", concurrency=2),
    )
    [use] = Judgments(store).configs()
    table = perception_table(store, use.config)
    ex = table[(table["metric"] == "EX") & (table["emotion"] == "all")].set_index(["part", "lang"])
    assert ex.loc[("recognised minus missed", "ko"), "value"] == 3.0  # 5 - 2, planted
    assert ex.loc[("gap: both recognised", "ko-en"), "value"] == 0.0  # the response part
    assert ex.loc[("gap: missed in Korean", "ko-en"), "value"] == -3.0
    everything = ex.loc[("gap: all", "ko-en")]
    assert everything["value"] < 0 and everything["n"] == 8
    assert set(table["judge_model"]) == {"j"} and not pd.isna(everything["ci_low"])
    # per gold emotion: each label's dialogues split the same way (recognised 5, missed 2)
    per = table[(table["metric"] == "EX") & (table["emotion"] != "all")]
    labels = {label for d in DIALOGUES for label in d.labels}
    assert set(per["emotion"]) == labels
    for label, rows in per.groupby("emotion"):
        carrying = sum(label in d.labels for d in DIALOGUES)
        assert rows.set_index("part").loc["gap: all", "n"] == carrying
        both = rows[(rows["part"] == "recognised minus missed") & (rows["lang"] == "ko")]
        split = rows[(rows["lang"] == "ko") & rows["part"].isin(["recognised", "missed"])]
        if (split["n"] > 0).all():
            assert both["value"].iloc[0] == 3.0, label
    # ... on the Gap page, under the judge configuration, and in the export bundle
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at = at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(e.label.startswith("Perception or response") for e in at.expander)
    shown = [d.value for d in at.dataframe if "part" in d.value.columns]
    assert shown and "gap: both recognised" in set(shown[0]["part"])
    from koed_core.results.paper_export import export_bundle

    export_bundle(store, tmp_path / "bundle")
    exported = pd.read_csv(tmp_path / "bundle" / "perception.csv")
    assert set(exported["part"]) >= {"recognised minus missed", "gap: both recognised"}
