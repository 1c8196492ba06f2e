"""``koed episodes``: multi-turn episodes, the model under test listening to a simulated
Speaker who carries each KoED situation on."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from koed_core.cli.common import (
    foreground,
    languages,
    positive_int,
    prompt_source,
    temperature,
)
from koed_core.config import Settings
from koed_core.dialogues.subsets import SUBSETS
from koed_core.models.episodes import DEFAULT_TURNS, MAX_TURNS
from koed_core.models.pipeline import COMMAS, EMOTION_READERS, FAMILIES, POSTPROCESS
from koed_core.models.prompts import PROMPT_SETS
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.runs import DEFAULT_CONCURRENCY


def _turns(text: str) -> int:
    value = positive_int(text)
    if value > MAX_TURNS:
        raise argparse.ArgumentTypeError(f"at most {MAX_TURNS} turns, not {value}")
    return value


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed episodes"""
    episodes = groups.add_parser(
        "episodes",
        help="multi-turn episodes: the model listens, a simulated Speaker carries each "
        "KoED situation on; judge them with `koed judge --run RUN_ID`",
    )
    episodes.add_argument(
        "--model", required=True, help="the Listener: a name from models.toml or openai:MODEL_ID"
    )
    episodes.add_argument(
        "--speaker",
        default="smollm2",
        help="who plays the Speaker (default smollm2, the offline model: fine for trying "
        "the pipeline, not for results)",
    )
    episodes.add_argument(
        "--turns",
        type=_turns,
        default=DEFAULT_TURNS,
        help=f"Listener turns per episode after the KoED context (default {DEFAULT_TURNS}, "
        f"at most {MAX_TURNS})",
    )
    episodes.add_argument("--lang", default="ko,en", help="ko, en or ko,en (default)")
    episodes.add_argument("--protocol", choices=PROTOCOLS, default="single")
    episodes.add_argument(
        "--prompts",
        metavar="SET",
        help=f"the Listener's prompt set: {', '.join(PROMPT_SETS)} or a TOML file",
    )
    episodes.add_argument(
        "--speaker-prompts", type=Path, metavar="FILE", help="your own speaker prompt (TOML)"
    )
    episodes.add_argument("--subset", choices=SUBSETS, default="full")
    episodes.add_argument("--sample", type=positive_int, help="a stratified sample of N")
    episodes.add_argument("--seed", type=int, default=0)
    episodes.add_argument("--limit", type=positive_int, help="only the first N dialogues")
    episodes.add_argument(
        "--concurrency",
        type=positive_int,
        default=DEFAULT_CONCURRENCY,
        help="episodes at once (the turns of one episode go in order)",
    )
    episodes.add_argument("--temperature", type=temperature, help="the Listener's")
    episodes.add_argument("--max-tokens", type=positive_int, help="the Listener's")
    episodes.add_argument("--speaker-temperature", type=temperature, help="the Speaker's")
    episodes.add_argument("--postprocess", choices=POSTPROCESS)
    episodes.add_argument("--commas", choices=COMMAS)
    episodes.add_argument("--emotion-reader", choices=EMOTION_READERS)
    episodes.add_argument("--family", choices=FAMILIES, help="of an openai:MODEL_ID Listener")
    episodes.add_argument(
        "--oracle",
        action="store_true",
        help="tell the Listener each dialogue's situation and emotion: the upper reference "
        "per dialogue, a run of its own (never a run under test)",
    )
    episodes.add_argument("--db", type=Path)
    episodes.add_argument("--data", type=Path)
    episodes.set_defaults(func=cmd_episodes)


def cmd_episodes(args: argparse.Namespace, settings: Settings) -> int:
    """Play the episodes with a progress bar (one step per episode); exit 1 if any
    episode stopped on a failure (run the same command to resume it)."""
    from koed_core.jobs.kinds import EpisodeJob

    langs = languages(args.lang)
    if langs is None:
        return 2
    if args.family and not args.model.startswith("openai:"):
        print("error: --family is for openai:MODEL_ID models", file=sys.stderr)
        return 2
    params = EpisodeJob(
        model=args.model,
        speaker=args.speaker,
        turns=args.turns,
        langs=langs,
        protocol=args.protocol,
        prompts=prompt_source(args.prompts, PROMPT_SETS),
        speaker_prompts=str(args.speaker_prompts.resolve()) if args.speaker_prompts else None,
        subset=args.subset,
        sample=args.sample,
        seed=args.seed,
        limit=args.limit,
        concurrency=args.concurrency,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        speaker_temperature=args.speaker_temperature,
        data=str(args.data) if args.data else None,
        postprocess=args.postprocess,
        commas=args.commas,
        emotion_reader=args.emotion_reader,
        family=args.family,
        oracle=args.oracle,
    )
    return foreground(params, args.db, settings, "episode")
