"""``koed data check`` and ``koed data download``: the KoED file itself."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from koed_core.cli.common import (
    progress_bar,
)
from koed_core.config import Settings
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.sources import (
    OFFICIAL,
    OFFICIAL_FILENAME,
    download_official,
    official_cache_path,
    sha256_of,
)
from koed_core.errors import KoedError

FIGURE_NAMES = {
    "dialogues": "dialogues",
    "labels": "labels",
    "label_sets": "distinct label sets",
    "turns": "turns",
    "ko_only_turns": "Korean-only turns",
    "en_only_turns": "English-only turns",
    "korean_emotion_dialogues": "jeong/han dialogues",
}


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed data check | download"""
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
