"""The study dashboard's Prolific section through AppTest, against the planted Prolific
server: the sync's findings on the page, and the review sent only behind a confirmation."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific
from tests.test_prolific import KEY, TOKEN, Clock, _client, _finish, clock, fake, world  # noqa: F401
from tests.test_rating_pages import _as, accounts  # noqa: F401


@pytest.mark.slow
def test_the_dashboard_syncs_flags_and_reviews_behind_a_confirmation(
    accounts: Path,  # noqa: F811
    world: tuple,  # type: ignore[type-arg]  # noqa: F811
    fake: FakeProlific,  # noqa: F811
    clock: Clock,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = world
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode() * 2)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    prolific.publish(store, _client(store, fake, invite), invite, KEY, "https://x.example",
                     go_live=True)  # fmt: skip
    invite = crowd.Invite.from_row(Crowd(store).invite(invite.id) or {})
    sub, worker = _finish(store, fake, invite, clock)
    crowd.decide(store, worker.username, "accept", "boss")
    leaked = fake.arrive(str(invite.prolific_study_id))
    fake.submit(leaked["id"], invite.completion_code, minutes=1)
    at = _as("boss")
    at.switch_page("app_pages/rating/dashboard.py").run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "Read 2 submissions" in captions
    warned = " ".join(w.value for w in at.warning)
    assert "Flagged submissions" in warned
    flags = next(d.value for d in at.dataframe if "flag" in d.value.columns)
    assert list(flags["participant_id"]) == [leaked["participant_id"]]
    apply = next(b for b in at.button if b.label == "Apply on Prolific")
    assert apply.disabled and fake.submissions[sub["id"]]["status"] == "AWAITING REVIEW"
    reads = len(fake.requests)
    at.checkbox(key=f"prolific.confirm.{invite.id}").check().run()
    assert len(fake.requests) == reads  # a click moments later reads Prolific no more
    assert "Flagged submissions" in " ".join(w.value for w in at.warning)  # still shown
    next(b for b in at.button if b.label == "Apply on Prolific").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert fake.submissions[sub["id"]]["status"] == "APPROVED"
    assert fake.submissions[leaked["id"]]["status"] == "AWAITING REVIEW"  # flagged, untouched
    assert ProlificLog(store).action_done(sub["id"], "approve")
    assert TOKEN not in str(at)
