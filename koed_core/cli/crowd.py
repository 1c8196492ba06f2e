"""``koed study``, ``koed invite`` and ``koed crowd``: a crowd study scripted end to end.

The same functions as the Studies page and the dashboard, so a study made here and one
made in the app are the same thing; ``--json`` prints what a script reads back.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from koed_core.cli import ppi
from koed_core.cli.common import positive_int
from koed_core.config import Settings
from koed_core.db.types import StudyConfig
from koed_core.errors import KoedError


class CrowdCliError(KoedError):
    """A crowd command given something it cannot use."""


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed study create | invite create, list | crowd decisions, decide"""
    study = groups.add_parser("study", help="rating studies").add_subparsers(
        dest="action", required=True
    )
    create = study.add_parser("create", help="a study of stored runs' responses")
    create.add_argument("--name", required=True)
    create.add_argument("--runs", required=True, help="RUN_ID[,RUN_ID...]")
    create.add_argument("--langs", default="ko,en")
    create.add_argument("--overlap", type=positive_int, default=StudyConfig.default("overlap"))
    create.add_argument(
        "--attention",
        type=int,
        default=StudyConfig.default("attention_checks"),
        help="attention checks per language",
    )
    create.add_argument(
        "--timeout-minutes",
        type=positive_int,
        default=StudyConfig.default("timeout_minutes"),
        help="inactivity after which an item goes back and a crowd worker's place comes back",
    )
    create.add_argument(
        "--whole-episodes",
        action="store_true",
        help="episode runs: one item is one whole episode (the Listener rated over it all)",
    )
    create.add_argument(
        "--sample",
        type=positive_int,
        help="a uniform random sample of N dialogues, both languages each (PPI++ can use it)",
    )
    create.add_argument(
        "--seed", type=int, default=StudyConfig.default("seed"), help="the order and sample seed"
    )
    create.add_argument(
        "--bilingual",
        choices=["separate", "counterbalanced", "free"],
        default="separate",
        help="ko+en: no rater sees both versions of a dialogue (separate, the default), or "
        "half ko first and half en first with the order recorded per rating",
    )
    create.add_argument("--json", action="store_true")
    create.add_argument("--db", type=Path)
    create.set_defaults(func=cmd_study_create)
    ppi.register_plan(study)  # koed study plan: the next batch's size (koed_core/cli/ppi.py)

    invite = groups.add_parser("invite", help="crowd invite links").add_subparsers(
        dest="action", required=True
    )
    make = invite.add_parser("create", help="a signed link for a recruitment platform")
    make.add_argument("--study", type=positive_int, required=True)
    make.add_argument("--platform", choices=["prolific", "mturk", "none", "account"], required=True)
    make.add_argument("--places", type=positive_int, required=True)
    make.add_argument("--batch-size", type=positive_int, required=True)
    make.add_argument("--batches", type=positive_int, default=1)
    make.add_argument("--reward", type=float, help="per worker, for the pay figures")
    make.add_argument("--currency", default="GBP")
    make.add_argument("--days", type=float, default=14.0)
    make.add_argument("--prolific-study", help="Prolific's study id: STUDY_ID must match it")
    make.add_argument(
        "--codes",
        help="COMPLETED,SCREENOUT,FAILED: the three codes (4-32 upper-case letters and "
        "digits, all different); generated when left out",
    )
    make.add_argument(
        "--calibration-attempts", type=positive_int, default=1, help="1 to 5 (default 1)"
    )
    make.add_argument(
        "--consent-file",
        type=Path,
        help="Korean text, a line ---, English text; {time}, {pay} and {contact} are filled "
        "in from the link (default: data/consent.json)",
    )
    make.add_argument(
        "--contact",
        default="",
        help="required: whom workers write to (an email address), named in the consent",
    )
    make.add_argument("--people", type=Path, help="platform none: a file of ids, one per line")
    make.add_argument(
        "--url",
        help="the app's public address (default: KOED_PUBLIC_URL, else what `koed serve "
        "--domain` recorded)",
    )
    make.add_argument(
        "--arrival-grace-minutes",
        type=int,
        help="Prolific: minutes a submission with no app place counts as on its way (default 10)",
    )
    make.add_argument(
        "--max-places",
        type=positive_int,
        help="Prolific: the most places a sync may raise the study to (default: the "
        "places plus a fifth, at least one)",
    )
    make.add_argument("--json", action="store_true")
    make.add_argument("--db", type=Path)
    make.set_defaults(func=cmd_invite_create)

    cap = invite.add_parser("cap", help="raise or lower a live link's places")
    cap.add_argument(
        "--invite",
        required=True,
        help="the link's id (`koed invite list`); an older id starting with '-' is given "
        "as --invite=ID",
    )
    cap.add_argument("places", type=positive_int)
    cap.add_argument("--db", type=Path)
    cap.set_defaults(func=cmd_invite_cap)
    listing = invite.add_parser("list", help="a study's links: places and workers")
    listing.add_argument("--study", type=positive_int, required=True)
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--db", type=Path)
    listing.set_defaults(func=cmd_invite_list)

    crowd = groups.add_parser("crowd", help="crowd workers").add_subparsers(
        dest="action", required=True
    )
    decisions = crowd.add_parser("decisions", help="the platform's bulk approve/reject files")
    decisions.add_argument("--study", type=positive_int, required=True)
    decisions.add_argument("--format", choices=["prolific", "mturk"], required=True)
    decisions.add_argument("--out", type=Path, default=Path("."))
    decisions.add_argument("--db", type=Path)
    decisions.set_defaults(func=cmd_decisions)

    decide = crowd.add_parser(
        "decide", help="record a decision on a worker, as the Study dashboard does"
    )
    decide.add_argument("--study", type=positive_int, required=True)
    who = decide.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--worker", help="the platform's id (e.g. the Prolific participant id) or the pseudonym"
    )
    who.add_argument(
        "--suggested",
        metavar="INVITE",
        help="every undecided worker of this link takes the app's suggestion "
        "(accept, screen out, replace; a rejection waits for a written reason)",
    )
    decide.add_argument("--decision", choices=["accept", "reject", "replace", "screen_out"])
    decide.add_argument("--reason", default="", help="required for reject: sent to the worker")
    decide.add_argument("--db", type=Path)
    decide.set_defaults(func=cmd_decide)


def _store(args: argparse.Namespace, settings: Settings):  # type: ignore[no-untyped-def]
    from koed_core.db import Store

    return Store(args.db or settings.db_path)


def cmd_study_create(args: argparse.Namespace, settings: Settings) -> int:
    """Build a study from stored runs and print its id."""
    from koed_core.db import Runs, Sampling, StudyConfig
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.sources import resolve_source
    from koed_core.rating.studies import StudyRules

    store = _store(args, settings)
    runs = tuple(r.strip() for r in args.runs.split(",") if r.strip())
    missing = [r for r in runs if not Runs(store).has_run(r)]
    if missing:
        raise CrowdCliError(f"no stored run {missing[0]!r} (`koed runs` lists them)")
    langs = tuple(lang.strip() for lang in args.langs.split(","))
    if not langs or not set(langs) <= {"ko", "en"}:
        raise CrowdCliError("--langs is ko, en or ko,en")
    if not 0 <= args.attention <= 20:
        raise CrowdCliError("--attention is between 0 and 20")
    dataset = load_dataset(resolve_source(settings.data_path, settings.cache_dir).path)
    config = StudyConfig(
        name=args.name.strip(),
        run_ids=runs,
        langs=langs,
        overlap=args.overlap,
        attention_checks=args.attention,
        timeout_minutes=args.timeout_minutes,
        whole_episodes=args.whole_episodes,
        seed=args.seed,
        bilingual=args.bilingual if len(langs) > 1 else "free",
        sampling=Sampling("random", seed=args.seed, size=args.sample)
        if args.sample
        else Sampling(seed=args.seed),
    )
    study_id = StudyRules(store).create_study(config, dataset)
    print(json.dumps({"study": study_id}) if args.json else f"study {study_id} created")
    return 0


def _consent(path: Path | None) -> tuple[str, str]:
    if path is None:
        from koed_core.rating.crowd import default_consent

        return default_consent()
    text = path.read_text(encoding="utf-8")
    ko, sep, en = text.partition("\n---\n")
    if not sep or not ko.strip() or not en.strip():
        raise CrowdCliError(f"{path}: write the Korean text, a line ---, then the English text")
    return ko.strip(), en.strip()


def cmd_invite_create(args: argparse.Namespace, settings: Settings) -> int:
    """Create a link and print it with the platform's placeholders, and its codes."""
    from koed_core.rating import crowd
    from koed_core.rating.crowd.address import no_address, public_address
    from koed_core.rating.server_key import server_key

    store = _store(args, settings)
    address = public_address(store, args.url, settings.public_url)
    if address is None:  # before anything is stored: a link needs an address
        raise no_address()
    key = server_key(settings.secret_key, Path(store.path))
    ko, en = _consent(args.consent_file)
    people = args.people.read_text(encoding="utf-8").splitlines() if args.people else []
    given = [c.strip() for c in args.codes.split(",")] if args.codes else [None, None, None]
    if len(given) != 3:
        raise CrowdCliError(
            f"--codes takes three codes, COMPLETED,SCREENOUT,FAILED; got {len(given)}"
        )
    if args.platform == "none" and not people:
        raise CrowdCliError("--platform none needs --people FILE (each id gets its own link)")
    invite, token = crowd.create_invite(
        store,
        key,
        args.study,
        crowd.InviteRequest(
            platform=args.platform,
            days=args.days,
            cap=args.places,
            batch_size=args.batch_size,
            batches=args.batches,
            consent_ko=ko,
            consent_en=en,
            reward=args.reward,
            currency=args.currency,
            prolific_study_id=args.prolific_study,
            created_by="cli",
            completion_code=given[0],
            screenout_code=given[1],
            failed_code=given[2],
            calibration_attempts=args.calibration_attempts,
            arrival_grace_minutes=args.arrival_grace_minutes,
            max_places=args.max_places,
            contact=args.contact,
        ),
    )
    base = address + "/join?"
    links = (
        {p: base + q for p, q in crowd.personal_links(key, invite, token, people).items()}
        if args.platform == "none"
        else None
    )
    url = f"{base}invite={token}{crowd.PLACEHOLDERS.get(args.platform, '')}"
    codes = {kind: invite.code_for(kind) for kind in crowd.OUTCOMES}
    guess = crowd.estimate(store, invite)
    if args.json:
        print(json.dumps({"invite": invite.id, "url": None if links else url, "links": links,
                          "codes": codes, "estimate": guess,
                          "check_share": crowd.check_share(store, invite)}))  # fmt: skip
        return 0
    for person, link in (links or {"": url}).items():
        print(f"{person}\t{link}" if person else link)
    for kind, code in codes.items():
        print(f"{kind} code: {code}")
    share = crowd.check_share(store, invite)
    if share > crowd.CHECK_SHARE_WARN:
        print(f"warning: {share:.0%} of what a worker is shown are attention checks")
    if guess["minutes"] is not None:
        pay = guess["hourly_pay"]
        hourly = f", {pay:.2f} {args.currency} an hour" if pay is not None else ""
        if pay is not None and args.platform == "prolific":
            listed = max(1, math.ceil(guess["minutes"] - 1e-9))
            hourly = f" (Prolific lists {listed} whole minutes){hourly}, as Prolific computes it"
        print(f"estimated: {guess['minutes']:.1f} minutes from joining to the code{hourly}")
    return 0


def cmd_invite_cap(args: argparse.Namespace, settings: Settings) -> int:
    """Set a live link's places; those already in keep theirs."""
    from koed_core.db.crowd import Crowd
    from koed_core.rating import crowd

    store = _store(args, settings)
    row = Crowd(store).invite(args.invite)
    if row is None:
        raise CrowdCliError(f"no invite link {args.invite!r} (`koed invite list --study N`)")
    invite = crowd.Invite.from_row(row)
    crowd.set_cap(store, invite, args.places)
    changed = crowd.Invite.from_row(Crowd(store).invite(invite.id) or row)
    print(f"{invite.id}: {crowd.places(store, changed)}")
    return 0


def cmd_invite_list(args: argparse.Namespace, settings: Settings) -> int:
    """A study's links: places used, freed and cap, and workers by status (as the
    dashboard says it: someone under way and quiet past the timeout is "timed out")."""
    from collections import Counter

    from koed_core.db.crowd import Crowd
    from koed_core.rating import crowd

    store = _store(args, settings)
    out: list[dict[str, Any]] = []
    for row in Crowd(store).invites(args.study):
        invite = crowd.Invite.from_row(row)
        places = crowd.places(store, invite)
        statuses = Counter(r["status"] for r in crowd.report_rows(store, invite)[0])
        out.append(
            {
                "invite": invite.id,
                "platform": invite.platform,
                "used": places.used,
                "freed": places.freed,
                "cap": places.cap,
                "workers": {str(k): int(v) for k, v in statuses.items()},
                "revoked": invite.revoked,
            }
        )
    if args.json:
        print(json.dumps(out))
        return 0
    if not out:
        print(f"study {args.study} has no invite links")
    for item in out:
        counts = ", ".join(f"{k} {v}" for k, v in item["workers"].items()) or "nobody yet"
        print(f"{item['invite']} ({item['platform']}): places {item['used']} / {item['cap']} "
              f"({item['freed']} freed); {counts}")  # fmt: skip
    return 0


def cmd_decisions(args: argparse.Namespace, settings: Settings) -> int:
    """Write the bulk files of every link of the platform in the study."""
    from koed_core.db.crowd import Crowd
    from koed_core.rating import crowd

    store = _store(args, settings)
    invites = [
        crowd.Invite.from_row(r)
        for r in Crowd(store).invites(args.study)
        if r["platform"] == args.format
    ]
    if not invites:
        raise CrowdCliError(f"study {args.study} has no {args.format} invite link")
    args.out.mkdir(parents=True, exist_ok=True)
    for invite in invites:
        for name, text in crowd.decision_files(store, invite).items():
            path = args.out / f"{invite.id}-{name}"
            path.write_text(text, encoding="utf-8")
            print(path)
    return 0


def cmd_decide(args: argparse.Namespace, settings: Settings) -> int:
    """Record one decision (or every suggested one), by the same function as the dashboard;
    ``koed prolific review`` then shows what it asks of Prolific."""
    import getpass

    from koed_core.db.crowd import Crowd
    from koed_core.rating import crowd

    store = _store(args, settings)
    by = f"command line ({getpass.getuser()})"
    if args.suggested:
        row = Crowd(store).invite(args.suggested)
        if row is None or row["study_id"] != args.study:
            raise CrowdCliError(f"study {args.study} has no invite link {args.suggested!r}")
        count = crowd.accept_suggested(store, crowd.Invite.from_row(row), by)
        print(f"{count} suggested decisions recorded" if count else "no undecided suggestion")
        return 0
    if not args.decision:
        raise CrowdCliError("--worker needs --decision (accept, reject, replace, screen_out)")
    workers = Crowd(store).worker_rows(args.study)
    match = [w for w in workers if args.worker in (w["username"], str(w.get("worker_id") or ""))]
    if not match:
        raise CrowdCliError(
            f"study {args.study} has no crowd worker {args.worker!r} (a platform id or a "
            "pseudonym from the Study dashboard)"
        )
    worker = match[0]
    before = worker.get("decision")
    crowd.decide(store, worker["username"], args.decision, by, args.reason)
    was = f" (was {before})" if before and before != args.decision else ""
    print(f"{worker['username']}: {args.decision}{was}")
    return 0
