"""Raters, studies, study items, assignments and ratings: every query the rating flow,
the study dashboard and agreement make. A rating belongs to one study; the same rater may
rate the same response in two studies and both ratings are kept."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from koed_core.db.store import Store
from koed_core.db.types import CandidateItem, RaterProfile, RatingItem, short_hash
from koed_core.dialogues.records import decode_ed_text
from koed_core.dialogues.variants import cells_in

ITEM_COLUMNS = (
    "id, study_id, response_id, kind, conv_id, lang, context, response, created, instruction, "
    "instructed_score"
)

WORK_KIND = "(case i.kind when 'episode' then 'response' else i.kind end)"
"""An item's kind as a rater's workload counts it: a whole episode is work like a
response (attention checks are not), so quotas, batches and "n of m" hold for both."""


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values)) or "''"


class Ratings:
    """Rating-side tables of the project database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # Raters -----------------------------------------------------------------------------

    def save_profile(self, profile: RaterProfile, created: str) -> None:
        """Insert or update onboarding answers (calibration is kept)."""
        with self.store.write():
            self.store.db.execute(
                "insert into raters (username, languages, native_language, years_korea, "
                "years_english, created) values (?,?,?,?,?,?) on conflict(username) do update "
                "set languages=excluded.languages, native_language=excluded.native_language, "
                "years_korea=excluded.years_korea, years_english=excluded.years_english",
                [
                    profile.username,
                    json.dumps(list(profile.languages)),
                    profile.native_language,
                    profile.years_korea,
                    profile.years_english,
                    created,
                ],
            )

    def profile(self, username: str) -> RaterProfile | None:
        """The rater's onboarding answers, or None before onboarding."""
        rows = self.store.rows("select * from raters where username = ?", [username])
        if not rows:
            return None
        r = rows[0]
        return RaterProfile(
            r["username"],
            tuple(json.loads(r["languages"])),
            r["native_language"],
            r["years_korea"],
            r["years_english"],
        )

    def mark_calibrated(self, username: str, stamp: str) -> None:
        """Record that the rater finished calibration."""
        with self.store.write():
            self.store.db.execute(
                "update raters set calibrated = ? where username = ?", [stamp, username]
            )

    def calibrated(self, username: str) -> bool:
        """Whether the rater may rate live items."""
        rows = self.store.rows("select calibrated from raters where username = ?", [username])
        return bool(rows and rows[0]["calibrated"])

    def raters(self) -> pd.DataFrame:
        """Every rater profile (aggregated before anything leaves the app)."""
        return self.store.frame("select * from raters")

    def native_languages(self) -> dict[str, str]:
        """username -> native language."""
        return {
            r["username"]: r["native_language"]
            for r in self.store.rows("select username, native_language from raters")
        }

    # Studies ----------------------------------------------------------------------------

    def insert_study(
        self, name: str, config: dict[str, Any], rubric_version: str, created: str
    ) -> int:
        """A new study row (inside the caller's transaction); returns its id."""
        cursor = self.store.db.execute(
            "insert into studies (name, config, rubric_version, created) values (?,?,?,?)",
            [name, json.dumps(config), rubric_version, created],
        )
        return int(cursor.lastrowid or 0)

    def add_item(self, row: dict[str, Any]) -> None:
        """One study item (inside the caller's transaction); the same item twice is ignored."""
        self.store.db.execute(
            f"insert or ignore into study_items ({ITEM_COLUMNS}) values "
            "(:id, :study_id, :response_id, :kind, :conv_id, :lang, :context, :response, "
            ":created, :instruction, :instructed_score)",
            row,
        )

    def studies(self) -> list[dict[str, Any]]:
        """Every study: id, name, config (parsed), rubric version, created."""
        return [
            {**r, "config": json.loads(r["config"])}
            for r in self.store.rows(
                "select id, name, config, rubric_version, created, closed from studies order by id"
            )
        ]

    def study(self, study_id: int) -> dict[str, Any] | None:
        """One study row with its config parsed, or None."""
        rows = self.store.rows("select * from studies where id = ?", [study_id])
        return {**rows[0], "config": json.loads(rows[0]["config"])} if rows else None

    def items_of_kind(self, study_id: int, kind: str) -> list[dict[str, Any]]:
        """A study's items of one kind (``response``, ``attention``, ``episode``) in the
        order they were added, with their texts: context (JSON), response, and an
        attention check's instruction and instructed score."""
        return self.store.rows(
            "select conv_id, lang, context, response, instruction, instructed_score from "
            "study_items where study_id = ? and kind = ? order by id",
            [study_id, kind],
        )

    def update_config(self, study_id: int, config: dict[str, Any]) -> None:
        """Store a study's configuration again (inside the caller's transaction): its
        sample grew by a batch."""
        self.store.db.execute(
            "update studies set config = ? where id = ?", [json.dumps(config), study_id]
        )

    def close_study(self, study_id: int, stamp: str) -> None:
        """Close a study: no more assignments, and its results may be published."""
        with self.store.write():
            self.store.db.execute(
                "update studies set closed = coalesce(closed, ?) where id = ?", [stamp, study_id]
            )

    def runs_under_open_studies(self) -> set[str]:
        """Runs with a response in a study still being rated (blind until it closes)."""
        rows = self.store.rows(
            """select distinct s.run_id from study_items i join studies st on st.id = i.study_id
               join responses s on s.id = i.response_id where st.closed is null"""
        )
        return {r["run_id"] for r in rows}

    def studies_with_ratings(self) -> list[dict[str, Any]]:
        """Studies that have ratings of real responses, most recently rated first."""
        return self.store.rows(
            """select st.id, st.name, st.rubric_version, st.closed, count(*) as ratings,
                      count(distinct r.username) as raters, max(r.updated) as last
               from ratings r join studies st on st.id = r.study_id
               join study_items i on i.id = r.item_id
               where i.kind = 'response' group by st.id order by last desc, st.id desc"""
        )

    # Assignment -------------------------------------------------------------------------

    def release_abandoned(self, study_id: int, cutoff: str) -> None:
        """Assignments open since before ``cutoff`` go back to the pool."""
        self.store.db.execute(
            "delete from assignments where study_id = ? and status = 'assigned' "
            "and assigned_at < ?",
            [study_id, cutoff],
        )

    def open_assignment(self, study_id: int, username: str) -> str | None:
        """The rater's assignment in progress, if any."""
        rows = self.store.rows(
            "select id from assignments where study_id = ? and username = ? and "
            "status = 'assigned'",
            [study_id, username],
        )
        return str(rows[0]["id"]) if rows else None

    def open_kind(self, study_id: int, username: str) -> str | None:
        """The kind (response, attention) of the rater's assignment in progress, if any."""
        rows = self.store.rows(
            f"select {WORK_KIND} as kind from assignments a join study_items i "
            "on i.id = a.item_id where a.study_id = ? and a.username = ? "
            "and a.status = 'assigned'",
            [study_id, username],
        )
        return str(rows[0]["kind"]) if rows else None

    def kind_done(self, study_id: int, username: str, kind: str) -> int:
        """How many items of this kind the rater finished as done."""
        rows = self.store.rows(
            "select count(*) as n from assignments a join study_items i on i.id = a.item_id "
            f"where a.study_id = ? and a.username = ? and a.status = 'done' and {WORK_KIND} = ?",
            [study_id, username, kind],
        )
        return int(rows[0]["n"])

    def status_count(self, study_id: int, username: str, status: str) -> int:
        """How many of the rater's assignments have this status."""
        rows = self.store.rows(
            "select count(*) as n from assignments where study_id = ? and username = ? "
            "and status = ?",
            [study_id, username, status],
        )
        return int(rows[0]["n"])

    def candidates(
        self, study_id: int, username: str, languages: Sequence[str]
    ) -> list[CandidateItem]:
        """Items in the rater's languages the rater never had, with raters holding each.
        A translated variant's items are in the language they are written in: a Korean
        rater's include ``ko-from-en``, an English rater's ``en-from-ko``."""
        languages = cells_in(languages)
        rows = self.store.rows(
            f"""select i.id, {WORK_KIND} as kind, (select count(*) from assignments a
                   where a.item_id = i.id and a.status in ('assigned', 'done')) as taken,
                   i.conv_id, i.lang
                from study_items i where i.study_id = ? and i.lang in ({_marks(languages)})
                and not exists (select 1 from assignments a
                                where a.item_id = i.id and a.username = ?)""",
            [study_id, *languages, username],
        )
        return [
            CandidateItem(r["id"], r["kind"], int(r["taken"]), r["conv_id"], r["lang"])
            for r in rows
        ]

    def seen(self, study_id: int, username: str, status: str | None = None) -> dict[str, set[str]]:
        """conv_id -> the languages in which the rater was given one of its responses in
        this study (with ``status``: only assignments in that state)."""
        rows = self.store.rows(
            "select distinct i.conv_id, i.lang from assignments a join study_items i "
            "on i.id = a.item_id where a.study_id = ? and a.username = ? "
            "and i.kind != 'attention' and (? is null or a.status = ?)",
            [study_id, username, status, status],
        )
        found: dict[str, set[str]] = {}
        for row in rows:
            found.setdefault(row["conv_id"], set()).add(row["lang"])
        return found

    def assign(self, study_id: int, item_id: str, username: str, at: str) -> str:
        """Give one item to one rater (inside the caller's transaction)."""
        assignment_id = short_hash(item_id, username)
        self.store.db.execute(
            "insert into assignments (id, study_id, item_id, username, status, assigned_at) "
            "values (?,?,?,?, 'assigned', ?)",
            [assignment_id, study_id, item_id, username, at],
        )
        return assignment_id

    def item(self, assignment_id: str) -> RatingItem | None:
        """The blind payload of an assignment, or None when it is gone."""
        rows = self.store.rows(
            "select a.id, a.study_id, i.lang, i.context, i.response, i.instruction, "
            "i.instructed_score, i.kind from "
            "assignments a join study_items i on i.id = a.item_id where a.id = ?",
            [assignment_id],
        )
        if not rows:
            return None
        r = rows[0]
        # A person reads commas: a run that sent EmpatheticDialogues' "_comma_" to the model
        # (as the KoED authors did) keeps it for the judge, never for a rater.
        context = tuple(
            (str(role), decode_ed_text(str(text))) for role, text in json.loads(r["context"])
        )
        response = decode_ed_text(str(r["response"]))  # the human reference's own turn too
        told = r["instructed_score"]
        return RatingItem(
            r["id"],
            int(r["study_id"]),
            r["lang"],
            context,
            response,
            r["instruction"],
            int(told) if told is not None and r["instruction"] else None,
            str(r["kind"] or "response"),
        )

    def assignment_target(self, assignment_id: str, username: str) -> dict[str, Any] | None:
        """item_id, study_id and the rated response's key of the rater's assignment."""
        rows = self.store.rows(
            "select a.item_id, a.study_id, coalesce(i.response_id, i.id) as response_key, "
            "i.conv_id, i.lang from assignments a join study_items i on i.id = a.item_id "
            "where a.id = ? and a.username = ?",
            [assignment_id, username],
        )
        return rows[0] if rows else None

    def upsert_rating(self, row: dict[str, Any]) -> None:
        """One dimension's score (inside the caller's transaction); again updates it."""
        row = {
            "lang_position": None,
            **row,
            "id": short_hash(
                row["study_id"], row["response_key"], row["username"], row["dimension"]
            ),
        }
        self.store.db.execute(
            """insert into ratings (id, study_id, item_id, response_key, username, dimension,
                   score, comment, time_spent_s, rubric_version, created, updated,
                   lang_position)
               values (:id, :study_id, :item_id, :response_key, :username, :dimension, :score,
                   :comment, :time_spent_s, :rubric_version, :created, :updated,
                   :lang_position)
               on conflict(study_id, response_key, username, dimension) do update set
                   score=excluded.score, comment=excluded.comment,
                   time_spent_s=coalesce(excluded.time_spent_s, ratings.time_spent_s),
                   updated=excluded.updated""",
            row,
        )

    def finish(self, assignment_id: str, status: str, stamp: str, note: str | None = None) -> None:
        """Close an assignment as done, skipped or flagged (inside the caller's transaction)."""
        self.store.db.execute(
            "update assignments set status = ?, finished_at = ?, note = coalesce(?, note) "
            "where id = ?",
            [status, stamp, note, assignment_id],
        )

    def last_done(self, study_id: int, username: str) -> str | None:
        """The rater's most recently finished assignment in the study."""
        rows = self.store.rows(
            "select id from assignments where study_id = ? and username = ? and status = 'done' "
            "order by finished_at desc, rowid desc limit 1",
            [study_id, username],
        )
        return str(rows[0]["id"]) if rows else None

    def scores_of(self, assignment_id: str) -> list[dict[str, Any]]:
        """dimension, score, comment of one finished assignment, in this study only."""
        return self.store.rows(
            "select r.dimension, r.score, r.comment from ratings r join assignments a "
            "on a.item_id = r.item_id and a.username = r.username "
            "and a.study_id = r.study_id where a.id = ?",
            [assignment_id],
        )

    # Reports ----------------------------------------------------------------------------

    def ratings_frame(self, study_id: int) -> pd.DataFrame:
        """One row per (item, rater, dimension) with the item's kind and language."""
        return self.store.frame(
            """select r.item_id, r.response_key, r.username, r.dimension, r.score, r.comment,
                      r.time_spent_s, r.rubric_version, r.created, r.updated, i.kind, i.lang,
                      i.conv_id, i.response_id, i.instruction, i.instructed_score
               from ratings r join study_items i on i.id = r.item_id where r.study_id = ?""",
            [study_id],
        )

    def item_progress(self, study_id: int) -> pd.DataFrame:
        """Per item: raters done, in progress and set aside."""
        return self.store.frame(
            """select i.id as item_id, i.kind, i.lang, i.conv_id,
                      sum(a.status = 'done') as done, sum(a.status = 'assigned') as in_progress,
                      sum(a.status in ('skipped', 'flagged')) as set_aside
               from study_items i left join assignments a on a.item_id = i.id
               where i.study_id = ? group by i.id order by done, i.id""",
            [study_id],
        )

    def rater_counts(self, study_id: int) -> pd.DataFrame:
        """Per rater: items done, skipped and flagged."""
        return self.store.frame(
            """select username, sum(status = 'done') as done, sum(status = 'skipped') as skipped,
                      sum(status = 'flagged') as flagged
               from assignments where study_id = ? group by username order by username""",
            [study_id],
        )

    def export_rows(self, study_id: int) -> list[dict[str, Any]]:
        """Every rating of a study joined with its item, study and run configuration."""
        return self.store.rows(
            """select r.*, i.kind, i.lang, i.conv_id, i.response_id, s.run_id,
                      runs.config as run_config, st.name as study_name
               from ratings r join study_items i on i.id = r.item_id
               join studies st on st.id = r.study_id
               left join responses s on s.id = i.response_id
               left join runs on runs.id = s.run_id
               where r.study_id = ? order by r.item_id, r.username, r.dimension""",
            [study_id],
        )

    def long_scores(self, study_id: int) -> pd.DataFrame:
        """Ratings of real responses in one study: item (response id), rater, dimension,
        lang, score, run_id, conv_id. Attention checks are left out."""
        frame = self.store.frame(
            """select r.response_key as item, r.username as rater, r.dimension, i.lang,
                      r.score, s.run_id, i.conv_id
               from ratings r join study_items i on i.id = r.item_id
               join responses s on s.id = r.response_key
               where i.kind = 'response' and r.study_id = ?""",
            [study_id],
        )
        if frame.empty:
            return pd.DataFrame(
                columns=["item", "rater", "dimension", "lang", "score", "run_id", "conv_id"]
            )
        return frame

    def comments(self, study_id: int, response_id: str, dimension: str) -> list[str]:
        """Raters' non-empty comments on one response and dimension in one study."""
        rows = self.store.rows(
            "select comment from ratings where study_id = ? and response_key = ? and "
            "dimension = ? and comment != ''",
            [study_id, response_id, dimension],
        )
        return [r["comment"] for r in rows]

    def rubric_versions(self) -> list[dict[str, Any]]:
        """Per study: the rubric versions its ratings were given under, and how many."""
        return self.store.rows(
            """select study_id, rubric_version, count(*) as ratings from ratings
               group by study_id, rubric_version order by study_id"""
        )
