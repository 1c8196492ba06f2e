"""The runs and their responses: what a run asked, what came back, what it scored.

The query class of the ``runs``, ``responses`` and ``emotion_scores`` tables, as
``Judgments`` is of ``judgments``; the rules of a run (what to ask, what to resume) are
``koed_core.models.runs``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from koed_core.db.store import Store
from koed_core.db.types import EmotionScore, ResponseRecord, RunConfig, now
from koed_core.dialogues.variants import recorded_versions
from koed_core.run_steps import declared


def step_columns() -> str:
    """One column per declared pipeline step, read from a run's stored config; a run
    made before the step was a choice reads its earlier value (``step_defaults``, in
    order). The names are identifiers (``PipelineStep`` checks them)."""
    return ", ".join(
        f"coalesce(json_extract(r.config, '$.{s.name}'), ?) as {s.name}" for s in declared()
    )


def step_defaults() -> list[str]:
    """The parameters of :func:`step_columns`: each step's earlier value."""
    return [s.before for s in declared()]


def _version_read(recorded: str | None, lang: str | None) -> str | None:
    """The version of ``lang`` a run recorded, as the Runs table shows it (None: ko, en,
    or a variant the run did not record)."""
    found = recorded_versions(recorded).get(lang or "")
    if found is None:
        return None
    version, version_id = found
    return f"{lang} v{version}" + (f" · {version_id}" if version_id else "")


class Runs:
    """Queries of the runs and their responses."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def ensure_run(
        self, config: RunConfig, name: str, langs: list[str], spec: dict[str, Any] | None = None
    ) -> str:
        """Create the run, or add languages to it; returns its id.

        ``spec`` is the full model spec (minus anything secret) stored beside the config.
        """
        run_id = config.run_id
        with self.store.write():
            existing = self._run_row(run_id)
            known = json.loads(existing["langs"]) if existing else []
            merged = sorted(set(known) | set(langs))
            self.store.db.table("runs").upsert(
                {
                    "id": run_id,
                    "name": name,
                    "kind": config.kind,
                    "config": json.dumps(config.stored(), sort_keys=True),
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
        found = self.store.rows("select * from runs where id = ?", [run_id])
        return found[0] if found else None

    def run_config(self, run_id: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """A run's stored configuration and model spec (spec None for 0.1.0 runs)."""
        row = self._run_row(run_id)
        if row is None:
            return None
        return json.loads(row["config"]), json.loads(row["spec"]) if row["spec"] else None

    def finished(self, run_id: str) -> set[tuple[str, str, str]]:
        """(conv_id, lang, context_hash) of responses that succeeded: what a rerun skips."""
        rows = self.store.rows(
            "select conv_id, lang, context_hash from responses where run_id = ? and error is null",
            [run_id],
        )
        return {(r["conv_id"], r["lang"], r["context_hash"]) for r in rows}

    def raw_answers(self, run_id: str) -> dict[tuple[str, str, str], dict[str, Any]]:
        """A run's successful raw answers by (conv_id, lang, context_hash): what a run that
        only reads them another way (post-processing, emotion reader) starts from."""
        rows = self.store.rows(
            """select conv_id, lang, context_hash, raw, emotion_raw, latency_s, prompt_tokens,
                      completion_tokens from responses
               where run_id = ? and error is null and raw is not null""",
            [run_id],
        )
        return {(r["conv_id"], r["lang"], r["context_hash"]): r for r in rows}

    def save_response(
        self, record: ResponseRecord, score: EmotionScore | None, gold: frozenset[str] | None
    ) -> str:
        """Store one response and its emotion score, in one transaction, and let its lock
        go. A stored answer is never replaced: a failure stored earlier gives way to an
        answer, but an answer already there (another process's) stays as it is."""
        row = asdict(record)
        for key in ("prompt", "context", "predicted", "unknown_labels", "parse_notes"):
            row[key] = json.dumps(list(row[key]), ensure_ascii=False)
        row["id"] = record.response_id
        row["created"] = now()
        with self.store.write():
            self.store.db.execute("delete from item_locks where response_id = ?", [row["id"]])
            if self.store.rows(
                "select 1 from responses where id = ? and error is null", [row["id"]]
            ):
                return str(row["id"])
            self.store.db.table("responses").upsert(row, pk="id")
            scores = self.store.db.table("emotion_scores")
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
            self.store.db.table("runs").update(record.run_id, {"updated": now()})
        return str(row["id"])

    def runs(self) -> pd.DataFrame:
        """One row per run and language: counts, errors, emotion-recognition figures, and
        for a translated variant the version the run read (``variant``: ``en-from-ko v2
        · 3f9a...``, empty for ko and en): a variant is versioned, and two runs of the
        same model may have read different versions of it."""
        frame = self._runs()
        if frame.empty:  # no run yet: no columns to read
            return frame
        recorded = frame.pop("variants_read")
        frame["variant"] = [
            _version_read(text, lang) for text, lang in zip(recorded, frame["lang"], strict=True)
        ]
        return frame

    def _runs(self) -> pd.DataFrame:
        return self.store.frame(
            f"""
            select r.id as run_id, r.name, r.kind, json_extract(r.config, '$.protocol') as protocol,
                   json_extract(r.config, '$.provenance') as provenance,
                   coalesce(json_extract(r.config, '$.family'), 'open') as family,
                   {step_columns()}, s.lang,
                   count(s.id) as responses, sum(s.error is not null) as errors,
                   sum(e.given = 0) as no_label,
                   avg(e.hit) as accuracy, avg(e.f1) as f1,
                   avg(case when e.given then e.hit end) as accuracy_answered,
                   avg(case when e.given then e.f1 end) as f1_answered,
                   avg(case when e.given then e.jaccard end) as jaccard,
                   avg(s.latency_s) as mean_latency_s, r.dataset_sha256, r.updated,
                   json_extract(r.config, '$.variants') as variants_read
            from runs r left join responses s on s.run_id = r.id
            left join emotion_scores e on e.response_id = s.id
            group by r.id, s.lang order by r.updated desc, s.lang
            """,
            step_defaults(),
        )

    def run_table(self, kind: str | None = None) -> pd.DataFrame:
        """One row per run: id, model, provenance, protocol, reference, dataset, config."""
        return self.store.frame(
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
        return self.store.rows(
            f"""select r.id as run_id, r.name, json_extract(r.config, '$.protocol') as protocol,
                      coalesce(json_extract(r.config, '$.prompt_set'), 'native') as prompt_set,
                      json_extract(r.config, '$.prompt_version') as prompt_version,
                      json_extract(r.config, '$.temperature') as temperature,
                      json_extract(r.config, '$.turns') as turns,
                      json_extract(r.config, '$.speaker') as speaker,
                      json_extract(r.config, '$.oracle') as oracle,
                      {step_columns()}, r.langs, r.created, count(distinct s.conv_id) as dialogues,
                      group_concat(distinct s.lang) as answered_langs
               from runs r left join responses s on s.run_id = r.id and s.error is null
               group by r.id order by r.created, r.id""",
            step_defaults(),
        )

    def responses(self, run_id: str) -> pd.DataFrame:
        """Every response of a run with its emotion score (label lists as "a, b" text)."""
        frame = self.store.frame(
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
        return self.store.rows(
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
        rows = self.store.rows(
            f"select id, text from responses where id in ({marks})", response_ids
        )
        return {r["id"]: r["text"] or "" for r in rows}

    def response_places(self, response_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """id -> (run_id, conv_id): where a response sits, for people to find it."""
        if not response_ids:
            return {}
        marks = ",".join("?" * len(response_ids))
        rows = self.store.rows(
            f"select id, run_id, conv_id from responses where id in ({marks})", response_ids
        )
        return {r["id"]: (r["run_id"], r["conv_id"]) for r in rows}

    def response_lengths(self) -> pd.Series:
        """Characters per stored response (the length baseline of agreement)."""
        rows = self.store.rows("select id, length(coalesce(text, '')) as n from responses")
        return pd.Series({r["id"]: r["n"] for r in rows}, dtype=float)

    def has_run(self, run_id: str) -> bool:
        """Whether a run with this id is stored."""
        return self._run_row(run_id) is not None

    def demo_runs(self) -> pd.DataFrame:
        """Runs with at least one stored answer: id, model, provenance, protocol, updated."""
        return self.store.frame(
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
        rows = self.store.rows(
            f"""select conv_id from responses where run_id in ({marks}) and error is null
                group by conv_id having count(distinct run_id || lang) = ?""",
            [*run_ids, 2 * len(run_ids)],
        )
        return sorted(r["conv_id"] for r in rows)

    def stored_answers(self, run_ids: Sequence[str], conv_id: str) -> dict[tuple[str, str], str]:
        """(run_id, lang) -> the stored reply text."""
        marks = ",".join("?" * len(run_ids))
        rows = self.store.rows(
            f"select run_id, lang, text from responses where run_id in ({marks}) "
            "and conv_id = ? and error is null",
            [*run_ids, conv_id],
        )
        return {(r["run_id"], r["lang"]): r["text"] for r in rows}

    def stored_context(self, run_id: str, conv_id: str, lang: str) -> list[tuple[str, str]]:
        """The transcript a run's model answered for one dialogue and language."""
        rows = self.store.rows(
            "select context from responses where run_id = ? and conv_id = ? and lang = ? "
            "and error is null limit 1",
            [run_id, conv_id, lang],
        )
        if not rows:
            return []
        return [(str(role), str(text)) for role, text in json.loads(rows[0]["context"] or "[]")]

    def emotion_values(self) -> pd.DataFrame:
        """Emotion recognition per response: hit for single runs, F1 for multi runs, and
        whether the answer named any label (``given``: an answer with none scores 0)."""
        return self.store.frame(
            """select s.run_id, s.conv_id, s.lang, case json_extract(r.config, '$.protocol')
                      when 'multi' then e.f1 else e.hit end as value,
                      coalesce(e.given, 1) as given
               from emotion_scores e join responses s on s.id = e.response_id
               join runs r on r.id = s.run_id"""
        )
