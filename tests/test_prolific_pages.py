"""Issue 68 on the pages (AppTest, against the planted Prolific): the Studies page says who
can take part per language arm ("fewer than 25" as such) and publishes a short arm only
behind a confirmation; the Study dashboard follows both arms and says when the last event
and the last sync came."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific
from fixtures.rating import prolific_link
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific
from tests.test_prolific import KEY, TOKEN, Clock, _client, clock, fake  # noqa: F401
from tests.test_rating_pages import _as, accounts  # noqa: F401


def _bilingual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeProlific) -> tuple:  # type: ignore[type-arg]
    store, invite = prolific_link(tmp_path / "koed.db", KEY, ("ko", "en"), cap=40, batch_size=2)
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode() * 2)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    monkeypatch.setenv("KOED_PUBLIC_URL", "https://koed.example")
    return store, invite


@pytest.mark.slow
def test_the_studies_page_says_who_can_take_part_and_asks_before_a_short_arm_is_published(
    accounts: Path,  # noqa: F811
    tmp_path: Path,
    fake: FakeProlific,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = _bilingual(tmp_path, monkeypatch, fake)
    fake.plant_pool(10, "17")  # Korean: fewer than 25
    fake.plant_pool(200, "0")
    at = _as("boss")
    at.switch_page("app_pages/rating/studies.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not fake.studies  # nothing asked, nothing made
    next(b for b in at.button if b.label == "Ask Prolific who can take part").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "eligible" in d.value.columns)
    assert list(table["eligible"]) == ["fewer than 25", "200"]
    assert list(table["places"]) == [20, 20]
    assert "first language: Korean" in table["filters"][0]
    assert any("may never fill" in w.value for w in at.warning)
    publish = next(b for b in at.button if b.label.startswith("Publish on Prolific"))
    assert publish.disabled and not fake.studies
    at.checkbox(key=f"prolific.audience.few.{invite.id}").check().run()
    next(b for b in at.button if b.label.startswith("Publish on Prolific")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert sorted(s["status"] for s in fake.studies.values()) == ["ACTIVE", "ACTIVE"]
    assert len(crowd.Invite.from_row(Crowd(store).invite(invite.id) or {}).prolific_arms) == 2
    assert TOKEN not in str(at)


@pytest.mark.slow
def test_the_dashboard_follows_both_arms_and_says_when_prolific_was_last_heard(
    accounts: Path,  # noqa: F811
    tmp_path: Path,
    fake: FakeProlific,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = _bilingual(tmp_path, monkeypatch, fake)
    prolific.publish_link(
        store, _client(store, fake, invite), invite, KEY, "https://koed.example", go_live=True
    )
    ProlificLog(store).record_event("e" * 24, "study.status.change", "x", "ACTIVE", "study x")
    at = _as("boss")
    at.switch_page("app_pages/rating/dashboard.py").run()
    assert not at.exception, [e.value for e in at.exception]
    markdown = " ".join(m.value for m in at.markdown)
    assert "**Korean arm**" in markdown and "**English arm**" in markdown
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert (
        "Last event from Prolific" in captions
        and "Last sync: never" not in captions
        and "study.status.change ACTIVE" in captions
    )
    assert captions.count("Read 0 submissions") == 2
