"""A crowd worker from Prolific (and one from MTurk), from the link to the code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.rating import seeded_store, study
from koed_core.paths import SAMPLE_FILE
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, serve


def test_a_crowd_worker_comes_from_prolific_and_goes_back_with_the_code(
    tmp_path: Path, browser: Any
) -> None:
    # The invite link as Prolific opens it: consent, screening, calibration, a batch of
    # two items, the completion code and the way back; the same worker returning is back
    # at the code; an expired link and a full one are refused in words.
    from playwright.sync_api import expect

    from koed_core.db.crowd import Crowd
    from koed_core.rating import crowd

    key = "s" * 40
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=0)
    consent = {
        "consent_ko": "연구 참여에 동의합니다.",
        "consent_en": "I agree to take part.",
        "contact": "researcher@example.org",
    }
    invite, token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(
            platform="prolific", days=7, cap=5, batch_size=2, reward=1.0, **consent
        ),
    )
    expired, old_token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(platform="prolific", days=0.00001, cap=5, batch_size=2, **consent),
    )
    full, full_token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(platform="prolific", days=7, cap=1, batch_size=2, **consent),
    )
    crowd.join(store, key.encode(), full, {"PROLIFIC_PID": "ef" * 12, "SESSION_ID": "e0" * 12})
    tight, tight_token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(platform="prolific", days=7, cap=1, batch_size=1, **consent),
    )
    mturk, mturk_token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(platform="mturk", days=7, cap=5, batch_size=1, **consent),
    )
    pid, prolific_study, session = "5f1a2b3c4d5e6f7a8b9c0d1e", "60" * 12, "70" * 12
    link = (
        f"/join?invite={token}&PROLIFIC_PID={pid}&STUDY_ID={prolific_study}&SESSION_ID={session}"
        "&lang=en"  # an English reader (tests below walk a Korean one)
    )
    hit = f"/join?invite={mturk_token}&workerId=A2TESTWORKER9&hitId=3HITID0000001&lang=en"
    submit_to = "https://workersandbox.mturk.com"
    server = serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE), "KOED_SECRET_KEY": key})
    url = next(server)
    try:
        page = browser.new_page(viewport={"width": 1366, "height": 768})  # a laptop
        page.goto(url + link)
        expect(page.get_by_role("heading", name="KoED rating study")).to_be_visible()
        expect(page.get_by_text("연구 참여에 동의합니다.")).to_be_visible()
        assert page.get_by_test_id("stTopNav").count() == 0  # no other page
        assert page.get_by_test_id("stSidebarNav").count() == 0
        page.screenshot(path=str(ARTIFACTS / "crowd_consent.png"))
        steps.agree(page, "I have read this and agree")
        expect(page.get_by_text("Your native language")).to_be_visible()
        page.goto(url + "/gap?lang=en")  # a typed URL, same browser: still the worker, here
        expect(page.get_by_role("heading", name="KoED rating study")).to_be_visible()
        expect(page.get_by_text("Your native language")).to_be_visible()
        assert page.get_by_text("The cultural empathy gap").count() == 0
        steps.settled(page)
        page.screenshot(path=str(ARTIFACTS / "crowd_typed_url.png"))
        page.get_by_test_id("stRadio").get_by_text("한국어", exact=True).click()
        page.get_by_label("Years lived in Korea").fill("25")
        page.get_by_role("button", name="Continue").click()
        for n, score in ((1, "4"), (2, "2")):  # calibration, near the references
            expect(page.get_by_text(f"Calibration {n} of 2")).to_be_visible()
            steps.score_all(page, score)
            page.get_by_role("button", name="Submit rating").click()
            page.get_by_role("button", name="Next").click()
        for n in (0, 1):
            expect(page.get_by_text(f"Batch 1 of 1: {n} of 2 rated")).to_be_visible()
            if n == 1:  # after Submit the new item is shown from its top, not its form
                expect(page.get_by_text(f"Batch 1 of 1: {n} of 2 rated")).to_be_in_viewport()
            if n == 0:
                page.screenshot(path=str(ARTIFACTS / "crowd_item.png"))
            steps.score_all(page, "4")
            page.get_by_role("button", name="Submit rating").click()
        expect(page.get_by_text(invite.completion_code)).to_be_visible()
        back = page.get_by_role("link", name="Back to the platform")
        assert back.get_attribute("href") == invite.redirect_url
        assert invite.redirect_url == crowd.PROLIFIC_DONE.format(code=invite.completion_code)
        page.screenshot(path=str(ARTIFACTS / "crowd_done.png"))
        again = browser.new_page()  # the worker opens the link again, another browser
        again.goto(url + link)
        expect(again.get_by_text(invite.completion_code)).to_be_visible()
        refused = browser.new_page()
        refused.goto(
            f"{url}/join?invite={old_token}&PROLIFIC_PID={'ab' * 12}&SESSION_ID={'a0' * 12}&lang=en"
        )
        expect(refused.get_by_text("This invite link expired on")).to_be_visible()
        refused.goto(
            f"{url}/join?invite={full_token}&PROLIFIC_PID={'cd' * 12}&SESSION_ID={'c0' * 12}"
            "&lang=en"
        )
        expect(refused.get_by_text("all 1 places are taken")).to_be_visible()
        refused.goto(f"{url}/join?invite={token}&lang=en")  # not opened from Prolific
        expect(refused.get_by_text("Open this study from Prolific")).to_be_visible()
        refused.goto(url + link.replace(session, "71" * 12))  # the same PID, a new session
        expect(refused.get_by_text("another Prolific session")).to_be_visible()

        # MTurk: the preview shows the task and asks to accept; the accepted HIT ends
        # in a POST of assignmentId and the code to MTurk's externalSubmit.
        turk = browser.new_page(viewport={"width": 1366, "height": 768})
        turk.goto(f"{url}{hit}&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&turkSubmitTo={submit_to}")
        expect(turk.get_by_text("Preview: accept the HIT to start.", exact=False)).to_be_visible()
        expect(turk.get_by_text("I agree to take part.")).to_be_visible()
        assert turk.get_by_role("button", name="Continue").count() == 0
        turk.goto(f"{url}{hit}&assignmentId=3ASSIGN0000001&turkSubmitTo={submit_to}")
        steps.agree(turk, "I have read this and agree")
        turk.get_by_test_id("stRadio").get_by_text("English", exact=True).click()
        turk.get_by_role("button", name="Continue").click()
        for score in ("4", "2"):
            steps.score_all(turk, score)
            turk.get_by_role("button", name="Submit rating").click()
            turk.get_by_role("button", name="Next").click()
        steps.score_all(turk, "4")
        turk.get_by_role("button", name="Submit rating").click()
        expect(turk.get_by_text(mturk.completion_code)).to_be_visible()
        form = turk.locator("form[method=post]")
        assert form.get_attribute("action") == f"{submit_to}/mturk/externalSubmit"
        assert form.get_attribute("target") == "_top"  # out of MTurk's frame, not inside it
        fields = {
            i.get_attribute("name"): i.get_attribute("value")
            for i in form.locator("input[type=hidden]").all()
        }
        assert fields == {
            "assignmentId": "3ASSIGN0000001",
            "completion_code": mturk.completion_code,
        }
        expect(turk.get_by_role("button", name="Submit the HIT")).to_be_visible()
        turk.screenshot(path=str(ARTIFACTS / "crowd_mturk_done.png"))

        # One place: a worker leaves at calibration; the next is told the study is full
        # until the study's timeout of inactivity has passed (the database's clock moved
        # back two hours stands in for the wait), then gets the place; the first, back,
        # is told in words that it went.
        def tight_link(n: int) -> str:
            ids = f"PROLIFIC_PID={n:024x}&STUDY_ID={prolific_study}&SESSION_ID={n + 9:024x}"
            return f"{url}/join?invite={tight_token}&{ids}&lang=en"

        leaver = browser.new_page(viewport={"width": 1366, "height": 768})
        leaver.goto(tight_link(0xA1))
        steps.agree(leaver, "I have read this and agree")
        leaver.get_by_test_id("stRadio").get_by_text("한국어", exact=True).click()
        leaver.get_by_role("button", name="Continue").click()
        expect(leaver.get_by_text("Calibration 1 of 2")).to_be_visible()
        leaver.close()  # gone, mid-calibration
        late = browser.new_page(viewport={"width": 1366, "height": 768})
        late.goto(tight_link(0xB2))
        expect(late.get_by_text("all 1 places are taken")).to_be_visible()
        left = crowd.worker_name(key.encode(), study_id, "prolific", f"{0xA1:024x}")
        two_hours_ago = "2000-01-01T00:00:00+00:00"
        store.db.execute(
            "update crowd_workers set last_seen = ?, created = ?, consented_at = ? "
            "where username = ?",
            [two_hours_ago, two_hours_ago, two_hours_ago, left],
        )
        store.db.conn.commit()
        late.goto(tight_link(0xB2))
        expect(late.get_by_text("I have read this and agree")).to_be_visible()
        steps.settled(late)
        steps.later(late, 3)  # settled, and still so seconds later
        steps.settled(late)
        expect(late.get_by_text("I have read this and agree")).to_be_visible()
        assert late.get_by_text("places are taken").count() == 0
        late.screenshot(path=str(ARTIFACTS / "crowd_replacement.png"))
        back = browser.new_page(viewport={"width": 1366, "height": 768})
        back.goto(tight_link(0xA1))
        expect(back.get_by_text("place went to someone else")).to_be_visible()
        steps.settled(back)
        steps.later(back, 3)
        steps.settled(back)
        expect(back.get_by_text("place went to someone else")).to_be_visible()
        assert back.get_by_text("Calibration 1 of 2").count() == 0
        back.screenshot(path=str(ARTIFACTS / "crowd_place_gone.png"))
    finally:
        server.close()
    worker = Crowd(store).worker(crowd.worker_name(key.encode(), study_id, "prolific", pid))
    assert worker is not None and worker["status"] == "completed"
    assert (worker["study_ref"], worker["session_ref"]) == (prolific_study, session)
    assert (worker["code_kind"], worker["code_given"]) == ("completed", invite.completion_code)
    assert worker["consent_version"] == invite.consent_version
    assert crowd.places(store, invite).used == 1
    assert store.count("ratings") == 3 * 5  # two Prolific items and one MTurk item


VISIBLE_CHROME = """
() => {
  const picks = document.querySelectorAll(
    'button, [data-testid="stAlert"], h1, h2, h3, [data-testid="stCaptionContainer"], '
    + '[data-testid="stWidgetLabel"], [data-testid="stProgress"], label, summary, a');
  const out = [];
  for (const el of picks) {
    if (el.closest('[data-testid="stExpanderDetails"]')) continue;  // the bilingual rubric
    if (el.closest('[data-testid="stToolbar"], [data-testid="stHeader"]')) continue;
    // Streamlit's own "Skip to main content" link for screen readers: not ours to word
    if (el.tagName === 'A' && (el.getAttribute('href') || '').startsWith('#')) continue;
    if (!el.getClientRects().length) continue;  // not on screen
    // icons are ligatures in an icon font ("rule" draws a glyph): not words
    const parts = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const font = getComputedStyle(node.parentElement).fontFamily || '';
      if (!/material/i.test(font)) parts.push(node.data);
    }
    const text = parts.join(' ').trim();
    if (text) out.push(text);
  }
  return out;
}
"""
LATIN_OK = {"KoED", "Studio", "Prolific", "English", "EX", "IP", "ER", "EEA", "CA", "HIT", "ID"}


def _english_on(page: Any, allowed: set[str]) -> list[str]:
    """Visible words of the app's own text (buttons, labels, messages, headings) that are
    Latin and not a name or code: English left on a Korean page."""
    import re

    left = []
    for text in page.evaluate(VISIBLE_CHROME):
        words = [w for w in re.findall(r"[A-Za-z]{2,}", text) if w not in LATIN_OK | allowed]
        if words:
            left.append(f"{text!r}: {words}")
    return left


def test_a_korean_worker_reads_every_step_in_korean(tmp_path: Path, browser: Any) -> None:
    # A browser set to Korean (ko-KR) on a phone (390x844), a study of Korean items, a
    # link without ?lang: consent, screening, calibration with its feedback, a missing
    # score, the batch, the code and the way back are all Korean; each step's text is
    # read once it has settled and again seconds later, and photographed.
    from playwright.sync_api import expect

    from koed_core.rating import crowd

    key = "s" * 40
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=0, langs=("ko",))
    invite, token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(
            platform="prolific",
            days=7,
            cap=5,
            batch_size=2,
            reward=1.0,
            consent_ko="연구 참여에 동의합니다.",
            consent_en="I agree to take part.",
            contact="researcher@example.org",
        ),
    )
    ids = f"PROLIFIC_PID={'5a' * 12}&STUDY_ID={'60' * 12}&SESSION_ID={'7b' * 12}"
    server = serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE), "KOED_SECRET_KEY": key})
    url = next(server)
    allowed = {invite.completion_code, "researcher", "example", "org"}  # the link's contact

    def settled_korean(page: Any, name: str) -> None:
        steps.settled(page)
        first = _english_on(page, allowed)
        steps.later(page, 1.5)
        steps.settled(page)
        assert first == [] and _english_on(page, allowed) == [], first
        page.screenshot(path=str(ARTIFACTS / f"crowd_ko_{name}.png"), full_page=True)

    try:
        context = browser.new_context(locale="ko-KR", viewport={"width": 390, "height": 844})
        page = context.new_page()
        page.goto(f"{url}/join?invite={token}&{ids}")
        expect(page.get_by_role("heading", name="KoED 평가 연구")).to_be_visible()
        settled_korean(page, "consent")
        steps.agree(page, "위 내용을 읽었으며 참여에 동의합니다.", "계속")
        expect(page.get_by_text("참여자 정보")).to_be_visible()
        settled_korean(page, "screening")
        page.get_by_test_id("stRadio").get_by_text("한국어", exact=True).click()
        page.get_by_label("한국 거주 기간 (년)").fill("25")
        page.get_by_role("button", name="계속").click()
        for n, score in ((1, "4"), (2, "2")):
            expect(page.get_by_text(f"연습 문항 {n}/2")).to_be_visible()
            if n == 1:  # submitted with nothing scored: the warning, in Korean
                page.get_by_role("button", name="평가 제출").click()
                expect(page.get_by_text("제출하기 전에 모든 항목에 점수를")).to_be_visible()
            settled_korean(page, f"calibration_{n}")
            steps.score_all(page, score)
            page.get_by_role("button", name="평가 제출").click()
            expect(page.get_by_role("button", name="다음")).to_be_visible()
            settled_korean(page, f"feedback_{n}")
            page.get_by_role("button", name="다음").click()
        for n in (0, 1):
            expect(page.get_by_text(f"묶음 1/1: 2개 중 {n}개 평가함")).to_be_visible()
            settled_korean(page, f"item_{n}")
            steps.score_all(page, "4")
            page.get_by_role("button", name="평가 제출").click()
        expect(page.get_by_text(invite.completion_code)).to_be_visible()
        expect(page.get_by_text("참여해 주셔서 감사합니다")).to_be_visible()
        back = page.get_by_role("link", name="플랫폼으로 돌아가기")
        assert back.get_attribute("href") == invite.redirect_url
        settled_korean(page, "done")
    finally:
        server.close()
