"""The paper's table from stored runs, and its Markdown and LaTeX forms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from koed_core.db import JudgeConfig, Runs, Store
from koed_core.judge.rubric import codes
from koed_core.models.pipeline import steps_for
from koed_core.models.prompts import PROMPT_SETS
from koed_core.results.gaps import paired_gap
from koed_core.run_steps import stored_steps
from koed_core.text import plain_text


def paper_table(
    store: Store, runs: Mapping[tuple[str, str], str], judge: JudgeConfig | None
) -> pd.DataFrame:
    """The paper's layout: a row per model and protocol; ED (English) and KoED (Korean)
    means of EX, IP, ER, EEA, CA and emotion recognition; the gap (KoED minus ED, paired
    by dialogue and dimension, ``_rubric_gap``) with its bootstrap 95% CI."""
    from koed_core.results import gaps

    frame = gaps.score_frame(store, judge=judge)
    rows = []
    for (model, protocol), run_id in sorted(runs.items()):
        mine = frame[frame["run_id"] == run_id]
        row: dict[str, Any] = {"model": model, "protocol": protocol, "run_id": run_id}
        for lang, side in (("en", "ED"), ("ko", "KoED")):
            for metric in [*codes(), gaps.EMOTION_METRIC, gaps.EMOTION_ANSWERED]:
                values = mine[(mine["lang"] == lang) & (mine["metric"] == metric)]["value"]
                row[f"{side} {metric}"] = float(values.mean()) if len(values) else np.nan
        row.update(_rubric_gap(mine[mine["source"] == "judge"]))
        rows.append(row)
    table = pd.DataFrame(rows)
    if judge is not None and not table.empty:
        table = table.assign(**judge.as_columns())
    return table


GAP_HEADER = "gap (KoED-ED, rubric mean, paired by dialogue x dimension)"
"""What the ``gap`` column is, as the Markdown and LaTeX tables head it."""


def _rubric_gap(judged: pd.DataFrame) -> dict[str, Any]:
    """KoED minus ED over the rubric, paired by (dialogue, dimension): only a dimension
    scored in both languages of a dialogue counts, so ko and en never average different
    sets of dimensions; a dialogue's gap is the mean over its paired dimensions, and the
    CI resamples dialogues. ``pairs``: dialogues; ``dimension_pairs``: (dialogue,
    dimension) pairs."""
    wide = judged.pivot_table(
        index=["conv_id", "metric"], columns="lang", values="value", aggfunc="mean"
    )
    if not {"en", "ko"} <= set(wide.columns):
        return {}
    both = wide.dropna(subset=["en", "ko"])
    if both.empty:
        return {}
    per_dialogue = (both["ko"] - both["en"]).groupby(level="conv_id").mean()
    gap, low, high = paired_gap(np.zeros(len(per_dialogue)), per_dialogue.to_numpy())
    return {
        "gap": gap,
        "ci_low": low,
        "ci_high": high,
        "pairs": len(per_dialogue),
        "dimension_pairs": len(both),
    }


def stored_runs(store: Store, dataset_sha256: str | None = None) -> dict[tuple[str, str], str]:
    """Every batch run (of one dataset) keyed as the table names it: (model, "protocol,
    prompt set"); the most recent run wins when one configuration was run twice."""
    import json

    runs = Runs(store).run_table(kind="batch")
    out: dict[tuple[str, str], str] = {}
    for row in runs.to_dict("records"):
        if dataset_sha256 and row["dataset_sha256"] != dataset_sha256:
            continue
        config = json.loads(row["config"])
        prompt_set = config.get("prompt_set", "native")
        label = f"{row['protocol']}, {prompt_set} prompts"
        # a run that changed a step of its set's profile is a row of its own, named by it
        profile = steps_for(prompt_set if prompt_set in PROMPT_SETS else "custom")
        changed = [
            f"{name.replace('_', ' ')} {value}"
            for name, value in stored_steps(config).items()
            if value != getattr(profile, name)
        ]
        if config.get("temperature") is None:
            changed.append("server's decoding")
        if changed:
            label += " (" + ", ".join(changed) + ")"
        out[(str(row["model"]), label)] = str(row["run_id"])
    return out


def to_markdown(table: pd.DataFrame, title: str) -> str:
    """The table as GitHub Markdown, numbers to two decimals. The title and every cell
    are one line of text, markup escaped (a model id's ``|`` stays in its cell)."""
    shown = _shown(table)
    head = "| " + " | ".join(plain_text.markdown(c) for c in shown.columns) + " |"
    rule = "| " + " | ".join("---" for _ in shown.columns) + " |"
    body = [
        "| " + " | ".join(plain_text.markdown(v) for v in row) + " |" for row in shown.to_numpy()
    ]
    return "\n".join([f"# {plain_text.markdown(title)}", "", head, rule, *body]) + "\n"


def to_latex(table: pd.DataFrame, title: str) -> str:
    """The table as a LaTeX tabular (booktabs), numbers to two decimals, written by
    pandas' Styler with LaTeX escaping: every character TeX treats specially in a name
    or label is text, and no name can start a line (control characters and line breaks
    are removed first), so nothing in it is a command. The title is a comment line."""
    shown = _shown(table)
    for column in shown.columns:
        if not pd.api.types.is_numeric_dtype(shown[column]):
            shown[column] = shown[column].map(plain_text.one_line)
    shown.columns = [plain_text.one_line(c) for c in shown.columns]
    styler = (
        shown.style.hide(axis="index")
        .format(escape="latex")
        .format_index(escape="latex", axis="columns")
    )
    tabular = styler.to_latex(column_format="l" * 2 + "r" * (len(shown.columns) - 2), hrules=True)
    return f"% {plain_text.latex(title)}\n{tabular}"


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in table.columns if not c.startswith("judge_") and c != "run_id"]
    shown = table[keep].rename(columns={"gap": GAP_HEADER})
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    return shown
