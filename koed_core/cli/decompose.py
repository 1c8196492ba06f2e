"""``koed gap --decompose``: the gap split into the language effect and the content effect
(issue 65), over runs that answered the four cells (ko, en, en-from-ko, ko-from-en)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from koed_core.config import Settings
from koed_core.errors import KoedError

SOURCES = {"judge": "judge", "human": "raters"}
"""The estimator's name on the command line -> the source of its scores."""


def cmd_decompose(args: argparse.Namespace, settings: Settings) -> int:
    """Print (or --json) the four cells and every effect per model and metric."""
    from koed_core.db import Runs, Store
    from koed_core.results import decompose, gaps

    if not args.run:
        raise KoedError("--decompose needs the runs to split: --run RUN (one or more)")
    estimator = args.estimator or "judge"
    if estimator == "ppi":
        raise KoedError(
            "--decompose takes --estimator judge or human; PPI++ for the four cells is not "
            "built yet"
        )
    store = Store(args.db or settings.db_path)
    known = set(Runs(store).run_table()["run_id"])
    absent = [r for r in args.run if r not in known]
    if absent:
        raise KoedError(f"no run {absent[0]} in {store.name} (run ids are on the Runs page)")
    frame = gaps.score_frame(store, **_source(store, args, estimator))
    try:
        part = decompose.runs_frame(frame, list(args.run), SOURCES[estimator])
        result = decompose.decompose(part)
    except ValueError as err:
        raise KoedError(str(err)) from None
    runs = {str(m): sorted(set(p["run_id"])) for m, p in part.groupby("model")}
    if args.json:
        print(json.dumps(decompose.as_json(result, runs), ensure_ascii=False, indent=1))
        return 0 if not result.effects.empty else 1
    if result.effects.empty:
        print(
            "no dialogue of these runs is scored in all four cells (ko, en, en-from-ko, "
            "ko-from-en): run the missing ones with --lang and score them",
            file=sys.stderr,
        )
        return 1
    _print(result)
    return 0


def _source(store: Any, args: argparse.Namespace, estimator: str) -> dict[str, Any]:
    from koed_core.results import score_sources

    if estimator == "human":
        study = score_sources.choose_study(store, args.study)
        if study is None:
            raise KoedError("no human ratings yet: build a study and rate, then run this again")
        return {"study_id": study}
    choice = score_sources.choose_judge(
        store,
        list(args.run),
        model=args.judge,
        mode=args.mode,
        prompt_version=args.prompt_version,
        template=args.template,
        parse=args.parse,
    )
    if choice is None:
        raise KoedError("these runs are not judged yet: run `koed judge --run RUN` first")
    print(f"judge: {choice.config.label}", file=sys.stderr)
    return {"judge": choice.config}


def _print(result: Any) -> None:
    print("Language or culture? Paired by dialogue over the four cells, 95% bootstrap interval")
    print("total gap = language effect (Western content) + content effect (Korean)")
    print("          = content effect (English) + language effect (Korean content)")
    for (model, metric), part in result.effects.groupby(["model", "metric"], sort=True):
        cells = result.cells[(result.cells["model"] == model) & (result.cells["metric"] == metric)]
        means = "  ".join(f"{r.lang} {r.mean:.3f}" for r in cells.itertuples())
        print(f"\n{model} · {metric} · {int(part['n'].iloc[0])} dialogues: {means}")
        for row in part.itertuples():
            name = f"{row.effect} ({row.held_fixed})" if row.held_fixed else row.effect
            interval = (
                f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]" if row.ci_low is not None else "no CI"
            )
            print(f"  {name:<45} {row.estimate:+.3f}  {interval}")
