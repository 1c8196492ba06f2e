"""The paper export's "Language or culture?" files: the four cells and every effect per
run and metric from the judge's scores, and its chart (issue 65)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.variants import CELLS
from koed_core.results.decompose import decompose
from koed_core.results.decompose_figure import decompose_figure
from koed_core.text import csv_safe

DECOMPOSE_FILES = {
    "language_or_culture.csv": "Language or culture? Per run and dimension, over the dialogues "
    "the judge scored in all four cells (ko, en, en-from-ko, ko-from-en): rows of kind cell "
    "(the cell's mean) and of kind effect (language_effect at western_content, korean_content "
    "or average_over_content; content_effect in_english, in_korean or average_over_language; "
    "interaction; total_gap), each with its 95% bootstrap interval over dialogues and n. "
    "language_effect.western_content + content_effect.in_korean = total_gap. The variants "
    "each run read are in runs.json (config.variants).",
    "language_or_culture.svg": "The same effects as a chart (the first run with four cells).",
    "language_or_culture.png": "The same chart as PNG.",
}


def decompose_rows(store: Store, judge: JudgeConfig | None) -> pd.DataFrame:
    """Cells and effects of every run the judge scored in all four cells, one table."""
    from koed_core.results.gaps import score_frame

    columns = ["run_id", "run_label", "metric", "kind", "lang", "effect", "held_fixed"]
    columns += ["estimate", "ci_low", "ci_high", "n"]
    if judge is None:
        return pd.DataFrame(columns=columns)
    frame = score_frame(store, judge=judge)
    part = frame[(frame["source"] == "judge") & frame["lang"].isin(CELLS)]
    result = decompose(part.assign(model=part["run_id"]))
    labels = dict(zip(part["run_id"], part["run_label"], strict=True))
    cells = result.cells.rename(columns={"model": "run_id", "mean": "estimate"})
    effects = result.effects.rename(columns={"model": "run_id"})
    both = pd.concat([cells.assign(kind="cell"), effects.assign(kind="effect")])
    both = both.assign(run_label=both["run_id"].map(labels), **judge.as_columns())
    return both.reindex(columns=[*columns, *judge.as_columns()])


def write_decompose(
    store: Store, out: Path, judge: JudgeConfig | None, charts: list[tuple[Any, Path]]
) -> list[Path]:
    """Add the table to a bundle folder and list it, with its chart, in its README; the
    chart is added to ``charts`` for the bundle to draw with its others (one browser for
    all of a bundle's images: each start of Kaleido's Chromium costs seconds)."""
    rows = decompose_rows(store, judge)
    (out / "language_or_culture.csv").write_text(csv_safe.to_csv(rows), encoding="utf-8")
    effects = rows[rows["kind"] == "effect"]
    first = effects[effects["run_id"] == effects["run_id"].iloc[0]] if len(effects) else effects
    title = "Language or culture? 95% intervals"
    if len(first):
        title += f" · {first['run_label'].iloc[0]}"
    fig = decompose_figure(first, title)
    charts += [(fig, out / "language_or_culture.svg"), (fig, out / "language_or_culture.png")]
    readme = out / "README.md"
    listed = "".join(f"| {name} | {text} |\n" for name, text in DECOMPOSE_FILES.items())
    readme.write_text(readme.read_text(encoding="utf-8") + listed, encoding="utf-8")
    (out / "language_or_culture.csv").chmod(0o600)  # the images: by the bundle, once drawn
    return [out / name for name in DECOMPOSE_FILES]
