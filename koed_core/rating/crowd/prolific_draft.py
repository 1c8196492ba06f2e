"""A link's study as Prolific holds it: found again after a lost answer, compared with what
the app would send, and brought in line while it is a draft.

Endpoints (https://docs.prolific.com/api-reference):
- ``GET /api/v1/studies/`` lists the researcher's studies (studies/get-studies, "List all
  studies, with the option to filter by study status"; ``results``): a study whose
  ``internal_name`` is the link's (``koed-<invite id>``) is the link's, so a draft whose
  creation answer was lost is adopted, never made twice;
- ``PATCH /api/v1/studies/{id}/`` updates a study: a draft takes any of the fields the app
  sets; once published, Prolific's help says the details cannot change ("You will not be
  able to change the following details on Prolific once your study is published",
  researcher-help.prolific.com/en/article/a9dd41) except that places may be increased, so a
  published study's differences are shown and refused, never sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from koed_core.i18n import _
from koed_core.rating.crowd.links import CrowdError, Invite
from koed_core.rating.crowd.prolific_client import ProlificClient

DRAFT_FIELDS = (
    "name", "internal_name", "description", "external_study_url", "prolific_id_option",
    "completion_codes", "total_available_places", "estimated_completion_time", "reward",
    "device_compatibility", "filters",
)  # fmt: skip
"""The fields the app sets on a draft, compared on a rerun."""

FIXED_WHEN_PUBLISHED = (
    "name", "external_study_url", "completion_codes", "reward", "device_compatibility",
)  # fmt: skip
"""The fields a rerun compares on a published study (the minutes and the description
follow the link's median time, which moves while people take part: not compared)."""


@dataclass(frozen=True)
class Change:
    """One field where Prolific's study and the app's differ."""

    field: str
    prolific: Any
    """What Prolific holds."""
    app: Any
    """What the app would send."""

    def __str__(self) -> str:
        return f"{self.field}: {_short(self.prolific)} -> {_short(self.app)}"


def internal_name(invite: Invite) -> str:
    """The name the link's study carries on Prolific (researchers see it, participants do
    not); one language arm of a ko+en link adds its language."""
    return f"koed-{invite.id}" + (f"-{invite.arm}" if invite.arm else "")


def find_study(client: ProlificClient, invite: Invite) -> dict[str, Any] | None:
    """The researcher's study made for this link (by its internal name), or None.

    Raises:
        CrowdError: more than one study carries the link's name (delete the extra drafts
            in Prolific first).
        ProlificError: Prolific refused the call.
    """
    name = internal_name(invite)
    found = [
        s
        for s in client.pages("looking for the link's study", "/api/v1/studies/", ("id",))
        if s.get("internal_name") == name
    ]
    if len(found) > 1:
        raise CrowdError(
            _(
                "Prolific holds {n} studies named {name} ({ids}): delete the extra drafts in "
                "Prolific, then run the command again",
                n=len(found),
                name=name,
                ids=", ".join(str(s.get("id")) for s in found),
            )
        )
    if not found:
        return None
    return client.call_object(
        "reading the study", "GET", f"/api/v1/studies/{found[0]['id']}/", require=("id",)
    )


def differences(study: dict[str, Any], body: dict[str, Any]) -> list[Change]:
    """Where Prolific's study differs from ``body`` (a draft: every field the app sets; a
    published study: the fields that cannot change, and places the link has more of)."""
    draft = str(study.get("status") or "UNPUBLISHED") == "UNPUBLISHED"
    changes = []
    for name in DRAFT_FIELDS if draft else FIXED_WHEN_PUBLISHED:
        if name in body and _same(name, study.get(name)) != _same(name, body[name]):
            changes.append(Change(name, study.get(name), body[name]))
    places = int(study.get("total_available_places") or 0)
    if not draft and int(body["total_available_places"]) > places:
        changes.append(Change("total_available_places", places, body["total_available_places"]))
    return changes


def bring_in_line(
    client: ProlificClient, study: dict[str, Any], changes: list[Change]
) -> dict[str, Any]:
    """Send a draft's changes in one PATCH and return the study as Prolific answers it; a
    published study's changes other than more places are refused, with the difference.

    Raises:
        CrowdError: the study is published and differs where it cannot change.
        ProlificError: Prolific refused the call.
    """
    if not changes:
        return study
    draft = str(study.get("status") or "UNPUBLISHED") == "UNPUBLISHED"
    fixed = [c for c in changes if c.field != "total_available_places"]
    if not draft and fixed:
        raise CrowdError(
            _(
                "Prolific study {study} is {status}, and a published study cannot change "
                "these ({changes}, Prolific's first): stop it in Prolific and publish a new "
                "link, or put the link back as it was",
                study=study.get("id"),
                status=study.get("status"),
                changes="; ".join(str(c) for c in fixed),
            )
        )
    path = f"/api/v1/studies/{study['id']}/"
    client.call("updating the draft study", "PATCH", path, {c.field: c.app for c in changes})
    return client.call_object("reading the study", "GET", path, require=("id",))


def _same(name: str, value: Any) -> Any:
    """A field in a form that compares equal however Prolific orders or decorates it."""
    if value is None:
        return None
    if name == "completion_codes":
        return sorted(
            (
                str(c.get("code")),
                str(c.get("code_type")),
                tuple(sorted(str(a.get("action")) for a in c.get("actions") or [])),
            )
            for c in value
        )
    if name == "filters":
        return sorted(
            (str(f.get("filter_id")), tuple(sorted(str(v) for v in f.get("selected_values") or [])))
            for f in value
        )
    if name == "device_compatibility":
        return sorted(str(d) for d in value)
    if name in ("reward", "total_available_places", "estimated_completion_time"):
        return round(float(value))
    return value


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
