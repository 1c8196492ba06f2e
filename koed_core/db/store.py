"""The project database: one SQLite file, opened checked and migrated, and its run queries.

WAL mode and a busy timeout let the app's sessions, the CLI and a background run share
the file. Opening checks the file (``PRAGMA quick_check``) before anything writes to it,
so a corrupt database is reported and left as it is, and applies pending migrations.
Judgments, ratings and read-side score queries live beside this module; no SQL lives
anywhere else in koed_core.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from koed_core.db import migrations
from koed_core.db.types import EmotionScore, ResponseRecord, RunConfig, now
from koed_core.errors import KoedError

BUSY_TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


class StoreError(KoedError):
    """The database cannot be used: corrupt, not a database, or made by a newer release."""


class StoreUnavailable(StoreError, sqlite3.OperationalError):
    """A write the database could not take now: another process held its lock past the
    busy timeout, or the disk is full. Still an ``sqlite3.OperationalError`` (the
    worker waits and tries again on those); as a KoedError, a page or the command line
    shows its one sentence instead of a traceback."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind
        """``busy`` (worth waiting for) or ``full``."""


def unavailable(err: sqlite3.OperationalError, name: str) -> sqlite3.OperationalError:
    """``err`` as a sentence a user can act on, when it is a lock or a full disk."""
    text = str(err)
    if "locked" in text or "busy" in text:
        return StoreUnavailable(
            f"{name}: the database is busy (another process has held it for over "
            f"{BUSY_TIMEOUT_S:.0f} s); nothing was saved from this step: try again in a moment",
            "busy",
        )
    if "full" in text:
        return StoreUnavailable(
            f"{name}: the disk is full, so the database could not store this; nothing was "
            "saved from this step: free some space and try again",
            "full",
        )
    return err


def _create_private(path: Path) -> None:
    """Create an empty file readable by its owner only (rater profiles and comments)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def tighten(path: Path) -> list[str]:
    """Make the database and its WAL files owner-only, as the app creates them.

    A database from an earlier release (0.1.0 made it 0644) holds rater profiles and
    comments; opening it here closes it to other users of the machine. Returns a
    sentence per file changed, said once: the next open finds nothing to change.
    """
    changed = []
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = file.stat().st_mode & 0o777
            if mode & 0o077:
                file.chmod(0o600)
                changed.append(f"{file.name}: permissions {mode:o} -> 600 (owner only)")
        except OSError:
            continue  # absent, or not ours to change: sqlite says so if it matters
    for line in changed:
        log.warning("KoED Studio: %s", line)
    return changed


class Store:
    """The project's database; one instance may be shared by threads (writes are locked)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self.name = Path(self.path).name
        """The file's name without its folder: what messages a visitor may see carry."""
        self.tightened: list[str] = []
        memory = self.path == ":memory:"
        if not memory:
            if Path(self.path).is_dir():
                raise StoreError(f"{self.name} (KOED_DB): is a folder, not a database file")
            _create_private(Path(self.path))
            self.tightened = tighten(Path(self.path))
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._check(conn)
        except sqlite3.DatabaseError as err:
            raise StoreError(
                f"{self.name} (KOED_DB): not a usable SQLite database ({err})"
            ) from None
        self.db = sqlite_utils.Database(conn)
        if not memory:
            self.db.enable_wal()
            # Safe with WAL: a crash of the app loses nothing committed; saves an fsync a write.
            conn.execute("PRAGMA synchronous = NORMAL")
        self._lock = threading.RLock()
        self._migrate()

    def _check(self, conn: sqlite3.Connection) -> None:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            shown = "; ".join(str(r) for r in rows[:3])
            raise StoreError(
                f"{self.name} (KOED_DB): the database is damaged ({shown}). It was left untouched: "
                "restore a backup or point KOED_DB at another file."
            )

    def _migrate(self) -> None:
        with self.write():
            newer = migrations.unknown(self.db)
            if newer:
                raise StoreError(
                    f"{self.name} (KOED_DB): made by a newer KoED Studio (migration {newer[-1]}); "
                    "upgrade KoED Studio to open it"
                )
            for name, migrate in migrations.pending(self.db):
                migrate(self.db)
                migrations.record(self.db, name)

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction. BEGIN IMMEDIATE takes the write lock up front, so a second
        writer (another session, process or thread) waits for the busy timeout instead of
        failing with "database is locked" when a read lock cannot be upgraded."""
        with self._lock:
            if self.db.conn.in_transaction:  # nested: the outer transaction decides
                yield
                return
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                raise unavailable(err, self.name) from None
            try:
                yield
                self.db.execute("COMMIT")
            except sqlite3.OperationalError as err:
                if self.db.conn.in_transaction:
                    self.db.conn.rollback()
                raise unavailable(err, self.name) from None
            except BaseException:
                if self.db.conn.in_transaction:
                    self.db.conn.rollback()
                raise

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows of a read query as dicts (for this package's query modules).

        Reads take the same lock as writes: sqlite-utils wraps each query in a savepoint,
        which on a connection shared by threads would otherwise open (and commit) a
        transaction in the middle of another thread's write.
        """
        with self._lock:
            return [dict(r) for r in self.db.query(sql, params)]

    def frame(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> pd.DataFrame:
        """A read query as a DataFrame (for this package's query modules)."""
        return pd.DataFrame(self.rows(sql, params))

    def stamp(self) -> int:
        """A number that moves whenever a run, answer, judgment, study or rating changes
        (by any process): the key under which pages may keep what they computed."""
        return int(self.rows("select n from _koed_changes")[0]["n"])

    # Runs and responses ----------------------------------------------------------------

    def ensure_run(
        self, config: RunConfig, name: str, langs: list[str], spec: dict[str, Any] | None = None
    ) -> str:
        """Create the run, or add languages to it; returns its id.

        ``spec`` is the full model spec (minus anything secret) stored beside the config.
        """
        run_id = config.run_id
        with self.write():
            existing = self._run_row(run_id)
            known = json.loads(existing["langs"]) if existing else []
            merged = sorted(set(known) | set(langs))
            self.db.table("runs").upsert(
                {
                    "id": run_id,
                    "name": name,
                    "kind": config.kind,
                    "config": json.dumps(asdict(config), sort_keys=True),
                    "langs": json.dumps(merged),
                    "created": existing["created"] if existing else now(),
                    "updated": now(),
                    "spec": json.dumps(spec, sort_keys=True) if spec else None,
                    "dataset_sha256": config.dataset_sha256,
                },
                pk="id",
            )
        return run_id

    def _run_row(self, run_id: str) -> dict[str, Any] | None:
        found = self.rows("select * from runs where id = ?", [run_id])
        return found[0] if found else None

    def run_config(self, run_id: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """A run's stored configuration and model spec (spec None for 0.1.0 runs)."""
        row = self._run_row(run_id)
        if row is None:
            return None
        return json.loads(row["config"]), json.loads(row["spec"]) if row["spec"] else None

    def finished(self, run_id: str) -> set[tuple[str, str, str]]:
        """(conv_id, lang, context_hash) of responses that succeeded: what a rerun skips."""
        rows = self.rows(
            "select conv_id, lang, context_hash from responses where run_id = ? and error is null",
            [run_id],
        )
        return {(r["conv_id"], r["lang"], r["context_hash"]) for r in rows}

    def raw_answers(self, run_id: str) -> dict[tuple[str, str, str], dict[str, Any]]:
        """A run's successful raw answers by (conv_id, lang, context_hash): what a run that
        only reads them another way (post-processing, emotion reader) starts from."""
        rows = self.rows(
            """select conv_id, lang, context_hash, raw, emotion_raw, latency_s, prompt_tokens,
                      completion_tokens from responses
               where run_id = ? and error is null and raw is not null""",
            [run_id],
        )
        return {(r["conv_id"], r["lang"], r["context_hash"]): r for r in rows}

    def save_response(
        self, record: ResponseRecord, score: EmotionScore | None, gold: frozenset[str] | None
    ) -> str:
        """Store one response and its emotion score, in one transaction, and let its claim
        go. A stored answer is never replaced: a failure stored earlier gives way to an
        answer, but an answer already there (another process's) stays as it is."""
        row = asdict(record)
        for key in ("prompt", "context", "predicted", "unknown_labels", "parse_notes"):
            row[key] = json.dumps(list(row[key]), ensure_ascii=False)
        row["id"] = record.response_id
        row["created"] = now()
        with self.write():
            self.db.execute("delete from response_claims where response_id = ?", [row["id"]])
            if self.rows("select 1 from responses where id = ? and error is null", [row["id"]]):
                return str(row["id"])
            self.db.table("responses").upsert(row, pk="id")
            scores = self.db.table("emotion_scores")
            scores.delete_where("response_id = ?", [row["id"]])
            if score is not None and gold is not None:
                scores.insert(
                    {
                        "response_id": row["id"],
                        "gold": json.dumps(sorted(gold)),
                        **asdict(score),
                        "hit": int(score.hit),
                        "given": int(score.given),
                    },
                )
            self.db.table("runs").update(record.run_id, {"updated": now()})
        return str(row["id"])

    def runs(self) -> pd.DataFrame:
        """One row per run and language: counts, errors, emotion-recognition figures."""
        return self.frame(
            """
            select r.id as run_id, r.name, r.kind, json_extract(r.config, '$.protocol') as protocol,
                   json_extract(r.config, '$.provenance') as provenance,
                   coalesce(json_extract(r.config, '$.postprocess'), 'none') as postprocess,
                   coalesce(json_extract(r.config, '$.family'), 'open') as family,
                   coalesce(json_extract(r.config, '$.commas'), 'decoded') as commas,
                   coalesce(json_extract(r.config, '$.emotion_reader'), 'extended')
                     as emotion_reader,
                   s.lang,
                   count(s.id) as responses, sum(s.error is not null) as errors,
                   sum(e.given = 0) as no_label,
                   avg(e.hit) as accuracy, avg(e.f1) as f1,
                   avg(case when e.given then e.hit end) as accuracy_answered,
                   avg(case when e.given then e.f1 end) as f1_answered,
                   avg(case when e.given then e.jaccard end) as jaccard,
                   avg(s.latency_s) as mean_latency_s, r.dataset_sha256, r.updated
            from runs r left join responses s on s.run_id = r.id
            left join emotion_scores e on e.response_id = s.id
            group by r.id, s.lang order by r.updated desc, s.lang
            """
        )

    def run_table(self, kind: str | None = None) -> pd.DataFrame:
        """One row per run: id, model, provenance, protocol, reference, dataset, config."""
        return self.frame(
            """select id as run_id, name, kind, json_extract(config, '$.model_name') as model,
                      json_extract(config, '$.provenance') as provenance,
                      json_extract(config, '$.protocol') as protocol,
                      coalesce(json_extract(config, '$.prompt_set'), 'native') as prompt_set,
                      json_extract(config, '$.backend') = 'human' as reference,
                      coalesce(dataset_sha256, json_extract(config, '$.dataset_sha256'))
                        as dataset_sha256,
                      config, spec, langs, created, updated
               from runs where (? is null or kind = ?) order by created""",
            [kind, kind],
        )

    def run_facts(self) -> list[dict[str, Any]]:
        """What tells runs apart, one row per run, oldest first: model name, protocol,
        prompt set, languages answered, dialogues answered, temperature, created."""
        return self.rows(
            """select r.id as run_id, r.name, json_extract(r.config, '$.protocol') as protocol,
                      coalesce(json_extract(r.config, '$.prompt_set'), 'native') as prompt_set,
                      json_extract(r.config, '$.prompt_version') as prompt_version,
                      json_extract(r.config, '$.temperature') as temperature,
                      json_extract(r.config, '$.turns') as turns,
                      json_extract(r.config, '$.speaker') as speaker,
                      json_extract(r.config, '$.oracle') as oracle,
                      coalesce(json_extract(r.config, '$.postprocess'), 'none') as postprocess,
                      coalesce(json_extract(r.config, '$.commas'), 'decoded') as commas,
                      coalesce(json_extract(r.config, '$.emotion_reader'), 'extended')
                        as emotion_reader,
                      r.langs, r.created, count(distinct s.conv_id) as dialogues,
                      group_concat(distinct s.lang) as answered_langs
               from runs r left join responses s on s.run_id = r.id and s.error is null
               group by r.id order by r.created, r.id"""
        )

    def responses(self, run_id: str) -> pd.DataFrame:
        """Every response of a run with its emotion score (label lists as "a, b" text)."""
        frame = self.frame(
            """
            select s.*, e.gold, e.hit, e.precision, e.recall, e.f1, e.jaccard
            from responses s left join emotion_scores e on e.response_id = s.id
            where s.run_id = ? order by s.conv_id, s.lang, s.turn
            """,
            [run_id],
        )
        for column in ("predicted", "gold", "unknown_labels", "parse_notes"):
            if column in frame:
                frame[column] = frame[column].map(
                    lambda text: ", ".join(json.loads(text)) if isinstance(text, str) else ""
                )
        return frame

    def answered(
        self, run_ids: Sequence[str], langs: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Successful responses (id, run_id, conv_id, lang, context, text) of some runs."""
        if not run_ids:
            return []
        marks = ",".join("?" * len(run_ids))
        chosen = list(langs) if langs is not None else ["ko", "en"]
        lang_marks = ",".join("?" * len(chosen)) or "''"
        return self.rows(
            f"""select id, run_id, conv_id, lang, context, text from responses
                where run_id in ({marks}) and lang in ({lang_marks}) and error is null
                and text is not null and text != '' order by conv_id, lang, run_id""",
            [*run_ids, *chosen],
        )

    def response_texts(self, response_ids: Sequence[str]) -> dict[str, str]:
        """id -> stored reply text."""
        if not response_ids:
            return {}
        marks = ",".join("?" * len(response_ids))
        rows = self.rows(f"select id, text from responses where id in ({marks})", response_ids)
        return {r["id"]: r["text"] or "" for r in rows}

    def response_places(self, response_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """id -> (run_id, conv_id): where a response sits, for people to find it."""
        if not response_ids:
            return {}
        marks = ",".join("?" * len(response_ids))
        rows = self.rows(
            f"select id, run_id, conv_id from responses where id in ({marks})", response_ids
        )
        return {r["id"]: (r["run_id"], r["conv_id"]) for r in rows}

    def response_lengths(self) -> pd.Series:
        """Characters per stored response (the length baseline of agreement)."""
        rows = self.rows("select id, length(coalesce(text, '')) as n from responses")
        return pd.Series({r["id"]: r["n"] for r in rows}, dtype=float)

    def has_run(self, run_id: str) -> bool:
        """Whether a run with this id is stored."""
        return self._run_row(run_id) is not None

    def demo_runs(self) -> pd.DataFrame:
        """Runs with at least one stored answer: id, model, provenance, protocol, updated."""
        return self.frame(
            """select r.id as run_id, json_extract(r.config, '$.model_name') as model,
                  json_extract(r.config, '$.provenance') as provenance,
                  json_extract(r.config, '$.protocol') as protocol,
                  json_extract(r.config, '$.backend') = 'human' as reference, r.updated
               from runs r where r.kind != 'episodes'
                 and exists (select 1 from responses s where s.run_id = r.id
                             and s.error is null)
               order by r.updated desc"""
        )

    def shared_dialogues(self, run_ids: Sequence[str]) -> list[str]:
        """conv_ids every run answered in both languages."""
        marks = ",".join("?" * len(run_ids))
        rows = self.rows(
            f"""select conv_id from responses where run_id in ({marks}) and error is null
                group by conv_id having count(distinct run_id || lang) = ?""",
            [*run_ids, 2 * len(run_ids)],
        )
        return sorted(r["conv_id"] for r in rows)

    def stored_answers(self, run_ids: Sequence[str], conv_id: str) -> dict[tuple[str, str], str]:
        """(run_id, lang) -> the stored reply text."""
        marks = ",".join("?" * len(run_ids))
        rows = self.rows(
            f"select run_id, lang, text from responses where run_id in ({marks}) "
            "and conv_id = ? and error is null",
            [*run_ids, conv_id],
        )
        return {(r["run_id"], r["lang"]): r["text"] for r in rows}

    def stored_context(self, run_id: str, conv_id: str, lang: str) -> list[tuple[str, str]]:
        """The transcript a run's model answered for one dialogue and language."""
        rows = self.rows(
            "select context from responses where run_id = ? and conv_id = ? and lang = ? "
            "and error is null limit 1",
            [run_id, conv_id, lang],
        )
        if not rows:
            return []
        return [(str(role), str(text)) for role, text in json.loads(rows[0]["context"] or "[]")]

    def count(self, table: str) -> int:
        """Rows in a table (for checks and tests)."""
        with self._lock:
            if table not in self.db.table_names():
                raise StoreError(f"no table {table!r}")
            return int(self.db.execute(f"select count(*) from [{table}]").fetchone()[0])

    def emotion_values(self) -> pd.DataFrame:
        """Emotion recognition per response: hit for single runs, F1 for multi runs, and
        whether the answer named any label (``given``: an answer with none scores 0)."""
        return self.frame(
            """select s.run_id, s.conv_id, s.lang, case json_extract(r.config, '$.protocol')
                      when 'multi' then e.f1 else e.hit end as value,
                      coalesce(e.given, 1) as given
               from emotion_scores e join responses s on s.id = e.response_id
               join runs r on r.id = s.run_id"""
        )

    def journal_mode(self) -> str:
        """The database's journal mode (``wal`` once opened here)."""
        return str(self.db.execute("pragma journal_mode").fetchone()[0])

    def record_call(self, account: str, model: str, at: float) -> None:
        """Count one paid model call by an account (for its rate limit)."""
        with self.write():
            self.db.execute(
                "insert into model_calls (account, model, at) values (?,?,?)", [account, model, at]
            )

    def calls_since(self, account: str, since: float) -> int:
        """Paid model calls the account made since a moment."""
        rows = self.rows(
            "select count(*) as n from model_calls where account = ? and at >= ?", [account, since]
        )
        return int(rows[0]["n"])
