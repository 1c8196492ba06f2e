"""A translation pass's dialogues kept as they come back (migration m034), before the pass
makes its version.

A pass (``koed translate run``, or the same work as a job) asks one call per text, a
hundred dialogues at a time; a version is made only at its end, so that a version is one
act of translating. Until then each translated dialogue waits here under the pass's key
(what it translates with: variant, model, prompt version, decoding, data), so that the
same pass started again after a kill asks only for the dialogues not kept yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from koed_core.db.store import Store
from koed_core.db.types import now
from koed_core.dialogues.variants import Translation


class TranslationDrafts:
    """The ``translation_drafts`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def keep(self, pass_key: str, translation: Translation, source_hash: str) -> None:
        """Keep one translated dialogue of a pass (again: the newer one stays)."""
        with self.store.write():
            self.store.db.execute(
                "insert or replace into translation_drafts (pass_key, conv_id, variant,"
                " source_hash, situation, turns, created) values (?, ?, ?, ?, ?, ?, ?)",
                [pass_key, translation.conv_id, translation.variant, source_hash]
                + [translation.situation, json.dumps(list(translation.turns)), now()],
            )

    def kept(self, pass_key: str) -> dict[str, tuple[Translation, str]]:
        """conv_id -> (translation, the source hash it was made from) of a pass."""
        rows = self.store.rows(
            "select conv_id, variant, source_hash, situation, turns from translation_drafts"
            " where pass_key = ?",
            [pass_key],
        )
        return {
            r["conv_id"]: (
                Translation(
                    r["conv_id"], r["variant"], r["situation"], tuple(json.loads(r["turns"]))
                ),
                r["source_hash"],
            )
            for r in rows
        }

    def drop(self, pass_key: str, conv_ids: Iterable[str]) -> None:
        """Let go of what a version has taken in."""
        chosen = list(conv_ids)
        with self.store.write():
            self.store.db.conn.executemany(
                "delete from translation_drafts where pass_key = ? and conv_id = ?",
                [(pass_key, c) for c in chosen],
            )
