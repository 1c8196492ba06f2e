"""``koed annotations``: annotation projects, and annotations in and out as JSONL.

The same functions as the Annotation projects page, so a project made here and one made
in the app are the same thing; an import is checked whole before anything is stored.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from koed_core.annotation.formats import FORMATS
from koed_core.cli.common import positive_int
from koed_core.config import Settings


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed annotations project | list | import | export"""
    group = groups.add_parser(
        "annotations", help="linguists' annotation of the adaptation"
    ).add_subparsers(dest="action", required=True)
    project = group.add_parser("project", help="a new annotation project")
    project.add_argument("--name", required=True)
    project.add_argument("--conv-ids", help="CONV_ID[,CONV_ID...] (default: the subset)")
    project.add_argument("--subset", default="full", help="full, paper-100 or jeong-han-80")
    project.add_argument("--limit", type=positive_int, help="the first N dialogues of it")
    project.add_argument("--per-item", type=positive_int, default=2, help="annotators each")
    project.add_argument("--annotators", help="USER[,USER...] (default: any annotator)")
    project.add_argument("--taxonomy", type=Path, help="a taxonomy TOML of your own")
    project.add_argument("--json", action="store_true")
    project.add_argument("--db", type=Path)
    project.set_defaults(func=cmd_project)

    listing = group.add_parser("list", help="the projects and how far each has come")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--db", type=Path)
    listing.set_defaults(func=cmd_list)

    load = group.add_parser(
        "import",
        help="annotations made elsewhere: JSONL (or a spreadsheet's CSV, a span a row), "
        "WebAnno TSV (INCEpTION), brat or Label Studio JSON",
    )
    load.add_argument("file", type=Path, help="a file, or the folder an export wrote")
    load.add_argument("--format", choices=FORMATS, default="jsonl", help="default: jsonl")
    where = load.add_mutually_exclusive_group(required=True)
    where.add_argument("--project", type=positive_int, help="into this project")
    where.add_argument("--name", help="into a new project of the file's dialogues")
    load.add_argument("--per-item", type=positive_int, default=2)
    load.add_argument("--db", type=Path)
    load.set_defaults(func=cmd_import)

    out = group.add_parser("export", help="annotations, agreement and taxonomy")
    out.add_argument("--out", type=Path, required=True)
    out.add_argument("--format", choices=FORMATS, default="jsonl", help="default: jsonl")
    out.add_argument("--project", type=positive_int, help="one project (default: every one)")
    out.add_argument("--db", type=Path)
    out.set_defaults(func=cmd_export)


def _open(args: argparse.Namespace, settings: Settings) -> tuple[Any, Any]:
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.sources import resolve_source

    store = Store(args.db or settings.db_path)
    dataset = load_dataset(resolve_source(settings.data_path, settings.cache_dir).path)
    # the accounts file decides who may be named an annotator, as in the app
    return AnnotationRules(store, settings.users_path, settings.users_configured), dataset


def cmd_project(args: argparse.Namespace, settings: Settings) -> int:
    """Create a project and print its id."""
    from koed_core.annotation.taxonomy import load_taxonomy
    from koed_core.dialogues.subsets import select

    annotations, dataset = _open(args, settings)
    if args.conv_ids:
        ids = [c.strip() for c in args.conv_ids.split(",") if c.strip()]
    else:
        ids = [d.conv_id for d in select(dataset.dialogues, args.subset)]
    if args.limit:
        ids = ids[: args.limit]
    people = [u.strip() for u in (args.annotators or "").split(",") if u.strip()]
    taxonomy = load_taxonomy(args.taxonomy) if args.taxonomy else None
    project_id = annotations.create_project(
        args.name, dataset, ids, args.per_item, people, taxonomy
    )
    if args.json:
        print(json.dumps({"project": project_id, "dialogues": len(ids)}))
    else:
        print(
            f"annotation project {project_id} created: {len(ids)} dialogues, "
            f"{args.per_item} annotators each"
        )
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    """Every project: dialogues, complete, adjudicated."""
    annotations, _ = _open(args, settings)
    rows = annotations.progress()
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        print("no annotation projects yet (`koed annotations project --name ...`)")
    for r in [] if args.json else rows:
        print(
            f"{r['project']}  {r['name']}: {r['complete']}/{r['dialogues']} complete, "
            f"{r['adjudicated']} adjudicated, taxonomy {r['taxonomy_version']}"
        )
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Import a file (or an export's folder) into a project (a new one with --name)."""
    from koed_core.annotation import formats
    from koed_core.annotation.exchange import import_lines

    annotations, dataset = _open(args, settings)
    rows = formats.read(args.file, args.format, dataset)
    project_id = args.project
    # One transaction: a refused file leaves no new (empty) project behind.
    with annotations.store.write():
        if project_id is None:
            ids = list(dict.fromkeys(str(r.get("conv_id")) for _, r in rows))
            project_id = annotations.create_project(args.name, dataset, ids, args.per_item)
        counts = import_lines(annotations, project_id, dataset, rows, where=args.file.name)
    if args.project is None:
        print(f"annotation project {project_id} created for {args.file.name}")
    print(
        f"imported {counts['annotations']} annotation(s) with {counts['spans']} span(s) "
        f"on {counts['dialogues']} dialogue(s) into project {project_id}"
    )
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write each project's annotations (in --format), agreement table and taxonomy."""
    from koed_core.annotation import formats
    from koed_core.rating.server_key import server_key

    annotations, dataset = _open(args, settings)
    key = server_key(settings.secret_key, Path(annotations.store.path))
    chosen = [args.project] if args.project else [p["id"] for p in annotations.projects()]
    if not chosen:
        print("no annotation projects yet: nothing to export")
        return 0
    for project_id in chosen:
        for path in formats.export(annotations, project_id, dataset, key, args.out, args.format):
            print(path)
    return 0
