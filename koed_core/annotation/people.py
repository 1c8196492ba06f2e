"""Who may take an annotator's place: accounts with the annotator role, named plainly.

An admin reads every draft in the export and adjudicates, so an admin's answer could
never be blind, yet it would enter the kappa as a blind one; a rater's account and a name
that is no account have no place either. The rule lives here, under the store, so no
page (or script using the store the app uses) can skip it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from koed_core.annotation.taxonomy import AnnotationError
from koed_core.i18n import _
from koed_core.rating import accounts
from koed_core.text.plain_text import has_control


def check_name(username: str) -> None:
    """An annotator's name is plain text: no control character or line break (it is
    shown on pages, written into exports and file names).

    Raises:
        AnnotationError: a control character in it.
    """
    if has_control(username):
        raise AnnotationError(
            _(
                "the annotator name holds a control character (a line break, tab or escape): "
                "{name}",
                name=ascii(username),
            )
        )


def check_annotators(
    names: Sequence[str], accounts_file: Path | None, required: bool = False
) -> None:
    """Each name is plain and, once ``accounts_file`` holds accounts, an account with the
    annotator role. No file given (a script), or no account in it (one person's app):
    only the names' text is checked.

    Raises:
        AnnotationError: a control character, a name that is no account, or an account
            of another role.
        AccountsError: ``required`` (KOED_USERS was set) and the file is missing or broken.
    """
    for name in names:
        check_name(name)
    if accounts_file is None:
        return
    credentials = accounts.load(accounts_file, required=required)
    if not credentials["usernames"]:
        return
    for name in names:
        account = accounts.account_of(credentials, name)
        if account is None:
            raise AnnotationError(
                _(
                    "{user} is not an account here; only accounts with the annotator role annotate",
                    user=repr(name),
                )
            )
        if account.role == "admin":
            raise AnnotationError(
                _(
                    "{user} is an admin account: an admin sees every answer, so cannot "
                    "annotate blind; only accounts with the annotator role annotate",
                    user=repr(name),
                )
            )
        if account.role != "annotator":
            raise AnnotationError(
                _(
                    "{user} is a {role} account; only accounts with the annotator role annotate",
                    user=repr(name),
                    role=_(account.role),
                )
            )
