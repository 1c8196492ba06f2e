"""The heavy result tables a page shares with every visitor: what each one computes from
its inputs, the key it is kept under, and how it is written into the database.

Measured on the official file with an admin's database (bench/pages.py's: three runs of
100 dialogues judged, a rated study; 2 cores, load 6): the perception split took 2.5-3.9 s,
the gap broken down per emotion label 7.7 s (judge) and 1.8 s (emotion recognition), the
gap three ways with PPI++ 2.1-4.8 s; every other table of the results pages took under
0.5 s. Computed in a page's own run,
each visitor and each server process paid them again; now the first asker queues one
job (``compute_job.execute_table``), every asker follows its progress, and the result is
kept in ``computed_results`` under the database's change stamp and the inputs.

A result is a DataFrame, or ``ppi_table.GapEstimates`` (two DataFrames, the study's
design, its words), kept as a zip of Parquet files (pyarrow, which Streamlit itself
requires) and JSON: a column's type comes back as it went in, and reading it back runs
no code, as unpickling a blob from a database file would. A table that holds sentences
(a note, a refusal) is computed in the asker's language (``lang`` in its inputs).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, TypeAlias

import pandas as pd

from koed_core import i18n
from koed_core.db import JudgeConfig, Sampling, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import N_
from koed_core.results.ppi_table import GapEstimates

Result: TypeAlias = pd.DataFrame | GapEstimates
"""What a shared computation gives: a table, or the gap three ways."""

TABLES = {
    "perception": N_("the perception split of the gap"),
    "gap_breakdown": N_("the gap broken down by group"),
    "gap_estimates": N_("the gap anchored in people (PPI++)"),
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
) -> Result:
    """The table ``name`` for ``inputs``, computed now (the job's work), its sentences in
    the inputs' ``lang`` (English when none is given).

    Raises:
        TableError: an unknown table, or a breakdown asked without its dataset.
    """
    work = _COMPUTE.get(name)
    if work is None:
        raise TableError(f"no shared table named {name!r}")
    with i18n.speaking(str(inputs.get("lang") or "en")):
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


def _gap_estimates(
    store: Store, inputs: Mapping[str, Any], dataset: Dataset | None
) -> GapEstimates:
    """``ppi_table.gap_estimates`` of one study without the runs the asker may not see
    (``hidden``: the page's viewer decided), the means' intervals left out as a page's."""
    from koed_core.results import ppi_table

    judge = judge_of(inputs["judge"])
    if judge is None:
        raise TableError("the gap three ways needs a judge configuration")
    hidden = set(inputs.get("hidden") or ())
    return ppi_table.gap_estimates(store, int(inputs["study"]), judge, hidden, False)


_COMPUTE: dict[str, Callable[[Store, Mapping[str, Any], Dataset | None], Result]] = {
    "perception": _perception,
    "gap_breakdown": _gap_breakdown,
    "gap_estimates": _gap_estimates,
}


def encode(result: Result) -> bytes:
    """A result as the bytes kept: a zip of Parquet frames (indexes kept) and JSON."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as parts:
        if isinstance(result, pd.DataFrame):
            parts.writestr("frame.parquet", _parquet(result))
        else:
            parts.writestr("estimates.parquet", _parquet(result.estimates))
            parts.writestr("artefact.parquet", _parquet(result.artefact))
            meta = {
                "sampling": asdict(result.sampling),
                "refusal": result.refusal,
                "provenance": result.provenance,
            }
            parts.writestr("meta.json", json.dumps(meta, ensure_ascii=False))
    return out.getvalue()


def decode(payload: bytes) -> Result:
    """A kept result as what it was."""
    with zipfile.ZipFile(io.BytesIO(payload)) as parts:
        if "frame.parquet" in parts.namelist():
            return _frame(parts.read("frame.parquet"))
        meta = json.loads(parts.read("meta.json"))
        return GapEstimates(
            _frame(parts.read("estimates.parquet")),
            _frame(parts.read("artefact.parquet")),
            Sampling.from_json(meta["sampling"]),
            meta["refusal"],
            meta["provenance"],
        )


def _parquet(frame: pd.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.to_parquet(out, engine="pyarrow", index=True)
    return out.getvalue()


def _frame(data: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data), engine="pyarrow")
