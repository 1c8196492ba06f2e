"""What the per-emotion breakdowns read: gold labels as stored and unscored responses."""

from __future__ import annotations

import json

from koed_core.db.store import Store


def without_emotion_score(store: Store, run_id: str, answered_only: bool = False) -> int:
    """A run's responses with no emotion number (failed; or, ``answered_only``, an
    answer that named no label)."""
    named = "and coalesce(e.given, 1) = 1" if answered_only else ""
    rows = store.rows(
        f"""select count(*) as n from responses s where s.run_id = ? and not exists
            (select 1 from emotion_scores e where e.response_id = s.id {named})""",
        [run_id],
    )
    return int(rows[0]["n"]) if rows else 0


def gold_labels(store: Store) -> dict[str, list[str]]:
    """conv_id -> its gold emotion labels, as the emotion scores stored them (the
    per-emotion breakdowns read them from the database, not from a loaded file)."""
    rows = store.rows(
        "select distinct s.conv_id, e.gold from emotion_scores e "
        "join responses s on s.id = e.response_id where e.gold is not null"
    )
    found: dict[str, list[str]] = {}
    for row in rows:
        found[row["conv_id"]] = sorted(
            set(found.get(row["conv_id"], [])) | set(json.loads(row["gold"]))
        )
    return found
