"""The talk demo: two models on one situation, ko and en, replayed from stored answers.

A venue without network still gets a demo: answers from a real run are replayed word by
word at a speaking pace, and the page says they are a replay and of which run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

import pandas as pd

from koed_core.registry import ModelSpec
from koed_core.storage import Store

WORD = re.compile(r"\S+\s*")


def demo_runs(store: Store) -> pd.DataFrame:
    """Runs with at least one stored answer: id, model, provenance, protocol, updated."""
    return pd.DataFrame(
        list(
            store.db.query(
                """select r.id as run_id, json_extract(r.config, '$.model_name') as model,
                  json_extract(r.config, '$.provenance') as provenance,
                  json_extract(r.config, '$.protocol') as protocol, r.updated
           from runs r where exists (select 1 from responses s where s.run_id = r.id
                                     and s.error is null)
           order by r.updated desc"""
            )
        )
    )


def shared_dialogues(store: Store, run_ids: Sequence[str]) -> list[str]:
    """conv_ids every run answered in both languages."""
    marks = ",".join("?" * len(run_ids))
    rows = store.db.execute(
        f"""select conv_id from responses where run_id in ({marks}) and error is null
            group by conv_id having count(distinct run_id || lang) = ?""",
        [*run_ids, 2 * len(run_ids)],
    )
    return sorted(r[0] for r in rows.fetchall())


def stored_answers(
    store: Store, run_ids: Sequence[str], conv_id: str
) -> dict[tuple[str, str], str]:
    """(run_id, lang) -> the stored reply text."""
    marks = ",".join("?" * len(run_ids))
    rows = store.db.execute(
        f"select run_id, lang, text from responses where run_id in ({marks}) and conv_id = ? "
        "and error is null",
        [*run_ids, conv_id],
    )
    return {(r[0], r[1]): r[2] for r in rows.fetchall()}


def run_spec(store: Store, run_id: str) -> ModelSpec:
    """The model behind a run, rebuilt from its stored configuration (for live answers)."""
    row = store.db.execute("select config from runs where id = ?", [run_id]).fetchone()
    config = json.loads(row[0])
    return ModelSpec(
        name=config["model_name"],
        backend=config["backend"],
        model=config["model_id"],
        base_url=config["base_url"],
        provenance=config["provenance"],
    )


def replay(texts: Sequence[str]) -> Iterator[list[str]]:
    """Grow all texts together, one word each per step, as if streamed side by side."""
    words = [WORD.findall(text) for text in texts]
    for step in range(1, max((len(w) for w in words), default=0) + 1):
        yield ["".join(w[:step]) for w in words]
