"""Study assignment properties, rating integrity under concurrency, and the admin report."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fixtures.rating import SCORES, rater, seeded_store, study
from koed_core.db import Store
from koed_core.rating.report import export_rows, item_progress, rater_report
from koed_core.rating.studies import RatingError, RatingItem, StudyRules


def _rate_all(rules: StudyRules, study_id: int, names: list[str]) -> None:
    """Raters take turns until nobody gets an item."""
    active = True
    while active:
        active = False
        for name in names:
            item = rules.next_item(study_id, name)
            if item is not None:
                rules.save_rating(item.assignment_id, name, SCORES)
                active = True


def test_exactly_k_raters_per_item_no_repeats(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db")
    ratings, study_id = study(store, run_id, overlap=3, attention_checks=1)
    names = [f"rater{i}" for i in range(5)]
    for name in names:
        rater(ratings, name)
    _rate_all(ratings, study_id, names)
    progress = item_progress(ratings, study_id)
    real = progress[progress["kind"] == "response"]
    assert len(real) == 11  # 6 dialogues x 2 languages, minus one with no reference turn
    assert set(real["done"]) == {3}
    attention = progress[progress["kind"] == "attention"]
    assert len(attention) == 2 and set(attention["done"]) == {5}  # every rater gets them
    pairs = list(ratings.store.db.query("select item_id, username from assignments"))
    assert len(pairs) == len({(p["item_id"], p["username"]) for p in pairs})
    ratings_per_key = Counter(
        r["username"] for r in ratings.store.db.query("select username from ratings")
    )
    assert sum(ratings_per_key.values()) == (11 * 3 + 2 * 5) * 5


def test_languages_quota_and_least_rated_first(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db")
    ratings, study_id = study(store, run_id, overlap=2, attention_checks=0, quota=4)
    rater(ratings, "ko-only", langs=("ko",))
    rater(ratings, "second")
    seen = []
    while (item := ratings.next_item(study_id, "ko-only")) is not None:
        seen.append(item.lang)
        ratings.save_rating(item.assignment_id, "ko-only", SCORES)
    assert seen == ["ko"] * 4  # quota 4, Korean only
    assert ratings.workload(study_id, "ko-only") == 4
    # the other rater first gets items nobody has rated
    first = ratings.next_item(study_id, "second")
    taken = ratings.store.db.execute(
        "select count(*) from assignments a join assignments b on a.item_id = b.item_id "
        "where a.id = ? and b.username = 'ko-only'",
        [first.assignment_id],
    ).fetchone()[0]
    assert taken == 0


def test_blind_payload(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db")
    ratings, study_id = study(store, run_id)
    rater(ratings, "r1")
    item = ratings.next_item(study_id, "r1")
    assert {f.name for f in fields(RatingItem)} == {
        "assignment_id",
        "study_id",
        "lang",
        "context",
        "response",
        "instruction",  # an attention check's "choose 4 on every dimension"; else None
        "instructed_score",  # the score that instruction asks for; else None
        "kind",  # response, attention or episode (a whole conversation): no model, no run
    }
    assert "human" not in repr(item) and run_id not in repr(item)
    assert item.context[-1][0] == "speaker" and item.response


def test_order_is_shuffled_per_rater_and_reproducible(tmp_path: Path) -> None:
    calls = iter(range(100))

    def first_items(seed: int, name: str) -> list[str]:
        store, run_id = seeded_store(tmp_path / f"{next(calls)}.db")  # a fresh study each time
        ratings, study_id = study(store, run_id, attention_checks=0, seed=seed)
        rater(ratings, name)
        out = []
        for _ in range(6):
            item = ratings.next_item(study_id, name)
            out.append(item.response)
            ratings.save_rating(item.assignment_id, name, SCORES)
        return out

    assert first_items(7, "ann") == first_items(7, "ann")
    assert first_items(7, "ann") != first_items(7, "bob")
    assert first_items(7, "ann") != first_items(8, "ann")


def test_abandoned_work_returns_to_the_pool(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db", dialogues=1)
    ratings, study_id = study(
        store, run_id, overlap=1, attention_checks=0, timeout_minutes=30, langs=("ko",)
    )
    rater(ratings, "slow")
    rater(ratings, "fast")
    start = datetime.now(UTC)
    held = ratings.next_item(study_id, "slow", at=start)
    assert held is not None
    assert ratings.next_item(study_id, "slow", at=start) == held  # resumes its open item
    assert ratings.next_item(study_id, "fast", at=start + timedelta(minutes=10)) is None
    later = ratings.next_item(study_id, "fast", at=start + timedelta(minutes=31))
    assert later is not None and later.response == held.response
    with pytest.raises(RatingError, match="not assigned to you"):
        ratings.save_rating(held.assignment_id, "slow", SCORES)


def test_rating_validation_update_and_set_aside(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db")
    ratings, study_id = study(store, run_id, attention_checks=0)
    rater(ratings, "r1")
    item = ratings.next_item(study_id, "r1")
    with pytest.raises(RatingError, match="missing: CA"):
        ratings.save_rating(
            item.assignment_id, "r1", {k: v for k, v in SCORES.items() if k != "CA"}
        )
    with pytest.raises(RatingError, match="must be 1-5"):
        ratings.save_rating(item.assignment_id, "r1", {**SCORES, "EX": 6})
    with pytest.raises(RatingError, match="not assigned to you"):
        ratings.save_rating(item.assignment_id, "someone-else", SCORES)
    ratings.save_rating(item.assignment_id, "r1", SCORES, "good", 12.5)
    ratings.save_rating(item.assignment_id, "r1", {**SCORES, "EX": 1}, "changed my mind")
    rows = list(
        ratings.store.db.query("select dimension, score, comment, time_spent_s from ratings")
    )
    assert len(rows) == 5
    assert {r["dimension"]: r["score"] for r in rows}["EX"] == 1
    assert {r["comment"] for r in rows} == {"changed my mind"} and {
        r["time_spent_s"] for r in rows
    } == {12.5}
    last = ratings.last_rated(study_id, "r1")
    assert last is not None and last[1]["EX"] == 1 and last[2] == "changed my mind"
    skipped = ratings.next_item(study_id, "r1")
    ratings.set_aside(skipped.assignment_id, "r1", "flagged", "offensive")
    assert ratings.next_item(study_id, "r1").assignment_id != skipped.assignment_id
    assert ratings.done(study_id, "r1") == 1


@pytest.mark.slow
def test_thirty_raters_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    store, run_id = seeded_store(db, dialogues=34)
    ratings, study_id = study(store, run_id, overlap=30, attention_checks=0)
    names = [f"r{i:02d}" for i in range(30)]
    for name in names:
        rater(ratings, name)
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(names))

    def work(name: str) -> None:
        try:
            own = StudyRules(Store(db))  # its own connection, as a separate session would have
            barrier.wait()
            for _ in range(4):
                item = own.next_item(study_id, name)
                own.save_rating(item.assignment_id, name, SCORES, f"by {name}")
        except BaseException as err:  # collected: a thread's exception would vanish
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.count("ratings") == 30 * 4 * 5
    distinct = store.db.execute(
        "select count(distinct response_key || username || dimension) from ratings"
    ).fetchone()[0]
    assert distinct == 30 * 4 * 5


def test_report_attention_and_leave_one_out(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db")
    ratings, study_id = study(store, run_id, overlap=3, attention_checks=1, langs=("en",))
    for name in ("careful", "also", "careless"):
        rater(ratings, name, langs=("en",))
    # careful raters vary their scores with the item; the careless one gives 5 everywhere
    for name in ("careful", "also", "careless"):
        n = 0
        while (item := ratings.next_item(study_id, name)) is not None:
            if name == "careless":
                scores = dict.fromkeys(SCORES, 5)
            elif item.instructed_score is not None:  # a check: what it asks for
                scores = dict.fromkeys(SCORES, item.instructed_score)
            else:
                level = 2 + len(item.response) % 3
                scores = {k: level for k in SCORES}
            ratings.save_rating(item.assignment_id, name, scores, time_spent_s=10 + n)
            n += 1
    report = rater_report(ratings, study_id).set_index("username")
    assert report.loc["careful", "attention_pass_rate"] == 1.0
    assert report.loc["careless", "attention_pass_rate"] == 0.0
    assert report.loc["careful", "loo_spearman"] > 0.4
    assert report.loc["careless", "loo_note"].startswith("undefined")  # its own scores never vary
    done = int(report.loc["careful", "done"])  # 6 English responses + 1 attention check
    assert done == 7
    assert report.loc["careful", "median_s_per_item"] == pytest.approx(13.0)  # median of 10..16
    rows = export_rows(ratings, study_id, b"server secret")
    assert rows and all(r["rater"].startswith("r-") for r in rows)
    assert (
        len({r["rater"] for r in rows}) == ratings.q.ratings_frame(study_id)["username"].nunique()
    )
    assert not any(name in str(rows) for name in ("careful", "careless"))
    # keyed: the unsalted 0.1.0 form, and the same names under another key, do not match
    import hashlib

    from koed_core.rating.server_key import pseudonym

    naive = {
        "r-" + hashlib.sha256(f"{study_id}{n}".encode()).hexdigest()[:8]
        for n in ("careful", "careless")
    }
    assert not naive & {r["rater"] for r in rows}
    assert {pseudonym(b"other key", study_id, n) for n in ("careful", "careless")}.isdisjoint(
        {r["rater"] for r in rows}
    )
    assert pseudonym(b"server secret", study_id, "careful") in {r["rater"] for r in rows}
    response_row = next(r for r in rows if r["kind"] == "response")
    assert (
        response_row["model"] == "human"
        and response_row["rubric_version"]
        and response_row["prompt_version"]
    )
