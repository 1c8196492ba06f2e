"""The annotation pages for each role, a span typed and submitted, the command line, and
an old database taking annotations."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.taxonomy import (
    CONTEXT_MODIFIED,
    AnnotationError,
)
from koed_core.cli import main
from koed_core.db import Store
from koed_core.dialogues.dataset import Dataset, load_dataset
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts
from tests.conftest import place_span

ROOT = Path(__file__).resolve().parents[1]


def _as(username: str | None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / (page or "app.py")), default_timeout=60)
    if username:
        at.session_state["authentication_status"] = True
        at.session_state["username"] = username
        at.session_state["name"] = username
    return at


@pytest.mark.slow
def test_an_annotator_gets_the_annotate_page_and_nothing_of_an_admins(site: Path) -> None:
    accounts.add_user(site.parent / "accounts.yaml", "lin", "annotator", "Lin", "lin-password")
    at = _as("lin").run()
    at.switch_page("app_pages/annotation/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Annotate the adaptation"
    for page in (
        "app_pages/annotation/projects.py",
        "app_pages/models/runs.py",
        "app_pages/rating/rate.py",
    ):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            _as("lin").run().switch_page(page)
    alone = _as("lin", "app_pages/annotation/projects.py").run()
    assert any("admins only" in e.value for e in alone.error) and not alone.button
    rater = _as("mina", "app_pages/annotation/annotate.py").run()  # a rater, by file: refused
    assert any("annotators only" in e.value for e in rater.error)
    assert not rater.selectbox
    visitor = _as(None, "app_pages/annotation/annotate.py").run()
    assert any("Log in first" in i.value for i in visitor.info) and not visitor.selectbox


@pytest.mark.slow
def test_a_span_typed_added_and_submitted_on_the_page() -> None:
    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    store = Store(os.environ["KOED_DB"])  # the app's database (conftest)
    AnnotationRules(store).create_project("p", dataset, [dialogue.conv_id], per_item=2)
    at = _as(None).run().switch_page("app_pages/annotation/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="annotate.typed.turn").set_value(3)
    at.text_input(key="annotate.typed.ko").set_value("편의점")
    at.text_input(key="annotate.typed.en").set_value("convenience store")
    next(b for b in at.button if b.label == "Select these").click().run()
    assert "turn 3: 편의점" in [t.value for t in at.text]
    next(s for s in at.selectbox if s.label == "Signal type").set_value("places")
    next(b for b in at.button if b.label == "Add span").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.radio(key=f"annotate.category.{dialogue.conv_id}").set_value("context_modified")
    at.text_area(key=f"annotate.note.{dialogue.conv_id}").set_value("**bold** <b>x</b>")
    next(b for b in at.button if b.label == "Submit").click().run()
    own = AnnotationRules(store).own(1, dialogue.conv_id, "local")
    assert own is not None and own.submitted and own.note == "**bold** <b>x</b>"
    assert [(s.ko.text, s.en.text if s.en else None, s.type) for s in own.spans] == [
        ("편의점", "convenience store", "places")
    ]
    # an edit after Submit (allowed until everyone has submitted) keeps it submitted
    at.selectbox(key="annotate.typed.turn").set_value(1)
    at.text_input(key="annotate.typed.ko").set_value("야근")
    at.text_input(key="annotate.typed.en").set_value("")
    next(b for b in at.button if b.label == "Select these").click().run()
    assert "(none selected)" in [t.value for t in at.text]  # no English carried over
    at.checkbox(key="annotate.no_counterpart").check()
    next(b for b in at.button if b.label == "Add span").click().run()
    own = AnnotationRules(store).own(1, dialogue.conv_id, "local")
    assert own is not None and own.submitted and len(own.spans) == 2


def test_the_command_line_makes_imports_and_exports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["annotations", "project", "--name", "cli", "--limit", "3", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made == {"project": 1, "dialogues": 3}
    dataset = load_dataset(SAMPLE_FILE)
    first = dataset.dialogues[0]
    line = {
        "conv_id": first.conv_id,
        "annotations": [
            {
                "annotator": name,
                "category": "context_modified",
                "spans": [
                    {
                        "type": "places",
                        "ko": {"position": 3, "start": 3, "end": 6},
                        "no_counterpart": True,
                    }
                ],
            }
            for name in ("kim", "lee")
        ],
    }
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["annotations", "import", str(source), "--project", "1"]) == 0
    assert "imported 2 annotation(s) with 2 span(s)" in capsys.readouterr().out
    assert main(["annotations", "export", "--out", str(tmp_path / "out")]) == 0
    written = [
        json.loads(x)
        for x in (tmp_path / "out" / "annotations-1.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert written[0]["final"]["category"] == "context_modified"
    assert written[0]["annotations"][0]["spans"][0]["ko"]["text"] == "편의점"
    assert "kim" not in json.dumps(written)
    agreement = (tmp_path / "out" / "annotation-agreement-1.csv").read_text(encoding="utf-8")
    assert "span F1 exact" in agreement and "1: cli" in agreement
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conv_id": "nope", "annotator": "x"}\nnot json\n', encoding="utf-8")
    assert main(["annotations", "import", str(bad), "--project", "1"]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl line 2: not JSON" in err and "Traceback" not in err


def test_an_old_database_takes_annotations(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copy(ROOT / "tests" / "data" / "koed-0.1.0.db", db)
    store = Store(db)
    before = store.stamp()
    dataset = load_dataset(SAMPLE_FILE)
    annotations = AnnotationRules(store)
    project = annotations.create_project("old", dataset, [dataset.dialogues[0].conv_id], per_item=1)
    annotations.save(
        project, dataset.dialogues[0], "lin", "simply_transferred", "", [], submit=True
    )
    assert store.stamp() > before
    assert "m011_annotations" in [
        r["name"] for r in store.rows("select name from _koed_migrations")
    ]
    assert Store(db).rows("select count(*) as n from annotations")[0]["n"] == 1  # reopened


@pytest.mark.slow
def test_a_models_candidates_are_suggestions_until_one_is_accepted(
    fake_openai: object, fake_registry: Path
) -> None:
    from koed_core.annotation.suggest import parse
    from koed_core.annotation.taxonomy import load_taxonomy

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    reply = (
        "Here:\n```json\n"
        '[{"turn": 3, "ko": "편의점", "en": "convenience store", "type": "places"},'
        ' {"turn": 3, "ko": "김밥", "en": null, "type": "food"},'
        ' {"turn": 1, "ko": "야근", "en": null, "type": "dessert"}]\n```'
    )
    found = parse(reply, dialogue, load_taxonomy(), "m")
    assert [(s.ko.text, s.type) for s in found.spans] == [("편의점", "places")]
    assert found.dropped == 2 and found.spans[0].origin == "suggestion:m"

    fake_openai.reply_fn = lambda body: reply  # type: ignore[attr-defined]
    store = Store(os.environ["KOED_DB"])
    AnnotationRules(store).create_project("p", dataset, [dialogue.conv_id], per_item=1)
    at = _as(None).run().switch_page("app_pages/annotation/annotate.py").run()
    at.selectbox(key="annotate.suggest.model").set_value("fake-listener")
    at.button(key="annotate.suggest.ask").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.value.startswith("suggested · turn 3: 편의점") for t in at.text)
    assert AnnotationRules(store).own(1, dialogue.conv_id, "local") is None  # nothing stored
    at.button(key="annotate.accept.0").click().run()
    own = AnnotationRules(store).own(1, dialogue.conv_id, "local")
    assert own is not None and [s.origin for s in own.spans] == ["suggestion:fake-listener"]


def test_a_spreadsheet_of_spans_by_their_text_comes_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[0].conv_id
    assert main(["annotations", "project", "--name", "sheet", "--limit", "2"]) == 0
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        "\ufeffconv_id,annotator,category,note,turn,ko,type,en\n"
        f"{conv_id},kim,context_modified,,3,편의점,places,convenience store\n"
        f"{conv_id},kim,context_modified,,1,야근,institutions,\n"
        f"{conv_id},lee,simply_transferred,도 ok,,,,\n",
        encoding="utf-8",
    )
    assert main(["annotations", "import", str(sheet), "--project", "1"]) == 0, (
        capsys.readouterr().err
    )
    stored = {a.annotator: a for a in AnnotationRules(Store(os.environ["KOED_DB"])).annotations(1)}
    assert [s.ko.text for s in stored["import:kim"].spans] == ["편의점", "야근"]
    assert (
        stored["import:kim"].spans[0].en is not None
        and stored["import:kim"].spans[1].no_counterpart
    )
    assert stored["import:lee"].category == "simply_transferred" and not stored["import:lee"].spans
    sheet.write_text(
        f"conv_id,annotator,category,turn,ko,type\n{conv_id},x,context_modified,3,김밥,food\n",
        encoding="utf-8",
    )
    assert main(["annotations", "import", str(sheet), "--project", "1"]) == 1
    assert "sheet.csv row 2: '김밥' is not in that turn" in capsys.readouterr().err


def test_an_export_is_private_and_whole_and_a_version_is_a_safe_name(tmp_path: Path) -> None:
    """Annotation exports were world-readable and a failed one
    left a ``.part``; a taxonomy version "2026/12" stopped the export and "x/../../.."
    wrote outside the folder. Every file is 0600 and whole or absent; a version is
    limited to [A-Za-z0-9._-], said with the field."""
    from koed_core.annotation.exchange import write_jsonl
    from koed_core.annotation.taxonomy import AnnotationError, parse_taxonomy

    assert main(["annotations", "project", "--name", "private", "--limit", "2"]) == 0
    out = tmp_path / "out"
    assert main(["annotations", "export", "--out", str(out)]) == 0
    files = sorted(out.iterdir())
    assert files and {f.stat().st_mode & 0o777 for f in files} == {0o600}

    def broken() -> Iterator[dict[str, str]]:
        yield {"conv_id": "a"}
        raise OSError("No space left on device")

    target = tmp_path / "half" / "annotations-9.jsonl"
    with pytest.raises(OSError, match="No space"):
        write_jsonl(broken(), target)
    assert list(target.parent.iterdir()) == []  # no half file, no .part

    base = {"name": "t", "types": [{"code": "places", "en": "Places", "ko": "장소"}]}
    for bad in ("2026/12", "x/../../..", "v\x001", "a" * 41):
        with pytest.raises(AnnotationError, match="'version' is .*letters, digits"):
            parse_taxonomy({**base, "version": bad}, "taxonomy.toml")
    assert parse_taxonomy({**base, "version": "2026.12-b_1"}, "t").declared == "2026.12-b_1"


def test_a_forged_selection_message_is_one_sentence() -> None:
    """Span-selector messages with missing keys or string or float
    offsets gave tracebacks and broke the page for the session. Each is a notice; a good
    message's text is read from the dialogue, not from the message."""
    from components.annotation.span_actions import read_selection

    dialogue = load_dataset(SAMPLE_FILE).dialogues[0]
    forged = [
        {},
        {"lang": "ko"},
        {"lang": "ko", "position": "3", "start": 3, "end": 6},
        {"lang": "ko", "position": 3, "start": 3.0, "end": 6},
        {"lang": "ko", "position": 3, "start": True, "end": 6},
        {"lang": "fr", "position": 3, "start": 3, "end": 6},
        {"lang": "ko", "position": 99, "start": 0, "end": 2},
        {"lang": "ko", "position": 3, "start": 5, "end": 5000},
        {"lang": "en", "position": [1], "start": 0, "end": 1},
    ]
    for message in forged:
        lang, side, notice = read_selection(dialogue, message)
        assert side is None and notice and "Traceback" not in notice, message
    lang, side, notice = read_selection(
        dialogue, {"lang": "ko", "position": 3, "start": 3, "end": 6, "text": "<forged>"}
    )
    assert (lang, notice) == ("ko", None) and side is not None and side["text"] == "편의점"


def test_no_counterpart_must_be_a_boolean() -> None:
    """An imported ``"no_counterpart": "false"`` was stored as true
    (a non-empty string is truthy). Only JSON booleans are read; anything else is named."""
    from koed_core.annotation.spans import span_from_dict
    from koed_core.annotation.taxonomy import AnnotationError

    base = {"type": "places", "ko": {"position": 3, "start": 3, "end": 6}}
    assert span_from_dict({**base, "no_counterpart": True}, "line 1").no_counterpart is True
    assert span_from_dict(base, "line 1").no_counterpart is False
    for bad in ("false", "true", 0, 1, None):
        with pytest.raises(AnnotationError, match="line 2: 'no_counterpart' must be true or false"):
            span_from_dict({**base, "no_counterpart": bad}, "line 2")


@pytest.mark.slow
def test_a_long_lock_on_add_span_is_one_sentence_and_the_span_is_kept_for_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 31.8: a database held by another process for over the busy timeout gave
    "Add span" a `database is locked` traceback. It is one sentence now; once the lock is
    gone the same selection is added."""
    import sqlite3

    import koed_core.db.store as store_module

    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)  # the app's store opens here
    dialogue = load_dataset(SAMPLE_FILE).dialogues[0]
    store = Store(os.environ["KOED_DB"])
    AnnotationRules(store).create_project("p", load_dataset(SAMPLE_FILE), [dialogue.conv_id])
    at = _as(None).run().switch_page("app_pages/annotation/annotate.py").run()
    at.selectbox(key="annotate.typed.turn").set_value(3)
    at.text_input(key="annotate.typed.ko").set_value("편의점")
    at.text_input(key="annotate.typed.en").set_value("convenience store")
    next(b for b in at.button if b.label == "Select these").click().run()
    next(s for s in at.selectbox if s.label == "Signal type").set_value("places")
    other = sqlite3.connect(os.environ["KOED_DB"], isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's long write
    try:
        next(b for b in at.button if b.label == "Add span").click().run()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert not at.exception, [e.value for e in at.exception]
    assert any("the database is busy" in e.value for e in at.error), [e.value for e in at.error]
    assert AnnotationRules(store).own(1, dialogue.conv_id, "local") is None
    at.run()  # the lock is gone: the page is back, with the selection
    next(b for b in at.button if b.label == "Add span").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    own = AnnotationRules(store).own(1, dialogue.conv_id, "local")
    assert own is not None and [s.ko.text for s in own.spans] == ["편의점"]


@pytest.mark.slow
def test_the_reviewer_keeps_the_second_of_two_spans_with_the_same_words() -> None:
    """Finding 31.10: the reviewer's pool was keyed by a span's words, so of the same text
    marked at two places only the first could be kept. Each place is its own choice now,
    labelled with its characters, and the one kept is stored with its own offsets."""
    from components.annotation.curation import pool_key
    from koed_core.annotation.spans import Span, side_at
    from koed_core.annotation.taxonomy import CONTEXT_MODIFIED

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = next(d for d in dataset.dialogues if d.conv_id == "sample:1_conv:8")
    text = dialogue.turns[1].ko
    first = text.index("다.")
    second = text.index("다.", first + 1)
    store = Store(os.environ["KOED_DB"])
    annotations = AnnotationRules(store)
    project = annotations.create_project(
        "twice", dataset, [dialogue.conv_id], annotators=["alice", "bob"]
    )
    spans = [
        Span(side_at(dialogue, "ko", 2, start, start + 2), "places", no_counterpart=True)
        for start in (first, second)
    ]
    for name, span in zip(("alice", "bob"), spans, strict=True):
        annotations.save(project, dialogue, name, CONTEXT_MODIFIED, "", [span], submit=True)
    at = _as(None).run().switch_page("app_pages/annotation/projects.py").run()
    assert not at.exception, [e.value for e in at.exception]
    keep = at.multiselect(key=f"review.spans.{project}.{dialogue.conv_id}")
    assert len(keep.options) == 2, keep.options  # two places, two choices, told apart
    assert [
        f"ko characters {start}-{start + 2})" in label
        for start, label in zip((first, second), keep.options, strict=True)
    ] == [True, True], keep.options
    keep.set_value([pool_key(spans[1])])
    at.radio(key=f"review.category.{dialogue.conv_id}").set_value(CONTEXT_MODIFIED)
    next(b for b in at.button if b.label == "Record the final answer").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    final = annotations.adjudication(project, dialogue.conv_id)
    assert final is not None
    assert [(s.ko.start, s.ko.end) for s in final.spans] == [(second, second + 2)]


HOSTILE_LINES = {
    "a category that is a list": (
        '{{"conv_id": "{c}", "annotator": "a", "category": ["x"]}}',
        "line 1, annotation 1: 'category' must be a category code (text)",
    ),
    "an unpaired surrogate in the note": (
        '{{"conv_id": "{c}", "annotator": "a", "category": "context_modified", "note": "\\ud800"}}',
        "line 1: note holds an unpaired surrogate",
    ),
    "an unpaired surrogate in a span": (
        '{{"conv_id": "{c}", "annotator": "a", "category": "context_modified", "spans": '
        '[{{"type": "places", "ko": {{"position": 1, "start": 0, "end": 1, '
        '"text": "\\udc00"}}}}]}}',
        "line 1: spans[0].ko.text holds an unpaired surrogate",
    ),
    "nesting a hundred thousand deep": (
        '{{"conv_id": "{c}", "annotator": "a", "x": ' + "[" * 100000 + "]" * 100000 + "}}",
        "line 1: nested too deeply to be an annotation",
    ),
    "adjudicated as a string": (
        '{{"conv_id": "{c}", "annotator": "a", "category": "context_modified", '
        '"adjudicated": "no"}}',
        "line 1, annotation 1: 'adjudicated' must be true or false",
    ),
    "the same annotator twice": (
        '{{"conv_id": "{c}", "annotator": "a", "category": "context_modified"}}\n'
        '{{"conv_id": "{c}", "annotator": "a", "category": "simply_transferred"}}',
        "line 2, annotation 1: a annotated",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_LINES))
def test_a_hostile_import_names_its_line_and_field_and_leaves_no_project(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Generic errors (UnicodeEncodeError, RecursionError, TypeError)
    instead of the line and field, a refused import still leaving an empty project (one
    more per retry), and a second answer of one annotator replacing the first silently."""
    conv_id = load_dataset(SAMPLE_FILE).dialogues[0].conv_id
    text, message = HOSTILE_LINES[case]
    file = tmp_path / "hostile.jsonl"
    file.write_text(text.format(c=conv_id) + "\n", encoding="utf-8")
    for _ in range(2):  # a retry leaves nothing either
        assert main(["annotations", "import", str(file), "--name", "new"]) == 1
        err = capsys.readouterr().err
        assert f"error: hostile.jsonl {message}" in err, err
        assert "Error:" not in err and "KOED_DEBUG" not in err
    assert AnnotationRules(Store(os.environ["KOED_DB"])).projects() == []


def test_an_import_counts_distinct_dialogues_and_a_sheet_gives_one_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The import said "imported 300 annotations on 300 dialogues" for 10 (one line
    per annotator, several lines per dialogue); a CSV giving one annotator two categories
    for one dialogue kept the first silently."""
    dialogues = load_dataset(SAMPLE_FILE).dialogues[:2]
    lines = [
        json.dumps({"conv_id": d.conv_id, "annotator": who, "category": "context_modified"})
        for d in dialogues
        for who in ("kim", "lee", "park")
    ]
    file = tmp_path / "three.jsonl"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["annotations", "import", str(file), "--name", "three", "--per-item", "3"]) == 0
    assert "imported 6 annotation(s) with 0 span(s) on 2 dialogue(s)" in capsys.readouterr().out
    conv_id = dialogues[0].conv_id
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        "conv_id,annotator,category,turn,ko,type,en\n"
        f"{conv_id},kim,context_modified,3,편의점,places,convenience store\n"
        f"{conv_id},kim,simply_transferred,1,야근,institutions,\n",
        encoding="utf-8",
    )
    assert main(["annotations", "import", str(sheet), "--project", "1"]) == 1
    err = capsys.readouterr().err
    assert "sheet.csv row 3: kim gave" in err and "'context_modified' at row 2" in err, err


@pytest.mark.slow
def test_the_new_project_form_offers_annotators_and_makes_a_project_once(site: Path) -> None:
    """The form kept its values, so a second press made the same project again,
    and it offered the admin (who sees every answer) as a blind annotator."""
    accounts.add_user(site.parent / "accounts.yaml", "lin", "annotator", "Lin", "lin-password")
    at = _as("boss", "app.py").run()
    at.switch_page("app_pages/annotation/projects.py").run()
    assert not at.exception, [e.value for e in at.exception]
    who = next(m for m in at.multiselect if m.label.startswith("Annotators"))
    assert who.options == ["lin"]
    name = next(t for t in at.text_input if t.label == "Project name")
    name.set_value("Pilot")
    create = next(b for b in at.button if b.label == "Create the project")
    create.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("created with" in s.value for s in at.success)
    # the browser empties the form (clear_on_submit); a second press of the same name:
    next(t for t in at.text_input if t.label == "Project name").set_value("Pilot")
    next(b for b in at.button if b.label == "Create the project").click().run()
    assert any("exists already" in e.value for e in at.error)
    names = [p["name"] for p in AnnotationRules(Store(site)).projects()]
    assert names.count("Pilot") == 1
    # a double press: the second sends the emptied form; the first's result is said again
    next(t for t in at.text_input if t.label == "Project name").set_value("Second")
    next(b for b in at.button if b.label == "Create the project").click().run()
    next(t for t in at.text_input if t.label == "Project name").set_value("")
    next(b for b in at.button if b.label == "Create the project").click().run()
    assert not at.error, [e.value for e in at.error]
    assert [s.value for s in at.success] == ["Project 2 created with 20 dialogues."]
    assert len(AnnotationRules(Store(site)).projects()) == 2


def test_the_projects_page_shows_which_types_met_on_the_same_words() -> None:
    """Two annotators mark the same words, one as a place, one as a name; the
    per-type F1 says 0 for both, the page's confusion table shows where they met."""
    from koed_core.annotation.spans import Span, side_at
    from koed_core.annotation.taxonomy import CONTEXT_MODIFIED

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    start = dialogue.turns[2].ko.index("편의점")
    annotations = AnnotationRules(Store(os.environ["KOED_DB"]))
    project = annotations.create_project(
        "types", dataset, [dialogue.conv_id], annotators=["alice", "bob"]
    )
    for name, kind in (("alice", "places"), ("bob", "names")):
        span = Span(side_at(dialogue, "ko", 3, start, start + 3), kind, no_counterpart=True)
        annotations.save(project, dialogue, name, CONTEXT_MODIFIED, "", [span], submit=True)
    at = _as(None).run().switch_page("app_pages/annotation/projects.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.value == "**Types chosen for the same words**" for m in at.markdown)
    agreement_rows = next(d.value for d in at.dataframe if "measure" in d.value.columns)
    located = agreement_rows.set_index("measure").loc["span F1 location exact (any type)"]
    assert float(located["value"]) == 1.0  # the same words: full agreement on where
    confusion = next(d.value for d in at.dataframe if "type" in d.value.columns[:1])
    table = confusion.set_index("type")
    places = next(c for c in table.columns if c.startswith("Places"))
    names = next(i for i in table.index if i.startswith("Names"))
    assert table.loc[names, places] == 1


def test_a_notice_waiting_beside_the_pending_sides_is_not_read_as_a_side() -> None:
    """A drag across turns stored its notice among the pending sides, and the
    next run read the sentence as a span (TypeError, on every reopening)."""
    from components.annotation.span_select import _marks

    side = {"position": 2, "start": 0, "end": 3, "text": "편의점"}
    pending = {"ko": side, "en": None, "notice": "A span lies within one turn."}
    assert _marks([], pending, 2, "selected")["ko"] == [
        {"start": 0, "end": 3, "cls": "pending", "title": "selected"}
    ]
    assert _marks([], pending, 1, "selected") == {"ko": [], "en": []}


@pytest.mark.slow
def test_the_agreement_table_speaks_korean_on_the_page_and_english_in_the_csv(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its details ("3 annotator pair(s)") and type codes reached a Korean page
    in English; the CSV for scripts stays English."""
    import streamlit as st

    from koed_core.annotation.spans import Span, side_at
    from koed_core.annotation.taxonomy import CONTEXT_MODIFIED

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    start = dialogue.turns[2].ko.index("편의점")
    annotations = AnnotationRules(Store(os.environ["KOED_DB"]))
    project = annotations.create_project("ko", dataset, [dialogue.conv_id], annotators=["a", "b"])
    for name in ("a", "b"):
        span = Span(side_at(dialogue, "ko", 3, start, start + 3), "places", no_counterpart=True)
        annotations.save(project, dialogue, name, CONTEXT_MODIFIED, "", [span], submit=True)
    files: list[str] = []
    real = st.download_button

    def spy(label: str, data: object, *args: object, **kwargs: object) -> object:
        if isinstance(data, str | bytes) and "annotation_project" in str(data):
            files.append(data.decode() if isinstance(data, bytes) else data)
        return real(label, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(st, "download_button", spy)
    at = _as(None)
    at.query_params["lang"] = "ko"
    at.run().switch_page("app_pages/annotation/projects.py").run()
    assert not at.exception, [e.value for e in at.exception]
    text = next(t for t in (d.value.to_string() for d in at.dataframe) if "F1" in t)
    assert "주석자 쌍 1개" in text and "annotator pair" not in text
    assert "장소" in text  # the type by its name, not the code "places"
    assert files and "1 annotator pair(s)" in files[-1] and "주석자" not in files[-1]


def _people(folder: Path) -> Path:
    path = folder / "people.yaml"
    accounts.add_user(path, "boss", "admin", "Boss", "boss-password-1")
    accounts.add_user(path, "mina", "rater", "Mina", "mina-password-1")
    accounts.add_user(path, "lin", "annotator", "Lin", "lin-password-1")
    accounts.add_user(path, "kyu", "annotator", "Kyu", "kyu-password-1")
    return path


# Only annotator accounts take a slot ------------------------------------------------


@pytest.mark.slow
def test_only_annotator_accounts_take_a_slot_and_names_that_are_no_account_are_refused(
    tmp_path: Path, sample_dataset: Dataset
) -> None:
    people = _people(tmp_path)
    annotations = AnnotationRules(Store(tmp_path / "koed.db"), accounts_file=people)
    dialogue, span = place_span(sample_dataset)
    project = annotations.create_project("any", sample_dataset, [dialogue.conv_id], per_item=2)
    for who, said in (
        ("boss", "'boss' is an admin account"),
        ("mina", "'mina' is a rater account"),
        ("ghost", "'ghost' is not an account"),
        ("local", "'local' is not an account"),
    ):
        with pytest.raises(AnnotationError, match=said):
            annotations.save(project, dialogue, who, CONTEXT_MODIFIED, "", [span])
    assert annotations.q.states(project) == []  # nobody took a slot
    annotations.save(project, dialogue, "lin", CONTEXT_MODIFIED, "", [span])
    annotations.save(project, dialogue, "kyu", CONTEXT_MODIFIED, "", [span], submit=True)
    assert sorted(r["annotator"] for r in annotations.q.states(project)) == ["kyu", "lin"]
    # a project naming its annotators names annotator accounts
    for named, said in ((["lin", "boss"], "'boss' is an admin"), (["ghost"], "not an account")):
        with pytest.raises(AnnotationError, match=said):
            annotations.create_project("named", sample_dataset, [dialogue.conv_id], 1, named)
    assert len(annotations.projects()) == 1


def test_with_no_accounts_the_one_person_app_still_annotates(
    tmp_path: Path, sample_dataset: Dataset
) -> None:
    absent = tmp_path / "nobody.yaml"
    annotations = AnnotationRules(Store(tmp_path / "koed.db"), accounts_file=absent)
    dialogue, span = place_span(sample_dataset)
    project = annotations.create_project("mine", sample_dataset, [dialogue.conv_id], per_item=1)
    annotations.save(project, dialogue, "local", CONTEXT_MODIFIED, "", [span], submit=True)
    required = AnnotationRules(
        Store(tmp_path / "koed.db"), accounts_file=absent, accounts_required=True
    )
    with pytest.raises(accounts.AccountsError, match="does not exist"):
        required.save(project, dialogue, "local", CONTEXT_MODIFIED, "", [span])


@pytest.mark.slow
def test_an_admin_on_the_annotate_page_gets_a_sentence_not_a_slot(
    site: Path, sample_dataset: Dataset
) -> None:
    accounts.add_user(site.parent / "accounts.yaml", "lin", "annotator", "Lin", "lin-password")
    dialogue, _span = place_span(sample_dataset)
    AnnotationRules(Store(site)).create_project(
        "any", sample_dataset, [dialogue.conv_id], per_item=2
    )
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["authentication_status"] = True
    at.session_state["username"] = "boss"
    at.session_state["name"] = "Boss"
    at.run().switch_page("app_pages/annotation/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    said = [m.value for m in (*at.info, *at.warning, *at.error)]
    assert any("Admins do not annotate" in s for s in said), said
    assert not at.selectbox and [b.key for b in at.button] == ["sidebar.logout"]
    assert AnnotationRules(Store(site)).q.states(1) == []
