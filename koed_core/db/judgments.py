"""Judge scores, always read and written under one judge configuration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from koed_core.db.store import Store
from koed_core.db.types import JUDGE_TEMPERATURES, JudgeConfig

CONFIG_COLUMNS = (
    "judge_model",
    "mode",
    "prompt_version",
    "rubric_version",
    "template",
    "parse",
    "replicate",
    "temperature",
)


def _where(alias: str = "") -> str:
    """The SQL condition "this judgment is of the configuration" (``_params`` fills it)."""
    prefix = f"{alias}." if alias else ""
    return " and ".join(f"{prefix}{column} = ?" for column in CONFIG_COLUMNS)


CONFIG_WHERE = _where()


def _params(config: JudgeConfig) -> list[object]:
    return [
        config.model,
        config.mode,
        config.prompt_version,
        config.rubric_version,
        config.template,
        config.parse,
        config.replicate,
        config.temperature,
    ]


@dataclass(frozen=True)
class JudgeConfigUse:
    """A judge configuration found in the database, with what it judged."""

    config: JudgeConfig
    judgments: int
    unscored: int
    responses: int
    last: str


class Judgments:
    """The ``judgments`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def save(self, row: dict[str, object]) -> None:
        """Insert or replace one judgment."""
        self.save_all([row])

    def save_all(self, rows: list[dict[str, object]]) -> None:
        """Insert or replace several judgments (the attempts of one task) at once. A row
        that names no temperature was asked at its mode's (the rule m025 applied to every
        earlier judgment): stored as that, so it belongs to its configuration."""
        with self.store.write():
            self.store.db.table("judgments").upsert_all([_at_temperature(r) for r in rows], pk="id")

    def of_run(self, run_id: str, config: JudgeConfig) -> list[dict[str, Any]]:
        """Every stored attempt of this configuration on a run's responses."""
        return self.store.rows(
            f"""select j.* from judgments j join responses r on r.id = j.response_id
                where r.run_id = ? and {_where("j")}""",
            [run_id, *_params(config)],
        )

    def unscored_tasks(self, run_id: str, config: JudgeConfig, dimension: str) -> int:
        """A run's answers that this configuration judged on ``dimension`` with no score
        at any attempt (unscored, or every attempt failed)."""
        rows = self.store.rows(
            f"""select count(distinct j.response_id) as n from judgments j
                join responses r on r.id = j.response_id
                where r.run_id = ? and j.dimension = ? and {_where("j")}
                and not exists (select 1 from judgments k where k.response_id = j.response_id
                    and k.dimension = j.dimension and k.score is not null and {_where("k")})""",
            [run_id, dimension, *_params(config), *_params(config)],
        )
        return int(rows[0]["n"]) if rows else 0

    def done(self, config: JudgeConfig) -> set[str]:
        """Ids of judgments (their first attempt) that got an answer, scored or unscored,
        at any attempt; a task whose every attempt failed is retried."""
        rows = self.store.rows(
            f"""select f.id from judgments f where {_where("f")}
                and coalesce(f.attempt, 0) = 0 and (f.error is null or exists (
                    select 1 from judgments a where a.response_id = f.response_id
                    and a.dimension = f.dimension and a.sample = f.sample
                    and a.judge_model = f.judge_model and a.mode = f.mode
                    and a.prompt_version = f.prompt_version and a.template = f.template
                    and a.parse = f.parse and a.replicate = f.replicate
                    and a.temperature = f.temperature
                    and a.error is null))""",
            _params(config),
        )
        return {r["id"] for r in rows}

    def answered_pairs(self, config: JudgeConfig) -> set[tuple[str, str]]:
        """(response or Speaker turn id, dimension) answered without error by a judge of
        ``config``'s model, mode, prompt version and replicate (episode judging asks the
        rest again)."""
        rows = self.store.rows(
            """select response_id, dimension from judgments where judge_model = ? and mode = ?
               and prompt_version = ? and replicate = ? and error is null""",
            [config.model, config.mode, config.prompt_version, config.replicate],
        )
        return {(r["response_id"], r["dimension"]) for r in rows}

    def configs(self, run_ids: Sequence[str] | None = None) -> list[JudgeConfigUse]:
        """Judge configurations that scored single replies (of these runs), most recent
        first. Whole-episode verdicts and Speaker checks score other things and are read
        where those are shown (koed_core.judge.episodes), never offered as a reply's."""
        where, params = "", []
        if run_ids is not None:
            marks = ",".join("?" * len(run_ids)) or "''"
            where = f"and s.run_id in ({marks})"
            params = list(run_ids)
        rows = self.store.rows(
            f"""select j.judge_model, j.mode, j.prompt_version,
                       coalesce(j.rubric_version, 'unknown') as rubric_version,
                       j.template, j.parse, j.replicate, j.temperature,
                       count(*) as judgments, sum(j.score is null) as unscored,
                       count(distinct j.response_id) as responses, max(j.created) as last
                from judgments j join responses s on s.id = j.response_id
                where j.error is null and j.mode not in ('episode', 'speaker') {where}
                group by 1, 2, 3, 4, 5, 6, 7, 8
                order by last desc, 1, 2, 3, 4, 5, 6, 7, 8""",
            params,
        )
        return [
            JudgeConfigUse(
                JudgeConfig.from_row(r),
                int(r["judgments"]),
                int(r["unscored"] or 0),
                int(r["responses"]),
                str(r["last"]),
            )
            for r in rows
        ]

    def scores(self, config: JudgeConfig, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """Mean over samples per (response, dimension) under one configuration only."""
        where, params = "", _params(config)
        if run_ids is not None:
            marks = ",".join("?" * len(run_ids)) or "''"
            where = f"and s.run_id in ({marks})"
            params += list(run_ids)
        frame = self.store.frame(
            f"""select j.response_id, j.dimension, avg(j.score) as score,
                       count(j.score) as samples_scored,
                       group_concat(j.unscored_reason, '; ') as unscored_reason,
                       max(j.rationale) as rationale, s.run_id, s.lang, s.conv_id
                from judgments j join responses s on s.id = j.response_id
                where j.error is null and {_where("j")} {where}
                group by j.response_id, j.dimension""",
            params,
        )
        if frame.empty:
            return pd.DataFrame(
                columns=["response_id", "dimension", "score", "run_id", "lang", "conv_id"]
            )
        return frame

    def rationale(self, config: JudgeConfig, response_id: str, dimension: str) -> str:
        """The judge's feedback on one scored dimension of one response ('' if none)."""
        rows = self.store.rows(
            f"select rationale from judgments where response_id = ? and dimension = ? and "
            f"{CONFIG_WHERE} and score is not null limit 1",
            [response_id, dimension, *_params(config)],
        )
        return str(rows[0]["rationale"] or "") if rows else ""

    def summary(self) -> list[dict[str, object]]:
        """Every judge configuration with its backend and counts (for exports)."""
        return self.store.rows(
            """select judge_model, judge_backend, mode, prompt_version,
                      coalesce(rubric_version, 'unknown') as rubric_version, template, parse,
                      replicate, temperature, count(*) as judgments,
                      sum(score is null) as unscored
               from judgments where error is null group by 1, 2, 3, 4, 5, 6, 7, 8, 9"""
        )

    def sample_spread(self, config: JudgeConfig, run_ids: Sequence[str]) -> pd.DataFrame:
        """run_id, conv_id, lang, dimension, samples, sd: how far one configuration's k
        samples of a response's score lie apart (strict mode's samples; sd 0 with one):
        how unsure the judge is, which an active batch favours."""
        marks = ",".join("?" * len(run_ids)) or "''"
        frame = self.store.frame(
            f"""select s.run_id, s.conv_id, s.lang, j.dimension, count(j.score) as samples,
                       avg(j.score) as mean, avg(j.score * j.score) as square
                from judgments j join responses s on s.id = j.response_id
                where j.error is null and j.score is not null and {_where("j")}
                and s.run_id in ({marks})
                group by j.response_id, j.dimension""",
            [*_params(config), *run_ids],
        )
        columns = ["run_id", "conv_id", "lang", "dimension", "samples", "sd"]
        if frame.empty:
            return pd.DataFrame(columns=columns)
        n = frame["samples"].astype(float)
        var = (frame["square"] - frame["mean"] ** 2).clip(lower=0) * n / (n - 1).where(n > 1)
        return frame.assign(sd=var.fillna(0.0) ** 0.5)[columns]


def _at_temperature(row: dict[str, object]) -> dict[str, object]:
    mode = row.get("mode")
    if row.get("temperature") is None and isinstance(mode, str) and mode in JUDGE_TEMPERATURES:
        return {**row, "temperature": JUDGE_TEMPERATURES[mode]}
    return row
