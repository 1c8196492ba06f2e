"""``koed gap --decompose``: the gap split into the language effect and the content effect
(issue 65), over runs that answered the four cells (ko, en, en-from-ko, ko-from-en), from
the judge's scores, people's (a study's ratings) or PPI++ (the judge corrected by
people, :mod:`koed_core.results.decompose_ppi`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from koed_core.config import Settings
from koed_core.errors import KoedError

SOURCES = {"judge": "judge", "human": "raters"}
"""The estimator's name on the command line -> the source of its scores."""
WORDS = {
    "judge": "judge only",
    "human": "people only",
    "ppi": "PPI++ (the judge corrected by people)",
}
"""How each estimator is named in the output: PPI always says it is PPI."""


def cmd_decompose(args: argparse.Namespace, settings: Settings) -> int:
    """Print (or --json) the four cells and every effect per model and metric."""
    from koed_core.db import Runs, Store
    from koed_core.results import decompose, gaps

    if not args.run:
        raise KoedError("--decompose needs the runs to split: --run RUN (one or more)")
    estimator = args.estimator or "judge"
    store = Store(args.db or settings.db_path)
    known = set(Runs(store).run_table()["run_id"])
    absent = [r for r in args.run if r not in known]
    if absent:
        raise KoedError(f"no run {absent[0]} in {store.name} (run ids are on the Runs page)")
    source = _source(store, args, estimator)
    frame = gaps.score_frame(store, **source)
    try:
        if estimator == "ppi":
            part, result = _ppi(store, frame, list(args.run), source["study_id"])
        else:
            part = decompose.runs_frame(frame, list(args.run), SOURCES[estimator])
            result = decompose.decompose(part)
    except ValueError as err:
        raise KoedError(str(err)) from None
    runs = {str(m): sorted(set(p["run_id"])) for m, p in part.groupby("model")}
    if args.json:
        found = [d | {"estimator": estimator} for d in decompose.as_json(result, runs)]
        if "N_judge" in result.effects:  # PPI++: the dialogues the judge scored, too
            judged = result.effects.groupby(["model", "metric"])["N_judge"].first()
            for d in found:
                d["dialogues_judged"] = int(judged[(d["model"], d["metric"])])
        print(json.dumps(found, ensure_ascii=False, indent=1))
        return 0 if not result.effects.empty else 1
    if result.effects.empty:
        print(
            "no dialogue of these runs is scored in all four cells (ko, en, en-from-ko, "
            "ko-from-en) by this source: run the missing ones with --lang and score them"
            + (" (PPI++: judged, and rated in the study)" if estimator == "ppi" else ""),
            file=sys.stderr,
        )
        return 1
    _print(result, estimator)
    return 0


def _ppi(store: Any, frame: Any, run_ids: list[str], study_id: int) -> tuple[Any, Any]:
    """The judge's and the study's scores of the runs, and their PPI++ split."""
    import pandas as pd

    from koed_core.rating.sampling import refusal
    from koed_core.rating.studies import StudyRules
    from koed_core.results import decompose, decompose_ppi

    judged = decompose.runs_frame(frame, run_ids, "judge")
    try:
        rated = decompose.runs_frame(frame, run_ids, "raters")
    except ValueError:
        raise ValueError(
            f"study {study_id} has no ratings of run {run_ids[0]}: PPI++ needs a study built "
            "on these runs, its replies rated in the four cells"
        ) from None
    sampling = StudyRules(store).config(study_id).sampling
    found = decompose_ppi.decompose_ppi(
        pd.concat([judged, rated]), dict(sampling.strata), refusal(sampling)
    )
    return judged, found


def _source(store: Any, args: argparse.Namespace, estimator: str) -> dict[str, Any]:
    from koed_core.results import score_sources

    found: dict[str, Any] = {}
    if estimator in ("human", "ppi"):
        study = score_sources.choose_study(store, args.study)
        if study is None:
            raise KoedError("no human ratings yet: build a study and rate, then run this again")
        print(f"people: {score_sources.study_label(store, study)}", file=sys.stderr)
        found["study_id"] = study
        if estimator == "human":
            return found
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
    return found | {"judge": choice.config}


def _print(result: Any, estimator: str) -> None:
    interval = "PPI++ normal" if estimator == "ppi" else "bootstrap"
    print(
        f"Language or culture? {WORDS[estimator]}, paired by dialogue over the four cells, "
        f"95% {interval} interval"
    )
    if estimator == "ppi":
        print(
            "dialogues: rated in all four cells (n) / judged in all four (N); valid only if "
            "the rated ones are a random sample of the judged"
        )
    print("total gap = language effect (Western content) + content effect (Korean)")
    print("          = content effect (English) + language effect (Korean content)")
    for (model, metric), part in result.effects.groupby(["model", "metric"], sort=True):
        cells = result.cells[(result.cells["model"] == model) & (result.cells["metric"] == metric)]
        means = "  ".join(f"{r.lang} {_number(r.mean, '.3f')}" for r in cells.itertuples())
        count = f"{int(part['n'].iloc[0])}"
        if "N_judge" in part:
            count = f"n {count} / N {int(part['N_judge'].iloc[0])}"
        print(f"\n{model} · {metric} · {count} dialogues: {means}")
        for row in part.itertuples():
            name = f"{row.effect} ({row.held_fixed})" if row.held_fixed else row.effect
            interval = f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]" if _known(row.ci_low) else "no CI"
            note = f"  {row.note}" if getattr(row, "note", "") else ""
            print(f"  {name:<45} {_number(row.estimate, '+.3f')}  {interval}{note}")


def _known(value: Any) -> bool:
    return value is not None and value == value  # NaN from a frame is not a number


def _number(value: Any, spec: str) -> str:
    return format(value, spec) if _known(value) else "-"
