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


def test_two_annotators_disagree_and_the_reviewer_adjudicates(site: Visit, browser: Any) -> None:
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationStore
    from koed_core.db import Store

    server = site.url
    for name in ("ann1", "ann2"):
        users.add_user(site.site.accounts, name, "annotator", name.upper(), f"{name}-password")
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[0].conv_id  # 편의점 / convenience store in turn 3
    project = AnnotationStore(Store(site.site.db)).create_project(
        "Convenience", dataset, [conv_id], per_item=2, annotators=["ann1", "ann2"]
    )
    for who, category in (("ann1", "context modified"), ("ann2", "simply transferred")):
        page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
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
            form = page.get_by_test_id("stForm").filter(has_text="Signal type")
            expect(form.get_by_role("checkbox")).not_to_be_checked()  # cleared for the next
            page.screenshot(path=str(ARTIFACTS / "annotate_two_spans.png"), full_page=True)
            expect(page.get_by_text("Your spans (2)")).to_be_visible()
        else:  # blind: nothing of ann1's work is on ann2's page
            assert page.get_by_text("야근", exact=True).count() == 0
            expect(page.get_by_text("Your spans (1)")).to_be_visible()
        page.reload()  # the spans survive a reload, offsets and all
        expect(page.get_by_text(f"Your spans ({2 if who == 'ann1' else 1})")).to_be_visible()
        steps.submit(page, category)
        page.context.close()
    stored = AnnotationStore(Store(site.site.db)).submitted(project, conv_id)
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

    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    page.goto(server + "/login")
    steps.log_in_settled(page, site.admin, ADMIN_PASSWORD, "Logged in as Boss")
    page.goto(server + "/projects")
    expect(page.get_by_role("heading", name="Annotation projects")).to_be_visible()
    review = page.get_by_test_id("stForm").filter(has_text="Final answer")
    expect(review).to_be_visible()
    expect(page.get_by_text("category: context modified", exact=False).first).to_be_visible()
    review.get_by_text("context modified").click()
    steps.settled(page)
    review.get_by_role("button", name="Record the final answer").click()
    expect(review.get_by_text("(recorded; saving replaces it)")).to_be_visible()
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
    """Issue 33: a drag that leaves its turn (turn 1 into turn 3, Korean into English)
    crashed the page, and again on every reopening. Now: the one-turn notice, no span, no
    exception, once settled, after a reload and 2 s later; the next span still goes in."""
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationStore
    from koed_core.db import Store

    users.add_user(site.site.accounts, "ann_drag", "annotator", "Dragger", "ann-drag-password")
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[1].conv_id  # 택배 / the delivery in the rain
    AnnotationStore(Store(site.site.db)).create_project(
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
        page.wait_for_timeout(2000)
        steps.settled(page)
        assert page.get_by_test_id("stException").count() == 0
        expect(page.get_by_text("Your spans (0)")).to_be_visible()
    steps.add_span(page, (3, "화나"), (3, "mad"), "Places")  # the page still takes work
    expect(page.get_by_text("Your spans (1)")).to_be_visible()
    form = page.get_by_test_id("stForm").filter(has_text="Signal type")
    steps.settled(page)  # issue 33 #3: the emptied form went back to the first type
    expect(form.get_by_role("combobox", name="Signal type")).to_have_value(re.compile("Places"))
    picker = page.get_by_role("combobox", name="Dialogue")
    expect(picker).to_have_value(re.compile("yours: draft"))
    steps.submit(page, "context modified")
    steps.settled(page)  # issue 33 #8: the picker said "draft" until a fresh session
    expect(picker).to_have_value(re.compile("yours: submitted"))
    page.context.close()
