"""What every ``koed`` command shares: argument types, progress bars, running a job here."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from koed_core.config import Settings
from koed_core.judge.verdicts import MODES
from koed_core.models.request import positive_int as positive_int  # every command's counts

if TYPE_CHECKING:
    from koed_core.jobs.kinds import JobParams

R = TypeVar("R")


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (``nan`` and ``inf`` refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
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


def print_errors(errors: Counter[str] | dict[str, int]) -> None:
    """How many requests failed for good, by kind."""
    for kind, count in Counter(errors).most_common():
        print(f"  {kind}: {count}")


def foreground(params: JobParams, db: Path | None, settings: Settings, unit: str) -> int:
    """Carry out a job here, with a progress bar: what a worker does, in this terminal.
    Exit 1 if any request failed for good (or a model was left out)."""
    from koed_core.db import Store
    from koed_core.jobs.kinds import Environment, Hooks, check, execute

    check(params)
    store = Store(db or settings.db_path)
    with progress_bar(unit) as progress:
        result = execute(params, store, Environment(settings), Hooks(progress=progress, say=print))
    print(f"{result.summary}; stored in {store.path}")
    print_errors(result.data.get("errors") or {})
    for name, reason in result.problems.items():
        print(f"  left out: {name}: {reason}", file=sys.stderr)
    return 1 if result.failed else 0


def add_judge_choice(parser: argparse.ArgumentParser) -> None:
    """--judge, --mode, --template, --parse and --prompt-version: together they name one
    judge configuration."""
    parser.add_argument(
        "--judge", help="judge model (default: the most recent configuration; see `koed judges`)"
    )
    parser.add_argument("--mode", choices=MODES, help="judge mode")
    parser.add_argument("--prompt-version", help="judge prompt version, or its first characters")
    parser.add_argument("--template", help="judge template name (authors, fenced, or yours)")
    parser.add_argument("--parse", help="verdict parser (authors, lenient, json)")


def add_request_flags(
    parser: argparse.ArgumentParser, request: type[Any], leave_out: Sequence[str] = ()
) -> None:
    """One flag per setting of a request class (``RunRequest``, ``EpisodeRequest``,
    ``JudgeRequest``), spelled and explained as the request's fields declare: a setting
    added there is on the command line with nothing written here."""
    for f in fields(request):
        meta = f.metadata
        if meta.get("flag") is None or f.name in leave_out:
            continue
        flag = meta["flag"] or "--" + f.name.replace("_", "-")
        options: dict[str, Any] = {"dest": f.name, "help": meta["help"]}
        if isinstance(f.default, bool):
            options["action"] = "store_true"
        else:
            options["default"] = None
            for key in ("type", "choices", "nargs"):
                if meta.get(key) is not None:
                    options[key] = meta[key]
            if f.default is MISSING:
                options["required"] = True
            if meta.get("type") is not None and meta.get("choices") is None:
                options["metavar"] = f.name.upper()
        parser.add_argument(flag, *meta.get("aliases", ()), **options)


def request_from(args: argparse.Namespace, request: type[R]) -> R | None:
    """The request the flags ask for (a flag left out: the field's default), or None
    after printing what is wrong with it (exit 2, like argparse's own refusals)."""
    given = {
        f.name: tuple(v) if isinstance(v, list) else v
        for f in fields(request)  # type: ignore[arg-type]
        if (v := getattr(args, f.name, None)) is not None
    }
    made = request(**given)
    problems = made.problems()  # type: ignore[attr-defined]
    if problems:
        print(f"error: {'; '.join(problems)}", file=sys.stderr)
        return None
    return made
