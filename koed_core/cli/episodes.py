"""``koed episodes``: multi-turn episodes, the model under test listening to a simulated
Speaker who carries each KoED situation on."""

from __future__ import annotations

import argparse
from pathlib import Path

from koed_core.cli.common import add_request_flags, foreground, request_from
from koed_core.config import Settings
from koed_core.models.request import EpisodeRequest

LIVE_ONLY = ("batch", "batch_size", "replicate")
"""Settings of a run that episodes do not take: a conversation is asked live."""


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed episodes: its flags are the episode request's fields."""
    episodes = groups.add_parser(
        "episodes",
        help="multi-turn episodes: the model listens, a simulated Speaker carries each "
        "KoED situation on; judge them with `koed judge --run RUN_ID`",
    )
    add_request_flags(episodes, EpisodeRequest, leave_out=LIVE_ONLY)
    episodes.add_argument("--db", type=Path)
    episodes.set_defaults(func=cmd_episodes)


def cmd_episodes(args: argparse.Namespace, settings: Settings) -> int:
    """Play the episodes with a progress bar (one step per episode); exit 1 if any
    episode stopped on a failure (run the same command to resume it)."""
    request = request_from(args, EpisodeRequest)
    if request is None:
        return 2
    return foreground(request, args.db, settings, "episode")
