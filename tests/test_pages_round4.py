"""Issue 57, pages: what a reader meets on the Demo, links, the smaller findings and the
last English on a Korean page (AppTest; each read once settled and again after a rerun)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from tests.test_gaps import _store_with_runs

ROOT = Path(__file__).resolve().parents[1]


def _app(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def _page(page: str, query: dict[str, str] | None = None) -> AppTest:
    at = _app().switch_page(page)
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
        at = _page("app_pages/results/demo.py", talk)
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
    at = _app({"d": "nope:1", "labels": ["sad", "notalabel"], "turns": ["9", "1"], "mode": "most"})
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
    at = _app({"labels": ["sad"], "mode": "exact"})
    assert not _notice(at) and not at.exception


def test_a_dialogue_the_filters_hide_is_named() -> None:
    at = _app({"labels": ["han"], "mode": "exact", "d": "sample:1_conv:1"})
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
    alone = _page("app_pages/results/agreement.py")  # no accounts yet
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
    at = _app()
    shown = list(at.radio(key="origin").options)
    assert "adapted from EmpatheticDialogues" in shown and "ed" not in shown, shown
    at.radio(key="origin").set_value("ed").run()  # the value (and the link's) stays "ed"
    assert "Filter: EmpatheticDialogues-derived records only" in [t.value for t in at.text]


@pytest.mark.parametrize(
    "page",
    ["app_pages/dialogues/overview.py", "app_pages/results/gap.py", "app_pages/results/demo.py"],
)
def test_a_visitors_page_without_controls_leaves_the_sidebar_empty(page: str) -> None:
    at = _page(page)
    for _read in (1, 2):
        assert not at.exception, [e.value for e in at.exception]
        assert not at.sidebar.children, at.sidebar
        at.run()


def test_labels_carry_their_gloss_on_a_korean_page() -> None:
    at = _page("app_pages/dialogues/overview.py", {"lang": "ko"})
    for _read in (1, 2):
        assert not at.exception, [e.value for e in at.exception]
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        shown = spec["data"][0]["y"]
        assert "sad · 슬픈" in shown and "sad" not in shown, shown[:5]
        assert "%{customdata[1]}" in spec["data"][0]["hovertemplate"]  # the gloss
        at.run()
    explorer = _app({"lang": "ko"})
    table = explorer.dataframe[0].value
    labels = table[table.columns[1]]
    assert labels.str.contains("·").all(), labels.head()
    english = _app({"lang": "en"}).dataframe[0].value
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
    at = _page("app_pages/models/runs.py", {"lang": "ko"})
    for _read in (1, 2):  # a rerun formats the values outside the page's run too
        assert not at.exception, [e.value for e in at.exception]
        options = [o for r in at.radio for o in r.options]
        assert any(o.endswith("(single)") for o in options), options
        assert "single" not in options and "paper" not in options, options
        at.run()
    judge = _page("app_pages/models/judge.py", {"lang": "ko"})
    assert not judge.exception, [e.value for e in judge.exception]


def test_a_pages_own_choices_are_checked_and_ad_is_read_as_d() -> None:
    """Issue 57, item 8 (the Adaptation page, in Chromium in test_round4_browser.py): a
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
    at = _app()
    table = at.dataframe[0].value
    # English first (its lines are measured right when drawn before Korean; issue 57)
    assert list(table.columns[2:4]) == ["situation (en)", "situation (ko)"]
    for column, limit in ((table.columns[2], 80), (table.columns[3], 40)):
        assert table[column].str.len().max() <= limit, column


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
    at = _page("app_pages/annotation/annotate.py")
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
    at = _page("app_pages/annotation/annotate.py")
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
    at = _page("app_pages/annotation/projects.py")
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
