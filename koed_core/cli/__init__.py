"""The ``koed`` command: the work that is not a page.

One module per command group (``data``, ``runs``: run, judge, judges; ``reproduce``;
``episodes``; ``jobs``: worker and jobs; ``results``: agreement and export; ``accounts``: users and
settings; ``crowd``: study, invite and crowd; ``prolific``: Prolific's API; ``serve``: serve;
``backups``: db backup and restore; ``translate``: the translated variants;
``annotation``: annotation projects, import, export),
each adding its parsers; :func:`main` is the one error boundary.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from koed_core.cli import (
    accounts,
    annotation,
    backups,
    crowd,
    data,
    episodes,
    jobs,
    prolific,
    reproduce,
    results,
    runs,
    serve,
    translate,
)
from koed_core.config import Settings, read_secrets
from koed_core.errors import KoedError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The command tree; each leaf sets ``func``."""
    parser = argparse.ArgumentParser(prog="koed", description="KoED Studio command line")
    groups = parser.add_subparsers(dest="group", required=True)
    for group in (
        data,
        runs,
        translate,
        episodes,
        reproduce,
        jobs,
        results,
        crowd,
        prolific,
        annotation,
        accounts,
        serve,
        backups,
    ):
        group.register(groups)
    return parser


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
