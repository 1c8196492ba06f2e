"""Chat and Runs pages through AppTest, with the scripted OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI, Step
from koed_core.db import Runs, Store
from koed_core.db.jobs import Jobs
from koed_core.models.runs import run_labels
from tests.conftest import stop_workers, wait_for_job

ROOT = Path(__file__).resolve().parents[1]
KO_REPLY = "정말 속상했겠다. 괜찮으면 무슨 일이 있었는지 더 얘기해 줄래?"
EN_REPLY = "That sounds really hard. Do you want to tell me more about it?"


def _page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page(page).run()
    return at


def _texts(at: AppTest) -> list[str]:
    return [str(t.value) for t in at.text]


@pytest.mark.slow
def test_chat_both_languages_then_go_on_as_speaker(
    fake_registry: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    at = _page("app_pages/models/chat.py")
    at.selectbox(key="chat.dialogue").set_value("sample:1_conv:33").run()
    at.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    at.button(key="chat.ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert KO_REPLY in _texts(at) and EN_REPLY in _texts(at)
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert any("sad · 슬픈" in b for b in badges)
    assert len(fake_openai.requests) == 2
    ko_request = next(r for r in fake_openai.requests if "화자:" in r["messages"][-1]["content"])
    assert "분식집 사장님이 오늘도" in ko_request["messages"][-1]["content"]
    assert "snack shop" not in str(ko_request)  # no situation, no other language

    at.chat_input[0].set_value("사장님 덕분에 요즘 힘이 나.").run()
    assert len(fake_openai.requests) == 3  # only the Korean pane answers a Korean turn
    last = fake_openai.requests[-1]["messages"][-1]["content"].splitlines()
    assert last[-3:] == [f"청자: {KO_REPLY}", "화자: 사장님 덕분에 요즘 힘이 나.", "청자:"]
    assert "사장님 덕분에 요즘 힘이 나." in _texts(at)
    assert _texts(at).count(KO_REPLY) == 2

    save = [b for b in at.button if b.label == "Save for rating"]
    assert len(save) == 3
    save[0].click().run()
    store = Store(tmp_path / "koed.db")
    runs = Runs(store).runs()
    assert list(runs["kind"]) == ["live"] and list(runs["responses"]) == [1]
    assert "Saved for rating." in [c.value for c in at.caption]


def test_chat_shows_a_failed_model_call(fake_registry: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(*[Step(500, headers={"retry-after-ms": "5"})] * 10)
    at = _page("app_pages/models/chat.py")
    at.segmented_control(key="chat.langs").set_value(["en"]).run()
    at.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    at.button(key="chat.ask").click().run()
    assert not at.exception
    assert "failed with HTTP 500" in at.error[0].value
    assert not [b for b in at.button if b.label == "Save for rating"]


@pytest.mark.slow
def test_runs_page_queues_a_job_a_worker_runs_and_lists_it(
    fake_registry: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    at = _page("app_pages/models/runs.py")
    assert at.info[0].value.startswith("No runs yet")
    at.selectbox(key="runs.model").set_value("fake-listener")
    at.number_input[0].set_value(3)
    try:
        start = next(b for b in at.button if b.label == "Start as a background job")
        start.click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.success[0].value.startswith(r"Job #1 queued: run fake\-listener\: single")
        store = Store(tmp_path / "koed.db")
        wait_for_job(store, 1)  # the page started a worker process; it runs the job
        at.run()
        runs = at.dataframe[-2].value
        assert list(runs["lang"]) == ["en", "ko"] and list(runs["responses"]) == [3, 3]
        assert len(at.dataframe[-1].value) == 6
        at.button(key="runs.reproduce")  # the reproduction can be queued from here too
        assert Jobs(store).get(1).message.startswith("run ")  # type: ignore[union-attr]
        assert "6 answered, 0 already done, 0 failed" in Jobs(store).get(1).message  # type: ignore[operator]
        # the page names the run by its label, as its pickers do, never by its id
        run_id = Jobs(store).get(1).result["run_id"]  # type: ignore[union-attr]
        said = " ".join(c.value for c in at.caption).replace("\\", "")
        assert "6 answered, 0 already done, 0 failed" in said
        assert run_labels(store)[run_id] in said and run_id not in said
    finally:
        stop_workers(tmp_path / "koed.db")


def test_panes_answer_at_the_same_time(fake_registry: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.latency_s = 1.0
    at = _page("app_pages/models/chat.py")
    at.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    at.button(key="chat.ask").click().run()
    assert KO_REPLY in _texts(at) and EN_REPLY in _texts(at)
    assert len(fake_openai.requests) == 2
    # both panes' requests were at the server together (bench/chat.py times it)
    assert fake_openai.max_in_flight == 2


@pytest.mark.slow
def test_an_admin_picks_any_openai_model_by_id(
    fake_registry: Path, fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    at = _page("app_pages/models/chat.py")  # no accounts yet: one person's app, an admin
    at.text_input(key="models.adhoc_input").set_value("openai:served-elsewhere").run()
    assert (
        "openai:served-elsewhere (on OPENAI_BASE_URL)" in at.multiselect(key="chat.models").options
    )
    at.multiselect(key="chat.models").set_value(["openai:served-elsewhere"]).run()
    at.button(key="chat.ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert {r["model"] for r in fake_openai.requests} == {"served-elsewhere"}
    # the same id on the Runs page queues a run of it
    monkeypatch.setattr("components.models.jobs_panel.ensure_worker", lambda store: False)
    at.switch_page("app_pages/models/runs.py").run()
    at.selectbox(key="runs.model").set_value("openai:served-elsewhere")
    next(b for b in at.button if b.label == "Start as a background job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert Jobs(Store(tmp_path / "koed.db")).get(1).params["model"] == "openai:served-elsewhere"
    at.text_input(key="models.adhoc_input").set_value("gpt-4o-mini").run()
    assert "openai:MODEL_ID" in at.warning[0].value


@pytest.mark.slow
def test_an_admin_picks_from_the_servers_own_list(
    fake_registry: Path, fake_openai: FakeOpenAI, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-listing-key")
    fake_openai.served = ["qwen2.5:7b", "llama3.1:8b", "qwen2.5:7b"]
    at = _page("app_pages/models/chat.py")
    at.button(key="models.list_served").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert fake_openai.authorizations[-1] == "Bearer sk-listing-key"
    picker = at.selectbox(key="models.served_pick")
    assert picker.options == ["llama3.1:8b", "qwen2.5:7b"]  # sorted, once each
    picker.set_value("qwen2.5:7b").run()
    assert "openai:qwen2.5:7b" in at.session_state["models.adhoc"]
    assert "openai:qwen2.5:7b (on OPENAI_BASE_URL)" in at.multiselect(key="chat.models").options
    fake_openai.stop()  # the server goes away: said, not a traceback
    at.button(key="models.list_served").click().run()
    assert not at.exception
    assert "could not reach http://127.0.0.1" in at.warning[0].value.replace("\\", "")


@pytest.mark.slow
def test_a_visitor_cannot_add_a_model(site: Path) -> None:
    at = _page("app_pages/models/chat.py")
    assert not [t for t in at.text_input if t.key == "models.adhoc_input"]
    assert all(not o.startswith("openai:") for o in at.multiselect(key="chat.models").options)


@pytest.mark.slow
def test_chat_in_a_translated_variant(
    fake_registry: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """ko-from-en is a language of the chat where it translates the dialogue: the model
    is given the variant's turns, and a saved answer is stored under the variant with the
    version recorded by its run."""
    import json

    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.variants import source_texts
    from koed_core.models.variant_texts import import_lines
    from koed_core.paths import SAMPLE_FILE

    sample = load_dataset(SAMPLE_FILE)
    dialogue = sample.get("sample:1_conv:33")
    assert dialogue is not None
    _situation, turns = source_texts(dialogue, "ko-from-en")
    line = {"conv_id": dialogue.conv_id, "variant": "ko-from-en", "situation": "번역된 상황"}
    line["turns"] = [f"번역된 말 {n}" for n in range(len(turns))]
    store = Store(tmp_path / "koed.db")
    [version] = import_lines(store, sample, [json.dumps(line, ensure_ascii=False)], "J. Kim")
    at = _page("app_pages/models/chat.py")
    at.selectbox(key="chat.dialogue").set_value("sample:1_conv:33").run()
    at.session_state["chat.langs"] = ["ko-from-en"]
    at.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    at.button(key="chat.ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [asked] = fake_openai.requests
    assert "화자: 번역된 말 0" in asked["messages"][-1]["content"]
    assert "분식집" not in str(asked)  # never the Korean reconstruction's turns
    next(b for b in at.button if b.label == "Save for rating").click().run()
    [row] = store.rows("select r.lang, u.config from responses r join runs u on u.id = r.run_id")
    assert row["lang"] == "ko-from-en"
    assert json.loads(row["config"])["variants"] == f"ko-from-en v1 {version.id}"


@pytest.mark.slow
def test_a_chat_answer_is_asked_and_saved_as_the_run_request_resolves_it(
    fake_registry: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The chat built its own settings: the model's own top_p from models.toml was never
    sent and its saved run said none. A pane is a run request now, asked and saved as
    ``koed run`` resolves the same request (one default each)."""
    import json

    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.chat import live_request
    from koed_core.models.registry import load_registry
    from koed_core.models.runs import request_config
    from koed_core.paths import SAMPLE_FILE

    text = fake_registry.read_text()
    fake_registry.write_text(text.replace('"korean-centric"\n', '"korean-centric"\ntop_p = 0.9\n'))
    at = _page("app_pages/models/chat.py")
    at.selectbox(key="chat.dialogue").set_value("sample:1_conv:33").run()
    at.segmented_control(key="chat.langs").set_value(["en"]).run()
    at.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    at.button(key="chat.ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [asked] = fake_openai.requests
    assert asked["top_p"] == 0.9 and asked["temperature"] == 0.7
    next(b for b in at.button if b.label == "Save for rating").click().run()
    [row] = Store(tmp_path / "koed.db").rows("select id, config from runs")
    spec = load_registry(fake_registry)["fake-listener"]
    sha = load_dataset(SAMPLE_FILE).sha256
    made = request_config(live_request(spec.name, "en", "single", 0.7, 160), spec, sha, "live")
    assert row["id"] == made.run_id
    assert json.loads(row["config"])["top_p"] == 0.9
