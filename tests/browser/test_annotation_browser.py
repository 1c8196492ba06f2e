"""Two annotators and a reviewer on the Annotate and Annotation projects pages."""

from __future__ import annotations

import re
from typing import Any

from koed_core.dialogues.dataset import load_dataset
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts as users
from tests.browser import steps
from tests.browser.conftest import (
    ADMIN_PASSWORD,
    ARTIFACTS,
    Visit,
)

WIDTH, HEIGHT = 1366, 768  # a laptop's screen, where the nested spans are read


def test_two_annotators_disagree_and_the_reviewer_adjudicates(site: Visit, browser: Any) -> None:
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.db import Store

    server = site.url
    for name in ("ann1", "ann2"):
        users.add_user(site.site.accounts, name, "annotator", name.upper(), f"{name}-password")
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[0].conv_id  # 편의점 / convenience store in turn 3
    project = AnnotationRules(Store(site.site.db)).create_project(
        "Convenience", dataset, [conv_id], per_item=2, annotators=["ann1", "ann2"]
    )
    for who, category in (("ann1", "context modified"), ("ann2", "simply transferred")):
        page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
        page.goto(server + "/login")
        steps.log_in_settled(page, who, f"{who}-password", f"Logged in as {who.upper()}")
        page.goto(server + "/annotate")
        expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
        steps.add_span(page, (3, "편의점"), (3, "convenience store"), "Places")
        colour = page.wait_for_function(  # the selector's own stylesheet holds
            """() => { let m; (function walk(r) { r.querySelectorAll('*').forEach((n) => {
              if (!m && n.matches && n.matches('mark.en')) m = n;
              if (n.shadowRoot) walk(n.shadowRoot); }); })(document);
              return m ? getComputedStyle(m).backgroundColor : null; }"""
        ).json_value()
        assert colour == "rgb(205, 232, 255)", colour  # blue: an English counterpart
        if who == "ann1":
            steps.add_span(page, (1, "야근"), None, "School, work")
            expect(steps.span_panel(page)).to_be_hidden()  # closed, ready for the next
            page.screenshot(path=str(ARTIFACTS / "annotate_two_spans.png"), full_page=True)
            expect(page.get_by_text("Your spans (2)")).to_be_visible()
        else:  # blind: nothing of ann1's work is on ann2's page
            assert page.get_by_text("야근", exact=True).count() == 0
            expect(page.get_by_text("Your spans (1)")).to_be_visible()
        page.reload()  # the spans survive a reload, offsets and all
        expect(page.get_by_text(f"Your spans ({2 if who == 'ann1' else 1})")).to_be_visible()
        steps.submit(page, category)
        if who == "ann2":  # complete: now each sees the other's spans, highlighted
            steps.settled(page)
            expect(page.locator(".koed-curation mark", has_text="야근").first).to_be_visible()
            expect(
                page.locator(".koed-curation mark.agreed", has_text="편의점").first
            ).to_be_visible()
        page.context.close()
    stored = AnnotationRules(Store(site.site.db)).submitted(project, conv_id)
    assert {a.annotator: a.category for a in stored} == {
        "ann1": "context_modified",
        "ann2": "simply_transferred",
    }
    text = dataset.dialogues[0].turns[2].ko
    assert all(
        text[s.ko.start : s.ko.end] == "편의점"
        for a in stored
        for s in a.spans
        if s.type == "places"
    )

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(server + "/login")
    steps.log_in_settled(page, site.admin, ADMIN_PASSWORD, "Logged in as Boss")
    page.goto(server + "/projects")
    expect(page.get_by_role("heading", name="Annotation projects")).to_be_visible()
    review = page.get_by_test_id("stForm").filter(has_text="Final answer")
    expect(review).to_be_visible()
    final_row = page.locator(".koed-curation tr.final mark.ko")
    expect(final_row.filter(has_text="편의점")).to_have_count(1)  # agreed: in by default
    expect(final_row.filter(has_text="야근")).to_have_count(0)
    # one click on ann1's span puts it in the final answer, one on the final's takes it out
    annotators_mark = page.locator(".koed-curation tr:not(.final) mark")
    steps.click_until(
        page, annotators_mark.filter(has_text="야근").first, final_row.filter(has_text="야근"), 1
    )
    steps.click_until(
        page, final_row.filter(has_text="편의점").first, final_row.filter(has_text="편의점"), 0
    )
    steps.click_until(page, annotators_mark.filter(has_text="편의점").first, final_row, 2)
    annotators_mark.filter(has_text="편의점").first.click()  # in already: it stays in
    steps.settled_and_later(page, 2, lambda: expect(final_row).to_have_count(2))
    page.screenshot(path=str(ARTIFACTS / "annotation_curation.png"), full_page=True)
    review.get_by_text("context modified").click()
    steps.settled(page)
    review.get_by_role("button", name="Record the final answer").click()
    expect(review.get_by_text("(recorded; saving replaces it)")).to_be_visible()
    final = AnnotationRules(Store(site.site.db)).adjudication(project, conv_id)
    assert final is not None and sorted(s.ko.text for s in final.spans) == ["야근", "편의점"]
    page.get_by_role("tab", name="Agreement and export").click()
    expect(page.get_by_text("span F1 exact").first).to_be_attached()  # a grid cell
    page.screenshot(path=str(ARTIFACTS / "annotation_review.png"), full_page=True)
    page.goto(server + "/gap")
    breakdown = page.get_by_test_id("stExpander").filter(has_text="The gap by adaptation")
    expect(breakdown).to_be_visible()
    breakdown.click()
    # the chart's axis names the category in words (the CSV keeps the code)
    expect(breakdown.locator("svg text", has_text="context modified").first).to_be_attached()
    page.screenshot(path=str(ARTIFACTS / "gap_by_adaptation.png"), full_page=True)
    assert page.get_by_test_id("stException").count() == 0


def test_a_drag_across_turns_says_so_and_changes_nothing(site: Visit, browser: Any) -> None:
    """A drag that leaves its turn (turn 1 into turn 3, Korean into English)
    crashed the page, and again on every reopening. Now: the one-turn notice, no span, no
    exception, once settled, after a reload and 2 s later; the next span still goes in."""
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.db import Store

    users.add_user(site.site.accounts, "ann_drag", "annotator", "Dragger", "ann-drag-password")
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[1].conv_id  # 택배 / the delivery in the rain
    AnnotationRules(Store(site.site.db)).create_project(
        "Drag", dataset, [conv_id], per_item=1, annotators=["ann_drag"]
    )
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, "ann_drag", "ann-drag-password", "Logged in as Dragger")
    page.goto(site.url + "/annotate")
    expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
    notice = page.get_by_text("A span lies within one turn of one language")
    for start, end in (
        (("ko", 1, "택배를"), ("ko", 3, "불었어")),  # down through two turns
        (("ko", 2, "괜찮아"), ("en", 2, "inside")),  # Korean into English
    ):
        steps.settled(page)
        page.wait_for_function(  # the component mounts after the page has settled
            f"([lang, position, needle]) => ({steps.SPAN_AT})([lang, position, needle])",
            arg=list(start),
        )  # and the first end is centred: both ends in view
        still = steps.SPAN_AT.replace("el.scrollIntoView({ block: 'center' });", "")
        x0, y0, _x, _y = page.evaluate(still, list(start))
        _x, _y, x1, y1 = page.evaluate(still, list(end))
        page.mouse.move(x0, y0)
        page.mouse.down()
        page.mouse.move(x1, y1, steps=8)
        page.mouse.up()
        expect(notice).to_be_visible()
        steps.settled(page)
        assert page.get_by_test_id("stException").count() == 0
        expect(page.get_by_text("Your spans (0)")).to_be_visible()
    for _round in (1, 2):  # reopened, and left a while: no span, no traceback
        page.reload()
        steps.settled(page)
        steps.later(page, 2)  # left a while
        steps.settled(page)
        assert page.get_by_test_id("stException").count() == 0
        expect(page.get_by_text("Your spans (0)")).to_be_visible()
    steps.add_span(page, (3, "화나"), (3, "mad"), "Places")  # the page still takes work
    expect(page.get_by_text("Your spans (1)")).to_be_visible()
    steps.drag_over(page, "ko", 1, "택배를")  # The type went back to the first
    places = steps.span_panel(page).get_by_role("button", name=re.compile("Places"))
    expect(places).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Escape")
    expect(steps.span_panel(page)).to_be_hidden()
    picker = page.get_by_role("combobox", name="Dialogue")
    expect(picker).to_have_value(re.compile("yours: draft"))
    steps.submit(page, "context modified")
    steps.settled(page)  # The picker said "draft" until a fresh session
    expect(picker).to_have_value(re.compile("yours: submitted"))
    page.context.close()


def test_the_span_panel_takes_keys_removes_and_undoes(site: Visit, browser: Any) -> None:
    """The whole span interaction in the widget. A drag opens the panel beside
    the selection; a number key picks the type, Enter adds; a click on a span and Delete
    remove it; Ctrl+Z takes back the removal, then the add. Each state is checked once
    the page has settled and again 2 s later, and in the database."""
    from playwright.sync_api import expect

    from components.annotation.span_select import colour_of
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.taxonomy import load_taxonomy
    from koed_core.db import Store

    users.add_user(site.site.accounts, "ann_keys", "annotator", "Keys", "ann-keys-password")
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[0].conv_id  # 편의점 / convenience store in turn 3
    store = AnnotationRules(Store(site.site.db))
    project = store.create_project("Keys", dataset, [conv_id], per_item=1, annotators=["ann_keys"])
    codes = list(load_taxonomy().codes)
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, "ann_keys", "ann-keys-password", "Logged in as Keys")
    page.goto(site.url + "/annotate")
    expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
    expect(page.get_by_text("Your spans (0)")).to_be_visible()

    def spans() -> list[tuple[str, str | None, str]]:
        own = AnnotationRules(Store(site.site.db)).own(project, conv_id, "ann_keys")
        return [(s.ko.text, s.en.text if s.en else None, s.type) for s in own.spans] if own else []

    def holds(count: int, stored: list[tuple[str, str | None, str]]) -> None:
        def check() -> None:
            expect(page.get_by_text(f"Your spans ({count})")).to_be_visible()
            assert page.get_by_test_id("stException").count() == 0
            assert spans() == stored

        steps.settled_and_later(page, 2, check)

    steps.drag_over(page, "ko", 3, "편의점")
    panel = steps.span_panel(page)
    box = panel.bounding_box()
    assert box is not None and steps.inside(box, 1366, 768)  # beside the text, in view
    page.keyboard.press(str(codes.index("places") + 1))  # the number key picks the type
    places = panel.get_by_role("button", name=re.compile("Places"))
    expect(places).to_have_attribute("aria-pressed", "true")
    steps.drag_over(page, "en", 3, "convenience store")
    page.screenshot(path=str(ARTIFACTS / "annotate_span_panel.png"))
    page.keyboard.press("Enter")
    holds(1, [("편의점", "convenience store", "places")])
    mark = page.locator("mark", has_text="편의점").first
    colour = mark.evaluate("(m) => getComputedStyle(m).backgroundColor")
    hexed = colour_of(codes)["places"]  # its type's colour, as the legend shows it
    rgb = tuple(int(hexed[i : i + 2], 16) for i in (1, 3, 5))
    assert colour == f"rgb{rgb}", (colour, hexed)
    legend = page.locator(".legend .key", has_text="Places").locator(".swatch")
    assert legend.evaluate("(m) => getComputedStyle(m).backgroundColor") == colour
    mark.click()
    expect(panel.get_by_text(re.compile("^편의점 · Places"))).to_be_visible()
    page.keyboard.press("Delete")
    holds(0, [])
    page.keyboard.press("Control+z")  # the removal taken back
    holds(1, [("편의점", "convenience store", "places")])
    page.keyboard.press("Control+z")  # then the add
    holds(0, [])
    page.keyboard.press("Control+z")
    expect(page.get_by_text("Nothing to undo.")).to_be_visible()
    holds(0, [])
    page.context.close()


def test_a_korean_annotator_reads_korean_after_every_span_action(site: Visit, browser: Any) -> None:
    """The span part reruns alone (a fragment) after an add, a removal or an undo; it
    starts in English unless told the reader's language, which a Korean annotator saw
    from the second span on. Also: a turn with no English text ticks "no counterpart"
    itself, the removal panel opens at the clicked span (not under the menu), and "My
    spans" counts an add at once. Checked settled and again 2 s later."""
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.db import Store

    users.add_user(site.site.accounts, "ann_ko", "annotator", "Hana", "ann-ko-password")
    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]  # 편의점 in turn 3; turn 5 has no English text
    assert not dialogue.turns[4].en.strip() and "엄마" in dialogue.turns[4].ko
    AnnotationRules(Store(site.site.db)).create_project(
        "Korean", dataset, [dialogue.conv_id], per_item=1, annotators=["ann_ko"]
    )
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, "ann_ko", "ann-ko-password", "Logged in as Hana")
    page.goto(site.url + "/annotate?lang=ko")
    expect(page.get_by_role("heading", name="재구성에 주석 달기")).to_be_visible()
    panel = page.get_by_role("dialog", name="새 구간")

    def korean(count: int) -> None:
        def check() -> None:
            expect(page.get_by_text(f"내 구간 ({count}개)")).to_be_visible()
            expect(page.get_by_text(f"이 프로젝트에서 내가 표시한 구간 ({count})")).to_be_visible()
            main = page.get_by_test_id("stMain").inner_text()
            for english in ("Your spans", "My spans", "Guidelines", "situation"):
                assert english not in main, english
            assert page.get_by_test_id("stException").count() == 0

        steps.settled_and_later(page, 2, check)

    def drag(lang: str, position: int, needle: str) -> None:
        steps.settled(page)
        box = steps.span_box(page, lang, position, needle)
        page.mouse.move(box[0], box[1])
        page.mouse.down()
        page.mouse.move(box[2], box[3], steps=6)
        page.mouse.up()
        expect(panel.get_by_text(needle, exact=False).first).to_be_visible()

    korean(0)
    drag("ko", 3, "편의점")
    page.keyboard.press("6")  # places, the sixth type
    drag("en", 3, "convenience store")
    page.keyboard.press("Enter")
    korean(1)
    drag("ko", 5, "엄마")  # no English in this turn: no counterpart, ticked for you
    expect(panel.get_by_role("checkbox")).to_be_checked()
    page.keyboard.press("Enter")
    korean(2)  # a fragment's own run: still Korean

    mark = page.locator("mark", has_text="편의점").first
    mark.scroll_into_view_if_needed()
    mark.click()
    remove = page.get_by_role("dialog", name="새 구간")
    expect(remove.get_by_text(re.compile("^편의점 · "))).to_be_visible()
    at, shown = mark.bounding_box(), remove.bounding_box()
    assert at is not None and shown is not None
    beside = (
        abs(shown["y"] - (at["y"] + at["height"])) < 20
        or abs(shown["y"] + shown["height"] - at["y"]) < 20
    )
    assert beside and steps.inside(shown, 1366, 768), (at, shown)
    page.keyboard.press("Delete")
    korean(1)
    page.keyboard.press("Control+z")  # the removal taken back
    korean(2)
    for _undo in range(2):  # then both adds
        page.keyboard.press("Control+z")
        korean(1 - _undo)
    page.keyboard.press("Control+z")
    expect(page.get_by_text("되돌릴 작업이 없습니다.")).to_be_visible()
    korean(0)
    page.context.close()


# Nested spans, the reviewer's recorded answer, a span's comment ----------------------


def test_nested_spans_are_drawn_stacked_and_each_is_clicked(site: Any, browser: Any) -> None:
    """A span inside another (편의 inside 편의점) was stored but never
    drawn. Both are drawn, one inside the other, and a click on each picks that one."""
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Side, Span
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE
    from koed_core.rating import accounts as users

    users.add_user(site.site.accounts, "ann_nest", "annotator", "Nester", "ann-nest-password")
    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    text = dialogue.turns[2].ko  # 응, 편의점으로 뛰어 들어가서 ...
    at = text.index("편의점")
    store = AnnotationRules(Store(site.site.db))
    project = store.create_project(
        "Nested", dataset, [dialogue.conv_id], per_item=1, annotators=["ann_nest"]
    )
    outer = Span(Side(3, at, at + 3, "편의점"), "places", no_counterpart=True)
    inner = Span(Side(3, at, at + 2, "편의"), "other", no_counterpart=True)
    crossing = Span(Side(3, at + 2, at + 5, "점으로"), "idioms", no_counterpart=True)
    store.save(project, dialogue, "ann_nest", None, "", [outer, inner, crossing])
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, "ann_nest", "ann-nest-password", "Logged in as Nester")
    page.goto(site.url + "/annotate")
    expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
    marks = page.locator("mark[data-key]")
    for _read in (1, 2):  # settled, and 3 s later
        steps.settled(page)
        expect(marks.filter(has_text="편의점")).to_have_count(1)
        keys = set(marks.evaluate_all("ms => ms.map(m => m.dataset.key)"))
        assert {k.split(":")[-1] for k in keys} == {"places", "other", "idioms"}, keys
        nested = page.locator("mark[data-key$=':places'] mark[data-key$=':other']")
        expect(nested).to_have_count(1)  # drawn inside the outer one
        if _read == 1:  # 3 s to the second read
            steps.later(page, 3)
    nested.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "annotation_nested_spans.png"))
    for target, name in (
        (page.locator("mark[data-key$=':other']").first, "Other"),
        (page.locator("mark[data-key$=':places']").first, "Place"),
    ):
        box = target.bounding_box()
        assert box is not None
        # the outer one by its own edge (its padding), the inner one by its middle
        x = box["x"] + (2 if name == "Place" else box["width"] / 2)
        page.mouse.click(x, box["y"] + box["height"] / 2)
        picked = page.locator("mark.picked")
        expect(picked).to_have_count(1)
        assert name.lower() in (picked.first.get_attribute("title") or "").lower(), name
        page.keyboard.press("Escape")
        steps.settled(page)
    assert page.get_by_test_id("stException").count() == 0


def _reviewer_on(site: Any, browser: Any, project: str) -> Any:
    """The site's admin, logged in, on Annotation projects with ``project`` chosen."""
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, site.admin, ADMIN_PASSWORD, "Logged in as Boss")
    page.goto(site.url + "/projects")
    steps.choose(page, page.get_by_role("combobox", name="Project"), project)
    return page


def test_the_reviewer_sees_and_keeps_a_nested_span(site: Any, browser: Any) -> None:
    """At the reviewer's end: the curation view drew only the first of
    two overlapping spans, so a span inside another could not be seen or clicked there.
    Both are drawn, one inside the other; a click on the inner one puts that one, and
    only it, in the final answer, and a click on it in the final answer takes it out."""
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Side, Span
    from koed_core.annotation.taxonomy import CONTEXT_MODIFIED
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    at = dialogue.turns[2].ko.index("편의점")
    rules = AnnotationRules(Store(site.site.db))
    project = rules.create_project(
        "Nested review", dataset, [dialogue.conv_id], annotators=["nest_a", "nest_b"]
    )
    outer = Span(Side(3, at, at + 3, "편의점"), "places", no_counterpart=True)
    inner = Span(Side(3, at, at + 2, "편의"), "other", no_counterpart=True)
    rules.save(project, dialogue, "nest_a", CONTEXT_MODIFIED, "", [outer, inner], submit=True)
    rules.save(project, dialogue, "nest_b", CONTEXT_MODIFIED, "", [outer], submit=True)
    page = _reviewer_on(site, browser, f"{project}: Nested review")
    answers = page.locator(".koed-curation tr:not(.final)")
    final = page.locator(".koed-curation tr.final")
    nested = "mark[data-key*=':places:'] mark[data-key*=':other:']"
    for _read in (1, 2):  # settled, and 3 s later
        steps.settled(page)
        expect(answers.locator(nested)).to_have_count(1)  # nest_a's, inside the outer one
        expect(final.locator("mark[data-key*=':places:']")).to_have_count(1)  # agreed
        expect(final.locator("mark[data-key*=':other:']")).to_have_count(0)
        if _read == 1:
            steps.later(page, 3)
    inner_mark = answers.locator(nested).first
    steps.click_until(page, inner_mark, final.locator(nested), 1)
    expect(final.locator("mark[data-key*=':places:']")).to_have_count(1)  # the outer: still one
    page.locator(".koed-curation").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "annotation_nested_curation.png"))
    steps.click_until(page, final.locator(nested).first, final.locator(nested), 0)
    expect(final.locator("mark[data-key*=':places:']")).to_have_count(1)
    assert page.get_by_test_id("stException").count() == 0


def test_a_language_switch_keeps_the_reviewers_recorded_answer(site: Any, browser: Any) -> None:
    """Found in a newcomer walk: Streamlit keeps a choice as its option's words, so once
    the reviewer switched to Korean the recorded category showed as none and the spans to
    keep held nothing the form would send: Record (the category chosen again) stored the
    final answer without its spans, and said it was recorded. Both choices survive the
    switch now, settled and 3 s later, and Record keeps the span."""
    from playwright.sync_api import expect

    from koed_core import i18n
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Side, Span
    from koed_core.annotation.taxonomy import CONTEXT_MODIFIED, SIMPLY_TRANSFERRED
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    at = dialogue.turns[2].ko.index("편의점")
    place = Span(Side(3, at, at + 3, "편의점"), "places", no_counterpart=True)
    rules = AnnotationRules(Store(site.site.db))
    project = rules.create_project(
        "Switch review", dataset, [dialogue.conv_id], annotators=["sw_a", "sw_b"]
    )
    rules.save(project, dialogue, "sw_a", CONTEXT_MODIFIED, "", [place], submit=True)
    rules.save(project, dialogue, "sw_b", SIMPLY_TRANSFERRED, "", [place], submit=True)
    page = _reviewer_on(site, browser, f"{project}: Switch review")
    review = page.get_by_test_id("stForm").filter(has_text="Final answer")
    expect(review.locator("[data-tag-index]")).to_have_count(1)  # the agreed span, kept
    review.get_by_text("context modified").click()
    steps.settled(page)
    review.get_by_role("button", name="Record the final answer").click()
    expect(review.get_by_text("(recorded; saving replaces it)")).to_be_visible()
    korean = i18n.catalog("ko").gettext
    steps.settled(page)
    page.get_by_test_id("stButtonGroup").get_by_text("한국어", exact=True).click()
    review = page.get_by_test_id("stForm").filter(has_text=korean("**Final answer**").strip("*"))
    for _read in (1, 2):  # settled, and 3 s later
        steps.settled(page)
        expect(page.get_by_role("heading", name=korean("Annotation projects"))).to_be_visible()
        expect(review.get_by_test_id("stRadio").locator("input:checked")).to_have_count(1)
        expect(review.locator("[data-tag-index]")).to_have_count(1)
        if _read == 1:
            steps.later(page, 3)
    review.get_by_role("button", name=korean("Record the final answer")).click()
    expect(page.get_by_text(korean("Final answer recorded."))).to_be_visible()  # stored
    final = rules.adjudication(project, dialogue.conv_id)
    assert final is not None and final.category == CONTEXT_MODIFIED
    assert [s.ko.text for s in final.spans] == ["편의점"]
    expect(review.locator("[data-tag-index]")).to_have_count(1)
    assert page.get_by_test_id("stException").count() == 0


def test_a_span_comment_is_written_in_its_panel_and_shown_with_the_span(
    site: Any, browser: Any
) -> None:
    """A click on a span opens its panel with a comment box; Backspace
    and Ctrl+Z there edit the comment (never remove the span or undo); Save comment
    stores it, and the span then carries it in its tooltip, as typed (no markup read),
    and in its panel again."""
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Side, Span
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE
    from koed_core.rating import accounts as users

    users.add_user(site.site.accounts, "ann_note", "annotator", "Noter", "ann-note-password")
    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    at = dialogue.turns[2].ko.index("편의점")
    store = AnnotationRules(Store(site.site.db))
    project = store.create_project(
        "Comments", dataset, [dialogue.conv_id], per_item=1, annotators=["ann_note"]
    )
    place = Span(Side(3, at, at + 3, "편의점"), "places", no_counterpart=True)
    store.save(project, dialogue, "ann_note", None, "", [place])
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, "ann_note", "ann-note-password", "Logged in as Noter")
    page.goto(site.url + "/annotate")
    expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
    steps.settled(page)
    mark = page.locator("mark[data-key$=':places']").first
    mark.click()
    box = page.get_by_role("textbox", name="Comment on this span")
    expect(box).to_be_visible()
    box.fill("**굵게** <b>x</b> 야간 편의점x")
    box.press("Backspace")  # edits the comment: the span stays
    box.press("Control+z")  # the browser's own undo of typing, not the span's
    box.fill("**굵게** <b>x</b> 야간 편의점")
    page.screenshot(path=str(ARTIFACTS / "annotation_span_comment_panel.png"))
    page.get_by_role("button", name="Save comment").click()
    comment = "**굵게** <b>x</b> 야간 편의점"

    def stored() -> list[tuple[str, str]]:
        own = AnnotationRules(Store(site.site.db)).own(project, dialogue.conv_id, "ann_note")
        return [(s.ko.text, s.comment) for s in own.spans] if own else []

    for _read in (1, 2):  # settled, and 3 s later
        steps.settled(page)
        mark = page.locator("mark[data-key$=':places']").first
        expect(mark).to_have_attribute("title", f"Places (장소)\n{comment}")
        assert stored() == [("편의점", comment)]
        assert mark.locator("b").count() == 0  # the comment is never markup
        assert page.get_by_test_id("stException").count() == 0
        if _read == 1:  # 3 s to the second read
            steps.later(page, 3)
    mark.click()
    expect(page.get_by_role("textbox", name="Comment on this span")).to_have_value(comment)
    page.screenshot(path=str(ARTIFACTS / "annotation_span_comment_shown.png"))
    page.keyboard.press("Escape")
    page.context.close()
