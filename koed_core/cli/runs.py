"""``koed run``, ``koed judge`` and ``koed judges``: answering KoED and scoring the answers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from koed_core.cli.common import (
    add_batch_choice,
    foreground,
    languages,
    positive_int,
    prompt_source,
    temperature,
)
from koed_core.config import Settings
from koed_core.dialogues.subsets import SUBSETS
from koed_core.judge.rubric import codes
from koed_core.judge.verdicts import MODES, PARSES, TEMPLATES
from koed_core.models.pipeline import COMMAS, EMOTION_READERS, FAMILIES, POSTPROCESS
from koed_core.models.prompts import PROMPT_SETS
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.runs import DEFAULT_CONCURRENCY


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed run | judge | judges"""
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
        metavar="SET",
        help=f"prompt set: {', '.join(PROMPT_SETS)} or your own TOML file "
        "(default: paper for single and multi, native for direct)",
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
    steps = run.add_argument_group(
        "pipeline steps", "default: the prompt set's profile (paper: the authors' at every step)"
    )
    steps.add_argument(
        "--postprocess",
        choices=POSTPROCESS,
        help="authors: judge what their post-processing kept (per model family); none: all",
    )
    steps.add_argument(
        "--commas", choices=COMMAS, help="raw: English with _comma_ as the file has it"
    )
    steps.add_argument(
        "--emotion-reader",
        choices=EMOTION_READERS,
        help="authors: English label names and 정/한 only; extended: Korean glosses too",
    )
    steps.add_argument(
        "--family",
        choices=FAMILIES,
        help="post-processing rule of an openai:MODEL_ID model (default open)",
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
    wording = judge.add_mutually_exclusive_group()
    wording.add_argument(
        "--template",
        choices=TEMPLATES,
        help="judge prompt wording (default: authors in paper mode, fenced in strict)",
    )
    wording.add_argument(
        "--judge-template", type=Path, metavar="FILE", help="your own judge template (TOML)"
    )
    judge.add_argument(
        "--parse",
        choices=PARSES,
        help="paper mode's verdict reader (default authors: split on 'Score:', then int)",
    )
    judge.add_argument(
        "--replicate",
        type=int,
        default=0,
        metavar="N",
        help="ask the judge again about texts it judged (N from 1), kept as a source of its "
        "own: the noise floor of a comparison",
    )
    whole = judge.add_mutually_exclusive_group()
    whole.add_argument(
        "--whole-episode",
        action="store_true",
        help="an episode run: score each episode whole (the five dimensions and UND, came "
        "to understand), a judge configuration of its own",
    )
    whole.add_argument(
        "--speaker-check",
        action="store_true",
        help="an episode run: check each kept Speaker turn (stays in the situation, keeps "
        "the feeling unnamed, sounds native)",
    )
    judge.add_argument("--db", type=Path)
    add_batch_choice(judge)
    judge.set_defaults(func=cmd_judge)

    judges = groups.add_parser("judges", help="list the judge configurations that scored runs")
    judges.add_argument("--db", type=Path)
    judges.set_defaults(func=cmd_judges)


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """A resumable batch run with a progress bar; exit 1 if any request failed for good."""
    from koed_core.jobs.kinds import RunJob

    if args.family and not args.model.startswith("openai:"):
        print(
            f"error: --family is for openai:MODEL_ID models; {args.model!r} takes its family "
            'from models.toml (family = "open" or "claude")',
            file=sys.stderr,
        )
        return 2
    langs = languages(args.lang)
    if langs is None:
        return 2
    params = RunJob(
        model=args.model,
        langs=langs,
        protocol=args.protocol,
        prompts=prompt_source(args.prompts, PROMPT_SETS),
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
        postprocess=args.postprocess,
        commas=args.commas,
        emotion_reader=args.emotion_reader,
        family=args.family,
    )
    return foreground(params, args.db, settings, "req")


def cmd_judge(args: argparse.Namespace, settings: Settings) -> int:
    """Judge a run with a progress bar; exit 1 if any call failed for good."""
    from koed_core.jobs.kinds import JudgeJob

    params = JudgeJob(
        run_id=args.run,
        judge=args.judge,
        mode=args.mode,
        dims=tuple(args.dimensions) if args.dimensions else None,
        samples=args.samples,
        concurrency=args.concurrency,
        batch=args.batch,
        batch_size=args.batch_size,
        template=str(args.judge_template.resolve()) if args.judge_template else args.template,
        parse=args.parse,
        replicate=args.replicate,
        whole_episode=args.whole_episode,
        speaker_check=args.speaker_check,
    )
    return foreground(params, args.db, settings, "call")


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
