"""``koed translate``: the translated variants (en-from-ko, ko-from-en) made by a model,
taken in from people, listed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from koed_core.config import Settings
from koed_core.dialogues.subsets import SUBSETS
from koed_core.dialogues.variants import VARIANTS
from koed_core.errors import KoedError
from koed_core.models.request import file_arg, positive_int, temperature_arg


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed translate run | import | list"""
    translate = groups.add_parser(
        "translate", help="translated variants: the language x content cells of the gap"
    )
    commands = translate.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="translate dialogues with a model; stored as the variant's next version"
    )
    run.add_argument("--variant", choices=tuple(VARIANTS), required=True)
    run.add_argument("--model", required=True, help="a name from models.toml, or openai:MODEL_ID")
    run.add_argument("--subset", choices=SUBSETS, default="full", help="default full")
    run.add_argument("--sample", type=positive_int, help="a stratified sample of N dialogues")
    run.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    run.add_argument("--limit", type=positive_int, help="only the first N dialogues")
    run.add_argument("--prompts", type=file_arg, help="your own translation prompt (TOML)")
    run.add_argument("--temperature", type=temperature_arg, default=0.0, help="default 0 (greedy)")
    run.add_argument(
        "--max-tokens",
        type=positive_int,
        help="cap per text (default 512; each text gets about three tokens a source character)",
    )
    run.add_argument("--data", type=file_arg, help="KoED file (default: the app's data source)")
    run.add_argument("--db", type=Path)
    run.set_defaults(func=cmd_run)

    take = commands.add_parser(
        "import",
        help='people\'s translations, JSONL: {"conv_id", "variant", "situation", "turns": '
        "[...]} a line; a bad file is refused whole",
    )
    take.add_argument("file", type=Path)
    take.add_argument("--translator", required=True, help="who translated (stored with it)")
    take.add_argument("--data", type=file_arg, help="KoED file (default: the app's data source)")
    take.add_argument("--db", type=Path)
    take.set_defaults(func=cmd_import)

    listing = commands.add_parser("list", help="every version of each variant")
    listing.add_argument("--db", type=Path)
    listing.set_defaults(func=cmd_list)


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """Translate the chosen dialogues (what a translation job on a page does); exit 1 if
    any dialogue failed. Interrupted, the same command asks only for what is not kept."""
    from koed_core.cli.common import print_errors, progress_bar
    from koed_core.db import Store
    from koed_core.jobs.kinds import Environment, Hooks, TranslateJob, execute_translate

    params = TranslateJob(
        variant=args.variant,
        model=args.model,
        subset=args.subset,
        sample=args.sample,
        seed=args.seed,
        limit=args.limit,
        prompts=str(args.prompts) if args.prompts else None,
        temperature=None if args.temperature == "default" else args.temperature,
        max_tokens=args.max_tokens,
        data=str(args.data) if args.data else None,
    )
    store = Store(args.db or settings.db_path)
    with progress_bar("dialogue") as progress:
        result = execute_translate(
            params, store, Environment(settings), Hooks(progress=progress, say=print)
        )
    data = result.data
    if "version_id" in data:
        kept = f" ({data['kept']} kept from an interrupted pass)" if data["kept"] else ""
        print(
            f"{params.variant} v{data['version']} ({data['version_id']}): "
            f"{data['said']['values']['translated']} dialogues{kept}"
        )
    else:
        print("nothing translated: every dialogue failed", file=sys.stderr)
    if data["errors"]:
        kinds: dict[str, int] = {}
        for error in data["errors"].values():
            kinds[error] = kinds.get(error, 0) + 1
        print(f"{len(data['errors'])} dialogues failed (left out):", file=sys.stderr)
        print_errors(kinds)
    return 1 if data["errors"] else 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Take a JSONL file of people's translations: one new version per variant in it."""
    from koed_core.db import Store
    from koed_core.jobs.kinds.environment import Environment, job_dataset
    from koed_core.models.variant_texts import import_lines

    dataset = job_dataset(Environment(settings), args.data, None)
    try:
        text = args.file.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise KoedError(f"{args.file}: not UTF-8 text (bad byte at offset {err.start})") from None
    made = import_lines(
        Store(args.db or settings.db_path), dataset, text.splitlines(), args.translator
    )
    for version in made:
        print(
            f"{version.label} ({version.id}): {version.dialogues} dialogues by {version.translator}"
        )
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    """One line per version: variant, version, who made it, how many dialogues, when."""
    from koed_core.db import Store
    from koed_core.db.variants import Variants

    versions = Variants(Store(args.db or settings.db_path)).versions()
    if not versions:
        print(
            "no variant yet: run `koed translate run` or `koed translate import`", file=sys.stderr
        )
        return 1
    print("variant\tversion\tid\tmade_by\tby\tprompt_version\tdialogues\tsource_sha256\tcreated")
    for v in versions:
        by = v.model if v.made_by == "model" else v.translator
        print(
            f"{v.variant}\t{v.version}\t{v.id}\t{v.made_by}\t{by}\t{v.prompt_version or '-'}\t"
            f"{v.dialogues}\t{v.source_sha256[:12]}\t{v.created}"
        )
    return 0
