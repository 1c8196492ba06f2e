"""``koed agreement`` and ``koed export``: numbers and the bundle a paper cites."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from koed_core.cli import ppi
from koed_core.cli.common import (
    add_judge_choice,
    positive_int,
)
from koed_core.config import Settings


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed agreement | gap | export"""
    agree = groups.add_parser("agreement", help="judge-human and human-human agreement table")
    agree.add_argument("--study", type=positive_int, help="study id (default: last rated)")
    add_judge_choice(agree)
    agree.add_argument(
        "--epsilon",
        type=_epsilon,
        default=None,
        help="the alternative annotator test's allowance for the judge (default 0.1, the "
        "paper's for crowd workers; 0.2 for experts)",
    )
    agree.add_argument("--json", action="store_true")
    agree.add_argument("--db", type=Path)
    agree.set_defaults(func=cmd_agreement)

    ppi.register_gap(groups)

    export = groups.add_parser("export", help="a folder of tables, charts and configs for a paper")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--db", type=Path)
    export.add_argument("--no-images", action="store_true", help=NO_IMAGES)
    export.set_defaults(func=cmd_export)


NO_IMAGES = "tables only: leave out the chart images (drawing them starts a headless Chromium)"


def _epsilon(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"epsilon is from 0 to below 1, not {text}")
    return value


def cmd_agreement(args: argparse.Namespace, settings: Settings) -> int:
    """Print the agreement table (or JSON) for one study and one judge configuration."""
    from koed_core.db import Store
    from koed_core.results import agreement, score_sources

    store = Store(args.db or settings.db_path)
    study = score_sources.choose_study(store, args.study)
    if study is None:
        print("no human ratings yet: build a study and rate, then run this again", file=sys.stderr)
        return 1
    choice = score_sources.choose_judge(
        store,
        score_sources.study_runs(store, study),
        model=args.judge,
        mode=args.mode,
        prompt_version=args.prompt_version,
        template=args.template,
        parse=args.parse,
    )
    config = choice.config if choice else None
    frame = agreement.table(agreement.load_inputs(store, study, config))
    if args.json:
        columns = config.as_columns() if config else {}
        print(frame.assign(study_id=study, **columns).to_json(orient="records", force_ascii=False))
        return 0
    print(score_sources.study_label(store, study))
    print(f"judge: {config.label if config else '(none scored this study: human-human only)'}")
    for other in choice.others if choice else ():
        print(
            "  also stored (not mixed in; pick with --template, --parse, --prompt-version): "
            f"{other.label}"
        )
    from koed_core.results.reliability import NUMBERS  # scipy: loaded by this command only

    shown = ["dimension", "lang", "group", "items", "raters", *NUMBERS]
    print(frame[shown].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    found = agreement.alt_test(agreement.load_inputs(store, study, config), args.epsilon)
    if not found.empty:
        print("\nCould the judge replace one of the raters? (Alternative Annotator Test,")
        print("Calderon et al. 2025: leave one rater out, judge against rater on the others;")
        print("Benjamini-Yekutieli over the raters; passes at a winning rate of 0.5)")
        print(found.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write the paper bundle; its README says what each file is."""
    from koed_core.db import Store
    from koed_core.results.paper_export import export_bundle

    store = Store(args.db or settings.db_path)
    # the gap three ways (judge, people, PPI++) too
    files = export_bundle(store, args.out, images=not args.no_images)
    print(f"wrote {len(files)} files to {args.out} (see {args.out / 'README.md'})")
    return 0
