"""Human rating: studies, blind assignment with overlap, and ratings on the five dimensions.

A study snapshots the responses to rate (context and text, never the model name) plus
attention checks. Assignment hands each rater the least-rated item they have not seen,
in their languages, in an order shuffled per rater by a seed (reproducible), until every
item has ``overlap`` raters; work left open longer than the timeout goes back to the pool.
Every write is one BEGIN IMMEDIATE transaction, so many raters can save at once.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from koed_core.dataset import Dataset
from koed_core.errors import KoedError
from koed_core.paths import DATA_DIR
from koed_core.protocol import build_task
from koed_core.rubric import SCALE, codes, rubric_version
from koed_core.storage import Store, now, short_hash

ATTENTION_FILE = DATA_DIR / "attention.json"


class RatingError(KoedError):
    """A rating action that cannot be done (bad score, not your item, no such study)."""


@dataclass(frozen=True)
class StudyConfig:
    """What an admin decides when building a study."""

    name: str
    run_ids: tuple[str, ...]
    langs: tuple[str, ...] = ("ko", "en")
    overlap: int = 3
    attention_checks: int = 2
    quota: int | None = None
    """Most items one rater rates in this study (None: no limit)."""
    timeout_minutes: int = 30
    seed: int = 0


@dataclass(frozen=True)
class RaterProfile:
    """Onboarding answers: stored for agreement breakdowns, exported only in aggregate."""

    username: str
    languages: tuple[str, ...]
    native_language: str
    years_korea: float
    years_english: float


@dataclass(frozen=True)
class RatingItem:
    """What a rater sees: the blind payload. No model, run, judge or other rater in it."""

    assignment_id: str
    study_id: int
    lang: str
    context: tuple[tuple[str, str], ...]
    response: str


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _order_key(seed: int, username: str, item_id: str) -> str:
    """Per-rater shuffle that is the same every time for the same seed."""
    return hashlib.sha256(f"{seed}:{username}:{item_id}".encode()).hexdigest()


class RatingStore:
    """Studies, assignments and ratings in the project database."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        with store.write():
            self._schema()

    def _schema(self) -> None:
        self.db.executescript(
            """
            create table if not exists raters (
                username text primary key, languages text, native_language text,
                years_korea real, years_english real, calibrated text, created text);
            create table if not exists studies (
                id integer primary key, name text, config text, rubric_version text,
                created text);
            create table if not exists study_items (
                id text primary key, study_id integer, response_id text, kind text,
                conv_id text, lang text, context text, response text, created text);
            create index if not exists study_items_study on study_items(study_id, lang);
            create table if not exists assignments (
                id text primary key, study_id integer, item_id text, username text,
                status text, assigned_at text, finished_at text, note text,
                unique(item_id, username));
            create index if not exists assignments_user on assignments(study_id, username);
            create table if not exists ratings (
                id text primary key, study_id integer, item_id text, response_key text,
                username text, dimension text, score integer, comment text,
                time_spent_s real, rubric_version text, created text, updated text,
                unique(response_key, username, dimension));
            """
        )

    # Raters -----------------------------------------------------------------------------

    def save_profile(self, profile: RaterProfile) -> None:
        """Store or update onboarding answers."""
        if not profile.languages or set(profile.languages) - {"ko", "en"}:
            raise RatingError("choose the languages you rate in: ko, en or both")
        row = {**asdict(profile), "languages": json.dumps(list(profile.languages))}
        with self.store.write():
            self.db.execute(
                "insert into raters (username, languages, native_language, years_korea, "
                "years_english, created) values (:username, :languages, :native_language, "
                ":years_korea, :years_english, :created) on conflict(username) do update set "
                "languages=excluded.languages, native_language=excluded.native_language, "
                "years_korea=excluded.years_korea, years_english=excluded.years_english",
                {**row, "created": now()},
            )

    def profile(self, username: str) -> RaterProfile | None:
        """The rater's onboarding answers, or None before onboarding."""
        row = self.db.execute(
            "select username, languages, native_language, years_korea, years_english "
            "from raters where username = ?",
            [username],
        ).fetchone()
        if row is None:
            return None
        return RaterProfile(row[0], tuple(json.loads(row[1])), row[2], row[3], row[4])

    def mark_calibrated(self, username: str) -> None:
        """Record that the rater finished calibration."""
        with self.store.write():
            self.db.execute(
                "update raters set calibrated = ? where username = ?", [now(), username]
            )

    def calibrated(self, username: str) -> bool:
        """Whether the rater may rate live items."""
        row = self.db.execute("select calibrated from raters where username = ?", [username])
        found = row.fetchone()
        return bool(found and found[0])

    # Studies ----------------------------------------------------------------------------

    def create_study(self, config: StudyConfig, dataset: Dataset) -> int:
        """Snapshot the runs' successful responses (and attention checks) into a study.

        Raises:
            RatingError: no response of the chosen runs and languages to rate.
        """
        if config.overlap < 1:
            raise RatingError("overlap must be at least 1")
        marks = ",".join("?" * len(config.run_ids))
        langs = ",".join("?" * len(config.langs))
        rows = self.db.execute(
            f"select id, conv_id, lang, context, text from responses where run_id in ({marks}) "
            f"and lang in ({langs}) and error is null and text is not null and text != ''",
            [*config.run_ids, *config.langs],
        ).fetchall()
        if not rows:
            raise RatingError("the chosen runs have no successful responses in these languages")
        with self.store.write():
            cursor = self.db.execute(
                "insert into studies (name, config, rubric_version, created) values (?,?,?,?)",
                [config.name, json.dumps(asdict(config)), rubric_version(), now()],
            )
            study_id = int(cursor.lastrowid or 0)
            for response_id, conv_id, lang, context, text in rows:
                self._add_item(
                    study_id,
                    response_id,
                    "response",
                    conv_id,
                    lang,
                    json.loads(context or "[]"),
                    text,
                )
            for kind, conv_id, lang, context, text in _attention_items(config, dataset):
                self._add_item(study_id, None, kind, conv_id, lang, context, text)
        return study_id

    def _add_item(
        self,
        study_id: int,
        response_id: str | None,
        kind: str,
        conv_id: str,
        lang: str,
        context: Sequence[Sequence[str]],
        text: str,
    ) -> None:
        item_id = short_hash(study_id, response_id or (kind, conv_id, lang, text))
        self.db.execute(
            "insert or ignore into study_items values (?,?,?,?,?,?,?,?,?)",
            [
                item_id,
                study_id,
                response_id,
                kind,
                conv_id,
                lang,
                json.dumps([list(t) for t in context], ensure_ascii=False),
                text,
                now(),
            ],
        )

    def studies(self) -> list[dict[str, Any]]:
        """Every study with its configuration."""
        rows = self.db.execute("select id, name, config, created from studies order by id")
        return [
            {"id": r[0], "name": r[1], **json.loads(r[2]), "created": r[3]} for r in rows.fetchall()
        ]

    def config(self, study_id: int) -> StudyConfig:
        """One study's configuration.

        Raises:
            RatingError: no such study.
        """
        row = self.db.execute("select config from studies where id = ?", [study_id]).fetchone()
        if row is None:
            raise RatingError(f"no study {study_id}")
        raw = json.loads(row[0])
        return StudyConfig(
            **{**raw, "run_ids": tuple(raw["run_ids"]), "langs": tuple(raw["langs"])}
        )

    # Assignment -------------------------------------------------------------------------

    def next_item(
        self, study_id: int, username: str, at: datetime | None = None
    ) -> RatingItem | None:
        """The rater's open item, else a new one: least-rated first, per-rater shuffle.

        None when the quota is reached or nothing is left for this rater.
        """
        config = self.config(study_id)
        profile = self.profile(username)
        if profile is None:
            raise RatingError("finish onboarding before rating")
        moment = at or datetime.now(UTC)
        cutoff = _iso(moment - timedelta(minutes=config.timeout_minutes))
        with self.store.write():
            # Abandoned work goes back to the pool.
            self.db.execute(
                "delete from assignments where study_id = ? and status = 'assigned' "
                "and assigned_at < ?",
                [study_id, cutoff],
            )
            open_row = self.db.execute(
                "select id from assignments where study_id = ? and username = ? and "
                "status = 'assigned'",
                [study_id, username],
            ).fetchone()
            if open_row is not None:
                return self._item(open_row[0])
            if config.quota is not None and self.done(study_id, username) >= config.quota:
                return None
            chosen = self._choose(config, study_id, username, profile.languages)
            if chosen is None:
                return None
            assignment_id = short_hash(chosen, username)
            self.db.execute(
                "insert into assignments (id, study_id, item_id, username, status, assigned_at) "
                "values (?,?,?,?, 'assigned', ?)",
                [assignment_id, study_id, chosen, username, _iso(moment)],
            )
        return self._item(assignment_id)

    def _choose(
        self, config: StudyConfig, study_id: int, username: str, languages: Sequence[str]
    ) -> str | None:
        marks = ",".join("?" * len(languages))
        rows = self.db.execute(
            f"""select i.id, i.kind, (select count(*) from assignments a
                   where a.item_id = i.id and a.status in ('assigned', 'done')) as taken
                from study_items i where i.study_id = ? and i.lang in ({marks})
                and not exists (select 1 from assignments a
                                where a.item_id = i.id and a.username = ?)""",
            [study_id, *languages, username],
        ).fetchall()
        # Attention checks are for everyone; other items stop at `overlap` raters.
        open_items = [r for r in rows if r[1] == "attention" or r[2] < config.overlap]
        if not open_items:
            return None

        def rank(row: Any) -> tuple[int, str]:
            taken = 0 if row[1] == "attention" else int(row[2])
            return taken, _order_key(config.seed, username, row[0])

        return str(min(open_items, key=rank)[0])

    def _item(self, assignment_id: str) -> RatingItem:
        row = self.db.execute(
            "select a.id, a.study_id, i.lang, i.context, i.response from assignments a "
            "join study_items i on i.id = a.item_id where a.id = ?",
            [assignment_id],
        ).fetchone()
        if row is None:
            raise RatingError(
                "this item is no longer assigned to you (it timed out); take the next"
            )
        context = tuple((str(role), str(text)) for role, text in json.loads(row[3]))
        return RatingItem(row[0], int(row[1]), row[2], context, row[4])

    def done(self, study_id: int, username: str) -> int:
        """Items the rater finished (rated; skipped and flagged items do not count)."""
        row = self.db.execute(
            "select count(*) from assignments where study_id = ? and username = ? "
            "and status = 'done'",
            [study_id, username],
        ).fetchone()
        return int(row[0])

    def workload(self, study_id: int, username: str) -> int:
        """How many items this rater can get at most (the m of "n of m")."""
        config = self.config(study_id)
        profile = self.profile(username)
        langs = list(profile.languages) if profile else []
        marks = ",".join("?" * len(langs)) or "''"
        total = self.db.execute(
            f"select count(*) from study_items where study_id = ? and lang in ({marks})",
            [study_id, *langs],
        ).fetchone()[0]
        return int(min(total, config.quota) if config.quota is not None else total)

    # Ratings ----------------------------------------------------------------------------

    def save_rating(
        self,
        assignment_id: str,
        username: str,
        scores: dict[str, int],
        comment: str = "",
        time_spent_s: float | None = None,
    ) -> None:
        """Store all five scores of one item; saving again updates them.

        Raises:
            RatingError: a dimension missing or a score outside 1-5, or not the rater's item.
        """
        missing = [code for code in codes() if code not in scores]
        if missing:
            raise RatingError(f"score every dimension; missing: {', '.join(missing)}")
        bad = {k: v for k, v in scores.items() if v not in SCALE or k not in codes()}
        if bad:
            raise RatingError(f"scores must be 1-5 on {', '.join(codes())}; got {bad}")
        with self.store.write():
            row = self.db.execute(
                "select a.item_id, a.study_id, coalesce(i.response_id, i.id) from assignments a "
                "join study_items i on i.id = a.item_id where a.id = ? and a.username = ?",
                [assignment_id, username],
            ).fetchone()
            if row is None:
                raise RatingError("this item is not assigned to you (it may have timed out)")
            item_id, study_id, response_key = row
            stamp = now()
            for code in codes():
                self.db.execute(
                    """insert into ratings (id, study_id, item_id, response_key, username,
                       dimension, score, comment, time_spent_s, rubric_version, created, updated)
                       values (?,?,?,?,?,?,?,?,?,?,?,?)
                       on conflict(response_key, username, dimension) do update set
                       score=excluded.score, comment=excluded.comment,
                       time_spent_s=coalesce(excluded.time_spent_s, ratings.time_spent_s),
                       updated=excluded.updated""",
                    [
                        short_hash(response_key, username, code),
                        study_id,
                        item_id,
                        response_key,
                        username,
                        code,
                        scores[code],
                        comment.strip(),
                        time_spent_s,
                        rubric_version(),
                        stamp,
                        stamp,
                    ],
                )
            self.db.execute(
                "update assignments set status = 'done', finished_at = ? where id = ?",
                [stamp, assignment_id],
            )

    def set_aside(self, assignment_id: str, username: str, status: str, note: str = "") -> None:
        """Skip an item, or flag it as broken or offensive; the rater is not offered it again."""
        if status not in ("skipped", "flagged"):
            raise RatingError("status must be skipped or flagged")
        with self.store.write():
            self.db.execute(
                "update assignments set status = ?, note = ?, finished_at = ? "
                "where id = ? and username = ?",
                [status, note, now(), assignment_id, username],
            )

    def last_rated(
        self, study_id: int, username: str
    ) -> tuple[RatingItem, dict[str, int], str] | None:
        """The rater's most recent rating, to correct it."""
        row = self.db.execute(
            "select id from assignments where study_id = ? and username = ? and status = 'done' "
            "order by finished_at desc, rowid desc limit 1",
            [study_id, username],
        ).fetchone()
        if row is None:
            return None
        item = self._item(row[0])
        rows = self.db.execute(
            "select r.dimension, r.score, r.comment from ratings r join assignments a "
            "on a.item_id = r.item_id and a.username = r.username where a.id = ?",
            [row[0]],
        ).fetchall()
        return item, {d: int(s) for d, s, _ in rows}, rows[0][2] if rows else ""


def _attention_items(
    config: StudyConfig, dataset: Dataset
) -> list[tuple[str, str, str, list[list[str]], str]]:
    """Deliberately unempathetic replies to real contexts, chosen by the study's seed."""
    if config.attention_checks <= 0 or not dataset.dialogues:
        return []
    raw = json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))
    chooser = random.Random(config.seed)
    items = []
    for lang in config.langs:
        replies = raw["replies"][lang]
        for n in range(config.attention_checks):
            dialogue = chooser.choice(dataset.dialogues)
            task = build_task(dialogue, lang)  # type: ignore[arg-type]
            context = [[t.role, t.text] for t in task.turns]
            items.append(("attention", dialogue.conv_id, lang, context, replies[n % len(replies)]))
    return items


def attention_limits() -> dict[str, int]:
    """The highest score a careful rater gives an attention check, per dimension."""
    return dict(json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))["max_score"])
