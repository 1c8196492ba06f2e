"""``koed run``, ``koed judge`` and ``koed judges``: answering KoED and scoring the answers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from koed_core.cli.common import add_request_flags, foreground, request_from
from koed_core.config import Settings
from koed_core.judge.request import JudgeRequest
from koed_core.models.request import RunRequest


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed run | judge | judges: the flags of run and judge are their requests' fields."""
    run = groups.add_parser("run", help="run a model over KoED and store every response")
    add_request_flags(run, RunRequest)
    run.add_argument("--db", type=Path, help="SQLite file (default: KOED_DB or data/koed.db)")
    run.set_defaults(func=cmd_run)

    judge = groups.add_parser("judge", help="score a run's responses with an LLM judge")
    add_request_flags(judge, JudgeRequest)
    judge.add_argument("--db", type=Path)
    judge.set_defaults(func=cmd_judge)

    judges = groups.add_parser("judges", help="list the judge configurations that scored runs")
    judges.add_argument("--db", type=Path)
    judges.set_defaults(func=cmd_judges)


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """A resumable run with a progress bar; exit 1 if any request failed for good."""
    request = request_from(args, RunRequest)
    if request is None:
        return 2
    return foreground(request, args.db, settings, "req")


def cmd_judge(args: argparse.Namespace, settings: Settings) -> int:
    """Judge a run with a progress bar; exit 1 if any call failed for good."""
    request = request_from(args, JudgeRequest)
    if request is None:
        return 2
    return foreground(request, args.db, settings, "call")


def cmd_judges(args: argparse.Namespace, settings: Settings) -> int:
    """One line per judge configuration, most recent first."""
    from koed_core.db import Judgments, Store

    uses = Judgments(Store(args.db or settings.db_path)).configs()
    if not uses:
        print("no judgments yet: run `koed judge --run RUN_ID`", file=sys.stderr)
        return 1
    print("judge\tmode\ttemplate\tparse\tprompt_version\trubric_version\tjudgments\tunscored\tlast")
    for u in uses:
        c = u.config
        print(
            f"{c.model}\t{c.mode}\t{c.template}\t{c.parse}\t{c.prompt_version}\t"
            f"{c.rubric_version}\t{u.judgments}\t{u.unscored}\t{u.last}"
        )
    return 0
