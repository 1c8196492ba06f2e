"""KoED Studio in Korean: a catalog that cannot fall behind the code, and pages that a
Korean reader reads in Korean.

The catalog tests extract the strings from the code with Babel, as `pybabel extract`
does (babel.cfg), and compare them with locale/ko/LC_MESSAGES/koed.po. The page tests
walk a crowd worker's visit and a rater's pages with ``?lang=ko`` and look at every
piece of text the app itself writes (titles, captions, messages, labels, buttons,
options, progress lines, table headers), never at what comes from data (dialogues,
consent texts, the bilingual rubric).
"""

from __future__ import annotations

import ast
import json
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from streamlit.testing.v1 import AppTest

from fixtures.rating import seeded_store, study
from koed_core import i18n
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.dialogues.labels import label_names
from koed_core.judge.rubric import codes, dimensions
from koed_core.paths import LOCALE_DIR
from koed_core.rating import crowd
from koed_core.rating.studies import StudyRules, attention_instruction, calibration_items

ROOT = Path(__file__).resolve().parents[1]
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}
SOURCES = ("app.py", "app_pages", "components", "koed_core")
HANGUL = re.compile(r"[\uac00-\ud7a3\u3131-\u318e]")


def _code_messages() -> dict[str, str]:
    """Every message id in the code (the singular of a plural), with where it is."""
    found: dict[str, str] = {}
    method_map = [(f"{s}/**.py" if s != "app.py" else s, "python") for s in SOURCES]
    method_map.append(("models.toml", "koed_core.text.toml_messages:extract_notes"))  # babel.cfg
    for filename, _lineno, message, _comments, _context in extract_from_dir(
        str(ROOT), method_map=method_map, keywords=KEYWORDS
    ):
        first = message[0] if isinstance(message, tuple) else message
        if first:
            found.setdefault(first, filename)
    return found


def _catalog(path: Path):  # type: ignore[no-untyped-def]
    with path.open("rb") as source:
        return read_po(source, locale="ko")


def _fields(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


@pytest.mark.slow
def test_every_string_in_the_code_has_a_korean_entry_with_the_same_placeholders() -> None:
    code = _code_messages()
    assert len(code) > 100  # the extraction found the app's strings at all
    catalog = _catalog(LOCALE_DIR / "ko" / "LC_MESSAGES" / "koed.po")
    entries = {(m.id[0] if isinstance(m.id, tuple) else m.id): m for m in catalog if m.id}
    missing = sorted(f"{where}: {text!r}" for text, where in code.items() if text not in entries)
    assert not missing, "no Korean entry (pybabel extract + update, then translate):\n" + "\n".join(
        missing
    )
    stale = sorted(text for text in entries if text not in code)
    assert not stale, "entries the code no longer has (pybabel update drops them):\n" + "\n".join(
        stale
    )
    for text, entry in entries.items():
        assert not entry.fuzzy, f"fuzzy: {text!r}"
        translations = entry.string if isinstance(entry.string, tuple) else (entry.string,)
        sources = entry.id if isinstance(entry.id, tuple) else (entry.id,)
        assert all(translations), f"untranslated: {text!r}"
        wanted = set().union(*(_fields(s) for s in sources))
        for korean in translations:
            assert _fields(korean) == wanted, f"placeholders differ: {text!r} / {korean!r}"
            assert HANGUL.search(korean), f"not Korean: {korean!r}"


@pytest.mark.slow
def test_the_template_for_translators_is_the_codes() -> None:
    template = {
        (m.id[0] if isinstance(m.id, tuple) else m.id) for m in _catalog(LOCALE_DIR / "koed.pot")
    }
    assert template - {""} == set(_code_messages())


def _ui_literals() -> Iterator[tuple[str, int, str]]:
    """String constants of the page code that are not docstrings."""
    files = [
        ROOT / "app.py",
        *(ROOT / "app_pages").rglob("*.py"),
        *(ROOT / "components").rglob("*.py"),
    ]
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
            ):
                yield str(file.relative_to(ROOT)), node.lineno, node.value


def test_no_korean_literal_in_the_page_code() -> None:
    """Korean lives in the catalog and the data files; the code's source language is
    English, so a string cannot be Korean for everyone by accident."""
    found = [f"{f}:{n}: {v[:60]!r}" for f, n, v in _ui_literals() if HANGUL.search(v)]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_no_translation_call_hides_inside_an_f_string() -> None:
    """Babel cannot extract ``f"{_('x')}"`` (it skips f-strings with substitutions), so
    such a string would stay English without any test noticing."""
    found = []
    files = [
        ROOT / "app.py",
        *(ROOT / "app_pages").rglob("*.py"),
        *(ROOT / "components").rglob("*.py"),
    ]
    for file in [*files, *(ROOT / "koed_core").rglob("*.py")]:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                for inner in ast.walk(node):
                    if (
                        isinstance(inner, ast.Call)
                        and isinstance(inner.func, ast.Name)
                        and inner.func.id in KEYWORDS
                    ):
                        found.append(f"{file.relative_to(ROOT)}:{inner.lineno}")
    assert not found, "translate outside the f-string: " + ", ".join(found)


@pytest.mark.slow
def test_no_module_that_translates_reuses_the_name_underscore() -> None:
    """``_`` is the translation function wherever it is imported; a throwaway ``_``
    (``for _ in``, ``a, _ = ...``) in the same module would turn every later ``_()`` into
    a call of that value, a traceback on the page."""
    found = []
    files = [
        ROOT / "app.py",
        *(ROOT / "app_pages").rglob("*.py"),
        *(ROOT / "components").rglob("*.py"),
    ]
    for file in [*files, *(ROOT / "koed_core").rglob("*.py")]:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        imports_it = any(
            isinstance(n, ast.ImportFrom) and any(a.name == "_" for a in n.names)
            for n in ast.walk(tree)
        )
        if imports_it:
            found += [
                f"{file.relative_to(ROOT)}:{n.lineno}"
                for n in ast.walk(tree)
                if isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store)
            ]
    assert not found, "a throwaway _ where _ translates: " + ", ".join(found)


def test_placeholders_are_filled_after_translation_and_english_is_the_default() -> None:
    assert i18n.language() == "en"
    message = "Batch {batch} of {batches}: {done} of {size} rated"
    english = i18n._(message, batch=1, batches=2, done=0, size=4)
    assert english == "Batch 1 of 2: 0 of 4 rated"
    with i18n.speaking("ko"):
        korean = i18n._(message, batch=1, batches=2, done=0, size=4)
        assert korean != english and "1" in korean and "4" in korean
        assert i18n.number(12345.5, 1) == "12,345.5" and i18n.percent(0.25) == "25%"
    assert i18n.language() == "en"  # the block's language only


# The pages, read in Korean -------------------------------------------------------------

ALLOWED = {
    # names and codes that stay as they are in Korean text
    "KoED", "Studio", "EX", "IP", "ER", "EEA", "CA", "Prolific", "MTurk", "HIT", "ID",
    "Mechanical", "Turk", "English", "STUDY_ID", "SESSION_ID", "PROLIFIC_PID", "assignmentId",
    "KOED_USERS", "koed", "users", "add", "NAME", "role", "admin", "data", "yaml", "git",
    "ED",  # EmpatheticDialogues, as the paper abbreviates it
    "LLM",  # as Korean research writing has it
    "MB",
    "Return",  # the platforms' button, named as the worker sees it there: 반환(Return)
}  # fmt: skip
LATIN = re.compile(r"[A-Za-z][A-Za-z_]+")
RUBRIC_HEADERS = {
    f"**{d.code} · {d.name(a)} · {d.name(b)}**"
    for d in dimensions()
    for a, b in (("ko", "en"), ("en", "ko"))
}


def _chrome(at: AppTest) -> list[str]:
    """Every text the app writes itself on this screen (not dialogue, consent or rubric
    text, which are data and bilingual where the study made them so)."""
    texts: list[str] = []
    for kind in ("title", "header", "subheader", "caption", "info", "warning", "error", "success"):
        texts += [e.value for e in getattr(at, kind)]
    texts += [m.value for m in at.markdown if m.value not in RUBRIC_HEADERS]
    texts += [t.value for t in at.toast]
    for kind in ("button", "checkbox", "number_input", "text_input", "text_area", "expander"):
        texts += [e.label for e in getattr(at, kind)]
    for kind in ("radio", "selectbox", "multiselect"):
        for widget in getattr(at, kind):
            texts.append(widget.label)
            texts += [str(o) for o in widget.options]
    texts += [p.proto.text for p in at.get("progress")]
    for frame in at.dataframe:
        texts += _headers(frame)
    return texts


def _headers(frame: Any) -> list[str]:
    """A table's column headers as the reader sees them: the column configuration's label
    where one is set, else the column's name; hidden columns and those left out of
    ``column_order`` are not seen."""
    config = json.loads(frame.proto.columns or "{}")
    order = list(frame.proto.column_order)
    shown = []
    for column in frame.value.columns:
        setting = config.get(str(column), {})
        if setting.get("hidden") or (order and str(column) not in order):
            continue
        shown.append(str(setting.get("label") or column))
    return shown


BILINGUAL_DATA = {
    *(attention_instruction(score) for score in range(1, 6)),
    "I agree.",  # the English half of the test study's consent text
    "I agree.\n\nContact: researcher@example.org",  # with the link's contact, filled in
    "동의합니다.\n\n문의처: researcher@example.org",
}
"""Texts a study shows in both languages on purpose (its consent, what an attention
check asks), as the review board approved them."""


def _english_words(texts: list[str], allowed: set[str], data: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """Latin words in the app's own texts; ``data`` are texts a file wrote, shown as they
    are."""
    left = []
    for text in texts:
        if text.replace("\\", "") in BILINGUAL_DATA | set(data):
            continue
        plain = text.replace("\\", "")
        plain = re.sub(r":material/[a-z_]+:|:[a-z]+-badge\[", " ", plain)  # markdown directives
        plain = re.sub(r"`[^`]*`|https?://\S+", " ", plain)  # code and links
        plain = re.sub(r"\S*[\d:_]\S*", " ", plain)  # ids, codes, file names, numbers
        plain = re.sub(r"\S+\.(toml|json|jsonl|yaml|csv|tsv|txt|db)\b", " ", plain)  # files
        words = [w for w in LATIN.findall(plain) if w not in allowed and w not in ALLOWED]
        if words:
            left.append(f"{text!r}: {words}")
    return left


KEY = b"k" * 32
PROLIFIC = {
    "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e",
    "STUDY_ID": "60aa00000000000000000001",
    "SESSION_ID": "70bb00000000000000000001",
}


@pytest.fixture
def korean_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, int]:
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=1, langs=("ko",))
    return store, study_id


def _invite(store: Store, study_id: int, cap: int) -> tuple[crowd.Invite, str]:
    """A Prolific link to the Korean study (Korean and English consent, a reward)."""
    request = crowd.InviteRequest(
        platform="prolific",
        days=7.0,
        cap=cap,
        batch_size=2,
        consent_ko="동의합니다.",
        consent_en="I agree.",
        contact="researcher@example.org",
        reward=2.0,
    )
    return crowd.create_invite(store, KEY, study_id, request)


def _visit(token: str, lang: str | None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["invite"] = token
    if lang:
        at.query_params["lang"] = lang
    for name, value in PROLIFIC.items():
        at.query_params[name] = value
    return at.run()


def _assignment(store: Store, username: str) -> tuple[str, int | None]:
    row = store.rows(
        "select a.id, i.instructed_score from assignments a join study_items i on "
        "i.id = a.item_id where a.username = ? and a.status = 'assigned'",
        [username],
    )[0]
    return str(row["id"]), row["instructed_score"]


@pytest.mark.slow
def test_a_korean_workers_whole_visit_is_in_korean(korean_study: tuple[Store, int]) -> None:
    """Korean items, no ?lang and no browser language: the study's page is Korean from
    consent to the code, on every step, including the warning for a missing score, the
    calibration's feedback table and the end of the visit."""
    store, study_id = korean_study
    invite, token = _invite(store, study_id, cap=3)
    seen: list[str] = []
    at = _visit(token, None)
    assert not at.exception, [e.value for e in at.exception]
    seen += _chrome(at)
    at.checkbox[0].check().run()
    at.button[0].click().run()  # consent
    seen += _chrome(at)
    at.radio[0].set_value("ko").run()
    at.number_input[0].set_value(25)
    at.button[0].click().run()  # screening
    seen += _chrome(at)
    assert at.subheader and "1/" in at.subheader[0].value  # calibration, in Korean
    references = {i["id"]: i["reference"] for i in calibration_items(("ko",))}
    for step in range(12):  # calibration items with feedback, then the batch
        if at.get("progress") or not at.subheader:
            break
        radios = [r for r in at.radio if r.key and r.key.startswith("calibration.")]
        if radios:
            at.button[0].click().run()  # submit with nothing scored: the warning
            seen += _chrome(at)
            assert at.warning, "no warning for a rating with no score"
            for radio in [r for r in at.radio if r.key and r.key.startswith("calibration.")]:
                _, item_id, code = radio.key.split(".")
                radio.set_value(references[item_id][code])  # close to them: passed
            at.button[0].click().run()
        else:
            seen += _chrome(at)  # the feedback table
            next(b for b in at.button if b.key and b.key.startswith("calibration.next")).click()
            at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert step < 11, "calibration never ended"
    username = crowd.worker_name(KEY, study_id, "prolific", PROLIFIC["PROLIFIC_PID"])
    for _ in range(3):
        seen += _chrome(at)
        current, told = _assignment(store, username)
        for code in codes():
            at.radio(key=f"crowd.{current}.{code}").set_value(told or 4)
        at.button[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
    seen += _chrome(at)
    assert Crowd(store).worker(username)["status"] == "completed"  # type: ignore[index]
    assert invite.completion_code in " ".join(m.value for m in at.markdown)
    left = _english_words(seen, {invite.completion_code})
    assert not left, "English on a Korean worker's page:\n" + "\n".join(left)


@pytest.mark.parametrize("why", ["full", "withdrawn"])
def test_a_refusal_is_in_korean(korean_study: tuple[Store, int], why: str) -> None:
    store, study_id = korean_study
    invite, token = _invite(store, study_id, cap=1)
    if why == "full":  # someone else holds the only place
        other = {**PROLIFIC, "PROLIFIC_PID": "6f1a2b3c4d5e6f7a8b9c0d1f", "SESSION_ID": "7" * 24}
        crowd.join(store, KEY, invite, crowd.platform_ids(invite, other, KEY))
    else:
        Crowd(store).revoke(invite.id)
    at = _visit(token, "ko")
    assert not at.exception, [e.value for e in at.exception]
    expected = {"full": "마감", "withdrawn": "철회"}[why]
    assert at.error and expected in at.error[0].value, [e.value for e in at.error]
    assert not _english_words(_chrome(at), set())


def test_the_language_switch_and_the_url_agree(korean_study: tuple[Store, int]) -> None:
    """?lang=en on a Korean study's link wins over the items' language; the switch then
    turns the page Korean and writes ?lang=ko back, so a reload keeps it."""
    store, study_id = korean_study
    _, token = _invite(store, study_id, cap=3)
    at = _visit(token, "en")
    assert at.title[0].value == "KoED rating study"
    switch = at.get("button_group")[0]
    switch.set_value("ko").run()  # type: ignore[attr-defined]
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == i18n.catalog("ko").gettext("KoED rating study")
    assert at.query_params["lang"] == "ko"


@pytest.mark.slow
def test_a_raters_pages_are_in_korean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Log in page, then a rater's onboarding, calibration and rating, with ?lang=ko."""
    from koed_core.rating import accounts

    store, run_id = seeded_store(Path(monkeypatch_db(monkeypatch, tmp_path)))
    ratings, _study = study(store, run_id, overlap=2)
    accounts.add_user(tmp_path / "accounts.yaml", "mina", "rater", "Mina", "mina-password-1")
    visitor = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    visitor.query_params["lang"] = "ko"
    visitor.run().switch_page("app_pages/account/login.py").run()
    assert not visitor.exception, [e.value for e in visitor.exception]
    seen = _chrome(visitor)
    rater = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    rater.query_params["lang"] = "ko"
    rater.session_state["authentication_status"] = True
    rater.session_state["username"] = "mina"
    rater.session_state["name"] = "Mina"
    rater.run().switch_page("app_pages/rating/rate.py").run()
    assert not rater.exception, [e.value for e in rater.exception]
    seen += _chrome(rater)  # onboarding
    rater.button[0].click().run()
    seen += _chrome(rater)  # calibration
    ratings.mark_calibrated("mina")
    rater.run()
    assert not rater.exception, [e.value for e in rater.exception]
    seen += _chrome(rater)  # an item to rate, skip or flag
    left = _english_words(seen, {"Mina", "mina", "test"})
    assert not left, "English on a rater's page:\n" + "\n".join(left)


def monkeypatch_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The app's database and accounts for a page test (as tests/conftest.py's ``site``)."""
    db = tmp_path / "koed.db"
    monkeypatch.setenv("KOED_DB", str(db))
    monkeypatch.setenv("KOED_USERS", str(tmp_path / "accounts.yaml"))
    monkeypatch.setenv("KOED_COOKIE_KEY", "c" * 40)
    return str(db)


def test_the_explorer_is_in_korean_with_a_dialogue_open() -> None:
    """A visitor with ?lang=ko: the filters (their options too), the count, the table's
    headers, the downloads and an open dialogue's frame are Korean; the labels keep their
    names with the Korean glosses, and the dialogue text is the data's own."""
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    first = load_dataset(SAMPLE_FILE).dialogues[0]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "ko"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="d").set_value(first.conv_id).run()
    assert not at.exception, [e.value for e in at.exception]
    seen = _chrome(at)
    seen += [b.label for b in at.get("download_button")]
    allowed = {*label_names(), first.conv_id, "conv_id", "CSV", "JSONL", "ko", "en", "sha256"}
    allowed |= {"EmpatheticDialogues", "CC", "BY", "NC", "KOED_DATA", "KoED.json", "MB"}
    left = _english_words(seen, allowed)
    assert not left, "English on the Korean Explorer:\n" + "\n".join(left)


VISITOR_PAGES = [
    "app_pages/dialogues/overview.py",
    "app_pages/dialogues/adaptation.py",
    "app_pages/results/gap.py",
    "app_pages/results/demo.py",
    "app_pages/results/episodes.py",
    "app_pages/results/agreement.py",
    "app_pages/models/chat.py",
]


@pytest.mark.slow
@pytest.mark.parametrize("page", VISITOR_PAGES)
def test_a_visitors_page_is_in_korean(page: str) -> None:
    """Each public page on a fresh database, for a visitor with ?lang=ko: what it says
    (and, with no results yet, how to get some) is Korean; commands stay as typed."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "ko"
    at.run().switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    seen = _chrome(at) + [str(m.label) for m in at.get("metric")]
    allowed = {*label_names(), "EmpatheticDialogues", "CC", "BY", "NC", "KOED_DATA", "MB"}
    allowed |= {"Universal", "Sentence", "Encoder", "multilingual", "ED", "ko", "en"}
    allowed |= {"SmolLM", "smollm", "human", "OPENAI_API_KEY", "OpenAI", "vLLM", "Ollama"}  # ids
    allowed |= {"models", "toml", "secrets", "openai", "transformers"}
    # no "single", "multi", "direct", "embedded" or "bench/chat.py" (issue 66): a protocol
    # and a backend are said in Korean, and a visitor is not sent to a benchmark script
    left = _english_words(seen, allowed)  # the models' notes too (koed_core/text/toml_messages.py)
    assert not left, f"English on the Korean {page}:\n" + "\n".join(left)


ADMIN_PAGES = [
    "app_pages/models/runs.py",
    "app_pages/models/judge.py",
    "app_pages/rating/studies.py",
    "app_pages/rating/dashboard.py",
    "app_pages/annotation/projects.py",
    "app_pages/annotation/annotate.py",
    *VISITOR_PAGES,
]
GLOSS = re.compile(r"(?<=[\uac00-\ud7a3]) ?\([^()]*\)")
"""A term with no settled Korean form keeps its English once, in parentheses after the
Korean (배치 API(Batch API)), and so does a stored value a picker offers, after its
Korean words (여러 레이블 (multi): the name a command takes): that English is meant to
be there."""


def _as_user(username: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "ko"
    at.session_state["authentication_status"] = True
    at.session_state["username"] = username
    at.session_state["name"] = username
    return at


def _data_words(db: Path) -> set[str]:
    """What the stored data names, shown as it is in any language: run labels (model
    names, protocols, prompt sets), study names, projects."""
    from koed_core.db.judgments import Judgments
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.runs import run_labels
    from koed_core.paths import SAMPLE_FILE

    store = Store(db)
    texts = [*run_labels(store).values()]
    texts += [use.config.label for use in Judgments(store).configs()]
    texts += [str(r["name"]) for r in store.rows("select name from studies")]
    texts += [d.situation_en for d in load_dataset(SAMPLE_FILE).dialogues]
    return {w for text in texts for w in LATIN.findall(text)}


@pytest.mark.slow
@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_an_admins_page_is_in_korean(site: Path, page: str) -> None:
    """An admin with runs, judgments and a study (the upgraded 0.1.0 database), with
    ?lang=ko: the page, its forms and tables, and the jobs panel in the sidebar."""
    from koed_core.dialogues.labels import label_names
    from koed_core.models.registry import load_registry
    from koed_core.paths import DEFAULT_REGISTRY

    at = _as_user("boss").run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    seen = [GLOSS.sub(" ", text) for text in _chrome(at) + [str(m.label) for m in at.get("metric")]]
    registry = load_registry(DEFAULT_REGISTRY)
    allowed = {*label_names(), *_data_words(site), *registry, "Boss", "boss", "mina", "Mina"}
    allowed |= {"EmpatheticDialogues", "CC", "BY", "NC", "KOED_DATA", "MB", "ED", "ko", "en"}
    allowed |= {"native", "strict", "authors", "lenient"}
    allowed |= {"fenced", "OpenAI", "vLLM", "Ollama", "JSON", "JSONL", "CSV", "PNG", "SVG"}
    allowed |= {"Universal", "Sentence", "Encoder", "multilingual", "SmolLM", "smollm", "human"}
    allowed |= {"openai", "models", "toml", "transformers"}
    # no "single", "multi", "direct", "paper", "embedded" or "bench/chat.py" (issue 66)
    allowed |= {"OPENAI_API_KEY", "secrets", "API", "sha", "UTC", "conv_id", "kappa", "Cohen"}
    allowed |= {"Fleiss", "Krippendorff", "Spearman", "Prolific", "MTurk", "F1", "Markdown"}
    allowed |= {"LaTeX", "undefined"}  # the statistics' readings stay English (cached, exported)
    allowed |= {"PPI", "ppi", "python", "repr"}  # a method's and a package's names; Python's repr
    left = _english_words(seen, allowed)  # the models' notes too (koed_core/text/toml_messages.py)
    assert not left, f"English on an admin's Korean {page}:\n" + "\n".join(left)


@pytest.mark.slow
def test_an_annotators_page_is_in_korean(site: Path) -> None:
    """An annotator on a project of two dialogues, with ?lang=ko: the picker, the
    category, the span form and the guidelines are Korean; the dialogue is the data's."""
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE
    from koed_core.rating import accounts

    accounts.add_user(site.parent / "accounts.yaml", "lin", "annotator", "Lin", "lin-password")
    dataset = load_dataset(SAMPLE_FILE)
    chosen = [d.conv_id for d in dataset.dialogues[:2]]
    AnnotationRules(Store(site)).create_project(
        "pilot", dataset, chosen, per_item=1, annotators=["lin"]
    )
    at = _as_user("lin").run()
    at.switch_page("app_pages/annotation/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox, "no dialogue to annotate"
    seen = [GLOSS.sub(" ", text) for text in _chrome(at)]
    allowed = {*chosen, *label_names(), "pilot", "lin", "Lin", "ko", "en"}
    left = _english_words(seen, allowed)
    assert not left, "English on an annotator's Korean page:\n" + "\n".join(left)


def test_a_korean_chart_or_label_says_stored_values_in_korean() -> None:
    """Issue 66: "paper mode" in the Gap chart's subtitle, "(기타, single)" in Demo's
    labels, "smollm2 (embedded, 서구권)" on Chat, "...모두 가짐: jeong" in the Explorer's
    filter line and the Adaptation link notice's sort options were English on Korean
    pages; an English page keeps the stored names a command takes."""
    from koed_core.db import JudgeConfig
    from koed_core.dialogues.filters import DialogueFilter
    from koed_core.dialogues.links import dropped_values
    from koed_core.models.registry import ModelSpec
    from koed_core.results.figures import run_label

    judge = JudgeConfig("gpt-4o", "paper", "p" * 8, "r" * 8)
    spec = ModelSpec(name="smollm2", backend="embedded", model="smollm2", provenance="western")
    words = {"most rewritten first": "most rewritten first", "closest first": "closest first"}
    notice = dropped_values({"order": ["x"]}, set(), choices={"order": words})[0]
    with i18n.speaking("ko"):
        said = [
            judge.spoken,
            run_label("qwen2-7b", "other", "single"),
            spec.label,
            DialogueFilter(labels=frozenset({"jeong"})).describe(),
            notice.sentence(),
        ]
    left = _english_words(
        [GLOSS.sub(" ", text) for text in said], {"gpt", "qwen", "smollm", "jeong", "order"}
    )
    assert not left, left
    assert "jeong · 정" in said[3]  # the label keeps its name beside its gloss
    assert judge.spoken == "gpt-4o, paper mode"
    assert run_label("qwen2-7b", "other", "single") == "qwen2-7b (other, single)"
    assert spec.label == "smollm2 (embedded, western)"


def _korean_card(db: str, study_id: int) -> None:
    from unittest import mock

    from components.rating import eval_card_view
    from koed_core import i18n
    from koed_core.db import Store

    i18n.set_language("ko")
    with mock.patch("components.core.resources.store", return_value=Store(db)):
        eval_card_view.render_card(study_id)


CARD_CODES = {"ARR", "HEDS", "GBP", "Krippendorff", "id", "studies", "config", "invites"}
CARD_CODES |= {"reward", "ratings", "raters", "judgments"}
"""What the card may show as it is on a Korean page: the checklists' codes, a currency's
code, a statistic's author and the tables and columns a value was read from (ids,
versions and numbers are left out by ``_english_words`` already; a column named in
parentheses after its Korean words by ``GLOSS``)."""


@pytest.mark.slow
def test_the_human_evaluation_card_reads_in_korean(tmp_path: Path) -> None:
    """Issue 64: on a Korean dashboard the card's "from" and "checklist" cells were
    English, and so were the keys inside its values (native_korean, pass_rate) and its
    exclusions' reasons. Every cell is read now, a study with a judge, ratings, a
    Prolific link and workers who were screened out or returned."""
    from dataclasses import asdict, replace

    from fixtures.planted import planted_store
    from tests.test_crowd import _invite
    from tests.test_eval_card import _ended_on_prolific, _worker

    planted = planted_store(tmp_path / "koed.db", dialogues=30, fraction=0.3)
    rules = StudyRules(planted.store)
    more = replace(rules.config(planted.study_id), overlap=4)  # room for crowd workers
    with planted.store.write():
        rules.q.update_config(planted.study_id, asdict(more))
    invite, _ = _invite(planted.store, planted.study_id, cap=10, batch_size=2)
    _worker(planted.store, invite, 1, native="fr")
    _ended_on_prolific(planted.store, _worker(planted.store, invite, 2), "RETURNED", "e-2")
    at = AppTest.from_function(
        _korean_card, kwargs={"db": str(tmp_path / "koed.db"), "study_id": planted.study_id}
    ).run(timeout=60)
    assert not at.exception, [e.value for e in at.exception]
    frame = at.dataframe[0].value
    cells = [str(v) for v in frame.to_numpy().ravel()] + [str(c) for c in frame.columns]
    cells = [GLOSS.sub(" ", cell) for cell in cells]
    judge = {w for w in LATIN.findall(planted.judge.label)} | {"fenced", "json", "planted"}
    left = _english_words(cells, CARD_CODES | judge)
    assert not left, "English in the Korean card:\n" + "\n".join(left)
    assert any("ARR D4" in c for c in cells) and "ARR D2; HEDS 항목: 평가자" in cells
