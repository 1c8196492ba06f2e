"""Cached results hold numbers, and the words beside them are the reader's: a Korean
reader after an English one (and the reverse) reads their own language.

The Gap page keeps its tables across sessions (``components/core/computed.py``), and a
sentence translated while computing was kept with them: the PPI++ caption and refusal,
and the perception table's notes, stayed in the language of whoever computed them first.
Beside them, on the same page: one chart's files (its own PNG, the PNG and SVG buttons,
its CSV) share the chart's name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.planted import planted_store
from koed_core.rating.studies import StudyRules

ROOT = Path(__file__).resolve().parents[1]
WORDS = {  # what each reader must read, and what the other language says there
    "en": ("this study's dialogues were chosen by hand", "dialogues chosen by hand"),
    "ko": ("이 연구의 대화는 직접 고른 것이어서", "직접 고른 대화"),
}
NOT_SPLIT = {
    "en": "undefined: this run asked for no emotion (protocol direct)",
    "ko": "정의되지 않음: 이 실행은 감정을 묻지 않았으므로(프로토콜 direct)",
}


def _gap_page(lang: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["lang"] = lang
    at.run()
    return at.switch_page("app_pages/results/gap.py").run()


def _read(at: AppTest) -> str:
    tables = " ".join(d.value.to_csv() for d in at.dataframe)
    return " ".join(m.value for m in [*at.warning, *at.caption]) + tables


@pytest.mark.slow
@pytest.mark.parametrize("first, then", [("en", "ko"), ("ko", "en")], ids=["en-ko", "ko-en"])
def test_each_reader_reads_the_cached_tables_in_their_language(
    tmp_path: Path, first: str, then: str
) -> None:
    manual = planted_store(tmp_path / "koed.db", dialogues=16, method="manual")  # KOED_DB
    StudyRules(manual.store).close(manual.study_id)
    for lang in (first, then):  # one process: the second reader gets the first's cache
        at = _gap_page(lang)
        assert not at.exception, [e.value for e in at.exception]
        read = _read(at)
        other = "ko" if lang == "en" else "en"
        for words in WORDS[lang]:
            assert words in read, (lang, words)
        for words in WORDS[other]:
            assert words not in read, (lang, words)
        assert NOT_SPLIT[lang] in read and NOT_SPLIT[other] not in read, lang


@pytest.mark.slow
def test_one_charts_png_and_svg_share_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart's own camera (Plotly's "Download plot as a png") saved "newplot.png"
    beside the buttons' "koed_gap.svg": now every file of the chart has its name."""
    from streamlit.delta_generator import DeltaGenerator

    planted = planted_store(tmp_path / "koed.db", dialogues=16, fraction=0.5)  # KOED_DB
    StudyRules(planted.store).close(planted.study_id)
    names: dict[str, str] = {}
    button = DeltaGenerator.download_button

    def recorded(self: DeltaGenerator, label: str, data: object, **kw: object) -> object:
        names[label] = str(kw.get("file_name"))
        return button(self, label, data, **kw)

    monkeypatch.setattr(DeltaGenerator, "download_button", recorded)
    at = _gap_page("en")
    assert not at.exception, [e.value for e in at.exception]
    config = json.loads(at.get("plotly_chart")[0].proto.config)
    stem = config["toImageButtonOptions"]["filename"]
    assert stem == "koed_gap_judge"  # the first source's chart: the judge's
    assert names["Chart (PNG)"] == f"{stem}.png" and names["Chart (SVG)"] == f"{stem}.svg"
    assert names["Table (CSV)"] == f"{stem}.csv"
