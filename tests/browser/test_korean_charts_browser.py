"""What Plotly draws on a Korean page, read from the browser (issue 66's text sweep).

The AppTest checks in tests/test_i18n.py read every widget, caption and table of each
page with ``?lang=ko``, but a chart's title, subtitle, legend, axis labels and ticks are
drawn by Plotly in the browser as SVG text, which AppTest never sees ("paper mode" in
the Gap chart's subtitle, "(기타, single)" in Demo's labels). Here an admin opens every
page of the seeded site in Korean and every chart's SVG text is read and checked for
English words the same way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from koed_core.dialogues.labels import label_names
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, login_cookie

PAGES = [
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
]
LATIN = re.compile(r"[A-Za-z][A-Za-z_]+")
DATA = {
    *label_names(),  # emotion label keys, shown beside their Korean gloss
    "fake", "listener", "model",  # the seeded run's model id (fake-listener, fake-model)
    "KoED", "ED",  # the benchmark's and its source's names, as the paper writes them
    "EX", "IP", "ER", "EEA", "CA",  # the rubric's dimension codes, as data/rubric.json has them
    "CI",  # 95% CI: how Korean research writing names a confidence interval too
}  # fmt: skip
"""Latin text that is data, not the app's words: model ids, labels, codes."""
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


def test_every_chart_on_a_korean_page_is_drawn_in_korean(fresh_site: str, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1366, "height": 768}, locale="ko-KR")
    context.add_cookies([login_cookie(fresh_site, "boss")])
    page = context.new_page()
    drawn: dict[str, list[str]] = {}
    for name in PAGES:
        page.goto(f"{fresh_site}/{name}?lang=ko")
        expect(page.get_by_test_id("stHeading").first).to_be_visible()  # the page is drawn
        steps.settled(page)
        expect(page.get_by_test_id("stSkeleton")).to_have_count(0)  # Plotly's code loaded
        charts = page.get_by_test_id("stPlotlyChart")
        for i in range(charts.count()):
            expect(charts.nth(i).locator(".main-svg").first).to_be_visible()
        steps.next_frames(page)
        assert page.get_by_test_id("stException").count() == 0, name
        drawn[name] = page.evaluate(CHART_TEXT)
        if drawn[name]:
            page.screenshot(path=str(ARTIFACTS / f"korean_chart_{name}.png"), full_page=True)
    assert drawn["overview"] and drawn["gap"], {k: len(v) for k, v in drawn.items()}
    left = [f"/{name}: {line}" for name, texts in drawn.items() for line in _english(texts)]
    assert not left, "English in a Korean chart:\n" + "\n".join(left)
    assert Path(ARTIFACTS).is_dir()
