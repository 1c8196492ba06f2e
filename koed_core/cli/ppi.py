"""``koed gap`` (the gap three ways: judge only, people only, PPI++) and ``koed study plan``
(how many more ratings reach an interval width, and the next batch of dialogues)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from koed_core.cli.common import add_judge_choice, positive_int
from koed_core.config import Settings
from koed_core.errors import KoedError

SHOWN = ["run_label", "metric", "quantity", "estimate", "ci_low", "ci_high"]
COUNTS = ["n_people", "N_judge", "n_effective", "judge_worth_ratings", "gain", "gain_ceiling"]
COUNTS += ["gain_limit", "note"]


def _width(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 8:
        raise argparse.ArgumentTypeError(f"an interval width is above 0 and below 8, not {text}")
    return value


def register_gap(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed gap"""
    gap = groups.add_parser(
        "gap", help="the gap of one study's runs: judge only, people only or PPI++"
    )
    gap.add_argument("--study", type=positive_int, help="study id (default: last rated)")
    add_judge_choice(gap)
    gap.add_argument(
        "--estimator",
        choices=["judge", "human", "ppi"],
        help="default ppi (with --decompose: judge)",
    )
    gap.add_argument(
        "--decompose",
        action="store_true",
        help="split the gap into language and content effects over the runs' four cells "
        "(ko, en, en-from-ko, ko-from-en)",
    )
    gap.add_argument("--run", action="append", help="with --decompose: a run (repeatable)")
    gap.add_argument("--json", action="store_true")
    gap.add_argument("--db", type=Path)
    gap.set_defaults(func=cmd_gap)


def register_plan(study: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed study plan"""
    plan = study.add_parser(
        "plan", help="more ratings for a gap's interval width, with PPI++ and people alone"
    )
    plan.add_argument("--study", type=positive_int, required=True)
    add_judge_choice(plan)
    plan.add_argument("--width", type=_width, required=True, help="the 95%% interval's width")
    plan.add_argument(
        "--build", action="store_true", help="add the next batch of dialogues to the study"
    )
    plan.add_argument(
        "--people-alone", action="store_true", help="size the batch for people alone, not PPI++"
    )
    plan.add_argument(
        "--assured",
        action="store_true",
        help="size the batch to meet the width in 90%% of studies, not on average",
    )
    plan.add_argument(
        "--active",
        action="store_true",
        help="with --build: draw the batch with known probabilities favouring the dialogues "
        "the judge is least sure of (its strict-mode samples), stored with the study",
    )
    plan.add_argument(
        "--against",
        metavar="JUDGE_MODEL",
        help="with --active: judge uncertainty as disagreement with this judge model's scores",
    )
    plan.add_argument("--db", type=Path)
    plan.set_defaults(func=cmd_plan)


def _choose(args: argparse.Namespace, settings: Settings):  # type: ignore[no-untyped-def]
    from koed_core.db import Store
    from koed_core.results import score_sources

    store = Store(args.db or settings.db_path)
    study = score_sources.choose_study(store, args.study)
    if study is None:
        raise KoedError("no human ratings yet: build a study and rate, then run this again")
    choice = score_sources.choose_judge(
        store,
        score_sources.study_runs(store, study),
        model=args.judge,
        mode=args.mode,
        prompt_version=args.prompt_version,
        template=args.template,
        parse=args.parse,
    )
    if choice is None:
        raise KoedError(f"no judge configuration scored study {study}'s runs: judge them first")
    return store, study, choice


def cmd_gap(args: argparse.Namespace, settings: Settings) -> int:
    """Print one estimator's table (every run, dimension; en, ko and the gap)."""
    from koed_core.results import ppi_table, score_sources

    if args.decompose:
        from koed_core.cli.decompose import cmd_decompose

        return cmd_decompose(args, settings)
    args.estimator = args.estimator or "ppi"
    store, study, choice = _choose(args, settings)
    result = ppi_table.gap_estimates(store, study, choice.config)
    rows = ppi_table.for_estimator(result, args.estimator)
    if args.json:
        print(rows.to_json(orient="records", force_ascii=False))
        return 0
    print(f"{ppi_table.ESTIMATOR_WORDS[args.estimator]}: Korean minus English, 95% interval")
    print(score_sources.study_label(store, study), "·", result.provenance["study_sampling"])
    print(f"judge: {choice.config.label}")
    print(f"people: {ppi_table.ITEM_SCORE}; ppi-python {result.provenance['ppi_python']}")
    if args.estimator == "ppi" and result.refusal:
        print(result.refusal)
    if rows.empty:
        print("no run of this study has both judge scores and ratings", file=sys.stderr)
        return 1
    print(
        rows[SHOWN + COUNTS].to_string(
            index=False, float_format=lambda v: f"{v:.3f}", na_rep="-", max_colwidth=48
        )
    )
    return 0


def cmd_plan(args: argparse.Namespace, settings: Settings) -> int:
    """Print the plan per gap; with --build, add the next batch of dialogues."""
    from koed_core.models.runs import run_labels
    from koed_core.rating import sampling
    from koed_core.rating.studies import StudyRules
    from koed_core.results import ppi_plan

    store, study, choice = _choose(args, settings)
    table = ppi_plan.plan(store, study, choice.config, args.width)
    labels = run_labels(store)
    shown = table.assign(run=table["run_id"].map(labels).str.slice(0, 40))
    columns = ["run", "metric", "rated_now", "judged", "ppi_corr", "people_needed"]
    columns += ["people_needed_90", "people_needed_low", "people_needed_high", "ppi_needed"]
    columns += ["ppi_needed_90", "gain_planned", "gain_ceiling", "more_ratings_people"]
    columns += ["more_ratings_ppi", "note"]
    print(f"study {study}, judge {choice.config.label}, 95% interval width {args.width} per gap")
    print("dialogues rated so far (both languages), and what each gap needs:")
    print(shown[columns].to_string(index=False, float_format=lambda v: f"{v:.2f}", na_rep="-"))
    overlap = StudyRules(store).config(study).overlap
    refused = sampling.refusal(StudyRules(store).config(study).sampling)
    for with_ppi, name in ((True, "with PPI++"), (False, "for people alone")):
        if not ppi_plan.has_round(table, with_ppi):
            print(f"next batch {name}: none ({refused or 'no gap has a plan'})")
            continue
        size = ppi_plan.next_round_size(table, with_ppi)
        sure = ppi_plan.next_round_size(table, with_ppi, assured=True)
        print(
            f"next batch {name}: {size} dialogues ({size * 2 * overlap} ratings); "
            f"{sure} to meet the width in 90% of studies"
        )
    print(
        "the sizes meet the width on average: about half of studies of that size end a "
        "little wider (people_needed_90: in 90%); people_needed_low-high: n0 over the "
        "pilot sd's 95% interval"
    )
    gone = ppi_plan.unreachable(table)
    if gone:
        print(f"{gone} gaps cannot meet this width however many dialogues are rated (see note)")
    if args.build:
        args.judge_config = choice.config  # what an active batch reads the uncertainty of
        return _build(args, store, study, table, refused)
    return 0


def _build(args: argparse.Namespace, store, study: int, table, refused: str | None) -> int:  # type: ignore[no-untyped-def]
    """Add the next batch: never "nothing to add" where the plan has no batch to give."""
    from koed_core.rating import growth, sampling
    from koed_core.rating.studies import StudyRules
    from koed_core.results import ppi_plan

    with_ppi = not args.people_alone
    if not ppi_plan.has_round(table, with_ppi):
        reason = refused if with_ppi and refused else "no gap has a plan at this width"
        hint = "; --people-alone sizes it for people alone" if with_ppi else ""
        print(f"no batch added: {reason}{hint}", file=sys.stderr)
        return 1
    more = ppi_plan.next_round_size(table, with_ppi, assured=args.assured)
    if more == 0:
        print("nothing to add: every gap within reach meets the width already")
        return 0
    if args.active:
        return _build_active(args, store, study, more)
    config, added = growth.add_round(StudyRules(store), study, more)
    print(f"added {len(added)} dialogues; {sampling.describe(config.sampling)}")
    return 0


def _build_active(args: argparse.Namespace, store, study: int, more: int) -> int:  # type: ignore[no-untyped-def]
    """Add an active batch of about ``more`` dialogues and say what it stored."""
    from koed_core.rating import sampling
    from koed_core.results import active_batch, score_sources

    second = None
    if args.against:
        found = score_sources.choose_judge(
            store, score_sources.study_runs(store, study), model=args.against
        )
        if found is None:
            raise KoedError(f"no judge configuration of {args.against} scored study {study}'s runs")
        second = found.config
    batch = active_batch.add_active_batch(store, study, args.judge_config, more, second)
    probs = batch.rows["probability"]
    print(
        f"added {len(batch.added)} dialogues (expected {more}), drawn with known probabilities "
        f"from {batch.source}; inclusion probabilities {probs.min():.3f}-{probs.max():.3f} "
        f"stored for {len(probs)} dialogues; {sampling.describe(batch.config.sampling)}"
    )
    return 0
