"""SQLite storage through sqlite-utils: runs, responses and emotion-recognition scores.

One file, WAL mode and a busy timeout so the app's sessions, the CLI and a background
run can share it. Rows have deterministic keys (a run is the hash of its configuration,
a response the hash of run, dialogue, language and context), so a rerun, a resumed run
or a double click updates a row instead of adding one.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from koed_core.emotions import EmotionScore

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 30.0


def now() -> str:
    """UTC timestamp, ISO 8601, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def short_hash(*parts: object) -> str:
    """A stable 20-hex-digit key from JSON-able parts."""
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class RunConfig:
    """What makes two runs the same run: model, protocol, prompts, decoding, data."""

    model_name: str
    backend: str
    model_id: str
    base_url: str | None
    provenance: str
    protocol: str
    prompt_version: str
    temperature: float
    max_tokens: int
    dataset_sha256: str
    kind: str = "batch"
    """batch (koed run, the Runs page) or live (answers saved from the chat page)."""

    @property
    def run_id(self) -> str:
        """Deterministic id: the same configuration resumes the same run."""
        return short_hash(asdict(self))


@dataclass(frozen=True)
class ResponseRecord:
    """One model answer (or its failure) for one dialogue in one language."""

    run_id: str
    conv_id: str
    lang: str
    context_hash: str
    prompt: list[dict[str, str]]
    context: list[list[str]]
    """The transcript the model answered: [role, text] pairs, for raters and judges."""
    raw: str | None
    text: str | None
    predicted: tuple[str, ...] = ()
    unknown_labels: tuple[str, ...] = ()
    parse_notes: tuple[str, ...] = ()
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    error_kind: str | None = None

    @property
    def response_id(self) -> str:
        """Unique per run, dialogue, language and context."""
        return short_hash(self.run_id, self.conv_id, self.lang, self.context_hash)


class Store:
    """The project's database; one instance may be shared by threads (writes are locked)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        self.db = sqlite_utils.Database(conn)
        if self.path != ":memory:":
            self.db.enable_wal()
            # Safe with WAL: a crash of the app loses nothing committed; saves an fsync a write.
            conn.execute("PRAGMA synchronous = NORMAL")
        self._lock = threading.RLock()
        self._ensure_schema()

    def _table(self, name: str) -> sqlite_utils.db.Table:
        return self.db.table(name)

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction. BEGIN IMMEDIATE takes the write lock up front, so a second
        writer (another session, process or thread) waits for the busy timeout instead of
        failing with "database is locked" when a read lock cannot be upgraded."""
        with self._lock:
            if self.db.conn.in_transaction:  # nested: the outer transaction decides
                yield
                return
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.conn.rollback()
                raise
            self.db.execute("COMMIT")

    def _ensure_schema(self) -> None:
        with self.write():
            self._table("runs").create(
                {
                    "id": str,
                    "name": str,
                    "kind": str,
                    "config": str,
                    "langs": str,
                    "created": str,
                    "updated": str,
                },
                pk="id",
                if_not_exists=True,
            )
            self._table("responses").create(
                {
                    "id": str,
                    "run_id": str,
                    "conv_id": str,
                    "lang": str,
                    "context_hash": str,
                    "prompt": str,
                    "context": str,
                    "raw": str,
                    "text": str,
                    "predicted": str,
                    "unknown_labels": str,
                    "parse_notes": str,
                    "latency_s": float,
                    "prompt_tokens": int,
                    "completion_tokens": int,
                    "error": str,
                    "error_kind": str,
                    "created": str,
                },
                pk="id",
                foreign_keys=[("run_id", "runs", "id")],
                if_not_exists=True,
            )
            self._table("responses").create_index(["run_id", "lang"], if_not_exists=True)
            self._table("emotion_scores").create(
                {
                    "response_id": str,
                    "gold": str,
                    "hit": int,
                    "precision": float,
                    "recall": float,
                    "f1": float,
                    "jaccard": float,
                },
                pk="response_id",
                foreign_keys=[("response_id", "responses", "id")],
                if_not_exists=True,
            )
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def ensure_run(self, config: RunConfig, name: str, langs: list[str]) -> str:
        """Create the run, or add languages to it; returns its id."""
        run_id = config.run_id
        with self.write():
            existing = self._run_row(run_id)
            known = json.loads(existing["langs"]) if existing else []
            merged = sorted(set(known) | set(langs))
            self._table("runs").upsert(
                {
                    "id": run_id,
                    "name": name,
                    "kind": config.kind,
                    "config": json.dumps(asdict(config), sort_keys=True),
                    "langs": json.dumps(merged),
                    "created": existing["created"] if existing else now(),
                    "updated": now(),
                },
                pk="id",
            )
        return run_id

    def _run_row(self, run_id: str) -> dict[str, Any] | None:
        rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        return rows[0] if rows else None

    def finished(self, run_id: str) -> set[tuple[str, str, str]]:
        """(conv_id, lang, context_hash) of responses that succeeded: what a rerun skips."""
        rows = self.db.query(
            "select conv_id, lang, context_hash from responses where run_id = ? and error is null",
            [run_id],
        )
        return {(r["conv_id"], r["lang"], r["context_hash"]) for r in rows}

    def save_response(
        self, record: ResponseRecord, score: EmotionScore | None, gold: frozenset[str] | None
    ) -> str:
        """Insert or replace one response and its emotion score, in one transaction."""
        row = asdict(record)
        for key in ("prompt", "context", "predicted", "unknown_labels", "parse_notes"):
            row[key] = json.dumps(list(row[key]), ensure_ascii=False)
        row["id"] = record.response_id
        row["created"] = now()
        with self.write():
            self._table("responses").upsert(row, pk="id")
            scores = self._table("emotion_scores")
            scores.delete_where("response_id = ?", [row["id"]])
            if score is not None and gold is not None:
                scores.insert(
                    {
                        "response_id": row["id"],
                        "gold": json.dumps(sorted(gold)),
                        **asdict(score),
                        "hit": int(score.hit),
                    },
                )
            self._table("runs").update(record.run_id, {"updated": now()})
        return str(row["id"])

    def runs(self) -> pd.DataFrame:
        """One row per run and language: counts, errors, emotion-recognition figures."""
        sql = """
            select r.id as run_id, r.name, r.kind, json_extract(r.config, '$.protocol') as protocol,
                   json_extract(r.config, '$.provenance') as provenance, s.lang,
                   count(s.id) as responses, sum(s.error is not null) as errors,
                   avg(e.hit) as accuracy, avg(e.f1) as f1, avg(e.jaccard) as jaccard,
                   avg(s.latency_s) as mean_latency_s, r.updated
            from runs r left join responses s on s.run_id = r.id
            left join emotion_scores e on e.response_id = s.id
            group by r.id, s.lang order by r.updated desc, s.lang
        """
        return pd.DataFrame(list(self.db.query(sql)))

    def responses(self, run_id: str) -> pd.DataFrame:
        """Every response of a run with its emotion score."""
        sql = """
            select s.*, e.gold, e.hit, e.precision, e.recall, e.f1, e.jaccard
            from responses s left join emotion_scores e on e.response_id = s.id
            where s.run_id = ? order by s.conv_id, s.lang
        """
        return pd.DataFrame(list(self.db.query(sql, [run_id])))

    def has_run(self, run_id: str) -> bool:
        """Whether a run with this id is stored."""
        found = self.db.execute("select 1 from runs where id = ?", [run_id]).fetchone()
        return found is not None

    def count(self, table: str) -> int:
        """Rows in a table (for checks and tests)."""
        return int(self.db.execute(f"select count(*) from [{table}]").fetchone()[0])
