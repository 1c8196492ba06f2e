"""Episodes read whole: each episode run's whole-episode verdicts and its Speaker checks,
English and Korean side by side with the paired gap.

A whole-episode gap (five dimensions and "came to understand") is one outcome per
episode, where the gap over turns is one per Listener turn. The Speaker checks say how
well the simulated Speaker played each language's side (stays in the situation, keeps
the feeling unnamed, sounds native): a gap over turns where the Korean Speaker played
worse than the English one mixes the Listener's skill with the Speaker's. An oracle run
(the Listener told the situation and emotion) is the upper reference, flagged in
``oracle``. Each table names its judge configuration, runs and dataset sha256; nothing is
averaged across them.
"""

from __future__ import annotations

import pandas as pd

from koed_core.db import JudgeConfig, Runs, Store
from koed_core.db.episodes import Episodes
from koed_core.models.runs import run_labels
from koed_core.results.gaps import gap_table

COLUMNS = [
    "run_id",
    "run_label",
    "model",
    "speaker",
    "oracle",
    "metric",
    "pairs",
    "en",
    "ko",
    "gap",
    "ci_low",
    "ci_high",
    "ci_note",
    "judge_model",
    "judge_mode",
    "judge_prompt_version",
    "judge_rubric_version",
    "judge_replicate",
    "study_id",
    "dataset_sha256",
]


def _table(
    store: Store, scores: pd.DataFrame, config: JudgeConfig | None, study_id: int | None = None
) -> pd.DataFrame:
    if scores.empty:
        return pd.DataFrame(columns=COLUMNS)
    runs = Episodes(store).runs()
    meta = runs.assign(run_label=runs["run_id"].map(run_labels(store)))
    frame = scores.merge(
        meta[["run_id", "run_label", "model", "provenance", "protocol", "prompt_set"]].assign(
            dataset_sha256=runs["dataset_sha256"]
        ),
        on="run_id",
        how="inner",
    )
    if config is not None:
        frame = frame.assign(source="judge", **config.as_columns())
    else:
        frame = frame.assign(source="raters", study_id=study_id)
    table = gap_table(frame)
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    speakers = runs.set_index("run_id")["speaker"]
    oracles = {run_id for run_id, config in Episodes(store).run_configs() if config.get("oracle")}
    table = table.assign(
        speaker=table["run_id"].map(speakers),
        oracle=table["run_id"].isin(oracles),
    )
    for column in COLUMNS:
        if column not in table:
            table[column] = None
    return table[COLUMNS].reset_index(drop=True)


def whole_table(store: Store, config: JudgeConfig) -> pd.DataFrame:
    """Per episode run and metric (EX .. CA, UND): the whole-episode mean in English and
    Korean over the dialogues with both episodes judged, the paired gap and its CI."""
    return _table(store, Episodes(store).whole_scores(config), config)


def speaker_table(store: Store, config: JudgeConfig) -> pd.DataFrame:
    """Per episode run and check (SIT, HID, NAT): the Speaker's mean per dialogue in
    English and Korean, over dialogues checked in both, the paired gap and its CI."""
    return _table(store, Episodes(store).speaker_scores(config), config)


def rated_whole_table(store: Store, study_id: int) -> pd.DataFrame:
    """The same from a study of whole episodes: each episode's mean over its raters."""
    return _table(store, Episodes(store).rated_whole_scores(study_id), None, study_id)


def is_oracle(store: Store, run_id: str) -> bool:
    """Whether this episode run's Listener was told the situation (an oracle run is the
    upper reference for another run, never given one of its own)."""
    stored = Runs(store).run_config(run_id)
    return bool(stored is not None and stored[0].get("oracle"))


def oracle_for(store: Store, run_id: str) -> str | None:
    """The oracle run made beside an episode run (the same Listener, Speaker, turns,
    prompts, decoding and data; only the oracle differs), the most recent; None if none."""
    stored = Runs(store).run_config(run_id)
    if stored is None or stored[0].get("oracle"):
        return None
    mine = {k: v for k, v in stored[0].items() if k != "oracle"}
    found = None
    for other, config in Episodes(store).run_configs():
        if config.get("oracle") and {k: v for k, v in config.items() if k != "oracle"} == mine:
            found = other
    return found


def headroom(store: Store, config: JudgeConfig, run_id: str, oracle_id: str) -> pd.DataFrame:
    """Per dialogue and language: the run's whole-episode mean over the five dimensions,
    the oracle's, and the room between them (oracle minus run): the upper reference per
    dialogue."""
    scores = Episodes(store).whole_scores(config)
    columns = ["conv_id", "lang", "run", "oracle", "headroom"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    rubric = scores[scores["metric"] != "UND"]
    means = rubric.groupby(["run_id", "conv_id", "lang"])["value"].mean()
    if run_id not in means.index.get_level_values(0) or oracle_id not in (
        means.index.get_level_values(0)
    ):
        return pd.DataFrame(columns=columns)
    wide = pd.DataFrame({"run": means.loc[run_id], "oracle": means.loc[oracle_id]}).dropna()
    wide["headroom"] = wide["oracle"] - wide["run"]
    return wide.reset_index()[columns].sort_values(["conv_id", "lang"], ignore_index=True)


def configs(store: Store, mode: str) -> list[JudgeConfig]:
    """The configurations that judged episodes whole (``episode``) or checked Speakers
    (``speaker``), most recent first."""
    return Episodes(store).verdict_configs(mode)
