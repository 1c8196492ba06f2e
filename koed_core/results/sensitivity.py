"""What moves the gap: the KoED-ED gap under the authors' pipeline and under each step
changed alone, with the change's paired difference and its bootstrap CI.

A *source* is one run judged under one judge configuration. The base is the authors'
pipeline; a variant differs from it in one step (a run setting, or the judge's template
or parser). For every metric the gap per dialogue is ko minus en; a variant's change is
the mean over dialogues (present in both) of its per-dialogue gap minus the base's, and
its CI resamples those dialogues. Nothing is averaged across sources.

A table shows many changes at once (seven variants x seven metrics): each 95% CI alone
excludes 0 by chance one time in twenty. So each change also carries a two-sided
bootstrap p-value (from the same resamples as its CI) and that p-value Holm-adjusted over
every change of the table's base (``change_p_holm``, statsmodels): a change is read as
real where the adjusted value is below 0.05.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from koed_core.bootstrap import bootstrap_means
from koed_core.db import JudgeConfig, Judgments, Runs, Store
from koed_core.db.emotion_queries import without_emotion_score
from koed_core.judge.rubric import codes
from koed_core.models.prompts import load_prompt_set
from koed_core.results import gaps
from koed_core.run_steps import declared, earlier_steps, judged_same, stored_steps
from koed_core.text import plain_text

BASE = "authors' pipeline"
NOISE_FLOOR = "base, judged again"
"""The base's own answers judged a second time by the same judge configuration: the change
every other row should be read against (at temperature 0.7 a judge does not give the same
verdict twice; with a deterministic judge the row is exactly 0)."""
NOISE_FLOOR_RUN = "base, run again"
"""The base made again with nothing changed and judged: the listener's and the judge's
sampling noise together, the yardstick for a variant that is a run of its own."""
NOISE_FLOORS = (NOISE_FLOOR, NOISE_FLOOR_RUN)
DECODING = ("temperature", "top_p", "top_k", "repetition_penalty")


def run_steps() -> dict[str, tuple[str, ...]]:
    """Each run setting a variant may change, by the name its rows carry, with the
    stored keys that make it up: every declared pipeline step under its own words."""
    return {
        "run again": ("replicate",),
        "prompt set": ("prompt_set", "prompt_version"),
        **{s.said: (s.name,) for s in declared()},
        "decoding": DECODING,
    }


def earlier() -> dict[str, Any]:
    """How a run made before a setting was a choice reads it (its config has no key)."""
    return {"replicate": 0, "prompt_set": "native", **earlier_steps()}


def _is_authors(config: Mapping[str, Any]) -> bool:
    """Whether a stored run took the authors' step at every pipeline step (either of
    their values where a step has two: their open models' literal repr, say)."""
    if config.get("prompt_set") != "paper":
        return False
    chosen = stored_steps(config)
    return all(chosen[s.name] in s.authors for s in declared())


PROMPT_SET_VARIANTS = {
    "paper-ko": "instruction language: Korean",
    "native": (
        "prompt set: native (one call, own wording, Korean role names: several steps at once)"
    ),
}
"""A run with another prompt set, named for what it changes: ``paper-ko`` the instruction
language alone; any other set more than one step (never "one step changed alone")."""
COLUMNS = [
    "model",
    "protocol",
    "variant",
    "metric",
    "pairs",
    "gap",
    "ci_low",
    "ci_high",
    "change",
    "change_ci_low",
    "change_ci_high",
    "change_p",
    "change_p_holm",
    "run_id",
    *JudgeConfig("", "", "", "").as_columns(),
    "note",
]


@dataclass(frozen=True)
class Source:
    """One run under one judge configuration: where a variant's numbers come from."""

    run_id: str
    judge: JudgeConfig | None


def _per_dialogue_gap(frame: pd.DataFrame, run_id: str, metric: str) -> pd.Series:
    mine = frame[(frame["run_id"] == run_id) & (frame["metric"] == metric)]
    wide = mine.pivot_table(index="conv_id", columns="lang", values="value", aggfunc="mean")
    if not {"en", "ko"} <= set(wide.columns):
        return pd.Series(dtype=float)
    both = wide.dropna(subset=["en", "ko"])
    return both["ko"] - both["en"]


def table(
    store: Store,
    variants: Mapping[str, Source],
    model: str = "",
    protocol: str = "",
    base: str = BASE,
) -> pd.DataFrame:
    """One row per variant and metric: the gap (KoED minus ED) with its CI, and for each
    variant its paired change from the base with the change's CI. ``model`` and
    ``protocol`` default to the base run's."""
    stored = Runs(store).run_config(variants[base].run_id) if base in variants else None
    if stored and not model:
        model = str(stored[0].get("model_name", ""))
    if stored and not protocol:
        protocol = str(stored[0].get("protocol", ""))
    frames: dict[JudgeConfig | None, pd.DataFrame] = {}

    def frame_of(judge: JudgeConfig | None) -> pd.DataFrame:
        if judge not in frames:
            frames[judge] = gaps.score_frame(store, judge=judge)
        return frames[judge]

    metrics = [*codes(), gaps.EMOTION_METRIC, gaps.EMOTION_ANSWERED]
    base_source = variants[base]
    rows: list[dict[str, Any]] = []
    for name, source in variants.items():
        frame = frame_of(source.judge)
        base_frame = frame_of(base_source.judge)
        for metric in metrics:
            mine = (
                pd.Series(dtype=float)
                if metric in codes() and source.judge is None
                else _per_dialogue_gap(frame, source.run_id, metric)
            )
            if mine.empty:  # said, never dropped: a variant all unscored is a result too
                rows.append(_empty_row(store, source, name, metric, model, protocol))
                continue
            zeros = np.zeros(len(mine))
            gap, low, high = gaps.paired_gap(zeros, mine.to_numpy())
            row: dict[str, Any] = {
                "model": model,
                "protocol": protocol,
                "variant": name,
                "metric": metric,
                "pairs": len(mine),
                "gap": gap,
                "ci_low": low,
                "ci_high": high,
                "run_id": source.run_id,
                **(source.judge.as_columns() if source.judge and metric in codes() else {}),
            }
            if name != base:
                theirs = _per_dialogue_gap(base_frame, base_source.run_id, metric)
                shared = mine.index.intersection(theirs.index)
                if len(shared):
                    before, after = theirs[shared].to_numpy(), mine[shared].to_numpy()
                    change, c_low, c_high = gaps.paired_gap(before, after)
                    row.update(change=change, change_ci_low=c_low, change_ci_high=c_high)
                    row["change_p"] = change_p(before, after)
                    if _fixed(store, base_source, source, metric):
                        row["note"] = FIXED  # out of Holm's family: it cannot move
            rows.append(row)
    out = _holm(pd.DataFrame(rows))
    for column in COLUMNS:
        if column not in out:
            out[column] = None
    return out[COLUMNS]


def _empty_row(
    store: Store, source: Source, name: str, metric: str, model: str, protocol: str
) -> dict[str, Any]:
    """A variant x metric with no dialogue scored in both languages, saying why."""
    if metric in codes() and source.judge is None:
        note = "not judged"
    else:
        note = f"no scored pairs ({unscored(store, source, metric)} unscored)"
    return {
        "model": model,
        "protocol": protocol,
        "variant": name,
        "metric": metric,
        "pairs": 0,
        "run_id": source.run_id,
        "note": note,
        **(source.judge.as_columns() if source.judge and metric in codes() else {}),
    }


def unscored(store: Store, source: Source, metric: str) -> int:
    """How many of the source's answers have no number for ``metric``: rubric tasks whose
    every attempt the judge left unscored, or answers with no emotion score (failed)."""
    if metric in codes():
        if source.judge is None:
            return 0
        return Judgments(store).unscored_tasks(source.run_id, source.judge, metric)
    return without_emotion_score(
        store, source.run_id, answered_only=metric == gaps.EMOTION_ANSWERED
    )


FIXED = "zero by construction: the base's own numbers (left out of Holm's family)"


def _fixed(store: Store, base: Source, source: Source, metric: str) -> bool:
    """Whether a change is zero by construction: emotion recognition of the base's own
    run (a variant of the judge alone), or a rubric score whose verdicts are the base's
    own (a variant that reads the answers another way and judges the same texts: the
    emotion reader)."""
    if metric not in codes():
        return source.run_id == base.run_id
    if source.run_id == base.run_id or source.judge != base.judge:
        return False
    mine, theirs = Runs(store).run_config(source.run_id), Runs(store).run_config(base.run_id)
    if mine is None or theirs is None:
        return False
    differ = {k for k in set(mine[0]) | set(theirs[0]) if mine[0].get(k) != theirs[0].get(k)}
    return judged_same(differ)


def change_p(before: np.ndarray, after: np.ndarray, seed: int = 0) -> float | None:
    """Two-sided bootstrap p-value of "no change", from the very resamples of the change's
    CI (``gaps.paired_gap``, same seed): twice the share of resampled means on the far
    side of 0. None where there is no CI (too few pairs)."""
    diffs = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if len(diffs) < gaps.MIN_PAIRS_FOR_CI:
        return None
    means = bootstrap_means(diffs, seed)
    return float(min(1.0, 2 * min((means <= 0).mean(), (means >= 0).mean())))


def _holm(frame: pd.DataFrame) -> pd.DataFrame:
    """``change_p`` Holm-adjusted over the changes of one model and protocol's table that
    can move (one zero by construction is left out: it would only inflate the family)."""
    from statsmodels.stats.multitest import multipletests

    if frame.empty or "change_p" not in frame:
        return frame
    frame = frame.assign(change_p_holm=None)
    fixed = frame["note"] == FIXED if "note" in frame else pd.Series(False, index=frame.index)
    for _key, part in frame[~fixed].groupby(["model", "protocol"], dropna=False):
        tested = part["change_p"].dropna()
        if len(tested):
            adjusted = multipletests(tested.to_numpy(dtype=float), method="holm")[1]
            frame.loc[tested.index, "change_p_holm"] = adjusted
    return frame


def _steps(config: Mapping[str, Any]) -> dict[str, Any]:
    before = earlier()
    return {
        key: config.get(key, before.get(key)) for group in run_steps().values() for key in group
    }


def _name(group: str, config: Mapping[str, Any]) -> str:
    if group == "run again":
        return NOISE_FLOOR_RUN
    if group == "decoding":
        temp = config.get("temperature")
        return "decoding: server default" if temp is None else f"decoding: T={temp:g}"
    key = run_steps()[group][0]
    value = config.get(key, earlier().get(key))
    if group == "prompt set":
        return PROMPT_SET_VARIANTS.get(str(value), f"prompt set: {value} (several steps at once)")
    return f"{group}: {value}"


def find_variants(store: Store, run_id: str, judge: JudgeConfig) -> dict[str, Source]:
    """The base (this run under this judge) and every stored source differing from it in
    exactly one step: runs of the same model, protocol and data changing one run setting
    and judged by the same configuration, and judge configurations of the same model and
    mode that judged this run with one other template or parser."""
    runs = Runs(store).run_table(kind="batch")
    configs = {r["run_id"]: json.loads(r["config"]) for r in runs.to_dict("records")}
    if run_id not in configs:
        return {}
    base = configs[run_id]
    found: dict[str, Source] = {BASE: Source(run_id, judge)}
    judged = Judgments(store)
    for other, config in configs.items():
        if other == run_id or any(
            config.get(k) != base.get(k) for k in ("model_name", "protocol", "dataset_sha256")
        ):
            continue
        theirs, ours = _steps(config), _steps(base)
        changed = [
            group for group, keys in run_steps().items() if any(theirs[k] != ours[k] for k in keys)
        ]
        fixed_same = all(
            config.get(k, "open") == base.get(k, "open") for k in ("family",)
        ) and config.get("max_tokens") == base.get("max_tokens")
        if (
            len(changed) == 1
            and fixed_same
            and any(use.config == judge for use in judged.configs([other]))
        ):
            found[_name(changed[0], config)] = Source(other, judge)
    for use in judged.configs([run_id]):
        other_judge = use.config
        if other_judge == judge or (other_judge.model, other_judge.mode) != (
            judge.model,
            judge.mode,
        ):
            continue
        if other_judge.replicate != judge.replicate:
            if replace(other_judge, replicate=judge.replicate) == judge:
                found.setdefault(NOISE_FLOOR, Source(run_id, other_judge))
            continue
        if other_judge.template != judge.template and other_judge.parse == judge.parse:
            found[f"judge template: {other_judge.template}"] = Source(run_id, other_judge)
        elif other_judge.parse != judge.parse and other_judge.template == judge.template:
            found[f"judge parse: {other_judge.parse}"] = Source(run_id, other_judge)
    return found


def bases(store: Store) -> list[tuple[str, JudgeConfig]]:
    """(run, judge configuration) pairs with the authors' steps and at least one variant
    stored: what the Gap page offers as a base, most recent run first."""
    runs = Runs(store).run_table(kind="batch")
    out: list[tuple[int, str, JudgeConfig]] = []
    shipped = load_prompt_set("paper").version
    for row in reversed(runs.to_dict("records")):
        config = json.loads(row["config"])
        if not _is_authors(config):
            continue
        if config.get("temperature") is None:
            continue  # the authors always decoded as the model says: never the server's
        if config.get("replicate"):
            continue  # a base made again is the noise floor, never a base
        if config.get("prompt_version") != shipped:
            continue  # own wording under the paper set's name is a variant, not the base
        for use in Judgments(store).configs([row["run_id"]]):
            if (use.config.template, use.config.parse, use.config.replicate) != (
                "authors",
                "authors",
                0,
            ):
                continue
            variants = len(find_variants(store, row["run_id"], use.config))
            if variants > 1:
                out.append((variants, str(row["run_id"]), use.config))
    # the base with the most variants first (the one a sensitivity plan made); stable
    out.sort(key=lambda found: -found[0])
    return [(run_id, judge) for _, run_id, judge in out]


def to_markdown(frame: pd.DataFrame, title: str) -> str:
    """The table for a paper's appendix: gap and change with their CIs, two decimals.
    Names (the title, model, protocol, variant) are one line of text, markup escaped."""
    md = plain_text.markdown

    def ci(low: Any, high: Any) -> str:
        return "" if pd.isna(low) or pd.isna(high) else f"[{low:.2f}, {high:.2f}]"

    lines = [
        f"# {md(title)}",
        "",
        "| model | protocol | variant | metric | pairs | gap | 95% CI | change | 95% CI "
        "| p (Holm) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in frame.to_dict("records"):
        if pd.isna(r["gap"]):  # a variant x metric with nothing to pair still has its row
            lines.append(
                f"| {md(r['model'])} | {md(r['protocol'])} | {md(r['variant'])} "
                f"| {md(r['metric'])} | {r['pairs']} | {md(str(r.get('note') or ''))} "
                "| | | | |"
            )
            continue
        change = "" if pd.isna(r["change"]) else f"{r['change']:+.2f}"
        holm = r.get("change_p_holm")
        adjusted = "" if holm is None or pd.isna(holm) else f"{holm:.3f}"
        lines.append(
            f"| {md(r['model'])} | {md(r['protocol'])} | {md(r['variant'])} | {md(r['metric'])} "
            f"| {r['pairs']} "
            f"| {r['gap']:+.2f} | {ci(r['ci_low'], r['ci_high'])} | {change} "
            f"| {ci(r['change_ci_low'], r['change_ci_high'])} | {adjusted} |"
        )
    tested = int(frame["change_p_holm"].notna().sum()) if "change_p_holm" in frame else 0
    lines += [
        "",
        f"{tested} changes are shown. Each 95% CI holds for its own change only; across "
        f"{tested} of them some exclude 0 by chance. p (Holm) is each change's bootstrap "
        "p-value adjusted by Holm's method over all of them: read a change as real where it "
        "is below 0.05. A change zero by construction (the base's own numbers) is shown "
        "without one and left out of the family.",
    ]
    if NOISE_FLOOR_RUN in set(frame["variant"]):
        lines += [
            "",
            f'"{NOISE_FLOOR_RUN}" changes nothing: the base made again and judged again. Its '
            "change is the listener's and the judge's sampling noise together; read every "
            "variant that is a run of its own against it.",
        ]
    if NOISE_FLOOR in set(frame["variant"]):
        lines += [
            "",
            f'"{NOISE_FLOOR}" changes nothing: the base\'s answers judged a second time by '
            "the same judge configuration. Its change is the judge's own noise; read every "
            "other change against it.",
        ]
    return "\n".join(lines) + "\n"


def from_outcome(
    store: Store,
    variants: Mapping[str, tuple[Mapping[tuple[str, str], str], JudgeConfig | None]],
) -> pd.DataFrame:
    """A sensitivity plan's table: per model and protocol of its base, every variant."""
    base_runs, _ = variants[BASE]
    parts: Sequence[pd.DataFrame] = []
    for (model, protocol), _run in sorted(base_runs.items()):
        sources = {
            name: Source(runs[(model, protocol)], judge)
            for name, (runs, judge) in variants.items()
            if (model, protocol) in runs
        }
        made = table(store, sources, model, protocol)
        parts = [*parts, made.assign(base_run_id=sources[BASE].run_id)]
    if not parts:
        return pd.DataFrame(columns=[*COLUMNS, "base_run_id"])
    return pd.concat(parts, ignore_index=True)
