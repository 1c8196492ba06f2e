"""What every ``koed`` command shares: argument types, progress bars, running a job here."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from koed_core.config import Settings
from koed_core.judge.verdicts import MODES

if TYPE_CHECKING:
    from koed_core.jobs.kinds import JobParams


def languages(text: str) -> tuple[str, ...] | None:
    """``--lang`` as a tuple (ko, en or both), or None after printing why it is wrong."""
    langs = tuple(lang.strip() for lang in text.split(",") if lang.strip())
    if not langs or set(langs) - {"ko", "en"}:
        print(f"error: --lang takes ko, en or ko,en, not {text!r}", file=sys.stderr)
        return None
    return langs


def prompt_source(value: str | None, shipped: Sequence[str]) -> str | None:
    """``--prompts``: a shipped set's name as it is, a file as its absolute path (a job
    may run in another folder)."""
    if value and value not in shipped:
        return str(Path(value).resolve())
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (0 never means "all")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (``nan`` and ``inf`` refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
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
    """--judge, --mode, --template, --parse and --prompt-version: together they name one
    judge configuration."""
    parser.add_argument(
        "--judge", help="judge model (default: the most recent configuration; see `koed judges`)"
    )
    parser.add_argument("--mode", choices=MODES, help="judge mode")
    parser.add_argument("--prompt-version", help="judge prompt version, or its first characters")
    parser.add_argument("--template", help="judge template name (authors, fenced, or yours)")
    parser.add_argument("--parse", help="verdict parser (authors, lenient, json)")
