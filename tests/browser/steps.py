"""What the browser tests do in a page, as a person would: open a menu, log in, wait
until a rerun has settled, drag over text, score a form. Shared by the files of
tests/browser/."""

from __future__ import annotations

import re
from pathlib import Path


def navigate(page, section: str, title: str) -> None:  # type: ignore[no-untyped-def]
    """Open a page from the top navigation: its section's menu, then its link."""
    page.get_by_test_id("stTopNavSection").filter(has_text=section).click()
    page.get_by_role("menuitem", name=title, exact=True).click()


def settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the app's script is not running (the page drawn, widgets live)."""
    page.wait_for_function(
        "document.querySelector('[data-testid=\"stApp\"]')"
        ".getAttribute('data-test-script-state') === 'notRunning'"
    )


def agree(page, box: str, button: str = "Continue") -> None:  # type: ignore[no-untyped-def]
    """Tick the consent box and go on, returning once the consent step is gone: while the
    next step is drawn the consent step's button stays on the page, faded, so a second
    button of the same name would otherwise be there to click."""
    from playwright.sync_api import expect

    page.get_by_text(box).click()
    page.get_by_role("button", name=button).click()
    expect(page.get_by_text(box)).to_have_count(0)
    settled(page)


def next_frames(page, count: int = 2) -> None:  # type: ignore[no-untyped-def]
    """Wait for the browser to paint ``count`` more frames: a canvas (the data grid, a
    chart) draws what the page holds on its next animation frames, not when the page
    settles."""
    page.evaluate(
        """(count) => new Promise((done) => {
             const step = (left) => left ? requestAnimationFrame(() => step(left - 1)) : done();
             step(count);
           })""",
        count,
    )


def later(page, seconds: float) -> None:  # type: ignore[no-untyped-def]
    """Time itself as the subject: ``seconds`` on the clock, for a check that what a page
    showed once it settled is still so later (a modal or a rerun that comes late). The
    only fixed wait in the browser tests, named so that a search finds each use."""
    page.wait_for_timeout(seconds * 1000)


def settled_and_later(page, seconds: float, check) -> None:  # type: ignore[no-untyped-def]
    """``check()`` once the page has settled, and again ``seconds`` later, settled again
    (never a wait after the last check)."""
    settled(page)
    check()
    later(page, seconds)
    settled(page)
    check()


def click_until(page, target, result, count: int, tries: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Click ``target`` until ``result`` matches ``count`` elements, as a person clicks
    again when a busy page did not answer: only for clicks that say what they want (a
    second click changes nothing more), so a click made twice cannot undo itself. Before
    clicking again it waits for the page to settle and looks again: a slow answer to the
    first click (the target gone, the result there) is not clicked over."""
    from playwright.sync_api import expect

    for attempt in range(1, tries + 1):
        settled(page)
        if attempt > 1 and (result.count() == count or target.count() == 0):
            break  # the earlier click was answered late, or is being answered
        target.click(timeout=60_000)  # a page busy redrawing on a loaded machine
        try:  # the answer itself, not the script's state: the rerun may not have begun yet
            expect(result).to_have_count(count, timeout=15_000)
            settled(page)
            return
        except AssertionError:
            if attempt == tries:
                raise
    expect(result).to_have_count(count)


def choose(page, widget, text: str) -> None:  # type: ignore[no-untyped-def]
    """Open a select's list, type the option's text so that it is the only one left (no
    scrolling in a list that redraws its rows while scrolled), and click it. A try that
    met a rerun redrawing the widget (the list never opened, or the option was replaced
    under the click) is made again."""
    from playwright.sync_api import expect

    option = page.get_by_role("option").filter(has_text=text)
    for attempt in range(5):
        settled(page)
        widget.click()
        page.keyboard.type(text)
        try:
            expect(option).to_be_visible(timeout=3000)
            option.click(timeout=5000)
            return
        except Exception:  # noqa: BLE001 - playwright's timeout; the next try decides
            page.keyboard.press("Escape")
            if attempt == 4:
                raise


def download(page, button) -> bytes:  # type: ignore[no-untyped-def]
    """A lazy download's bytes: clicked once the page has settled; a click that landed
    while a rerun replaced the button is made again (once)."""
    for attempt in (1, 2):
        settled(page)
        try:
            with page.expect_download(timeout=45_000) as download:
                button.click()
            return Path(download.value.path()).read_bytes()
        except Exception:  # noqa: BLE001 - playwright's timeout; the second try decides
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def expect_in_menu(page, section: str, title: str) -> None:  # type: ignore[no-untyped-def]
    """The top navigation's ``section`` menu holds ``title`` (then closes it again)."""
    from playwright.sync_api import expect

    page.get_by_test_id("stTopNavSection").filter(has_text=section).click()
    expect(page.get_by_role("menuitem", name=title, exact=True)).to_be_visible()
    page.keyboard.press("Escape")


def log_in(page, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    page.get_by_label("Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def inside(box: dict[str, float] | None, width: int, height: int) -> bool:
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= height
        and (box["x"] + box["width"] <= width)
    )


def score_all(page, score: str) -> None:  # type: ignore[no-untyped-def]
    """Pick ``score`` on every rubric dimension, and see each pick took (a click that lands
    while Streamlit swaps in the next item's form would be lost)."""
    from playwright.sync_api import expect

    radios = page.get_by_test_id("stRadio")
    expect(radios).to_have_count(5)
    # a new item's form starts empty: until then the last item's form is still there
    expect(radios.locator("input:checked")).to_have_count(0)
    for n in range(5):
        radio = radios.nth(n)
        checked = radio.locator("input:checked")
        for attempt in range(1, 4):  # picking the same score again changes nothing
            radio.get_by_text(score, exact=True).click()
            try:
                expect(checked).to_have_count(1, timeout=5_000)
                break
            except AssertionError:
                if attempt == 3:
                    raise


from fixtures.span_at import SPAN_AT  # noqa: E402  (shared with bench/annotation.py)


def span_box(page, lang: str, position: int, needle: str) -> list[float]:  # type: ignore[no-untyped-def]
    """Where ``needle`` is drawn in a turn of the span selector (start x, y, end x, y),
    once the selector's script has mounted and drawn it (after the page has settled)."""
    box: list[float] = page.wait_for_function(SPAN_AT, arg=[lang, position, needle]).json_value()
    return box


def drag_over(page, lang: str, position: int, needle: str) -> None:  # type: ignore[no-untyped-def]
    """Select ``needle`` in a turn of the span selector with the mouse, as a person does,
    and see the span panel name it."""
    from playwright.sync_api import expect

    settled(page)
    page.evaluate("() => getSelection().removeAllRanges()")
    x0, y0, x1, y1 = span_box(page, lang, position, needle)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=6)
    page.mouse.up()
    name = "Korean" if lang == "ko" else "English"
    expect(span_panel(page).get_by_text(f"{name}: {needle}", exact=True)).to_be_visible()


def span_panel(page):  # type: ignore[no-untyped-def]
    """The panel the span selector opens beside a selection."""
    return page.get_by_role("dialog", name="New span")


def span_count(page) -> int:  # type: ignore[no-untyped-def]
    """The number in "Your spans (n)" once the page has settled."""
    from playwright.sync_api import expect

    settled(page)
    shown = page.get_by_text(re.compile(r"Your spans \(\d+\)")).first
    expect(shown).to_be_visible()
    found = re.search(r"Your spans \((\d+)\)", shown.inner_text())
    assert found, shown.inner_text()
    return int(found.group(1))


def add_span(page, ko: tuple[int, str], en: tuple[int, str] | None, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Mark a span in the panel: the Korean words, the English ones (or none), the type
    chip, then Enter; and see it counted."""
    from playwright.sync_api import expect

    before = span_count(page)
    drag_over(page, "ko", *ko)
    if en is not None:
        drag_over(page, "en", *en)
    panel = span_panel(page)
    panel.get_by_role("button", name=re.compile(re.escape(kind))).click()
    expect(panel.get_by_role("button", name=re.compile(re.escape(kind)))).to_have_attribute(
        "aria-pressed", "true"
    )
    if en is None:
        panel.get_by_text("No English counterpart").click()
    page.keyboard.press("Enter")
    expect(page.get_by_text(f"Your spans ({before + 1})")).to_be_visible()


def log_in_settled(page, username: str, password: str, welcome: str) -> None:  # type: ignore[no-untyped-def]
    """Log in once the login page has settled; a click lost while it redrew is made again."""
    from playwright.sync_api import expect

    for attempt in (1, 2):
        settled(page)
        if page.get_by_text(welcome).count():
            return
        log_in(page, username, password)
        try:
            expect(page.get_by_text(welcome).first).to_be_visible(
                timeout=15_000 if attempt == 1 else 30_000
            )
            return
        except AssertionError:
            if attempt == 2:
                raise


def submit(page, category: str) -> None:  # type: ignore[no-untyped-def]
    """Choose the category and submit; a click lost while the page redrew is made again."""
    from playwright.sync_api import expect

    done = page.get_by_text(re.compile(r"^(Submitted\. You may still|Every annotator has)"))
    for attempt in (1, 2):
        settled(page)
        if done.count():
            return  # the first click did submit, only late
        # the category and note's box (no form: they save as drafts as they change)
        form = page.locator(".st-key-annotate_answer")
        form.get_by_text(category).click()
        settled(page)  # the draft's save runs the page
        form.get_by_role("button", name="Submit").click()
        try:
            expect(done.first).to_be_visible(timeout=15_000 if attempt == 1 else 30_000)
            return
        except AssertionError:
            if attempt == 2:
                raise
