"""``koed worker`` and ``koed jobs``: the background queue from a terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

from koed_core.cli.common import (
    positive_int,
    seconds,
)
from koed_core.config import Settings


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed worker | jobs"""
    worker = groups.add_parser(
        "worker", help="carry out the jobs queued from the app (runs, judging, reproductions)"
    )
    worker.add_argument("--db", type=Path)
    worker.add_argument("--parallel", type=positive_int, default=2, help="jobs at once (default 2)")
    worker.add_argument(
        "--idle-exit", type=seconds, help="stop after this many seconds with nothing to do"
    )
    worker.set_defaults(func=cmd_worker)

    jobs = groups.add_parser("jobs", help="list the jobs, or cancel one")
    jobs.add_argument("--db", type=Path)
    job_cmds = jobs.add_subparsers(dest="command")
    job_list = job_cmds.add_parser("list", help="recent jobs, active first (the default)")
    job_list.add_argument("--limit", type=positive_int, default=20)
    cancel = job_cmds.add_parser("cancel", help="stop a job; what it stored is kept")
    cancel.add_argument("job_id", type=positive_int)
    jobs.set_defaults(func=cmd_jobs, command="list", limit=20)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    """Carry out queued jobs until stopped (SIGTERM or Ctrl-C: gracefully)."""
    from koed_core.db import Store
    from koed_core.jobs.kinds import Environment
    from koed_core.jobs.worker import Worker, install_signals

    worker = Worker(
        Store(args.db or settings.db_path),
        Environment(settings),
        parallel=args.parallel,
        idle_exit_s=args.idle_exit,
    )
    install_signals(worker)
    return worker.serve()


def cmd_jobs(args: argparse.Namespace, settings: Settings) -> int:
    """List jobs (active first), or cancel one."""
    from koed_core.db import Store
    from koed_core.db.jobs import Jobs

    jobs = Jobs(Store(args.db or settings.db_path))
    if args.command == "cancel":
        state = jobs.request_cancel(args.job_id)
        if state == "cancelled":
            print(f"job {args.job_id} cancelled before it started")
        else:
            print(f"job {args.job_id} stops at its next step; what it stored is kept")
        return 0
    listed = jobs.recent(args.limit)
    if not listed:
        print("no jobs yet: start a run or judging pass on the Runs or Judge page")
        return 0
    print("id\tstate\tdone\ttotal\tfailed\tby\tcreated\tjob")
    for job in listed:
        shown: str = "cancelling" if job.cancel_requested and job.active else job.state
        if job.orphaned:
            shown = "running (worker gone: the next `koed worker` resumes it)"
        print(
            f"{job.id}\t{shown}\t{job.done}\t{job.total}\t{job.failed}\t"
            f"{job.created_by or '-'}\t{job.created[:19]}\t{job.label}"
        )
        if job.reason:
            print(f"\t  reason: {job.reason}")
    return 0
