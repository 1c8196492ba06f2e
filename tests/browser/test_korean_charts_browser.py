"""What a Korean page draws, read from the browser (issue 66's text sweep).

The AppTest checks in tests/test_i18n.py read every widget, caption and table of each
page with ``?lang=ko``, but a chart's title, subtitle, legend, axis labels and ticks are
drawn by Plotly in the browser as SVG text, which AppTest never sees ("paper mode" in
the Gap chart's subtitle, "(기타, single)" in Demo's labels). Here an admin (and a rater,
for the page only raters have) opens every page of the seeded site in Korean, and:

- every chart's SVG text is checked for English words that are not data;
- everything else the page shows (its whole text as the browser lays it out: headings,
  captions, tables, buttons, the menu) is compared with the catalog: no English sentence
  the catalog translates may appear as it is written in English. A page's text also holds
  data in English (the dialogues' English side), so the page is not checked word by word.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po

from koed_core.dialogues.labels import label_names
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, login_cookie

PAGES = [
    "",  # the Explorer, at "/"
    "overview",
    "adaptation",
    "chat",
    "gap",
    "demo",
    "episodes",
    "agreement",
    "runs",
    "judge",
    "studies",
    "dashboard",
    "projects",
    "annotate",
    "account",
]
RATER_PAGES = ["rate"]
"""Pages only a rater's menu holds (an admin rates no study)."""
CATALOG = Path(__file__).resolve().parents[2] / "locale" / "ko" / "LC_MESSAGES" / "koed.po"
LATIN = re.compile(r"[A-Za-z][A-Za-z_]+")
DATA = {
    *label_names(),  # emotion label keys, shown beside their Korean gloss
    "fake", "listener", "model",  # the seeded run's model id (fake-listener, fake-model)
    "KoED", "ED",  # the benchmark's and its source's names, as the paper writes them
    "EX", "IP", "ER", "EEA", "CA",  # the rubric's dimension codes, as data/rubric.json has them
    "CI",  # 95% CI: how Korean research writing names a confidence interval too
}  # fmt: skip
"""Latin text that is data, not the app's words: model ids, labels, codes."""
PAGE_TEXT = "() => document.body.innerText"
MARKUP = re.compile(r"\{[^}]*\}|`[^`]*`|\*\*|\]\([^)]*\)|[\[\]\n]|%\(\w+\)[sd]")
"""What the page does not show as written: placeholders, code (shown as is, in both
languages), bold marks, link targets, line breaks."""
CHART_TEXT = """() => Array.from(
    document.querySelectorAll('[data-testid="stPlotlyChart"] svg text')
).map((node) => node.textContent.trim()).filter((text) => text)"""


def _english(texts: list[str]) -> list[str]:
    left = []
    for text in texts:
        plain = re.sub(r"\S*\d\S*", " ", text)  # numbers, ids, percentages
        words = [w for w in LATIN.findall(plain) if w not in DATA]
        if words:
            left.append(f"{text!r}: {words}")
    return left


def english_sentences() -> dict[str, str]:
    """Each sentence (or piece between placeholders) of English the catalog translates,
    long enough (three words or more) to be the app's words rather than a dialogue's,
    mapped to the message it comes from. A piece the Korean entry keeps as it is (a name,
    a term) is left out; one with no Korean entry yet is in (the page shows it in English)."""
    with CATALOG.open("rb") as file:
        catalog = read_po(file)
    pieces: dict[str, str] = {}
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        korean = " ".join(text or "" for text in strings)
        for english in ids:
            for part in MARKUP.split(english):
                for piece in re.split(r"(?<=[.!?])\s+", " ".join(part.split())):
                    piece = piece.strip(" .,:;()")
                    if len(re.findall(r"[A-Za-z]{2,}", piece)) >= 3 and piece not in korean:
                        pieces[piece] = english
    return pieces


def _untranslated(text: str, pieces: dict[str, str]) -> list[str]:
    shown = " ".join(text.split())
    return [f"{piece!r} (from {english!r})" for piece, english in pieces.items() if piece in shown]


def _read(page: Any, url: str) -> tuple[list[str], str]:
    """One page drawn whole: its charts' SVG text and the page's text."""
    from playwright.sync_api import expect

    page.goto(url)
    expect(page.get_by_test_id("stHeading").first).to_be_visible()  # the page is drawn
    steps.settled(page)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0)  # Plotly's code loaded
    charts = page.get_by_test_id("stPlotlyChart")
    for i in range(charts.count()):
        expect(charts.nth(i).locator(".main-svg").first).to_be_visible()
    steps.next_frames(page)
    assert page.get_by_test_id("stException").count() == 0, url
    return page.evaluate(CHART_TEXT), page.evaluate(PAGE_TEXT)


def test_the_sweep_finds_an_english_sentence_the_catalog_translates() -> None:
    """The check itself: a sentence of the catalog found on a page, a dialogue's English
    and a kept code span not."""
    pieces = english_sentences()
    assert len(pieces) > 300, len(pieces)
    assert _untranslated("안내: No single-reply scores yet, so no gap to show here.", pieces)
    assert not _untranslated("I was so sad when my dog died. 저는 슬펐어요 koed run", pieces)


def test_every_korean_page_draws_the_catalogs_korean(fresh_site: str, browser: Any) -> None:
    pieces = english_sentences()
    drawn: dict[str, list[str]] = {}
    untranslated: list[str] = []
    for who, names in (("boss", PAGES), ("mina", RATER_PAGES)):
        context = browser.new_context(viewport={"width": 1366, "height": 768}, locale="ko-KR")
        context.add_cookies([login_cookie(fresh_site, who)])
        page = context.new_page()
        for name in names:
            drawn[name], text = _read(page, f"{fresh_site}/{name}?lang=ko")
            assert re.search("[가-힣]", text), f"/{name}: no Korean on the page"
            untranslated += [f"/{name}: {line}" for line in _untranslated(text, pieces)]
            untranslated += [
                f"/{name}: {line}" for line in _untranslated(" ".join(drawn[name]), pieces)
            ]
            if drawn[name]:
                page.screenshot(path=str(ARTIFACTS / f"korean_chart_{name}.png"), full_page=True)
        context.close()
    assert drawn["overview"] and drawn["gap"], {k: len(v) for k, v in drawn.items()}
    left = [f"/{name}: {line}" for name, texts in drawn.items() for line in _english(texts)]
    assert not left, "English in a Korean chart:\n" + "\n".join(left)
    assert not untranslated, "English the catalog translates, on a Korean page:\n" + "\n".join(
        untranslated
    )
    assert Path(ARTIFACTS).is_dir()
