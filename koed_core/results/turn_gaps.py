"""The gap over turns: for each episode run, Korean minus English at Listener turn 1, 2,
3 ..., paired by dialogue, with a bootstrap CI; and emotion recognition at each turn.

Does a model close the gap as the Speaker reveals more, or widen it? At turn *t* only the
dialogues whose episodes reached turn *t* in both languages count (an episode the Speaker
ended early, or that broke off, drops out of the later turns), and the number of pairs is
given with every value. Sources are kept apart as everywhere: one judge configuration,
or one study, or the runs' own emotion answers.
"""

from __future__ import annotations

import pandas as pd

from koed_core.db import JudgeConfig, Store
from koed_core.db.episodes import Episodes
from koed_core.models.runs import run_labels
from koed_core.results.gaps import SOURCE_COLUMNS, emotion_parts, gap_table
from koed_core.text import plain_text

META = ["run_id", "run_label", "model", "provenance", "protocol", "prompt_set", "speaker", "turns"]
FRAME_COLUMNS = [*META, "dataset_sha256", "source", *SOURCE_COLUMNS, "metric"]
FRAME_COLUMNS += ["conv_id", "lang", "turn", "value"]
TABLE_COLUMNS = [
    "run_id",
    "run_label",
    "model",
    "provenance",
    "speaker",
    "source",
    *SOURCE_COLUMNS,
    "metric",
    "turn",
    "pairs",
    "en",
    "ko",
    "gap",
    "ci_low",
    "ci_high",
    "ci_note",
    "dataset_sha256",
]


def turn_frame(
    store: Store, judge: JudgeConfig | None = None, study_id: int | None = None
) -> pd.DataFrame:
    """Long-form scores of episode Listener turns: one row per (run, dialogue, language,
    turn, source, metric). Leave ``judge`` or ``study_id`` out to leave that source out;
    emotion recognition always comes (the runs' own answers)."""
    episodes = Episodes(store)
    runs = episodes.runs()
    if runs.empty:
        return pd.DataFrame(columns=FRAME_COLUMNS)
    parts = []
    if judge is not None:
        judged = episodes.turn_scores(judge)
        parts.append(judged.assign(source="judge", **judge.as_columns()))
    if study_id is not None:
        parts.append(episodes.turn_ratings(study_id).assign(source="raters", study_id=study_id))
    parts += emotion_parts(episodes.turn_emotions())
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=FRAME_COLUMNS)
    frame = pd.concat(parts, ignore_index=True)
    for column in SOURCE_COLUMNS:
        if column not in frame:
            frame[column] = None
    meta = runs.assign(run_label=runs["run_id"].map(run_labels(store)))
    merged = frame.merge(meta.drop(columns=["created", "reference"]), on="run_id", how="inner")
    if merged.empty:
        return pd.DataFrame(columns=FRAME_COLUMNS)
    merged["turn"] = merged["turn"].astype(int)
    return merged[FRAME_COLUMNS]


def turn_gap_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per episode run x source x metric x turn: en, ko, the paired gap and its
    95% CI, over the dialogues that reached that turn in both languages."""
    if frame.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    rows = []
    for (turn, run_id), cell in frame.groupby(["turn", "run_id"], sort=True):
        table = gap_table(cell.drop(columns=["turn", "speaker", "turns"]))
        if table.empty:
            continue
        first = cell.iloc[0]
        rows.append(table.assign(turn=int(turn), speaker=first["speaker"], run_id=run_id))
    if not rows:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    table = pd.concat(rows, ignore_index=True)
    return table[TABLE_COLUMNS].sort_values(["run_label", "source", "metric", "turn"])


def to_markdown(table: pd.DataFrame, title: str) -> str:
    """The gap over turns as a Markdown table: a row per run, source and metric, a column
    per turn ("gap [CI low, high] (pairs)"). Names are one line of text, markup escaped."""
    md = plain_text.markdown
    if table.empty:
        return f"## {md(title)}\n\nNo episode with scores in both languages yet.\n"
    turns = sorted(int(t) for t in table["turn"].unique())
    lines = [
        f"## {md(title)}",
        "",
        "| run | source | metric | " + " | ".join(f"turn {t}" for t in turns) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in turns) + " |",
    ]
    for (label, source, metric), rows in table.groupby(["run_label", "source", "metric"]):
        by_turn = rows.set_index("turn")
        cells = []
        for t in turns:
            if t not in by_turn.index:
                cells.append("")
                continue
            row = by_turn.loc[t]
            ci = (
                f" [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]" if pd.notna(row["ci_low"]) else ""
            )
            cells.append(f"{row['gap']:+.2f}{ci} ({int(row['pairs'])})")
        names = " | ".join(md(name) for name in (label, source, metric))
        lines.append(f"| {names} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


UNDERSTANDING_COLUMNS = [
    "run_id",
    "run_label",
    "lang",
    "episodes",
    "named_at_first",
    "named_at_last",
    "came_to_it",
    "lost_it",
    "speaker",
    "dataset_sha256",
]


def understanding(store: Store, run_ids: list[str] | None = None) -> pd.DataFrame:
    """Did the Listener come to understand what the Speaker felt? Per episode run and
    language, over episodes with an emotion answer at their first and last Listener
    turns: the share naming a gold label at the first turn and at the last, the share of
    those missed at first that had it by the end (``came_to_it``), and of those right at
    first that lost it (``lost_it``); None where no episode was missed (or right) at first.
    Emotion recognition here is the paper's reading (single: a hit; multi: F1 > 0)."""
    emotions = Episodes(store).turn_emotions()
    if run_ids is not None and not emotions.empty:
        emotions = emotions[emotions["run_id"].isin(run_ids)]
    if emotions.empty:
        return pd.DataFrame(columns=UNDERSTANDING_COLUMNS)
    emotions = emotions.assign(named=emotions["value"].fillna(0) > 0)
    ordered = emotions.sort_values("turn")
    ends = ordered.groupby(["run_id", "lang", "conv_id"])["named"].agg(["first", "last", "size"])
    ends = ends[ends["size"] > 1].reset_index()
    labels = run_labels(store)
    runs = Episodes(store).runs().set_index("run_id")
    rows = []
    for (run_id, lang), cell in ends.groupby(["run_id", "lang"]):
        missed, right = cell[~cell["first"]], cell[cell["first"]]
        rows.append(
            {
                "run_id": run_id,
                "run_label": labels.get(str(run_id), str(run_id)),
                "lang": lang,
                "episodes": len(cell),
                "named_at_first": float(cell["first"].mean()),
                "named_at_last": float(cell["last"].mean()),
                "came_to_it": float(missed["last"].mean()) if len(missed) else None,
                "lost_it": float((~right["last"]).mean()) if len(right) else None,
                "speaker": runs["speaker"].get(run_id),
                "dataset_sha256": runs["dataset_sha256"].get(run_id),
            }
        )
    return pd.DataFrame(rows, columns=UNDERSTANDING_COLUMNS)
