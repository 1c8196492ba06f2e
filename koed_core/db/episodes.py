"""Episodes: the simulated Speaker's turns, and each episode read back in order.

A Listener turn of an episode is a row of ``responses`` with its ``turn`` (so judges and
raters score it as any reply, with the episode so far as its context); the Speaker's
turns live in ``episode_turns``, every attempt, with the breaks of character found in it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from koed_core.db.judgments import _params, _where
from koed_core.db.store import Store
from koed_core.db.types import JudgeConfig, now, short_hash
from koed_core.dialogues.records import decode_ed_text

RUN_COLUMNS = [
    "run_id",
    "model",
    "provenance",
    "protocol",
    "prompt_set",
    "speaker",
    "turns",
    "reference",
    "dataset_sha256",
    "created",
]


@dataclass(frozen=True)
class SpeakerRecord:
    """One attempt at one Speaker turn of one episode."""

    run_id: str
    conv_id: str
    lang: str
    turn: int
    attempt: int
    raw: str | None
    text: str | None
    breaks: tuple[str, ...] = ()
    kept: bool = False
    """Whether the episode goes on from this attempt (a clean turn)."""
    ends: bool = False
    """The Speaker ended the conversation with it."""
    error: str | None = None
    error_kind: str | None = None
    prompt: tuple[dict[str, str], ...] = ()
    latency_s: float | None = None

    @property
    def key(self) -> str:
        return short_hash(self.run_id, self.conv_id, self.lang, self.turn, self.attempt)


class Episodes:
    """The ``episode_turns`` table and the episode views over ``responses``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def save_speaker(self, record: SpeakerRecord) -> SpeakerRecord | None:
        """Store one Speaker attempt, unless the episode has already gone on without it.

        Two jobs may play the same run (a job queued twice, a CLI run beside a worker), so
        this runs in one write transaction: when a kept attempt of this turn is stored (by
        whichever job), nothing is stored and None comes back; otherwise the attempt takes
        the next free attempt number of its turn, so it never replaces another job's row,
        and the record as stored comes back. A Listener turn then always follows the one
        Speaker line stored before it.
        """
        with self.store.write():
            taken = self.store.rows(
                """select max(attempt) as last, max(kept) as kept from episode_turns
                   where run_id = ? and conv_id = ? and lang = ? and turn = ?""",
                [record.run_id, record.conv_id, record.lang, record.turn],
            )[0]
            if taken["kept"]:
                return None
            if taken["last"] is not None and record.attempt <= int(taken["last"]):
                record = replace(record, attempt=int(taken["last"]) + 1)
            self._insert(record)
        return record

    def _insert(self, record: SpeakerRecord) -> None:
        row = {
            "id": record.key,
            "run_id": record.run_id,
            "conv_id": record.conv_id,
            "lang": record.lang,
            "turn": record.turn,
            "attempt": record.attempt,
            "raw": record.raw,
            "text": record.text,
            "breaks": json.dumps(list(record.breaks)),
            "kept": int(record.kept),
            "ends": int(record.ends),
            "error": record.error,
            "error_kind": record.error_kind,
            "prompt": json.dumps(list(record.prompt), ensure_ascii=False),
            "latency_s": record.latency_s,
            "created": now(),
        }
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        with self.store.write():  # plain SQL: sqlite-utils' upsert reads the schema each time
            self.store.db.execute(f"insert into episode_turns ({columns}) values ({marks})", row)
            self.store.db.execute(
                "update runs set updated = ? where id = ?", [row["created"], record.run_id]
            )

    def turn_taken(self, run_id: str, conv_id: str, lang: str, turn: int, role: str) -> bool:
        """Whether this turn of the episode is already stored (answered, or kept for the
        Speaker), by this job or another one playing the same run: the first one stored
        is the episode's, and a second job stops there instead of forking it."""
        if role == "listener":
            sql = """select 1 from responses where run_id = ? and conv_id = ? and lang = ?
                     and turn = ? and error is null limit 1"""
        else:
            sql = """select 1 from episode_turns where run_id = ? and conv_id = ? and lang = ?
                     and turn = ? and kept = 1 limit 1"""
        return bool(self.store.rows(sql, [run_id, conv_id, lang, turn]))

    def listener_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every Listener turn of a run's episodes (answers and failures), in turn order."""
        return self.store.rows(
            """select id, conv_id, lang, turn, text, raw, error, error_kind, context
               from responses where run_id = ? and turn is not null
               order by conv_id, lang, turn""",
            [run_id],
        )

    def speaker_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every Speaker attempt of a run's episodes, in turn and attempt order."""
        rows = self.store.rows(
            """select conv_id, lang, turn, attempt, raw, text, breaks, kept, ends, error,
                      error_kind, latency_s from episode_turns where run_id = ?
               order by conv_id, lang, turn, attempt""",
            [run_id],
        )
        for row in rows:
            row["breaks"] = tuple(json.loads(row["breaks"] or "[]"))
        return rows

    def runs(self) -> pd.DataFrame:
        """Episode runs: id, model, provenance, protocol, speaker, turns, dataset."""
        frame = self.store.frame(
            """select id as run_id, json_extract(config, '$.model_name') as model,
                      json_extract(config, '$.provenance') as provenance,
                      json_extract(config, '$.protocol') as protocol,
                      coalesce(json_extract(config, '$.prompt_set'), 'native') as prompt_set,
                      json_extract(config, '$.speaker') as speaker,
                      json_extract(config, '$.turns') as turns,
                      0 as reference, dataset_sha256, created
               from runs where kind = 'episodes' order by created"""
        )
        return frame if not frame.empty else pd.DataFrame(columns=RUN_COLUMNS)

    def turn_scores(
        self, config: JudgeConfig, run_ids: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Judge scores of episode Listener turns under one configuration: the mean over
        samples per (response, dimension), with the turn."""
        where, params = "", _params(config)
        if run_ids is not None:
            marks = ",".join("?" * len(run_ids)) or "''"
            where = f"and s.run_id in ({marks})"
            params += list(run_ids)
        return self.store.frame(
            f"""select s.run_id, s.conv_id, s.lang, s.turn, j.dimension as metric,
                       avg(j.score) as value
                from judgments j join responses s on s.id = j.response_id
                where s.turn is not null and j.error is null and j.score is not null
                  and {_where("j")} {where}
                group by j.response_id, j.dimension""",
            params,
        )

    def whole_scores(self, config: JudgeConfig) -> pd.DataFrame:
        """Whole-episode verdicts under one configuration (judged on the last Listener
        turn's row): the mean over samples per (response, dimension)."""
        return self.store.frame(
            f"""select s.run_id, s.conv_id, s.lang, j.dimension as metric, avg(j.score) as value
                from judgments j join responses s on s.id = j.response_id
                where s.turn is not null and j.error is null and j.score is not null
                  and {_where("j")}
                group by j.response_id, j.dimension""",
            _params(config),
        )

    def speaker_scores(self, config: JudgeConfig) -> pd.DataFrame:
        """The Speaker checks under one configuration, one row per checked Speaker turn."""
        return self.store.frame(
            f"""select t.run_id, t.conv_id, t.lang, j.dimension as metric, j.score as value
                from judgments j join episode_turns t on t.id = j.response_id
                where j.error is null and j.score is not null and {_where("j")}""",
            _params(config),
        )

    def rated_whole_scores(self, study_id: int) -> pd.DataFrame:
        """Raters' scores of whole episodes in one study: the mean per (episode, dimension)."""
        return self.store.frame(
            """select s.run_id, i.conv_id, i.lang, r.dimension as metric, avg(r.score) as value
               from ratings r join study_items i on i.id = r.item_id
               join responses s on s.id = r.response_key
               where r.study_id = ? and i.kind = 'episode' and r.score is not null
               group by r.response_key, r.dimension""",
            [study_id],
        )

    def run_configs(self) -> list[tuple[str, dict[str, Any]]]:
        """Every episode run's id and stored configuration, oldest first."""
        rows = self.store.rows(
            "select id, config from runs where kind = 'episodes' order by created"
        )
        return [(str(r["id"]), json.loads(r["config"])) for r in rows]

    def verdict_configs(self, mode: str) -> list[JudgeConfig]:
        """The configurations that judged in ``mode`` (``episode``: whole episodes,
        ``speaker``: Speaker checks), most recent first."""
        rows = self.store.rows(
            """select judge_model, mode, prompt_version, coalesce(rubric_version, 'unknown') as
                      rubric_version, template, parse, replicate, temperature,
                      max(created) as last
               from judgments where mode = ? and error is null
               group by 1, 2, 3, 4, 5, 6, 7, 8 order by last desc""",
            [mode],
        )
        return [JudgeConfig.from_row(r) for r in rows]

    def kept_speaker_turns(self, run_id: str) -> list[dict[str, Any]]:
        """The Speaker turns each episode of a run went on from: id, conv_id, lang, turn."""
        return self.store.rows(
            """select id, conv_id, lang, turn from episode_turns
               where run_id = ? and kept = 1 and error is null order by conv_id, lang, turn""",
            [run_id],
        )

    def opening_turns(self, run_id: str, conv_id: str, lang: str) -> int:
        """How many of the dataset's own turns an episode started from (0 if none stored)."""
        rows = self.store.rows(
            """select context from responses where run_id = ? and conv_id = ? and lang = ?
               and turn = 1 limit 1""",
            [run_id, conv_id, lang],
        )
        return len(json.loads(rows[0]["context"] or "[]")) if rows else 0

    def turn_ratings(self, study_id: int) -> pd.DataFrame:
        """Raters' scores of episode Listener turns in one study: their mean per
        (response, dimension), with the turn."""
        return self.store.frame(
            """select s.run_id, s.conv_id, s.lang, s.turn, r.dimension as metric,
                      avg(r.score) as value
               from ratings r join study_items i on i.id = r.item_id
               join responses s on s.id = r.response_key
               where r.study_id = ? and s.turn is not null and r.score is not null
                 and i.kind = 'response'
               group by s.id, r.dimension""",
            [study_id],
        )

    def turn_emotions(self) -> pd.DataFrame:
        """Emotion recognition at each Listener turn (hit for single, F1 for multi), and
        whether the turn named a label."""
        return self.store.frame(
            """select s.run_id, s.conv_id, s.lang, s.turn,
                      case json_extract(r.config, '$.protocol') when 'multi' then e.f1
                           else e.hit end as value, coalesce(e.given, 1) as given
               from emotion_scores e join responses s on s.id = e.response_id
               join runs r on r.id = s.run_id where s.turn is not null"""
        )

    def dialogues(self, run_id: str) -> list[str]:
        """conv_ids with an episode Listener turn of this run, both languages first."""
        rows = self.store.rows(
            """select conv_id, count(distinct lang) as langs from responses
               where run_id = ? and turn is not null and error is null
               group by conv_id order by langs desc, conv_id""",
            [run_id],
        )
        return [r["conv_id"] for r in rows]

    def transcript(self, run_id: str, conv_id: str, lang: str) -> list[dict[str, Any]]:
        """One episode as people read it, in order: the dataset's turns it started from
        (``turn`` 0), then each Listener turn and every Speaker attempt after it, each
        with what was found wrong with it (``breaks``) and whether the episode went on
        from it (``kept``)."""
        listeners = self.store.rows(
            """select turn, text, raw, error, context, predicted from responses
               where run_id = ? and conv_id = ? and lang = ? and turn is not null
               order by turn""",
            [run_id, conv_id, lang],
        )
        if not listeners:
            return []
        entries: list[dict[str, Any]] = [
            {
                "role": role,
                "turn": 0,
                "text": decode_ed_text(text),  # people read commas (a raw run sent _comma_)
                "breaks": (),
                "kept": True,
                "ends": False,
            }
            for role, text in json.loads(listeners[0]["context"] or "[]")
        ]
        speakers: dict[int, list[dict[str, Any]]] = {}
        for row in self.speaker_rows(run_id):
            if row["conv_id"] == conv_id and row["lang"] == lang:
                speakers.setdefault(int(row["turn"]), []).append(row)
        for row in listeners:
            turn = int(row["turn"])
            entries.append(
                {
                    "role": "listener",
                    "turn": turn,
                    "text": decode_ed_text(row["text"] or ""),
                    "named": tuple(json.loads(row["predicted"] or "[]")),
                    "error": row["error"],
                    "breaks": (),
                    "kept": row["error"] is None,
                    "ends": False,
                }
            )
            for attempt in speakers.get(turn, []):
                entries.append(
                    {
                        "role": "speaker",
                        "turn": turn,
                        "text": decode_ed_text(attempt["text"] or ""),
                        "error": attempt["error"],
                        "breaks": attempt["breaks"],
                        "kept": bool(attempt["kept"]),
                        "ends": bool(attempt["ends"]),
                        "attempt": attempt["attempt"],
                    }
                )
        return entries

    def break_counts(self, run_id: str) -> dict[str, int]:
        """How often the Speaker broke character in this run, per kind of break."""
        counts: dict[str, int] = {}
        for row in self.speaker_rows(run_id):
            for kind in row["breaks"]:
                counts[kind] = counts.get(kind, 0) + 1
        return counts
