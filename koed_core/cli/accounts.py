"""``koed users ...`` and ``koed settings``: who may log in, and what the app reads."""

from __future__ import annotations

import argparse
import os
import sys
import time

from koed_core.config import Settings, describe, read_secrets
from koed_core.errors import KoedError
from koed_core.rating.accounts import ROLES, add_user, list_users, lock, unlock


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed users add | list | unlock | lock, and koed settings"""
    shown = groups.add_parser(
        "settings", help="every setting, its value and where it came from (as the app sees it)"
    )
    shown.set_defaults(func=cmd_settings)

    accounts = groups.add_parser("users", help="accounts for the rating pages")
    user_cmds = accounts.add_subparsers(dest="command", required=True)
    add = user_cmds.add_parser("add", help="create an account; prints its password once")
    add.add_argument("username")
    add.add_argument("--role", choices=ROLES, default="rater")
    add.add_argument("--name", help="display name (default: the username)")
    add.add_argument("--ask", action="store_true", help="type the password instead of generating")
    add.set_defaults(func=cmd_users_add)
    listing = user_cmds.add_parser("list", help="accounts with role and lock state")
    listing.set_defaults(func=cmd_users_list)
    unlock = user_cmds.add_parser("unlock", help="clear failed logins, the wait and a lock")
    unlock.add_argument("username")
    unlock.set_defaults(func=cmd_users_unlock)
    locking = user_cmds.add_parser("lock", help="lock an account and end its sessions now")
    locking.add_argument("username")
    locking.set_defaults(func=cmd_users_lock)


def cmd_settings(args: argparse.Namespace, settings: Settings) -> int:
    """Print what the app would use: environment, then .streamlit/secrets.toml, then default."""
    for name, value, where in describe(os.environ, read_secrets()):
        print(f"{name}\t{value}\t({where})")
    return 0


def cmd_users_add(args: argparse.Namespace, settings: Settings) -> int:
    """Create an account; the password is typed (--ask) or generated and printed once."""
    import getpass

    password = None
    if args.ask:
        password = getpass.getpass("Password: ")
        if password != getpass.getpass("Again: "):
            print("error: the two passwords differ", file=sys.stderr)
            return 1
    try:
        created = add_user(settings.users_path, args.username, args.role, args.name, password)
    except KoedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"created {args.role} {args.username!r} in {settings.users_path}")
    if not args.ask:
        print(f"password (shown once, not stored in clear): {created}")
    return 0


def cmd_users_list(args: argparse.Namespace, settings: Settings) -> int:
    """One line per account: name, role, lock state; never a hash."""
    for user in list_users(settings.users_path):
        state = f"{user['failed_logins']} failed logins"
        if user["waiting_until"]:
            state = "waiting (too many failed logins) until " + time.strftime(
                "%H:%M", time.localtime(user["waiting_until"])
            )
        if user["locked"]:
            state = "LOCKED"
        print(f"{user['username']}\t{user['role']}\t{state}")
    return 0


def cmd_users_lock(args: argparse.Namespace, settings: Settings) -> int:
    """Lock an account; its open sessions end at their next page load."""
    lock(settings.users_path, args.username, time.time())
    print(f"locked {args.username}; its sessions are ended")
    return 0


def cmd_users_unlock(args: argparse.Namespace, settings: Settings) -> int:
    """Reset the failed-login counter."""
    try:
        unlock(settings.users_path, args.username)
    except KoedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"unlocked {args.username}")
    return 0
