"""``koed prolific``: a Prolific link run through Prolific's API (publish, sync, review,
bonus, and the log of every call the app made on the account).

The token is read from ``PROLIFIC_API_TOKEN`` (environment or .streamlit/secrets.toml) by
the client only; nothing here prints, stores or exports it.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from koed_core.config import Settings, merged_env, read_secrets
from koed_core.errors import KoedError


class ProlificCliError(KoedError):
    """A prolific command given something it cannot use."""


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed prolific publish | sync | review | bonus | calls"""
    group = groups.add_parser("prolific", help="a Prolific link through Prolific's API")
    actions = group.add_subparsers(dest="action", required=True)

    publish = actions.add_parser("publish", help="create the study as a draft; --publish")
    _common(publish)
    publish.add_argument("--publish", action="store_true", help="publish it (it costs money)")
    publish.add_argument(
        "--url",
        help="the app's public https:// address (default: KOED_PUBLIC_URL, else what "
        "`koed serve --domain` recorded, else the existing study's)",
    )
    publish.add_argument("--pilot", help="a pilot link's id: its median time sets the minutes")
    publish.add_argument("--name", default="Rate empathetic replies (KoED)")
    publish.add_argument("--description", default="")
    publish.add_argument("--devices", default="desktop", help="desktop,tablet,mobile")
    for outcome in ("completed", "screenout", "failed"):
        publish.add_argument(
            f"--{outcome}-action",
            choices=["AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW"],
            help="what Prolific does with this code (see docs/rating.md)",
        )
    publish.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="FILTER_ID=CHOICE[,CHOICE]",
        help="one more Prolific filter for every arm, choices by their label "
        "(e.g. fluent-languages=English); repeatable",
    )
    publish.add_argument(
        "--accept-few",
        action="store_true",
        help="publish an arm even when Prolific counts fewer eligible people than places",
    )
    publish.add_argument("--json", action="store_true")
    publish.set_defaults(func=cmd_publish)

    sync = actions.add_parser("sync", help="read the submissions: returns, flags, places")
    _common(sync)
    sync.add_argument(
        "--dry-run", action="store_true", help="read and report; raise no places on Prolific"
    )
    sync.add_argument("--json", action="store_true")
    sync.set_defaults(func=cmd_sync)

    review = actions.add_parser("review", help="approve and reject as decided (dry run)")
    _common(review)
    review.add_argument("--apply", action="store_true", help="call Prolific")
    review.set_defaults(func=cmd_review)

    bonus = actions.add_parser("bonus", help="pay bonuses from a file, once (dry run)")
    _common(bonus)
    bonus.add_argument("--file", type=Path, required=True, help="participant_id,amount lines")
    bonus.add_argument("--round", default="1", help="a second bonus to someone: another round")
    bonus.add_argument("--apply", action="store_true", help="call Prolific")
    bonus.add_argument(
        "--release",
        action="append",
        default=[],
        metavar="PARTICIPANT_ID",
        help="a bonus left 'paying' that Prolific's app shows unpaid: pay it again (repeatable)",
    )
    bonus.set_defaults(func=cmd_bonus)

    receive = actions.add_parser(
        "receive", help="take Prolific's signed events (run by `koed serve --domain`)"
    )
    receive.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    receive.add_argument("--db", type=Path)
    receive.set_defaults(func=cmd_receive)

    subscribe = actions.add_parser(
        "subscribe", help="subscribe to Prolific's submission and study events"
    )
    subscribe.add_argument(
        "--url",
        help="the app's public https:// address (default: what `koed serve --domain` recorded)",
    )
    subscribe.add_argument("--db", type=Path)
    subscribe.set_defaults(func=cmd_subscribe)

    messages = actions.add_parser(
        "messages", help="participants' unread messages; --send one message to all"
    )
    _common(messages)
    messages.add_argument("--send", metavar="TEXT", help="send this to every participant")
    messages.set_defaults(func=cmd_messages)

    capacity = actions.add_parser(
        "capacity", help="the people the server holds: studies pause there (each sync)"
    )
    capacity.add_argument("--people", type=int, help="set it (0: no limit)")
    capacity.add_argument("--db", type=Path)
    capacity.set_defaults(func=cmd_capacity)

    calls = actions.add_parser("calls", help="every call the app made for this link")
    _common(calls)
    calls.set_defaults(func=cmd_calls)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--invite", required=True, help="the link's id (`koed invite list`)")
    parser.add_argument("--db", type=Path)


def _setup(args: argparse.Namespace, settings: Settings, client: bool = True) -> Any:
    from koed_core.db import Store
    from koed_core.db.crowd import Crowd
    from koed_core.rating.crowd import Invite
    from koed_core.rating.crowd.prolific_client import ProlificClient

    store = Store(args.db or settings.db_path)
    row = Crowd(store).invite(args.invite)
    if row is None:
        raise ProlificCliError(f"no invite link {args.invite!r} (`koed invite list --study N`)")
    invite = Invite.from_row(row)
    if invite.platform != "prolific":
        raise ProlificCliError(f"{invite.id} is a {invite.platform} link, not a Prolific one")
    env = merged_env(os.environ, read_secrets())
    api = ProlificClient.from_env(env, store, invite_id=invite.id) if client else None
    return store, invite, api


def cmd_publish(args: argparse.Namespace, settings: Settings) -> int:
    """Create the draft, print its cost, publish it when asked."""
    from koed_core.db.crowd import Crowd
    from koed_core.rating.crowd import Invite
    from koed_core.rating.crowd.address import public_address
    from koed_core.rating.crowd.prolific import StudyListing, publish_link
    from koed_core.rating.crowd.prolific_arms import Audience
    from koed_core.rating.server_key import server_key

    store, invite, api = _setup(args, settings)
    pilot = None
    if args.pilot:
        row = Crowd(store).invite(args.pilot)
        if row is None:
            raise ProlificCliError(f"no invite link {args.pilot!r} for --pilot")
        pilot = Invite.from_row(row)
    chosen = {
        "completed": args.completed_action,
        "screened_out": args.screenout_action,
        "failed_checks": args.failed_action,
    }
    url = public_address(store, args.url, settings.public_url)  # None: the study's own
    drafts = publish_link(
        store,
        api,
        invite,
        server_key(settings.secret_key, Path(store.path)),
        url,
        listing=StudyListing(
            name=args.name,
            description=args.description,
            actions={k: v for k, v in chosen.items() if v},
            devices=tuple(d.strip() for d in args.devices.split(",") if d.strip()),
            audience=Audience(extra=_extra_filters(args.filter), accept_few=args.accept_few),
        ),
        go_live=args.publish,
        pilot=pilot,
    )
    if args.json:
        print(json.dumps([_draft_json(draft, invite.currency) for draft in drafts]))
        return 0
    for draft in drafts:
        _print_draft(draft, invite.currency)
    if not all(draft.published for draft in drafts):
        print("a draft: nothing is spent until `koed prolific publish --invite ID --publish`")
    return 0


def _extra_filters(given: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``FILTER_ID=CHOICE[,CHOICE]`` options as (filter id, choice labels).

    Raises:
        ProlificCliError: an option without ``=`` or without a choice.
    """
    out = []
    for item in given:
        filter_id, _eq, labels = item.partition("=")
        chosen = tuple(label.strip() for label in labels.split(",") if label.strip())
        if not filter_id.strip() or not chosen:
            raise ProlificCliError(f"--filter {item!r} is not FILTER_ID=CHOICE[,CHOICE]")
        out.append((filter_id.strip(), chosen))
    return tuple(out)


def _cost(draft: Any, currency: str) -> str:
    return f"{draft.cost_cents / 100:.2f} {currency}" if draft.cost_cents else "unknown"


def _draft_json(draft: Any, currency: str) -> dict[str, Any]:
    arm = draft.arm
    return {
        "study": draft.study_id,
        "status": draft.status,
        "cost": _cost(draft, currency),
        "reward": draft.reward_cents / 100,
        "places": draft.places,
        "minutes": draft.minutes,
        "listed_minutes": draft.listed_minutes,
        "hourly": draft.hourly,
        "arm": arm.lang if arm else None,
        "filters": list(arm.described) if arm else [],
        "eligible": arm.eligible if arm else None,
        "eligible_text": arm.eligible_text if arm else None,
        "changed": [change.__dict__ for change in draft.changes],
    }


def _print_draft(draft: Any, currency: str) -> None:
    """One arm's study: who can take part, what it pays, what it costs."""
    from koed_core.rating.crowd.prolific import source_name

    arm = draft.arm
    name = f" ({arm.lang} arm)" if arm else ""
    print(f"Prolific study {draft.study_id}{name}: {draft.status}")
    if arm:
        print(f"  filters: {'; '.join(arm.described)}")
        print(
            f"  eligible on Prolific: {arm.eligible_text} for {draft.places} places"
            + ("  <- fewer than the places: check the filters" if arm.short else "")
        )
    for change in draft.changes:
        print(f"  changed on Prolific: {change}")
    print(  # Prolific's own reward and places, as it answered
        f"  reward {draft.reward_cents / 100:.2f} {currency} for the "
        f"{draft.listed_minutes} minutes Prolific lists ({draft.minutes:.1f} by "
        f"{source_name(draft.minutes_from)}): {draft.hourly:.2f} {currency} an hour, "
        f"as Prolific computes it"
    )
    print(f"  places {draft.places}; cost with Prolific's fees and VAT: {_cost(draft, currency)}")


def cmd_sync(args: argparse.Namespace, settings: Settings) -> int:
    """Read the submissions once."""
    from koed_core.rating.crowd.prolific import sync_link

    store, invite, api = _setup(args, settings)
    reports = sync_link(store, api, invite, raise_places=not args.dry_run)
    if args.json:
        summaries = [report.summary() for report in reports]
        print(json.dumps(summaries[0] if len(summaries) == 1 else summaries))
        return 0
    for report in reports:
        arm = f"{report.lang} arm: " if report.lang else ""
        print(
            f"{arm}{report.read} submissions read; study {report.study_status}; "
            f"places {report.places}"
        )
        for person in report.ended:
            print(f"ended: {person} (returned or timed out on Prolific; the place is free)")
        for person, reason in report.flagged:
            print(f"flagged: {person}: {reason}")
        for line in _places_lines(report):
            print(line)
        if report.transition:
            t = report.transition
            print(
                f"{t.action} sent: {t.active} people active, capacity {t.capacity}; "
                f"Prolific says {t.status}"
            )
        if report.grouped:
            print(
                f"{report.grouped} added to the study's participant group (kept out of "
                "the other arm and later links)"
            )
    return 0


def _places_lines(report: Any) -> list[str]:
    """What the sync counted for places, each submission with why, and what it did."""
    plan = report.plan
    if plan is None:
        return []
    lines = [f"counted: {h}" if h.counted else f"not counted: {h}" for h in plan.holders]
    why = (
        f"the link's {plan.link} places + {plan.counted} holding a Prolific place and none "
        f"in the app (arrival grace {plan.grace} min)"
    )
    if plan.capped:
        lines.append(f"needed {plan.needed} ({why}), capped at the link's limit of {plan.limit}")
    if report.raised_from is not None:
        lines.append(f"places raised on Prolific from {report.raised_from} to {report.places}")
    elif report.would_raise is not None:
        lines.append(f"dry run: would raise places from {report.places} to {report.would_raise}")
    else:
        lines.append(f"places: {why}, so {plan.target} needed; Prolific has {report.places}")
    return lines


def cmd_review(args: argparse.Namespace, settings: Settings) -> int:
    """Print what the decisions ask of Prolific; with --apply, do it."""
    from koed_core.rating.crowd.prolific import sync_link
    from koed_core.rating.crowd.prolific_pay import apply_review, review_plan

    store, invite, api = _setup(args, settings)
    sync_link(store, api, invite, raise_places=False)  # the statuses the plan is read against
    steps = review_plan(store, invite)
    todo = [s for s in steps if s.action]
    if not steps:
        print("no submission awaits review and no worker is decided yet")
    if todo:
        print(f"will do ({len(todo)}):")
    for s in todo:
        extra = f" [{s.category}] {s.message}" if s.action == "reject" else ""
        print(f"  {s.participant_id}\t{s.decision}\t{s.action}{extra}")
    skipped = [s for s in steps if not s.action]
    if skipped:
        print(f"will not do ({len(skipped)}), and why:")
    for s in skipped:
        print(f"  {s.participant_id}\t{s.decision or 'undecided'}\t{s.note}")
    if not args.apply:
        print("dry run: nothing was sent; --apply calls Prolific")
        return 0
    if not todo:
        print("nothing was sent to Prolific: no decided submission needs an action")
        return 0
    for line in apply_review(api, store, steps):
        print(line)
    return 0


def cmd_bonus(args: argparse.Namespace, settings: Settings) -> int:
    """Print the bonuses; with --apply, pay each once."""
    from koed_core.rating.crowd.prolific_bonus import bonus

    store, invite, api = _setup(args, settings, client=args.apply)
    lines = bonus(
        store,
        api if args.apply else None,
        invite,
        args.file,
        round_=args.round,
        release=frozenset(args.release),
    )
    for line in lines:
        note = f" ({line.note})" if line.note else ""
        print(f"{line.participant_id}\t{line.amount} {invite.currency}\t{line.state}{note}")
    if not args.apply:
        print("dry run: nothing was sent; --apply calls Prolific")
    elif not any(line.sent_now for line in lines):
        print("nothing was sent to Prolific: no bonus of this file needed a call")
    unsettled = [line for line in lines if line.state != "paid"]
    if args.apply and unsettled:
        print(
            f"{len(unsettled)} of {len(lines)} not paid yet; states and what each means: "
            "docs/rating.md, 'Bonuses'"
        )
    return 0


def _client(store: Any) -> Any:
    from koed_core.rating.crowd.prolific_client import ProlificClient

    return ProlificClient.from_env(merged_env(os.environ, read_secrets()), store)


def cmd_receive(args: argparse.Namespace, settings: Settings) -> int:
    """Serve Prolific's events on 127.0.0.1 until stopped."""
    import logging

    from koed_core.cli.prolific_receiver import Receiver, server
    from koed_core.db import Store
    from koed_core.rating.crowd.prolific_hooks import hook_secret

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    store = Store(args.db or settings.db_path)
    # the client is made when the secret is asked for: without a token the receiver still
    # runs (supervisord keeps it up) and answers 503, saying why in its log
    httpd = server(Receiver(store, lambda: hook_secret(_client(store))), "127.0.0.1", args.port)
    print(f"Prolific events taken on 127.0.0.1:{args.port}", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


def cmd_subscribe(args: argparse.Namespace, settings: Settings) -> int:
    """Subscribe the workspace's events to the app's public address."""
    from koed_core.db import Store
    from koed_core.rating.crowd.address import check_public_https, public_address
    from koed_core.rating.crowd.prolific_hooks import HOOK_PATH, subscribe

    store = Store(args.db or settings.db_path)
    url = public_address(store, args.url, settings.public_url)
    if url is None:
        raise ProlificCliError("no public address: give --url or run `koed serve --domain`")
    target = check_public_https(url).rstrip("/") + HOOK_PATH
    for line in subscribe(_client(store), target):
        print(line)
    print(f"events go to {target}; the minute-by-minute sync stays as the reconciliation")
    return 0


def cmd_messages(args: argparse.Namespace, settings: Settings) -> int:
    """Unread messages about the link's studies; with --send, one message to everyone."""
    from koed_core.rating.crowd.prolific_messages import send_to_all, unread

    store, invite, api = _setup(args, settings)
    found = unread(store, api, invite)
    print(f"{len(found)} unread message(s) from participants (read them in Prolific's app)")
    for message in found:
        print(f"  {message.sent_at}\t{message.sender}\t{message.body[:200]}")
    if args.send is not None:
        for study, n in send_to_all(store, api, invite, args.send):
            print(f"study {study}: " + (f"sent to {n} participants" if n else "nobody yet"))
    return 0


def cmd_capacity(args: argparse.Namespace, settings: Settings) -> int:
    """Show or set the people the server holds."""
    from koed_core.db import Store
    from koed_core.rating.crowd import prolific_capacity as cap

    store = Store(args.db or settings.db_path)
    if args.people is not None:
        if args.people < 0:
            raise ProlificCliError("--people is a number of people, 0 or more")
        cap.set_capacity(store, args.people)
    most = cap.capacity(store)
    active = cap.active_people(store)
    limit = f"{most} people" if most else "not set (studies are never paused for it)"
    print(
        f"capacity: {limit}; active now: {active} (under way, active in the last "
        f"{cap.ACTIVE_MINUTES} min); each sync pauses at it and starts again under "
        f"{cap.RESTART_SHARE:.0%} of it"
    )
    return 0


def cmd_calls(args: argparse.Namespace, settings: Settings) -> int:
    """The app's calls on the account for this link, newest first."""
    from koed_core.db.prolific import ProlificLog

    store, invite, _api = _setup(args, settings, client=False)
    for c in ProlificLog(store).calls(invite.id):
        print(
            f"{c['at']}\t{c['method']} {c['path']}\t{c['status']}\t{c['tries']}\t"
            f"{c['what']}: {c['outcome']}"
        )
    return 0
