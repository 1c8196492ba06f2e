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
        good = f"The Speaker feels {gold}." in user
        if lang == "ko":  # a Korean reply in Korean (one in English is set apart)
            return "GOOD 좋은 답변입니다." if good else "그냥 답변입니다."
        return "GOOD reply." if good else "A reply."
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

    export_bundle(store, tmp_path / "bundle", images=False)
    exported = pd.read_csv(tmp_path / "bundle" / "perception.csv")
    assert set(exported["part"]) >= {"recognised minus missed", "gap: both recognised"}


def _split_store(monkeypatch: Any) -> None:
    """Planted scores in place of a database: run r-single (emotion first) and r-direct
    (no emotion step) over ten dialogues; r-single names the gold emotion in English
    always and in Korean for the even dialogues, and scores 4 then, else 2; its Korean
    reply to c1 is written in English."""
    from koed_core.results import perception

    rows = []
    for run, protocol in (("r-single", "single"), ("r-direct", "direct")):
        for n in range(10):
            for lang in ("en", "ko"):
                seen = lang == "en" or n % 2 == 0
                common = {"run_id": run, "model": "m", "protocol": protocol, "conv_id": f"c{n}",
                          "lang": lang}  # fmt: skip
                score = 4.0 if seen else 2.0 + 0.1 * n
                rows.append({**common, "source": "judge", "metric": "EX", "value": score})
                if run == "r-single":
                    rows.append({**common, "source": "emotion", "metric": "emotion",
                                 "value": float(seen)})  # fmt: skip
    frame = pd.DataFrame(rows)
    replies = [
        {"run_id": "r-single", "conv_id": f"c{n}", "lang": lang,
         "text": "I hear you." if lang == "en" or n == 1 else "그랬구나, 많이 힘들었겠어요."}
        for n in range(10) for lang in ("en", "ko")
    ]  # fmt: skip

    class FakeRuns:
        def __init__(self, store: Any) -> None:
            pass

        def answered(self, run_ids: Any, langs: Any = None) -> list[dict[str, Any]]:
            return [r for r in replies if r["run_id"] in run_ids]

    monkeypatch.setattr(perception.gaps, "score_frame", lambda store, judge: frame)
    monkeypatch.setattr(perception, "gold_labels", lambda store: {})
    monkeypatch.setattr(perception, "Runs", FakeRuns, raising=False)


def test_a_direct_run_is_not_counted_as_missed_and_says_why(monkeypatch: Any) -> None:
    """Issue 64 #2: a run that asked for no emotion (protocol direct) was split into
    recognised n=0 and missed n=every dialogue; it has no split, and says so."""
    from koed_core.db import JudgeConfig

    _split_store(monkeypatch)
    table = perception_table(None, JudgeConfig("j", "paper", "p1", "r1"), by_emotion=False)  # type: ignore[arg-type]
    direct = table[table["run_id"] == "r-direct"]
    assert not (direct["part"] == "missed").any()
    assert direct["value"].isna().all() and direct["note"].str.contains("no emotion").all()


def test_a_reply_in_the_other_language_is_found_and_set_apart(monkeypatch: Any) -> None:
    """Issue 64 #2: r-single's Korean reply to c1 is in English; it is counted apart
    and left out of recognised and missed (a wrong-language reply is not a perception
    result)."""
    from koed_core.db import JudgeConfig

    _split_store(monkeypatch)
    table = perception_table(None, JudgeConfig("j", "paper", "p1", "r1"), by_emotion=False)  # type: ignore[arg-type]
    mine = table[table["run_id"] == "r-single"].set_index(["part", "lang"])
    assert mine.loc[("reply in the other language", "ko"), "n"] == 1
    assert mine.loc[("missed", "ko"), "n"] == 4  # c3, c5, c7, c9 (c1 set apart)
    assert mine.loc[("reply in the other language", "en"), "n"] == 0


def test_the_part_that_comes_with_misperception_has_its_own_interval(monkeypatch: Any) -> None:
    """Issue 64 #2: "all" minus "both recognised" compared two dialogue sets with no
    interval; it is a row of its own, its interval from resampling the dialogues once
    for both terms."""
    from koed_core.db import JudgeConfig

    _split_store(monkeypatch)
    table = perception_table(None, JudgeConfig("j", "paper", "p1", "r1"), by_emotion=False)  # type: ignore[arg-type]
    mine = table[table["run_id"] == "r-single"].set_index(["part", "lang"])
    every = mine.loc[("gap: all", "ko-en"), "value"]
    both = mine.loc[("gap: both recognised", "ko-en"), "value"]
    row = mine.loc[("gap: all minus both recognised", "ko-en")]
    assert row["value"] == pytest.approx(every - both)
    assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["ci_low"] < row["ci_high"]
