"""The heavy result tables a page shares with every visitor: what each one computes from
its inputs, the key it is kept under, and how it is written into the database.

Measured on the official file with an admin's database (bench/pages.py's: three runs of
100 dialogues judged, a rated study; 2 cores, load 6): the perception split took 2.5-3.9 s,
the gap broken down per emotion label 7.7 s (judge) and 1.8 s (emotion recognition);
every other table of the results pages took under 0.5 s. Computed in a page's own run,
each visitor and each server process paid them again; now the first asker queues one
job (``compute_job.execute_table``), every asker follows its progress, and the result is
kept in ``computed_results`` under the database's change stamp and the inputs.

A result is a DataFrame written as Parquet (pyarrow, which Streamlit itself requires):
a column's type comes back as it went in, and reading it back runs no code, as
unpickling a blob from a database file would.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import N_

TABLES = {
    "perception": N_("the perception split of the gap"),
    "gap_breakdown": N_("the gap broken down by group"),
}
"""Each shared table's name, and what it is in words (the progress bar names it)."""


class TableError(ValueError):
    """A shared table this release does not know, or inputs it cannot read."""


def judge_inputs(judge: JudgeConfig | None) -> dict[str, Any] | None:
    """A judge configuration as JSON inputs (``judge_of`` reads it back)."""
    return None if judge is None else asdict(judge)


def judge_of(value: Mapping[str, Any] | None) -> JudgeConfig | None:
    return None if value is None else JudgeConfig(**value)


def canonical(inputs: Mapping[str, Any]) -> str:
    """The inputs as one JSON text: equal inputs, equal text (keys sorted)."""
    return json.dumps(dict(inputs), sort_keys=True, separators=(",", ":"))


def key(name: str, stamp: int, inputs: Mapping[str, Any]) -> str:
    """What a result is kept under: its table, the change stamp and the inputs."""
    text = json.dumps([name, stamp, canonical(inputs)])
    return hashlib.sha256(text.encode()).hexdigest()


def needs_dataset(inputs: Mapping[str, Any]) -> bool:
    """Whether computing these inputs reads the dialogues (a breakdown by label reads
    each dialogue's gold labels)."""
    return inputs.get("by") is not None


def compute(
    name: str, store: Store, inputs: Mapping[str, Any], dataset: Dataset | None = None
) -> pd.DataFrame:
    """The table ``name`` for ``inputs``, computed now (the job's work).

    Raises:
        TableError: an unknown table, or a breakdown asked without its dataset.
    """
    work = _COMPUTE.get(name)
    if work is None:
        raise TableError(f"no shared table named {name!r}")
    return work(store, inputs, dataset)


def _perception(store: Store, inputs: Mapping[str, Any], dataset: Dataset | None) -> pd.DataFrame:
    from koed_core.results.perception import perception_table

    judge = judge_of(inputs["judge"])
    if judge is None:
        raise TableError("the perception split needs a judge configuration")
    return perception_table(store, judge)


def _gap_breakdown(
    store: Store, inputs: Mapping[str, Any], dataset: Dataset | None
) -> pd.DataFrame:
    """``gaps.gap_table`` of the runs the asker may see (``runs``: the page's viewer
    decided), of these sources, broken down ``by`` label or jeong/han group."""
    from koed_core.results import gaps

    by = inputs.get("by")
    if by is not None and dataset is None:
        raise TableError("a breakdown by group needs the dialogues")
    frame = gaps.score_frame(store, judge=judge_of(inputs.get("judge")), study_id=inputs["study"])
    frame = frame[frame["run_id"].astype(str).isin(set(inputs["runs"]))]
    if inputs.get("dataset_sha256") is not None:
        frame = frame[frame["dataset_sha256"] == inputs["dataset_sha256"]]
    groups = None
    if dataset is not None and by == "label":
        groups = gaps.label_groups(dataset.dialogues)
    elif dataset is not None and by == "group":
        groups = gaps.korean_groups(dataset.dialogues)
    return gaps.gap_table(frame[frame["source"].isin(inputs["sources"])], groups, by)


_COMPUTE: dict[str, Callable[[Store, Mapping[str, Any], Dataset | None], pd.DataFrame]] = {
    "perception": _perception,
    "gap_breakdown": _gap_breakdown,
}


def encode(frame: pd.DataFrame) -> bytes:
    """A result as Parquet bytes, its index kept."""
    out = io.BytesIO()
    frame.to_parquet(out, engine="pyarrow", index=True)
    return out.getvalue()


def decode(payload: bytes) -> pd.DataFrame:
    """A stored result as the DataFrame it was."""
    return pd.read_parquet(io.BytesIO(payload), engine="pyarrow")
