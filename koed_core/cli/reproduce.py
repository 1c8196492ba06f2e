"""``koed reproduce PLAN``: the paper's table, or any plan, from one command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from koed_core.cli.results import NO_IMAGES
from koed_core.config import Settings
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.sources import (
    resolve_source,
)
from koed_core.dialogues.subsets import select
from koed_core.models.registry import ModelSpec


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed reproduce"""
    again = groups.add_parser(
        "reproduce", help="run, judge and tabulate a plan (plans/paper.toml: the paper's table)"
    )
    again.add_argument("plan", type=Path)
    again.add_argument("--dry-run", action="store_true", help="requests and tokens; send nothing")
    again.add_argument(
        "--differences",
        action="store_true",
        help="every step where the plan differs from the KoED authors' pipeline; send nothing",
    )
    again.add_argument("--out", type=Path, help="folder for the table, charts and export")
    again.add_argument("--no-images", action="store_true", help=NO_IMAGES)
    again.add_argument(
        "--claims",
        nargs="?",
        const="",
        metavar="FILE",
        help="check the paper's claims (data/paper/claims.toml, or FILE) on the runs: holds, "
        "does not hold or undecided, with the numbers and runs behind each",
    )
    again.add_argument("--db", type=Path)
    again.add_argument("--data", type=Path, help="KoED file (default: the app's data source)")
    again.add_argument(
        "--batch",
        action="store_true",
        help="OpenAI-compatible models through the provider's Batch API (as plan key batch)",
    )
    again.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args: argparse.Namespace, settings: Settings) -> int:
    """A plan end to end: check every model, run them in parallel, judge, tabulate."""
    from dataclasses import replace

    from koed_core.db import Store
    from koed_core.jobs.kinds import Environment, Hooks, ReproduceJob, execute
    from koed_core.results import reproduce

    text = args.plan.read_text(encoding="utf-8") if args.plan.is_file() else ""
    plan = reproduce.load_plan(args.plan)
    if args.batch:
        plan = replace(plan, batch=True)
        text += "\nbatch = true\n" if "batch" not in tomllib_keys(text) else ""
    env = Environment(settings)
    if args.differences:
        from koed_core.results import differences

        specs = {name: env.resolve(name) for name in plan.models}
        found = differences.differences(plan, specs, env.resolve(plan.judge))
        print(differences.to_markdown(found), end="")
        return 0
    path = args.data or resolve_source(settings.data_path, settings.cache_dir).path
    dataset = load_dataset(path)
    dialogues = select(
        dataset.dialogues,
        plan.subset,
        sample=plan.sample,
        seed=plan.seed,
        design=plan.sample_design,
    )
    specs = {name: env.resolve(name) for name in plan.models}
    if plan.kind == "episodes" and plan.speaker:
        specs.setdefault(plan.speaker, env.resolve(plan.speaker))
    judge_spec = env.resolve(plan.judge)
    stated = None
    if args.claims is not None:  # a bad claims file is said now, not after the runs
        from koed_core.results import claims

        stated = claims.load_claims(Path(args.claims)) if args.claims else claims.load_claims()
    print(
        f"{plan.name}: {len(plan.models)} models x {len(plan.protocols)} protocols x "
        f"{len(plan.langs)} languages on {plan.subset} ({len(dialogues)} dialogues), "
        f"{plan.prompts} prompts; judge {judge_spec.name} ({plan.judge_mode})"
    )
    if args.dry_run:
        dry_run(plan, specs, judge_spec, dialogues)
        if set(plan.langs) <= {"ko", "en"}:  # nothing to read from the database
            return 0
        return variants_read(Store(args.db or settings.db_path), plan, dialogues)
    params = ReproduceJob(
        plan=str(args.plan), plan_text=text, data=str(args.data) if args.data else None
    )
    store = Store(args.db or settings.db_path)
    result = execute(params, store, env, Hooks(say=print))
    for name, reason in result.problems.items():
        print(f"  left out: {name}: {reason}", file=sys.stderr)
    runs = {tuple(key.rsplit(" ", 1)): run for key, run in result.data.get("runs", {}).items()}
    judge = plan.judge_config(judge_spec.name) if result.data.get("judge") else None
    if plan.kind == "episodes":  # the gap over turns, not the paper's one-reply table
        from koed_core.results import turn_gaps

        over_turns = turn_gaps.turn_gap_table(turn_gaps.turn_frame(store, judge))
        over_turns = over_turns[over_turns["run_id"].isin(set(runs.values()))]
        if args.out:
            from koed_core.results.paper_export import export_bundle

            export_bundle(store, args.out, images=not args.no_images)
            print(f"wrote the export bundle (turn_gaps.csv) to {args.out}")
        print(turn_gaps.to_markdown(over_turns, f"{plan.name}: the gap over turns"))
        return 1 if result.problems else 0
    table = reproduce.paper_table(store, runs, judge)
    moved = _sensitivity(store, result.data.get("variants"))
    checked = None
    if stated is not None:
        checked = _claims(store, runs, judge, specs, dataset, stated)
    if args.out:
        from koed_core.results.paper_export import export_bundle, write_claims, write_paper_table

        export_bundle(store, args.out, images=not args.no_images)
        write_paper_table(table, args.out, plan.name)
        if checked is not None:
            write_claims(checked, args.out)  # claims.md, and the claims in the README
        print(f"wrote the table and the export bundle to {args.out}")
        if moved is not None:
            from koed_core.private_files import write_private
            from koed_core.results.sensitivity import to_markdown
            from koed_core.text.csv_safe import to_csv

            # a variant's name is the plan author's text: a cell starting "=" stays text
            write_private(args.out / "sensitivity.csv", to_csv(moved, bom=False))
            write_private(
                args.out / "sensitivity.md", to_markdown(moved, f"{plan.name}: what moves the gap")
            )
            print(f"wrote what moves the gap: {args.out / 'sensitivity.csv'} and .md")
    else:
        print(reproduce.to_markdown(table, plan.name))
        if moved is not None:
            from koed_core.results.sensitivity import to_markdown

            print(to_markdown(moved, f"{plan.name}: what moves the gap"))
    return 1 if result.problems else 0


def _claims(
    store: Any,
    runs: Any,
    judge: Any,
    specs: dict[str, ModelSpec],
    dataset: Any,
    stated: Any,
) -> str:
    """The paper's claims checked on these runs, printed and returned (for the bundle)."""
    from koed_core.results import claims, gaps

    notes = claims.provenance_notes(store, runs, specs)
    frame = gaps.score_frame(store, judge=judge)
    groups = {c: g[0] for c, g in gaps.korean_groups(dataset.dialogues).items()}
    verdicts = claims.check(stated, frame, runs, judge, notes, groups)
    text = claims.to_markdown(verdicts, dataset.sha256)
    print(text)
    return text


def _sensitivity(store: Any, variants: Any) -> Any:
    """A sensitivity plan's table from the job's record of its variants (None: no variants)."""
    if not variants:
        return None
    from koed_core.db import JudgeConfig
    from koed_core.results.sensitivity import from_outcome

    made = {
        name: (
            {tuple(key.rsplit(" ", 1)): run for key, run in entry["runs"].items()},
            JudgeConfig(**entry["judge"]) if entry["judge"] else None,
        )
        for name, entry in variants.items()
    }
    return from_outcome(store, made)


def tomllib_keys(text: str) -> set[str]:
    """Top-level keys of a TOML text (empty when it does not parse: the plan check says why)."""
    import tomllib

    try:
        return set(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return set()


def dry_run(plan: Any, specs: dict[str, ModelSpec], judge: ModelSpec, dialogues: Any) -> int:
    """Requests and prompt tokens per server; with the Batch API, at what price."""
    from koed_core.results import reproduce

    total = 0
    for row in reproduce.estimate(plan, specs, judge, dialogues):
        total += row.requests
        how = ""
        if plan.batch and row.batch_api:
            how = (
                " via the Batch API: about half the live price, answers within 24 h"
                if row.server == "api.openai.com"
                else " via its Batch API if it has one (asked at the start; else live calls)"
            )
        print(
            f"  {row.server}: {row.requests:,} requests, about {row.prompt_tokens:,} "
            f"prompt tokens ({', '.join(row.models)}){how}"
        )
    print(
        f"  total: {total:,} requests (judge: one attempt per dimension; unparseable "
        "verdicts are asked again, up to 5 times)"
    )
    if plan.variants:
        print("  per variant (listener calls, judge calls, why):")
        for variant in reproduce.variant_calls(plan, specs, judge, dialogues):
            print(
                f"    {variant.name}: {variant.listener_calls:,} listener, "
                f"{variant.judge_calls:,} judge: {variant.why}"
            )
    if not plan.batch:
        print(
            "  with --batch (or batch = true in the plan), OpenAI-compatible servers get "
            "the requests as Batch API jobs: OpenAI charges about half, answers within 24 h"
        )
    return 0


def variants_read(store: Any, plan: Any, dialogues: Any) -> int:
    """The translated variants the plan's runs would read: each one's newest version, who
    made it and how many of the plan's dialogues it translates; exit 1 when a variant
    has no version, or translates none of them (its runs would fail)."""
    from koed_core.models.variant_texts import coverage

    found = coverage(store, dialogues, plan.langs)
    if not found:
        return 0
    subset = f"--subset {plan.subset}" if plan.subset != "full" else ""
    if plan.sample:
        subset += f" --sample {plan.sample} --seed {plan.seed}"
    print(f"  variants the runs would read (from {store.name}):")
    for cell in found:
        print(f"    {cell.said(subset)}")
    if all(cell.runnable for cell in found):
        return 0
    print(
        "  the plan cannot run yet: a variant above has no translation of its dialogues",
        file=sys.stderr,
    )
    return 1
