"""Issue 68, item 5, against the planted Prolific: the study pauses when the people active
in the app reach the server's capacity and starts again below it, each transition in the
call log and said; a pause the researcher made is never lifted by the app."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific, StudyFull
from koed_core.cli import main
from koed_core.db.prolific import ProlificLog
from koed_core.rating.crowd import prolific, prolific_capacity
from tests.test_prolific import KEY, TOKEN, Clock, _arrive, _client, _fresh, clock, fake  # noqa: F401
from tests.test_prolific_arms import _link


@pytest.mark.slow
def test_the_study_pauses_at_capacity_and_starts_again_below_it(
    tmp_path: Path,
    fake: FakeProlific,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = _link(tmp_path, ("ko",), cap=5)
    client = _client(store, fake, invite)
    prolific.publish(store, client, invite, KEY, "https://koed.example", go_live=True)
    invite = _fresh(store, invite)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    db = ["--db", str(store.path)]
    assert main(["prolific", "capacity", *db, "--people", "2"]) == 0
    assert "capacity: 2 people; active now: 0" in capsys.readouterr().out
    people = [_arrive(store, fake, invite) for _ in range(2)]
    paused = prolific.sync(store, client, invite).transition
    assert paused is not None and (paused.action, paused.active, paused.capacity) == ("PAUSE", 2, 2)
    study = fake.studies[str(invite.prolific_study_id)]
    assert study["status"] == "PAUSED" == paused.status  # as Prolific answered
    with pytest.raises(StudyFull):
        fake.arrive(str(invite.prolific_study_id))  # offered to nobody new
    assert main(["prolific", "sync", "--invite", invite.id, *db]) == 0
    assert "PAUSE sent" not in capsys.readouterr().out  # once, not every minute
    first, _worker = people[0]
    fake.give_back(first["id"])
    report = prolific.sync(store, client, invite)  # one left: under 90 % of two
    assert report.transition is not None and report.transition.action == "START"
    assert (report.transition.active, report.transition.capacity) == (1, 2)
    assert study["status"] == "ACTIVE"
    assert fake.transitions[-2:] == [(study["id"], "PAUSE"), (study["id"], "START")]
    whats = [c["what"] for c in ProlificLog(store).calls(invite.id)]
    assert "pausing the study at capacity" in whats and "starting the study again" in whats


@pytest.mark.slow
def test_a_pause_the_researcher_made_is_not_lifted(tmp_path: Path, fake: FakeProlific) -> None:
    store, invite = _link(tmp_path, ("ko",), cap=5)
    client = _client(store, fake, invite)
    prolific.publish(store, client, invite, KEY, "https://koed.example", go_live=True)
    invite = _fresh(store, invite)
    prolific_capacity.set_capacity(store, 3)
    fake.studies[str(invite.prolific_study_id)]["status"] = "PAUSED"  # in Prolific's app
    assert prolific.sync(store, client, invite).transition is None
    assert fake.studies[str(invite.prolific_study_id)]["status"] == "PAUSED"
    assert not fake.transitions[1:]  # only the publishing
