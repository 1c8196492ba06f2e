"""Finding work, in Chromium at 1366x768: "My spans" opens its dialogue, and a
filter that leaves out the open dialogue says so and shows the first match; the picker
and the heading agree once settled and still 2 s later."""

from __future__ import annotations

import re
from typing import Any

from koed_core.dialogues.dataset import load_dataset
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts as users
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, Visit


def test_my_spans_opens_its_dialogue_and_a_filter_drops_the_open_one(
    site: Visit, browser: Any
) -> None:
    from playwright.sync_api import expect

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.spans import Span, side_at
    from koed_core.annotation.taxonomy import CONTEXT_MODIFIED
    from koed_core.db import Store

    users.add_user(site.site.accounts, "ann_work", "annotator", "Worker", "ann-work-password")
    dataset = load_dataset(SAMPLE_FILE)
    first, second, third, _fourth = dataset.dialogues[:4]
    annotations = AnnotationRules(Store(site.site.db))
    project = annotations.create_project(
        "Worklist",
        dataset,
        [d.conv_id for d in dataset.dialogues[:4]],
        per_item=2,
        annotators=["ann_partner", "ann_work"],
    )

    def span(dialogue: Any, position: int, needle: str, kind: str) -> Span:
        start = dialogue.turns[position - 1].ko.index(needle)
        side = side_at(dialogue, "ko", position, start, start + len(needle))
        return Span(side, kind, None, True)

    place = span(first, 3, "편의점", "places")
    annotations.save(project, first, "ann_work", CONTEXT_MODIFIED, "", [place], submit=True)
    annotations.save(project, third, "ann_work", None, "", [span(third, 1, "의자", "customs")])
    annotations.save(project, second, "ann_partner", CONTEXT_MODIFIED, "", [], submit=True)

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(site.url + "/login")
    steps.log_in_settled(page, "ann_work", "ann-work-password", "Logged in as Worker")
    page.goto(site.url + "/annotate")
    expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
    picker = page.get_by_role("combobox", name="Dialogue", exact=True)

    def showing(conv_id: str, notice: bool) -> None:
        """The heading and the picker name the same dialogue, settled and 2 s later."""
        dropped = page.get_by_text("is not among the dialogues these filters leave")

        def check() -> None:
            expect(page.get_by_role("heading", name=f"Dialogue {conv_id}")).to_be_visible()
            expect(picker).to_have_value(re.compile("^" + re.escape(conv_id + " ·")))
            expect(dropped).to_have_count(1 if notice else 0)
            assert page.get_by_test_id("stException").count() == 0

        steps.settled_and_later(page, 2, check)

    showing(third.conv_id, notice=False)  # the draft: the next one to do
    expect(picker).to_have_value(re.compile("yours: draft · partner: not started$"))
    picker.click()  # the partner's progress, never their answer
    expect(
        page.get_by_role(
            "option", name=re.compile(re.escape(second.conv_id) + ".*partner: submitted")
        )
    ).to_be_visible()
    page.keyboard.press("Escape")

    spans = page.get_by_test_id("stExpander").filter(has_text="My spans in this project (2)")
    spans.get_by_text("My spans in this project (2)").click()
    chooser = spans.get_by_role("combobox", name="Open the dialogue of a span")
    expect(chooser).to_be_visible()
    steps.choose(page, chooser, f"{first.conv_id} · turn 3: 편의점")
    steps.settled(page)
    spans.get_by_role("button", name="Open this dialogue").click()
    showing(first.conv_id, notice=False)
    page.screenshot(path=str(ARTIFACTS / "annotate_my_spans.png"), full_page=True)

    types = page.get_by_test_id("stMultiSelect").filter(has_text="A span of yours of type")
    steps.choose(page, types, "Holidays and customs")
    page.keyboard.press("Escape")
    showing(third.conv_id, notice=True)  # the first (and only) match
    expect(page.get_by_text(f"{first.conv_id}, open before,")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "annotate_filter_dropped.png"), full_page=True)
    page.get_by_role("button", name=f"Clear the filters and go back to {first.conv_id}").click()
    showing(first.conv_id, notice=False)
    page.context.close()
