"""The ``koed`` command: the work that is not a page.

``koed data check PATH`` validates a file and prints its figures; ``koed data download``
fetches and verifies the official file into the cache the app reads; ``koed run`` answers
KoED with a model and stores every response.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from koed_core.agreement import NUMBERS
from koed_core.config import Settings, describe, read_secrets
from koed_core.dataset import load_dataset
from koed_core.errors import KoedError
from koed_core.judge import MODES
from koed_core.prompts import PROMPT_SETS
from koed_core.protocol import PROTOCOLS
from koed_core.registry import ModelSpec
from koed_core.rubric import codes
from koed_core.runner import DEFAULT_CONCURRENCY
from koed_core.sources import (
    OFFICIAL,
    OFFICIAL_FILENAME,
    download_official,
    official_cache_path,
    resolve_source,
    sha256_of,
)
from koed_core.subsets import SUBSETS, select
from koed_core.users import ROLES, add_user, list_users, lock, unlock

if TYPE_CHECKING:
    from koed_core.jobs import JobParams

FIGURE_NAMES = {
    "dialogues": "dialogues",
    "labels": "labels",
    "label_sets": "distinct label sets",
    "turns": "turns",
    "ko_only_turns": "Korean-only turns",
    "en_only_turns": "English-only turns",
    "korean_emotion_dialogues": "jeong/han dialogues",
}


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (0 never means "all")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def temperature(text: str) -> float:
    """An argparse type: a sampling temperature from 0 to 2."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, not {value}")
    return value


@contextmanager
def progress_bar(unit: str, unit_scale: bool = False) -> Iterator[Callable[[int, int], None]]:
    """A tqdm bar (shown on a terminal only) fed by ``progress(done, total)`` callbacks."""
    from tqdm import tqdm

    with tqdm(unit=unit, unit_scale=unit_scale, disable=None) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield progress


def build_parser() -> argparse.ArgumentParser:
    """The command tree; each leaf sets ``func``."""
    parser = argparse.ArgumentParser(prog="koed", description="KoED Studio command line")
    groups = parser.add_subparsers(dest="group", required=True)
    data = groups.add_parser("data", help="check or download KoED files")
    data_cmds = data.add_subparsers(dest="command", required=True)
    check = data_cmds.add_parser("check", help="validate a KoED JSON file and print its figures")
    check.add_argument("path", type=Path)
    check.add_argument("--json", action="store_true", help="print the figures as JSON")
    check.set_defaults(func=cmd_check)
    download = data_cmds.add_parser(
        "download", help=f"download the official KoED file (commit {OFFICIAL.commit[:7]})"
    )
    download.add_argument(
        "--dest", type=Path, help="folder to put KoED.json in (default: the app's cache)"
    )
    download.set_defaults(func=cmd_download)

    run = groups.add_parser("run", help="run a model over KoED and store every response")
    run.add_argument(
        "--model",
        required=True,
        help="a name from models.toml, or openai:MODEL_ID (uses OPENAI_BASE_URL)",
    )
    run.add_argument("--lang", default="ko,en", help="ko, en or ko,en (default)")
    run.add_argument("--protocol", choices=PROTOCOLS, default="single")
    run.add_argument("--limit", type=positive_int, help="only the first N dialogues")
    run.add_argument(
        "--subset", choices=SUBSETS, default="full", help="paper-100: the authors' sample"
    )
    run.add_argument("--sample", type=positive_int, help="a stratified sample of N dialogues")
    run.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    run.add_argument(
        "--prompts",
        choices=PROMPT_SETS,
        help="prompt set (default: paper for single and multi, native for direct)",
    )
    run.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY)
    run.add_argument("--db", type=Path, help="SQLite file (default: KOED_DB or data/koed.db)")
    run.add_argument("--data", type=Path, help="KoED file (default: the app's data source)")
    run.add_argument(
        "--temperature", type=temperature, help="default: the model's in models.toml, else 0.7"
    )
    run.add_argument(
        "--max-tokens", type=positive_int, help="default: the model's in models.toml, else 256"
    )
    add_batch_choice(run)
    run.set_defaults(func=cmd_run)

    judge = groups.add_parser("judge", help="score a run's responses with an LLM judge")
    judge.add_argument("--run", required=True, help="run id (see the Runs page)")
    judge.add_argument(
        "--judge",
        default="gpt-4o",
        help="registry name or openai:MODEL_ID (default: gpt-4o, the paper's)",
    )
    judge.add_argument("--mode", choices=MODES, default="paper")
    judge.add_argument("--dimensions", nargs="+", choices=codes(), help="default: all five")
    judge.add_argument(
        "--samples", type=positive_int, default=1, help="strict mode: k samples averaged"
    )
    judge.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY)
    judge.add_argument("--db", type=Path)
    add_batch_choice(judge)
    judge.set_defaults(func=cmd_judge)

    again = groups.add_parser(
        "reproduce", help="run, judge and tabulate a plan (plans/paper.toml: the paper's table)"
    )
    again.add_argument("plan", type=Path)
    again.add_argument("--dry-run", action="store_true", help="requests and tokens; send nothing")
    again.add_argument("--out", type=Path, help="folder for the table, charts and export")
    again.add_argument("--db", type=Path)
    again.add_argument("--data", type=Path, help="KoED file (default: the app's data source)")
    again.add_argument(
        "--batch",
        action="store_true",
        help="OpenAI-compatible models through the provider's Batch API (as plan key batch)",
    )
    again.set_defaults(func=cmd_reproduce)

    worker = groups.add_parser(
        "worker", help="carry out the jobs queued from the app (runs, judging, reproductions)"
    )
    worker.add_argument("--db", type=Path)
    worker.add_argument("--parallel", type=positive_int, default=2, help="jobs at once (default 2)")
    worker.add_argument(
        "--idle-exit", type=float, help="stop after this many seconds with nothing to do"
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

    judges = groups.add_parser("judges", help="list the judge configurations that scored runs")
    judges.add_argument("--db", type=Path)
    judges.set_defaults(func=cmd_judges)

    agree = groups.add_parser("agreement", help="judge-human and human-human agreement table")
    agree.add_argument("--study", type=positive_int, help="study id (default: last rated)")
    add_judge_choice(agree)
    agree.add_argument("--json", action="store_true")
    agree.add_argument("--db", type=Path)
    agree.set_defaults(func=cmd_agreement)

    export = groups.add_parser("export", help="a folder of tables, charts and configs for a paper")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--db", type=Path)
    export.set_defaults(func=cmd_export)

    shown = groups.add_parser(
        "settings", help="every setting, its value and where it came from (as the app sees it)"
    )
    shown.set_defaults(func=cmd_settings)

    accounts = groups.add_parser("users", help="accounts for the rating pages")
    user_cmds = accounts.add_subparsers(dest="command", required=True)
    add = user_cmds.add_parser("add", help="create an account; prints its password once")
    add.add_argument("username")
    add.add_argument("--role", choices=ROLES, default="rater")
    add.add_argument("--name", help="display name (default: the username)")
    add.add_argument("--ask", action="store_true", help="type the password instead of generating")
    add.set_defaults(func=cmd_users_add)
    listing = user_cmds.add_parser("list", help="accounts with role and lock state")
    listing.set_defaults(func=cmd_users_list)
    unlock = user_cmds.add_parser("unlock", help="clear failed logins, the wait and a lock")
    unlock.add_argument("username")
    unlock.set_defaults(func=cmd_users_unlock)
    locking = user_cmds.add_parser("lock", help="lock an account and end its sessions now")
    locking.add_argument("username")
    locking.set_defaults(func=cmd_users_lock)
    return parser


def add_batch_choice(parser: argparse.ArgumentParser) -> None:
    """--batch and --batch-size: send the requests through the provider's Batch API."""
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send the requests through the provider's Batch API (OpenAI: half the price, "
        "answers within 24 h); resumable like a live run",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=1000,
        help="with --batch: requests per provider batch (default 1000)",
    )


def add_judge_choice(parser: argparse.ArgumentParser) -> None:
    """--judge, --mode and --prompt-version: together they name one judge configuration."""
    parser.add_argument(
        "--judge", help="judge model (default: the most recent configuration; see `koed judges`)"
    )
    parser.add_argument("--mode", choices=MODES, help="judge mode")
    parser.add_argument("--prompt-version", help="judge prompt version, or its first characters")


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    """Validate one file; exit 0 when it loads, 1 with the reason when it does not."""
    try:
        dataset = load_dataset(args.path)
    except KoedError as err:
        if args.json:
            print(json.dumps({"ok": False, "error": str(err)}, ensure_ascii=False))
        else:
            print(f"error: {err}", file=sys.stderr)
        return 1
    stats = asdict(dataset.stats())
    if args.json:
        print(json.dumps({"ok": True, "path": str(args.path), "sha256": dataset.sha256, **stats}))
        return 0
    print(f"{args.path}: loads")
    print(f"sha256: {dataset.sha256}")
    for key, name in FIGURE_NAMES.items():
        print(f"{name}: {stats[key]}")
    warnings = stats["warnings"]
    print(f"warnings: {sum(warnings.values())}")
    for kind, count in warnings.items():
        print(f"  {kind}: {count}")
    return 0


def cmd_download(args: argparse.Namespace, settings: Settings) -> int:
    """Fetch and verify the official file, with a progress bar on a terminal."""
    target = args.dest / OFFICIAL_FILENAME if args.dest else official_cache_path(settings.cache_dir)
    try:
        with progress_bar("B", unit_scale=True) as progress:
            path = download_official(target, url=settings.data_url, progress=progress)
    except KoedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"saved {path} (sha256 {sha256_of(path)} verified)")
    if not args.dest:
        print("The app now shows the official KoED instead of the built-in sample.")
    return 0


def print_errors(errors: Counter[str] | dict[str, int]) -> None:
    """How many requests failed for good, by kind."""
    for kind, count in Counter(errors).most_common():
        print(f"  {kind}: {count}")


def foreground(params: JobParams, db: Path | None, settings: Settings, unit: str) -> int:
    """Carry out a job here, with a progress bar: what a worker does, in this terminal.
    Exit 1 if any request failed for good (or a model was left out)."""
    from koed_core.db import Store
    from koed_core.jobs import Environment, Hooks, check, execute

    check(params)
    store = Store(db or settings.db_path)
    with progress_bar(unit) as progress:
        result = execute(params, store, Environment(settings), Hooks(progress=progress, say=print))
    print(f"{result.summary}; stored in {store.path}")
    print_errors(result.data.get("errors") or {})
    for name, reason in result.problems.items():
        print(f"  left out: {name}: {reason}", file=sys.stderr)
    return 1 if result.failed else 0


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """A resumable batch run with a progress bar; exit 1 if any request failed for good."""
    from koed_core.jobs import RunJob

    langs = tuple(lang.strip() for lang in args.lang.split(",") if lang.strip())
    if not langs or set(langs) - {"ko", "en"}:
        print(f"error: --lang takes ko, en or ko,en, not {args.lang!r}", file=sys.stderr)
        return 2
    params = RunJob(
        model=args.model,
        langs=langs,
        protocol=args.protocol,
        prompts=args.prompts,
        subset=args.subset,
        sample=args.sample,
        seed=args.seed,
        limit=args.limit,
        concurrency=args.concurrency,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        batch=args.batch,
        batch_size=args.batch_size,
        data=str(args.data) if args.data else None,
    )
    return foreground(params, args.db, settings, "req")


def cmd_judge(args: argparse.Namespace, settings: Settings) -> int:
    """Judge a run with a progress bar; exit 1 if any call failed for good."""
    from koed_core.jobs import JudgeJob

    params = JudgeJob(
        run_id=args.run,
        judge=args.judge,
        mode=args.mode,
        dims=tuple(args.dimensions) if args.dimensions else None,
        samples=args.samples,
        concurrency=args.concurrency,
        batch=args.batch,
        batch_size=args.batch_size,
    )
    return foreground(params, args.db, settings, "call")


def cmd_reproduce(args: argparse.Namespace, settings: Settings) -> int:
    """A plan end to end: check every model, run them in parallel, judge, tabulate."""
    from dataclasses import replace

    from koed_core import reproduce
    from koed_core.db import Store
    from koed_core.jobs import Environment, Hooks, ReproduceJob, execute
    from koed_core.judging import current_config

    text = args.plan.read_text(encoding="utf-8") if args.plan.is_file() else ""
    plan = reproduce.load_plan(args.plan)
    if args.batch:
        plan = replace(plan, batch=True)
        text += "\nbatch = true\n" if "batch" not in tomllib_keys(text) else ""
    env = Environment(settings)
    path = args.data or resolve_source(settings.data_path, settings.cache_dir).path
    dataset = load_dataset(path)
    dialogues = select(dataset.dialogues, plan.subset, sample=plan.sample, seed=plan.seed)
    specs = {name: env.resolve(name) for name in plan.models}
    judge_spec = env.resolve(plan.judge)
    print(
        f"{plan.name}: {len(plan.models)} models x {len(plan.protocols)} protocols x "
        f"{len(plan.langs)} languages on {plan.subset} ({len(dialogues)} dialogues), "
        f"{plan.prompts} prompts; judge {judge_spec.name} ({plan.judge_mode})"
    )
    if args.dry_run:
        return dry_run(plan, specs, judge_spec, dialogues)
    params = ReproduceJob(
        plan=str(args.plan), plan_text=text, data=str(args.data) if args.data else None
    )
    store = Store(args.db or settings.db_path)
    result = execute(params, store, env, Hooks(say=print))
    for name, reason in result.problems.items():
        print(f"  left out: {name}: {reason}", file=sys.stderr)
    runs = {tuple(key.rsplit(" ", 1)): run for key, run in result.data.get("runs", {}).items()}
    judge = current_config(judge_spec.name, plan.judge_mode) if result.data.get("judge") else None
    table = reproduce.paper_table(store, runs, judge)
    if args.out:
        from koed_core.paper_export import export_bundle, write_paper_table

        export_bundle(store, args.out)
        write_paper_table(table, args.out, plan.name)
        print(f"wrote the table and the export bundle to {args.out}")
    else:
        print(reproduce.to_markdown(table, plan.name))
    return 1 if result.problems else 0


def tomllib_keys(text: str) -> set[str]:
    """Top-level keys of a TOML text (empty when it does not parse: the plan check says why)."""
    import tomllib

    try:
        return set(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return set()


def dry_run(plan: Any, specs: dict[str, ModelSpec], judge: ModelSpec, dialogues: Any) -> int:
    """Requests and prompt tokens per server; with the Batch API, at what price."""
    from koed_core import reproduce

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
    if not plan.batch:
        print(
            "  with --batch (or batch = true in the plan), OpenAI-compatible servers get "
            "the requests as Batch API jobs: OpenAI charges about half, answers within 24 h"
        )
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    """Carry out queued jobs until stopped (SIGTERM or Ctrl-C: gracefully)."""
    from koed_core.db import Store
    from koed_core.jobs import Environment
    from koed_core.worker import Worker, install_signals

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
        shown = "cancelling" if job.cancel_requested and job.active else job.state
        print(
            f"{job.id}\t{shown}\t{job.done}\t{job.total}\t{job.failed}\t"
            f"{job.created_by or '-'}\t{job.created[:19]}\t{job.label}"
        )
        if job.reason:
            print(f"\t  reason: {job.reason}")
    return 0


def cmd_judges(args: argparse.Namespace, settings: Settings) -> int:
    """One line per judge configuration, most recent first."""
    from koed_core.db import Judgments, Store

    uses = Judgments(Store(args.db or settings.db_path)).configs()
    if not uses:
        print("no judgments yet: run `koed judge --run RUN_ID`", file=sys.stderr)
        return 1
    print("judge\tmode\tprompt_version\trubric_version\tjudgments\tunscored\tlast")
    for u in uses:
        c = u.config
        print(
            f"{c.model}\t{c.mode}\t{c.prompt_version}\t{c.rubric_version}\t{u.judgments}\t"
            f"{u.unscored}\t{u.last}"
        )
    return 0


def cmd_agreement(args: argparse.Namespace, settings: Settings) -> int:
    """Print the agreement table (or JSON) for one study and one judge configuration."""
    from koed_core import agreement_data, scoring
    from koed_core.db import Store

    store = Store(args.db or settings.db_path)
    study = scoring.choose_study(store, args.study)
    if study is None:
        print("no human ratings yet: build a study and rate, then run this again", file=sys.stderr)
        return 1
    choice = scoring.choose_judge(
        store,
        scoring.study_runs(store, study),
        model=args.judge,
        mode=args.mode,
        prompt_version=args.prompt_version,
    )
    config = choice.config if choice else None
    frame = agreement_data.table(agreement_data.load_inputs(store, study, config))
    if args.json:
        columns = config.as_columns() if config else {}
        print(frame.assign(study_id=study, **columns).to_json(orient="records", force_ascii=False))
        return 0
    print(scoring.study_label(store, study))
    print(f"judge: {config.label if config else '(none scored this study: human-human only)'}")
    for other in choice.others if choice else ():
        print(f"  also stored (not mixed in; pick with --prompt-version): {other.label}")
    shown = ["dimension", "lang", "group", "items", "raters", *NUMBERS]
    print(frame[shown].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write the paper bundle; its README says what each file is."""
    from koed_core.db import Store
    from koed_core.paper_export import export_bundle

    files = export_bundle(Store(args.db or settings.db_path), args.out)
    print(f"wrote {len(files)} files to {args.out} (see {args.out / 'README.md'})")
    return 0


def cmd_settings(args: argparse.Namespace, settings: Settings) -> int:
    """Print what the app would use: environment, then .streamlit/secrets.toml, then default."""
    for name, value, where in describe(os.environ, read_secrets()):
        print(f"{name}\t{value}\t({where})")
    return 0


def cmd_users_add(args: argparse.Namespace, settings: Settings) -> int:
    """Create an account; the password is typed (--ask) or generated and printed once."""
    import getpass

    password = None
    if args.ask:
        password = getpass.getpass("Password: ")
        if password != getpass.getpass("Again: "):
            print("error: the two passwords differ", file=sys.stderr)
            return 1
    try:
        created = add_user(settings.users_path, args.username, args.role, args.name, password)
    except KoedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"created {args.role} {args.username!r} in {settings.users_path}")
    if not args.ask:
        print(f"password (shown once, not stored in clear): {created}")
    return 0


def cmd_users_list(args: argparse.Namespace, settings: Settings) -> int:
    """One line per account: name, role, lock state; never a hash."""
    for user in list_users(settings.users_path):
        state = f"{user['failed_logins']} failed logins"
        if user["waiting_until"]:
            state = "waiting (too many failed logins) until " + time.strftime(
                "%H:%M", time.localtime(user["waiting_until"])
            )
        if user["locked"]:
            state = "LOCKED"
        print(f"{user['username']}\t{user['role']}\t{state}")
    return 0


def cmd_users_lock(args: argparse.Namespace, settings: Settings) -> int:
    """Lock an account; its open sessions end at their next page load."""
    lock(settings.users_path, args.username, time.time())
    print(f"locked {args.username}; its sessions are ended")
    return 0


def cmd_users_unlock(args: argparse.Namespace, settings: Settings) -> int:
    """Reset the failed-login counter."""
    try:
        unlock(settings.users_path, args.username)
    except KoedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"unlocked {args.username}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``koed`` console script, and its one error boundary: every
    failure ends in a one-line message and a non-zero exit, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_sources(os.environ, read_secrets())
        return int(args.func(args, settings))
    except KoedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "interrupted: what was stored is kept; run the same command to resume", file=sys.stderr
        )
        return 130
    except Exception as err:  # noqa: BLE001 - the boundary: say what happened, plainly
        if os.environ.get("KOED_DEBUG"):
            raise
        print(
            f"error: {type(err).__name__}: {err} (set KOED_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
