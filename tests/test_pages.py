"""Every page through AppTest: registered, renders, and the explorer's flows work; and what a
reader meets on them: the Demo, links whose values a page cannot use, the smaller texts, and
no English left on a Korean page (each read once settled and again after a rerun)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from tests.test_gaps import _store_with_runs

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


@pytest.mark.slow
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


@pytest.mark.slow
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
def test_adaptation_is_one_shared_job_every_visitor_follows(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 66: the first press queues one job; a second visitor sees its progress (not
    "not computed yet", no second start); the worker computes and keeps the scores for
    both; the next estimate is this server's own measurement, never a constant."""
    from koed_core.config import Settings
    from koed_core.db import Store
    from koed_core.db.jobs import Jobs
    from koed_core.jobs.kinds import Environment
    from koed_core.jobs.worker import Worker

    monkeypatch.setattr("components.dialogues.similarity_job.ensure_worker", lambda store: False)
    page = "app_pages/dialogues/adaptation.py"
    first = _app().run()
    first.switch_page(page).run()
    assert first.info[0].value.startswith("Similarities for this dataset are not computed yet")
    assert "this server has not timed it yet" in first.info[0].value  # no borrowed figure
    first.button(key="adaptation.compute").click().run()
    assert not first.exception
    second = _app().run()
    second.switch_page(page).run()
    assert not second.exception
    assert not second.info  # no "not computed yet"
    assert "adaptation.compute" not in [b.key for b in second.button]  # and no second start
    bars = [p.proto.text for p in second.get("progress")]
    assert bars and bars[0].startswith("Queued")
    store = Store(isolated_env.parent / "koed.db")
    assert len(Jobs(store).active_of("similarities")) == 1
    env = Environment(Settings(db_path=Path(store.path), cache_dir=isolated_env), secrets={})
    Worker(store, env, idle_exit_s=0.0, tick_s=0.05).serve()
    job = Jobs(store).recent(1)[0]
    assert job.state == "finished" and job.done == job.total > 0, job.reason
    cached = list((isolated_env / "adaptation").glob("*.csv"))
    assert cached
    second.run()  # both pages read the kept scores
    second.selectbox(key="adaptation.dialogue").set_value("sample:1_conv:34").run()
    assert not second.info and len(second.dataframe) == 3  # dialogues, turns, the dialogue
    assert second.dataframe[2].value["role"].tolist()[0] == "situation"
    turns = second.dataframe[1].value
    assert turns["similarity"].is_monotonic_increasing and len(turns) > 100
    measured = list(isolated_env.rglob("adaptation_timing.json"))
    assert measured and json.loads(measured[0].read_text())["per_dialogue_s"] > 0
    for path in cached:
        path.unlink()
    again = _app().run()
    again.switch_page(page).run()
    assert "as this server measured itself last time" in again.info[0].value


@pytest.mark.slow
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


# What a reader meets: the Demo, links, the smaller texts, a Korean page's last English ----


def _run_app(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def _run_page(page: str, query: dict[str, str] | None = None) -> AppTest:
    at = _run_app().switch_page(page)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def _with_commas(db: Path) -> None:
    """Make the English transcripts what a raw run sent: the file's _comma_ in them."""
    from koed_core.db import Store

    store = Store(db)
    rows = list(store.db.query("select id, context, text from responses where lang = 'en'"))
    for row in rows:
        context = [
            [role, text.replace(",", "_comma_")] for role, text in json.loads(row["context"])
        ]
        context[-1][1] += " I was late_comma_ again"
        store.db.execute(
            "update responses set context = ?, text = ? where id = ?",
            [json.dumps(context), (row["text"] or "") + " Oh_comma_ no.", row["id"]],
        )
    store.db.conn.commit()


@pytest.mark.slow
def test_demo_shows_text_as_read_and_keeps_the_replay_notice_in_talk_mode(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    _store_with_runs(tmp_path / "koed.db", fake_openai)
    _with_commas(tmp_path / "koed.db")
    for talk in ({}, {"talk": "true"}):
        at = _run_page("app_pages/results/demo.py", talk)
        at.slider(key="demo.pace").set_value(40)
        at.button(key="demo.play").click().run()
        for _read in (1, 2):  # settled, and again after another run of the page
            assert not at.exception, [e.value for e in at.exception]
            texts = [t.value for t in at.text]
            assert not [t for t in texts if "_comma_" in t], texts
            assert any("I was late, again" in t for t in texts), texts
            assert any("Oh, no." in t for t in texts), texts
            notice = [c for c in at.main.caption if "Replay of stored answers" in c.value]
            assert notice, "the replay notice is on the page"
            folded = [c for e in at.expander for c in e.caption]
            assert not [c for c in folded if "Replay of stored answers" in c.value]
            at.run()
            if _read == 1:
                at.button(key="demo.play").click().run()


def _notice(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning if "was left out" in w.value)


def test_every_dropped_link_value_is_named_and_the_notice_stays() -> None:
    at = _run_app(
        {"d": "nope:1", "labels": ["sad", "notalabel"], "turns": ["9", "1"], "mode": "most"}
    )
    for _read in (1, 2):  # settled, and again after a rerun (the address is rewritten)
        assert not at.exception, [e.value for e in at.exception]
        notice = _notice(at)
        for name, value in (
            ("d", "nope:1"),
            ("labels", "notalabel"),
            ("turns", "9-1"),
            ("mode", "most"),
        ):
            assert f"{name}={value}" in notice.replace("\\", ""), notice
        assert "labels=sad" not in notice
        assert at.multiselect(key="labels").value == ["sad"]  # the good value is kept
        assert "Filter: emotion has all of sad" in [t.value for t in at.text]  # bad ones go
        at.run()
    at.multiselect(key="labels").set_value(["afraid"]).run()  # the notice outlives a change
    assert "notalabel" in _notice(at)


def test_a_link_without_a_fault_has_no_notice() -> None:
    at = _run_app({"labels": ["sad"], "mode": "exact"})
    assert not _notice(at) and not at.exception


def test_a_dialogue_the_filters_hide_is_named() -> None:
    at = _run_app({"labels": ["han"], "mode": "exact", "d": "sample:1_conv:1"})
    notice = _notice(at)
    assert "d=sample:1_conv:1" in notice.replace("\\", "") and "filters leave" in notice, notice


def test_chat_reads_d_and_dialogue_as_its_alias() -> None:
    """The page alone: AppTest's switch_page drops the query a link brings."""
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    conv = load_dataset(SAMPLE_FILE).dialogues[3].conv_id
    for name in ("d", "dialogue"):
        at = AppTest.from_file(str(ROOT / "app_pages/models/chat.py"), default_timeout=90)
        at.query_params[name] = conv
        at.run()
        for _read in (1, 2):
            assert not at.exception, [e.value for e in at.exception]
            picked = [s.value for s in at.selectbox if s.key == "chat.dialogue"]
            assert picked == [conv], picked
            assert at.query_params.get("d") in (conv, [conv]), dict(at.query_params)
            assert "dialogue" not in at.query_params
            at.run()
    at = AppTest.from_file(str(ROOT / "app_pages/models/chat.py"), default_timeout=90)
    at.query_params["dialogue"] = "nope:1"
    at.run()
    assert "d=nope:1" in _notice(at).replace("\\", "")


@pytest.fixture
def admin_boss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An accounts file with an admin (boss) and a rater (mina), the database empty."""
    from koed_core.rating import accounts

    path = tmp_path / "accounts.yaml"
    accounts.add_user(path, "boss", "admin", "Boss", "boss-password-1")
    accounts.add_user(path, "mina", "rater", "Mina", "mina-password-1")
    monkeypatch.setenv("KOED_USERS", str(path))
    monkeypatch.setenv("KOED_COOKIE_KEY", "k" * 40)
    return "boss"


def _signed_in(username: str, page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=90)
    at.session_state["authentication_status"] = True
    at.session_state["username"] = username
    at.session_state["name"] = username
    return at.run()


def test_a_signed_in_admin_is_not_told_to_create_an_admin_account(admin_boss: str) -> None:
    at = _signed_in(admin_boss, "app_pages/results/agreement.py")
    for _read in (1, 2):
        assert not at.exception, [e.value for e in at.exception]
        said = " ".join(i.value for i in at.info)
        assert "Build a study on the Studies page" in said
        assert "admin account exists" not in said and "koed users add" not in said
        at.run()


def test_one_persons_app_is_told_how_to_make_an_admin_account() -> None:
    alone = _run_page("app_pages/results/agreement.py")  # no accounts yet
    assert "admin account exists" in " ".join(i.value for i in alone.info)


def test_an_import_of_the_wrong_shape_says_what_a_line_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from koed_core.cli import main

    assert main(["annotations", "project", "--name", "p", "--limit", "2"]) == 0
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"text": "어젯밤", "id": 3}\n', encoding="utf-8")
    assert main(["annotations", "import", str(wrong), "--project", "1"]) == 1
    err = capsys.readouterr().err
    assert "None" not in err, err
    assert "wrong.jsonl line 1: no conv_id" in err and "keys: id, text" in err, err


def test_the_records_choice_says_what_ed_is() -> None:
    at = _run_app()
    shown = list(at.radio(key="origin").options)
    assert "adapted from EmpatheticDialogues" in shown and "ed" not in shown, shown
    at.radio(key="origin").set_value("ed").run()  # the value (and the link's) stays "ed"
    assert "Filter: EmpatheticDialogues-derived records only" in [t.value for t in at.text]


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    ["app_pages/dialogues/overview.py", "app_pages/results/gap.py", "app_pages/results/demo.py"],
)
def test_a_visitors_page_without_controls_leaves_the_sidebar_empty(page: str) -> None:
    at = _run_page(page)
    for _read in (1, 2):
        assert not at.exception, [e.value for e in at.exception]
        assert not at.sidebar.children, at.sidebar
        at.run()


@pytest.mark.slow
def test_labels_carry_their_gloss_on_a_korean_page() -> None:
    at = _run_page("app_pages/dialogues/overview.py", {"lang": "ko"})
    for _read in (1, 2):
        assert not at.exception, [e.value for e in at.exception]
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        shown = spec["data"][0]["y"]
        assert "sad · 슬픈" in shown and "sad" not in shown, shown[:5]
        assert "%{customdata[1]}" in spec["data"][0]["hovertemplate"]  # the gloss
        at.run()
    explorer = _run_app({"lang": "ko"})
    table = explorer.dataframe[0].value
    labels = table[table.columns[1]]
    assert labels.str.contains("·").all(), labels.head()
    english = _run_app({"lang": "en"}).dataframe[0].value
    assert not english[english.columns[1]].str.contains("·").any()


def test_choice_values_and_judge_names_in_the_readers_words() -> None:
    from components.core.terms import judge_name, term
    from koed_core import i18n
    from koed_core.db import JudgeConfig

    config = JudgeConfig("gpt-4o", "paper", "abcdef123456", "rubric12345", "authors", "authors")
    with i18n.speaking("en"):
        assert term("single") == "single"
        assert judge_name(config).startswith("gpt-4o · paper mode · authors template")
    with i18n.speaking("ko"):
        assert term("single").endswith("(single)") and term("single") != "single"
        assert "(paper)" in judge_name(config) and "(authors)" in judge_name(config)
    at = _run_page("app_pages/models/runs.py", {"lang": "ko"})
    for _read in (1, 2):  # a rerun formats the values outside the page's run too
        assert not at.exception, [e.value for e in at.exception]
        options = [o for r in at.radio for o in r.options]
        assert any(o.endswith("(single)") for o in options), options
        assert "single" not in options and "paper" not in options, options
        at.run()
    judge = _run_page("app_pages/models/judge.py", {"lang": "ko"})
    assert not judge.exception, [e.value for e in judge.exception]


def test_a_pages_own_choices_are_checked_and_ad_is_read_as_d() -> None:
    """The Adaptation page (in Chromium in test_official_file_browser.py): a
    page's own parameter (its order) is checked against its choices; ?ad= is d."""
    from koed_core.dialogues.links import canonical, dropped_values

    params = canonical({"ad": ["x:1"], "order": ["sideways", "closest first"]})
    assert params == {"d": ["x:1"], "order": ["sideways", "closest first"]}
    found = dropped_values(params, {"x:1"}, choices={"order": ("closest first", "most")})
    assert [(d.name, d.value) for d in found] == [("order", "sideways")]


def test_situation_previews_end_on_a_word() -> None:
    from koed_core.dialogues.dialogue import preview

    assert preview("short one", 20) == "short one"
    assert preview("Last year a tree fell on my house while my family", 30) == (
        "Last year a tree fell on my…"
    )
    assert preview("가" * 50, 10) == "가" * 9 + "…"  # one long word: cut at the limit
    at = _run_app()
    table = at.dataframe[0].value
    # English first (its lines are measured right when drawn before Korean)
    assert list(table.columns[2:4]) == ["situation (en)", "situation (ko)"]
    for column, limit in ((table.columns[2], 80), (table.columns[3], 40)):
        assert table[column].str.len().max() <= limit, column


@pytest.mark.slow
def test_a_category_and_a_note_are_kept_when_the_annotator_switches_dialogue() -> None:
    import os

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    dataset = load_dataset(SAMPLE_FILE)
    second, first = dataset.dialogues[0].conv_id, dataset.dialogues[1].conv_id
    store = Store(os.environ["KOED_DB"])
    AnnotationRules(store).create_project("p", dataset, [first, second], per_item=2)
    at = _run_page("app_pages/annotation/annotate.py")
    assert not at.exception, [e.value for e in at.exception]
    at.radio(key=f"annotate.category.{first}").set_value("context_modified").run()
    at.text_area(key=f"annotate.note.{first}").set_value("호칭이 바뀜").run()
    picker = next(s for s in at.selectbox if s.label == "Dialogue")
    picker.set_value(second).run()  # no Save draft pressed
    assert not at.exception, [e.value for e in at.exception]
    for _read in (1, 2):  # stored, and still there after another run
        own = AnnotationRules(store).own(1, first, "local")
        assert own is not None and not own.submitted
        assert (own.category, own.note) == ("context_modified", "호칭이 바뀜")
        at.run()
    next(s for s in at.selectbox if s.label == "Dialogue").set_value(first).run()
    assert at.radio(key=f"annotate.category.{first}").value == "context_modified"
    assert at.text_area(key=f"annotate.note.{first}").value == "호칭이 바뀜"


@pytest.mark.slow
def test_a_span_changes_type_and_edges_without_being_deleted() -> None:
    import os

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Side, Span
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    text = dialogue.turns[2].ko
    at_ = text.index("편의점")
    store = AnnotationRules(Store(os.environ["KOED_DB"]))
    project = store.create_project("p", dataset, [dialogue.conv_id], per_item=2)
    en_at = dialogue.turns[2].en.index("convenience store")
    english = Side(3, en_at, en_at + 17, "convenience store")
    span = Span(Side(3, at_, at_ + 3, "편의점"), "places", en=english)
    store.save(project, dialogue, "local", "context_modified", "", [span])
    at = _run_page("app_pages/annotation/annotate.py")
    assert not at.exception, [e.value for e in at.exception]
    form = next(s for s in at.selectbox if s.label == "New type (empty: keep it)")
    form.set_value("other")
    next(t for t in at.text_input if t.label.startswith("Korean text it covers")).set_value("편의")
    next(b for b in at.button if b.label == "Change the span").click().run()
    for _read in (1, 2):
        assert not at.exception and not at.error, [e.value for e in at.error]
        own = store.own(project, dialogue.conv_id, "local")
        assert own is not None and [(s.ko.text, s.type, s.en) for s in own.spans] == [
            ("편의", "other", english)
        ]
        assert own.category == "context_modified"
        at.run()


@pytest.mark.slow
def test_search_over_a_projects_annotations() -> None:
    import os

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Side, Span
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    text = dialogue.turns[2].ko
    at_ = text.index("편의점")
    store = AnnotationRules(Store(os.environ["KOED_DB"]))
    project = store.create_project("p", dataset, [dialogue.conv_id], per_item=2)
    place = Span(Side(3, at_, at_ + 3, "편의점"), "places", no_counterpart=True)
    other = Span(Side(3, at_, at_ + 2, "편의"), "other", no_counterpart=True)
    store.save(project, dialogue, "kim", "context_modified", "야간 편의점 문화", [place])
    store.save(project, dialogue, "lee", "simply_transferred", "", [other])
    at = _run_page("app_pages/annotation/projects.py")
    assert not at.exception, [e.value for e in at.exception]
    box = next(t for t in at.text_input if t.label.startswith("Search the annotations"))
    for query, who in (("편의", {"kim", "lee"}), ("places", {"kim"}), ("LEE", {"lee"})):
        box.set_value(query).run()
        for _read in (1, 2):
            assert not at.exception, [e.value for e in at.exception]
            found = at.dataframe[-1].value
            assert set(found[found.columns[1]]) == who, (query, found)
            at.run()
    box.set_value("야간").run()  # a note: found through kim's span row
    assert list(at.dataframe[-1].value[at.dataframe[-1].value.columns[1]]) == ["kim"]
