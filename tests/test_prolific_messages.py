"""Issue 68, item 6, against the planted Prolific: the unread messages about a link's
studies (count and newest) on the command line and the dashboard, and one message to every
participant, each arm's to its own people, sent once and in the call log."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific
from koed_core.cli import main
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific, prolific_messages
from tests.test_prolific import KEY, TOKEN, Clock, _client, _fresh, clock, fake  # noqa: F401
from tests.test_prolific_arms import _link
from tests.test_rating_pages import _as, accounts  # noqa: F401


def _two_arms(tmp_path: Path, fake: FakeProlific) -> tuple:  # type: ignore[type-arg]
    store, invite = _link(tmp_path, ("ko", "en"), cap=4)
    prolific.publish_link(
        store, _client(store, fake, invite), invite, KEY, "https://koed.example", go_live=True
    )
    invite = _fresh(store, invite)
    arms = dict(invite.prolific_arms)
    ko = fake.arrive(arms["ko"])
    en = fake.arrive(arms["en"])
    fake.plant_message(arms["ko"], ko["participant_id"], "The page froze after item 3.")
    fake.plant_message("ff" * 12, "someone", "About another researcher's study")
    return store, invite, arms, ko, en


@pytest.mark.slow
def test_unread_messages_and_one_message_to_each_arms_participants(
    tmp_path: Path,
    fake: FakeProlific,
    clock: Clock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite, arms, ko, en = _two_arms(tmp_path, fake)
    clock.now += timedelta(minutes=5)  # Prolific's time: the newest comes later
    fake.plant_message(arms["en"], en["participant_id"], "Thanks, done.")
    found = prolific_messages.unread(store, _client(store, fake, invite), invite)
    assert [m.body for m in found] == ["Thanks, done.", "The page froze after item 3."]
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    db = ["--invite", invite.id, "--db", str(store.path)]
    assert main(["prolific", "messages", *db, "--send", "Thank you for taking part!"]) == 0
    out = capsys.readouterr().out
    assert "2 unread message(s)" in out and "sent to 1 participants" in out
    assert sorted((m["study_id"], tuple(m["ids"])) for m in fake.sent_messages) == sorted(
        [(arms["ko"], (ko["participant_id"],)), (arms["en"], (en["participant_id"],))]
    )
    assert [c["what"] for c in ProlificLog(store).calls(invite.id)].count(
        "messaging the participants"
    ) == 2
    with pytest.raises(crowd.CrowdError, match="1 to 2000 characters"):
        prolific_messages.send_to_all(store, _client(store, fake, invite), invite, "  ")
    assert len(fake.sent_messages) == 2


@pytest.mark.slow
def test_the_dashboard_shows_the_newest_unread_message_and_sends_behind_a_tick(
    accounts: Path,  # noqa: F811
    tmp_path: Path,
    fake: FakeProlific,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite, _arms, _ko, _en = _two_arms(tmp_path, fake)
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode() * 2)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    at = _as("boss")
    at.switch_page("app_pages/rating/dashboard.py").run()
    assert not at.exception, [e.value for e in at.exception]
    info = " ".join(i.value for i in at.info).replace("\\", "")
    assert "1 unread messages" in info and "The page froze after item 3." in info
    at.text_area[0].input("The study closes tonight.")
    next(b for b in at.button if b.label == "Send on Prolific").click().run()
    assert not fake.sent_messages  # not without the tick
    at.checkbox[-1].check()
    at.text_area[0].input("The study closes tonight.")
    next(b for b in at.button if b.label == "Send on Prolific").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(fake.sent_messages) == 2
    assert {m["body"] for m in fake.sent_messages} == {"The study closes tonight."}
