"""A bilingual design that does not prime: in a separate study no rater is
given both language versions of a dialogue; in a counterbalanced one a rater may be,
half the dialogues Korean first, with the order recorded on every rating; an old
database gains the column with its ratings' order unknown."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from fixtures.rating import rater, seeded_store, study
from koed_core.db import Store
from koed_core.judge.rubric import codes
from koed_core.rating.bilingual import first_language
from koed_core.rating.studies import StudyRules

OLD_DB = Path(__file__).parent / "data" / "koed-0.1.0.db"


def _rate_all(rules: StudyRules, study_id: int, names: list[str]) -> None:
    busy = True
    while busy:
        busy = False
        for name in names:
            item = rules.next_item(study_id, name)
            if item is not None:
                busy = True
                rules.save_rating(item.assignment_id, name, dict.fromkeys(codes(), 3))


def _met(store: Store, study_id: int) -> list[dict[str, object]]:
    return list(
        store.db.query(
            """select a.username, i.conv_id, i.lang, r.lang_position, r.created
               from ratings r join assignments a on a.item_id = r.item_id
               and a.username = r.username join study_items i on i.id = r.item_id
               where r.study_id = ? and i.kind = 'response' and r.dimension = 'EX'
               order by r.rowid""",
            [study_id],
        )
    )


def test_separate_gives_no_rater_both_versions_and_still_fills_the_overlap(
    tmp_path: Path,
) -> None:
    store, run_id = seeded_store(tmp_path / "r.db")
    ratings, study_id = study(store, run_id, overlap=2, attention_checks=0, bilingual="separate")
    names = [f"rater{i}" for i in range(4)]
    for name in names:
        rater(ratings, name)
    _rate_all(ratings, study_id, names)
    met = _met(store, study_id)
    versions = Counter((m["username"], m["conv_id"]) for m in met)
    assert max(versions.values()) == 1  # nobody rated a dialogue in both languages
    per_item = Counter((m["conv_id"], m["lang"]) for m in met)
    assert set(per_item.values()) == {2} and len(per_item) == 11  # every item, k = 2
    assert {m["lang_position"] for m in met} == {1}
    assert ratings.has_work(study_id, names[0]) is False


def test_counterbalanced_orders_half_each_way_and_records_the_order(tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "r.db", dialogues=12)
    ratings, study_id = study(
        store, run_id, overlap=1, attention_checks=0, bilingual="counterbalanced", seed=4
    )
    rater(ratings, "solo")
    _rate_all(ratings, study_id, ["solo"])
    met = _met(store, study_id)
    by_dialogue: dict[str, list[dict[str, object]]] = {}
    for m in met:
        by_dialogue.setdefault(str(m["conv_id"]), []).append(m)
    both = {c: rows for c, rows in by_dialogue.items() if len(rows) == 2}
    assert len(both) >= 10
    for conv_id, rows in both.items():
        assert [r["lang_position"] for r in rows] == [1, 2]
        assert rows[0]["lang"] == first_language(4, "solo", conv_id)  # met first as planned
    firsts = Counter(rows[0]["lang"] for rows in both.values())
    assert firsts["ko"] >= 3 and firsts["en"] >= 3  # both orders, about half each


def test_an_old_database_gains_the_order_column_unknown(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(OLD_DB, path)
    store = Store(path)  # upgrades in place
    with sqlite3.connect(path) as conn:
        columns = {r[1] for r in conn.execute("pragma table_info(ratings)")}
        positions = {r[0] for r in conn.execute("select lang_position from ratings")}
    assert "lang_position" in columns and positions == {None}
    studies = StudyRules(store).studies()
    assert studies and StudyRules(store).config(int(studies[0]["id"])).bilingual == "free"
