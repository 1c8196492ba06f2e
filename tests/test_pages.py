"""Every page through AppTest: registered, renders, and the explorer's flows work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
PAGE_FILES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "app_pages").glob("*/*.py")
    if p.name != "__init__.py"
)


def _app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60)


def _texts(at: AppTest) -> str:
    return "\n".join(str(t.value) for t in at.text)


def test_every_page_file_is_registered() -> None:
    source = (ROOT / "app.py").read_text()
    for page in PAGE_FILES:
        assert f'"{page}"' in source, f"{page} is not registered in app.py"


PUBLIC_PAGES = [
    "app_pages/dialogues/explorer.py",
    "app_pages/dialogues/overview.py",
    "app_pages/dialogues/adaptation.py",
    "app_pages/models/chat.py",
    "app_pages/models/runs.py",
    "app_pages/account/login.py",
]


@pytest.mark.parametrize("page", PUBLIC_PAGES)
def test_every_page_renders_on_the_sample(page: str) -> None:
    at = _app().run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} shows no title"
    if page not in (
        "app_pages/account/login.py",
        "app_pages/models/judge.py",
        "app_pages/results/agreement.py",
    ):
        # every page that shows dialogues says which data it shows
        assert "Built-in sample" in at.expander[0].label


def test_filter_list_dialogue_flow() -> None:
    at = _app().run()
    assert at.subheader[0].value == "34 of 34 dialogues match"
    at.multiselect(key="labels").set_value(["jeong"]).run()
    assert at.subheader[0].value == "1 of 34 dialogues match"
    assert "emotion has all of jeong" in _texts(at)
    picker = at.selectbox(key="d")
    assert picker.options == ["sample:1_conv:33"]
    picker.set_value("sample:1_conv:33").run()
    texts = _texts(at)
    assert "분식집 사장님이 오늘도" in texts  # Korean turn
    assert "The snack shop owner guessed I was working late" in texts  # English turn
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert ":violet-badge[jeong · 정(情)]" in badges
    assert any(b.endswith("1 · Speaker]") for b in badges)
    assert any(b.endswith("2 · Listener]") for b in badges)
    assert sum("Korean-only turn" in b for b in badges) == 2
    assert not at.exception


def test_mode_and_more_filters_narrow_the_list() -> None:
    at = _app().run()
    at.multiselect(key="labels").set_value(["sad", "lonely"]).run()
    assert at.subheader[0].value == "2 of 34 dialogues match"
    at.radio(key="mode").set_value("any").run()
    # sad or lonely: devastated+sad, disappointed+sad, jealous+sad, lonely+sad, sad+lonely
    assert at.subheader[0].value == "5 of 34 dialogues match"
    at.radio(key="ko_only").set_value("with").run()
    # of those, the dog (devastated) and the holiday-alone (lonely) dialogues add turns
    assert at.subheader[0].value == "2 of 34 dialogues match"
    at.radio(key="ko_only").set_value("any").run()
    at.text_input(key="q").set_value("이민").run()
    assert at.subheader[0].value == "1 of 34 dialogues match"
    at.text_input(key="q").set_value("nothing like this").run()
    assert at.info[0].value.startswith("No dialogue matches")


def test_a_shared_link_opens_the_same_view() -> None:
    at = _app()
    at.query_params["labels"] = ["han"]
    at.query_params["mode"] = "exact"
    at.query_params["d"] = "sample:1_conv:34"
    at.run()
    assert at.multiselect(key="labels").value == ["han"]
    assert at.subheader[0].value == "1 of 34 dialogues match"
    assert "이산가족 상봉 신청도 하셨었지?" in _texts(at)
    assert not at.exception


def test_a_link_keeps_the_filter_codes_in_either_language() -> None:
    """Found in a newcomer walk: the radios bound to the link wrote their words into it
    (origin=adapted+from+EmpatheticDialogues, mode=정확히 일치), so a link in the codes the
    README gives (origin=ed) was dropped without a word on a Korean page, and a link
    made on one language's page warned on the other's. The link holds the codes; either
    language reads them, and a choice made on the page writes its code."""
    at = _app()
    for name, value in {"labels": "sad", "mode": "any", "origin": "ed", "ko_only": "with"}.items():
        at.query_params[name] = value
    at.query_params["lang"] = "ko"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [at.radio(key=k).value for k in ("mode", "origin", "ko_only")] == ["any", "ed", "with"]
    assert not at.warning, [w.value for w in at.warning]  # nothing dropped
    english = _app()
    english.query_params["origin"] = "ed"
    english.query_params["mode"] = "any"
    english.run()
    assert english.subheader[0].value != "34 of 34 dialogues match"
    assert not english.warning, [w.value for w in english.warning]
    at.radio(key="origin").set_value("korean").run()
    at.radio(key="mode").set_value("exact").run()
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    assert (at.query_params["origin"], at.query_params["mode"]) == ("korean", "exact")


def _write_dataset(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def test_data_text_is_shown_literally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = '<script>alert("x")</script> **bold** [link](javascript:alert(1))'
    record = {
        "conv_id": "x1",
        "ko_situation": hostile,
        "situation": "s",
        "emotion": ["sad"],
        "dialogue": [{"ko_utter": hostile, "utter": "<img src=x onerror=alert(1)>"}],
    }
    monkeypatch.setenv("KOED_DATA", str(_write_dataset(tmp_path, [record])))
    at = _app()
    at.query_params["d"] = "x1"
    at.run()
    assert hostile in [t.value for t in at.text]
    assert "<img src=x onerror=alert(1)>" in [t.value for t in at.text]
    assert not any("<script>" in m.value or "onerror" in m.value for m in at.markdown)
    assert "Your file" in at.expander[0].label


def test_a_broken_file_is_named_on_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = {
        "conv_id": "x1",
        "ko_situation": "",
        "situation": "",
        "emotion": ["hapy"],
        "dialogue": [{"ko_utter": "가"}],
    }
    path = _write_dataset(tmp_path, [record])
    monkeypatch.setenv("KOED_DATA", str(path))
    at = _app().run()
    assert not at.exception
    message = at.error[0].value.replace("\\", "")  # shown literally: Markdown-escaped
    assert str(path) in message and "conv_id 'x1'" in message and "unknown label 'hapy'" in message


def test_official_file_with_its_warnings(
    official_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOED_DATA", str(official_file))
    at = _app().run()
    assert at.subheader[0].value == "1,360 of 1,360 dialogues match"
    assert any("a label listed twice \\(10\\)" in c.value for c in at.caption)  # literal
    assert "Lee, Sim, Kim and Kim" in _texts(at) and "CC BY-NC 4.0" in _texts(at)


def test_overview_figures() -> None:
    at = _app().run()
    at.switch_page("app_pages/dialogues/overview.py").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Dialogues"] == "34" and metrics["Labels used"] == "34"
    assert not at.exception


@pytest.mark.slow
def test_adaptation_computes_on_request_then_reads_the_cache(isolated_env: Path) -> None:
    at = _app().run()
    at.switch_page("app_pages/dialogues/adaptation.py").run()
    assert at.info[0].value.startswith("Similarities for this dataset are not computed yet")
    assert "measured it on two cores; this server measures itself" in at.info[0].value
    at.button(key="adaptation.compute").click().run()
    assert not at.exception
    cached = list((isolated_env / "adaptation").glob("*.csv"))
    assert cached
    at.selectbox(key="adaptation.dialogue").set_value("sample:1_conv:34").run()
    assert not at.info and len(at.dataframe) == 3  # dialogues, turns, the chosen dialogue
    assert at.dataframe[2].value["role"].tolist()[0] == "situation"
    turns = at.dataframe[1].value
    assert turns["similarity"].is_monotonic_increasing and len(turns) > 100
    # what this server took is kept, and the next estimate (another file, or the cache
    # cleared) is this server's own, not the reference machine's
    measured = list(isolated_env.rglob("adaptation_timing.json"))
    assert measured and json.loads(measured[0].read_text())["per_dialogue_s"] > 0
    for path in cached:
        path.unlink()
    again = _app().run()
    again.switch_page("app_pages/dialogues/adaptation.py").run()
    assert "as this server measured itself" in again.info[0].value


def test_download_button_switches_to_the_official_file(
    file_server, official_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, folder = file_server
    monkeypatch.setenv("KOED_DATA_URL", server.url("KoED.json"))
    at = _app().run()
    at.button(key="source.download").click().run()
    assert "not found" in at.error[0].value or "404" in at.error[0].value
    assert "Built-in sample" in at.expander[0].label  # a failed download changes nothing
    (folder / "KoED.json").write_bytes(official_file.read_bytes())
    at.button(key="source.download").click().run()
    assert not at.exception and not at.error
    assert at.expander[0].label.startswith("Data: Official KoED")
    assert at.subheader[0].value == "1,360 of 1,360 dialogues match"
