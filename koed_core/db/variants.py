"""Translated variants in the database: versions and their dialogues (migration m023).

A version is one act of translating or importing: who made it (a model with its prompt's
version, or a person), from which file (its sha256), when. Its ``variant_dialogues``
rows hold only the dialogues it made or changed; version N of a variant reads, for each
dialogue, the newest row at or below N. So a second translation, an import or a
linguist's edit of one turn is a new version that changes only what it touched, and a run
that records "en-from-ko version 3" can always be read again exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from koed_core.db.store import Store
from koed_core.db.types import now, short_hash
from koed_core.dialogues.variants import Translation


@dataclass(frozen=True)
class VersionMeta:
    """Who made a version and from what: a model (``model``, ``prompt_version``, the
    ``prompt`` text itself) or a person (``translator``)."""

    variant: str
    made_by: str
    """``model`` or ``person``."""
    source_sha256: str
    model: str | None = None
    translator: str | None = None
    prompt_version: str | None = None
    prompt: str | None = None
    note: str = ""


@dataclass(frozen=True)
class VariantVersion:
    """One stored version, as listed and as a run records it."""

    id: str
    variant: str
    version: int
    made_by: str
    model: str | None
    translator: str | None
    prompt_version: str | None
    source_sha256: str
    created: str
    dialogues: int
    """How many dialogues this version itself made or changed."""

    @property
    def label(self) -> str:
        """``en-from-ko v3``, as a run's label and the CLI show it."""
        return f"{self.variant} v{self.version}"


@dataclass(frozen=True)
class StoredTranslation:
    """One dialogue's translation as a version reads it, with where it came from."""

    translation: Translation
    source_hash: str
    version_id: str


@dataclass(frozen=True)
class Check:
    """A person's check of one turn of one version: accepted as it was, or edited (the
    edit itself is the variant's next version; ``text`` is what the person left)."""

    version_id: str
    conv_id: str
    turn: int
    """0-based, in the source turns' order."""
    checker: str
    verdict: str
    """``accepted`` or ``edited``."""
    text: str
    created: str = ""


class Variants:
    """The ``variant_versions``, ``variant_dialogues`` and ``variant_checks`` tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add_version(
        self, meta: VersionMeta, items: Sequence[tuple[Translation, str]]
    ) -> VariantVersion:
        """Store ``items`` (each translation with its source hash) as the variant's next
        version, whole or not at all; returns the version."""
        with self.store.write():
            found = self.store.rows(
                "select coalesce(max(version), 0) as top from variant_versions where variant = ?",
                [meta.variant],
            )
            version = int(found[0]["top"]) + 1
            created = now()
            version_id = short_hash(meta.variant, version, created, meta.source_sha256)
            self.store.db.execute(
                "insert into variant_versions (id, variant, version, made_by, model, translator,"
                " prompt_version, prompt, source_sha256, created, note)"
                " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [version_id, meta.variant, version, meta.made_by, meta.model, meta.translator]
                + [meta.prompt_version, meta.prompt, meta.source_sha256, created, meta.note],
            )
            self.store.db.conn.executemany(
                "insert into variant_dialogues (version_id, conv_id, source_hash, situation,"
                " turns) values (?, ?, ?, ?, ?)",
                [
                    (version_id, t.conv_id, h, t.situation, json.dumps(list(t.turns)))
                    for t, h in items
                ],
            )
        return self.version(version_id)  # type: ignore[return-value]

    def versions(self, variant: str | None = None) -> list[VariantVersion]:
        """Every version (of one variant), oldest first."""
        where, params = ("where v.variant = ?", [variant]) if variant else ("", [])
        rows = self.store.rows(
            "select v.*, (select count(*) from variant_dialogues d where d.version_id = v.id)"
            f" as dialogues from variant_versions v {where} order by v.variant, v.version",
            params,
        )
        return [_version(row) for row in rows]

    def version(self, version_id: str) -> VariantVersion | None:
        """One version by id."""
        found = [v for v in self.versions() if v.id == version_id]
        return found[0] if found else None

    def latest(self, variant: str) -> VariantVersion | None:
        """The variant's newest version (None: never translated nor imported)."""
        found = self.versions(variant)
        return found[-1] if found else None

    def read(self, variant: str, version: int) -> dict[str, StoredTranslation]:
        """conv_id -> its translation as version ``version`` of ``variant`` reads it: the
        newest row of each dialogue at or below that version."""
        rows = self.store.rows(
            "select d.*, v.version from variant_dialogues d join variant_versions v"
            " on v.id = d.version_id where v.variant = ? and v.version <= ?"
            " order by v.version",
            [variant, version],
        )
        return {
            row["conv_id"]: StoredTranslation(
                Translation(
                    row["conv_id"], variant, row["situation"], tuple(json.loads(row["turns"]))
                ),
                row["source_hash"],
                row["version_id"],
            )
            for row in rows  # a later version's row replaces an earlier one
        }

    def row(self, version_id: str, conv_id: str) -> Translation | None:
        """The translation one version itself stored for a dialogue (None: it has none)."""
        found = self.store.rows(
            "select d.*, v.variant from variant_dialogues d join variant_versions v"
            " on v.id = d.version_id where d.version_id = ? and d.conv_id = ?",
            [version_id, conv_id],
        )
        if not found:
            return None
        row = found[0]
        return Translation(
            conv_id, str(row["variant"]), row["situation"], tuple(json.loads(row["turns"]))
        )

    def record_check(self, check: Check) -> None:
        """Store (or replace) one person's verdict on one turn of one version."""
        with self.store.write():
            self.store.db.execute(
                "insert or replace into variant_checks (version_id, conv_id, turn, checker,"
                " verdict, text, created) values (?, ?, ?, ?, ?, ?, ?)",
                [check.version_id, check.conv_id, check.turn, check.checker, check.verdict]
                + [check.text, now()],
            )

    def checks(self, variant: str) -> list[Check]:
        """Every check of any version of ``variant``, oldest first."""
        rows = self.store.rows(
            "select c.* from variant_checks c join variant_versions v on v.id = c.version_id"
            " where v.variant = ? order by c.created, c.conv_id, c.turn",
            [variant],
        )
        return [_check_of(row) for row in rows]


def _check_of(row: dict[str, object]) -> Check:
    return Check(
        str(row["version_id"]),
        str(row["conv_id"]),
        int(row["turn"]),  # type: ignore[call-overload]
        str(row["checker"]),
        str(row["verdict"]),
        str(row["text"]),
        str(row["created"]),
    )


def _version(row: dict[str, object]) -> VariantVersion:
    return VariantVersion(
        id=str(row["id"]),
        variant=str(row["variant"]),
        version=int(row["version"]),  # type: ignore[call-overload]
        made_by=str(row["made_by"]),
        model=row["model"] or None,  # type: ignore[arg-type]
        translator=row["translator"] or None,  # type: ignore[arg-type]
        prompt_version=row["prompt_version"] or None,  # type: ignore[arg-type]
        source_sha256=str(row["source_sha256"]),
        created=str(row["created"]),
        dialogues=int(row["dialogues"]),  # type: ignore[call-overload]
    )
