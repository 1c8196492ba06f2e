"""A crowd link run through Prolific's API: the study created as a draft from the link (or
found again, and brought in line while a draft: :mod:`prolific_draft`) and published when
asked; the sync that reads its submissions back is :mod:`prolific_sync` (re-exported).

Endpoints (https://docs.prolific.com/api-reference):
- ``POST /api/v1/studies/`` creates a draft ("Publishing a study is a two step process,
  first create a draft study then publish it"; studies/create-study), with
  ``external_study_url`` carrying ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}`` and
  ``{{%SESSION_ID%}}`` (studies/the-study-object), ``completion_codes`` (each a ``code``, a
  ``code_type`` and ``actions``), ``reward`` in cents, ``total_available_places``,
  ``estimated_completion_time`` in minutes, ``device_compatibility`` and ``filters``;
- ``GET /api/v1/filters/`` lists the filters and their choices (filters/get-filters): the
  language filter's choice is looked up by its name, never guessed;
- ``POST /api/v1/study-cost-calculator/`` is the cost "including VAT and fees" in cents
  (studies/calculate-study-cost);
- ``POST /api/v1/studies/{id}/transition/`` with ``{"action": "PUBLISH"}`` publishes it;
- ``GET /api/v1/studies/{id}/`` and ``PATCH /api/v1/studies/{id}/`` read it and raise
  ``total_available_places`` (Prolific lets places be increased, never decreased);
- ``GET /api/v1/studies/{id}/submissions/`` lists its submissions, page by page
  (studies/get-study-submissions: ``id`` is the ``SESSION_ID``, ``participant_id``,
  ``status``, ``started_at``, ``completed_at``, ``study_code``).

Prolific's minimum reward is £6.00 / $8.00 an hour, judged on the median completion time
(researcher-help.prolific.com, "Prolific's payment principles"; "Prolific uses the median
completion time to work out your study's average reward per hour").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.i18n import _
from koed_core.rating.crowd.address import check_public_https, no_address
from koed_core.rating.crowd.decisions import estimate, report_rows
from koed_core.rating.crowd.links import PLACEHOLDERS, CrowdError, Invite, token_for
from koed_core.rating.crowd.prolific_arms import (
    LANGUAGE_NAMES,
    ArmPlan,
    Audience,
    arm_filters,
    arm_view,
    eligible,
    ensure_group,
    filter_list,
    link_langs,
    too_few,
)
from koed_core.rating.crowd.prolific_client import ProlificAnswerLost, ProlificClient
from koed_core.rating.crowd.prolific_draft import (
    Change,
    bring_in_line,
    differences,
    find_study,
    internal_name,
)
from koed_core.rating.crowd.prolific_sync import ENDED as ENDED
from koed_core.rating.crowd.prolific_sync import SyncReport as SyncReport
from koed_core.rating.crowd.prolific_sync import sync as sync
from koed_core.rating.crowd.prolific_sync import sync_link as sync_link
from koed_core.rating.crowd.prolific_sync import synced_within as synced_within

MIN_HOURLY = {"GBP": 6.00, "USD": 8.00}
"""Prolific's minimum reward per hour, per account currency."""

CODE_TYPES = {
    "completed": "COMPLETED",
    "screened_out": "OTHER",
    "failed_checks": "FAILED_ATTENTION_CHECK",
}
"""Prolific's ``code_type`` of each outcome's code."""

ACTIONS = ("AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW")
DEFAULT_ACTIONS = {
    "completed": "MANUALLY_REVIEW",
    "screened_out": "AUTOMATICALLY_APPROVE",
    "failed_checks": "MANUALLY_REVIEW",
}
"""What Prolific does with each code unless the researcher says otherwise: completions and
failed checks wait for the app's decisions (``koed prolific review``); a screen-out is paid
the reward at once (in-study screen-outs are paid; Prolific lists them among invalid
reasons to reject)."""


@dataclass(frozen=True)
class Draft:
    """What ``publish`` created or found, and what it would cost."""

    study_id: str
    status: str
    body: dict[str, Any]
    cost_cents: float | None
    minutes: float
    minutes_from: str
    hourly: float
    """Prolific's reward over the minutes, per hour."""
    listed_minutes: int
    """The whole minutes Prolific lists (``estimated_completion_time``, read back): what it
    divides the reward by for the hourly rate it shows."""
    published: bool
    reward_cents: int = 0
    """The reward as Prolific holds it, in pence or cents."""
    places: int = 0
    """The places as Prolific holds them."""
    changes: tuple[Change, ...] = ()
    """What this run changed on the draft (Prolific's value, then the app's)."""
    arm: ArmPlan | None = None
    """The language arm: its filters and Prolific's count of eligible people."""


def study_minutes(store: Store, invite: Invite, pilot: Invite | None = None) -> tuple[float, str]:
    """Minutes a worker takes, and where the figure comes from: the median of the pilot
    link's completions, else of this link's, else the estimate.

    Raises:
        CrowdError: no completion and no estimate (the study has no response).
    """
    for link, name in ((pilot, "pilot"), (invite, "link")):
        if link is not None:
            median = report_rows(store, link)[1].get("median_min")
            if median:
                return float(median), name
    guess = estimate(store, invite)["minutes"]
    if guess is None:
        raise CrowdError(_("the study has no response to rate, so no time can be estimated"))
    return float(guess), "estimate"


def listed_minutes(minutes: float) -> int:
    """The whole minutes a draft lists as ``estimated_completion_time`` (at least 1): what
    Prolific divides the reward by for the hourly rate it shows and enforces."""
    return max(1, math.ceil(minutes - 1e-9))


def check_reward(invite: Invite, minutes: float, source: str) -> float:
    """The hourly pay of the link's reward as Prolific computes it (the reward over the
    draft's whole minutes: 2.00 for 19.8 minutes is 6.00 an hour, not 6.06); refused under
    Prolific's minimum.

    Raises:
        CrowdError: no reward, an unknown currency, or an hourly rate under the minimum
            (naming both figures and the reward that would reach it).
    """
    if invite.reward is None or invite.reward <= 0:
        raise CrowdError(_("the link has no reward: create it with --reward"))
    floor = MIN_HOURLY.get(invite.currency)
    if floor is None:
        raise CrowdError(_("Prolific pays in GBP or USD, not {currency}", currency=invite.currency))
    minutes = listed_minutes(minutes)  # the figure Prolific divides by, as the draft sends it
    hourly = invite.reward / (minutes / 60)
    if hourly + 1e-9 < floor:
        figures = {
            "reward": f"{invite.reward:.2f}",
            "minutes": f"{minutes:.1f}",
            "hourly": f"{hourly:.2f}",
            "floor": f"{floor:.2f}",
            "needed": f"{math.ceil(floor * minutes / 60 * 100) / 100:.2f}",
        }
        raise CrowdError(
            _(
                "a reward of {reward} {currency} for {minutes} minutes ({source}) is {hourly} "
                "{currency} an hour, under Prolific's minimum of {floor} {currency} an hour; "
                "raise the reward to at least {needed} {currency}",
                currency=invite.currency,
                source=source_name(source),
                **figures,
            )
        )
    return hourly


def source_name(name: str) -> str:
    """Where a study's minutes come from, in words."""
    return {
        "pilot": _("the pilot's median"),
        "link": _("this link's median"),
        "estimate": _("the estimate"),
    }[name]


@dataclass(frozen=True)
class StudyListing:
    """How a link's study is listed on Prolific: what participants read and which
    devices they may use, and what each outcome's code does."""

    name: str = "Rate empathetic replies (KoED)"
    """The study's title on Prolific."""
    description: str = ""
    """What participants read ("" for one written from the study's languages and time)."""
    actions: Mapping[str, str] = field(default_factory=dict)
    """Outcome (completed, screened_out, failed_checks) to its code's action; the rest
    take ``DEFAULT_ACTIONS``."""
    devices: tuple[str, ...] = ("desktop",)
    """Prolific's device compatibility list."""
    audience: Audience = field(default_factory=Audience)
    """Who may take part besides the arm's first language, and whether an arm with fewer
    eligible people than places may be published."""


def study_body(
    invite: Invite,
    key: bytes,
    url: str,
    minutes: float,
    listing: StudyListing,
    filters: list[dict[str, Any]],
) -> dict[str, Any]:
    """The draft study's fields, from the link (``listing``'s actions and description
    used as they are: :func:`publish` fills them in)."""
    actions, devices = listing.actions, listing.devices
    link = f"{url.rstrip('/')}/join?invite={token_for(invite.id, key)}{PLACEHOLDERS['prolific']}"
    codes = [
        {
            "code": invite.code_for(outcome),
            "code_type": CODE_TYPES[outcome],
            "actions": [{"action": actions.get(outcome, DEFAULT_ACTIONS[outcome])}],
        }
        for outcome in CODE_TYPES
    ]
    return {
        "name": listing.name,
        "internal_name": internal_name(invite),
        "description": listing.description,
        "external_study_url": link,
        "prolific_id_option": "url_parameters",
        "completion_codes": codes,
        "total_available_places": invite.cap,
        "estimated_completion_time": listed_minutes(minutes),
        "reward": round((invite.reward or 0) * 100),
        "device_compatibility": list(devices),
        "filters": filters,
        "submissions_config": {"max_submissions_per_participant": 1},
    }


def publish(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    key: bytes,
    url: str | None,
    *,
    listing: StudyListing | None = None,
    go_live: bool = False,
    pilot: Invite | None = None,
) -> Draft:
    """Create the link's study on Prolific as a draft, once: a link whose study exists
    (stored, or found by its internal name after a lost answer) reuses it, a draft is
    brought in line with the link (each change sent and returned), a published study that
    differs where it cannot change is refused. The reward, places and cost returned are
    Prolific's; the study is published only when ``go_live``.

    ``url`` is the app's public address (None: the study's own, for a study that exists);
    it must be a public https:// address (:func:`address.check_public_https`).

    Raises:
        CrowdError: not a Prolific link, no or a non-public address, a reward under the
            minimum, a bad action, a published study that differs, or a lost answer to
            the draft's creation (said as such).
        ProlificError: Prolific refused a call.
    """
    if invite.platform != "prolific":
        raise CrowdError(_("only a Prolific link can be published on Prolific"))
    listing = listing or StudyListing()
    chosen = {**DEFAULT_ACTIONS, **listing.actions}
    if any(a not in ACTIONS for a in chosen.values()):
        raise CrowdError(_("a code's action is one of {choices}", choices=", ".join(ACTIONS)))
    if url is not None:
        url = check_public_https(url)  # before any call: a bad address costs nothing
    minutes, source = study_minutes(store, invite, pilot)
    check_reward(invite, minutes, source)
    langs = link_langs(store, invite)
    if invite.arm is None and len(langs) > 1:
        raise CrowdError(_("a ko+en link is published as one study per language arm"))
    lang = invite.arm or langs[0]
    audience = listing.audience
    group = ensure_group(store, client, invite.study_id)
    filters, words = arm_filters(filter_list(client), lang, group, audience)
    arm = ArmPlan(lang, invite.cap, tuple(filters), tuple(words), eligible(client, filters))
    study = _existing_study(store, client, invite)
    url = url or _address_of(study)
    text = listing.description or _default_description((lang,), minutes)
    body = study_body(
        invite, key, url, minutes, replace(listing, description=text, actions=chosen), []
    )
    draft = study is None or str(study.get("status") or "UNPUBLISHED") == "UNPUBLISHED"
    if draft:
        body["filters"] = filters
    changes: list[Change] = []
    if study is None:
        study = _create(store, client, invite, body)
    else:
        changes = differences(study, body)
        study = bring_in_line(client, study, changes)
    if go_live and draft and arm.short and not audience.accept_few:
        raise too_few(replace(arm, study_id=str(study["id"])))
    priced = _priced(client, study, body, changes, go_live, (minutes, source))
    return replace(priced, arm=replace(arm, study_id=priced.study_id))


def publish_link(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    key: bytes,
    url: str | None,
    **options: Any,
) -> list[Draft]:
    """:func:`publish` for each language arm of the link (one study per arm for a ko+en
    link, the link's own study otherwise), every arm's draft made and counted before any is
    published, so an arm with too few eligible people stops the launch of both.

    Raises:
        CrowdError, ProlificError: as :func:`publish`.
    """
    langs = link_langs(store, invite)
    go_live = bool(options.pop("go_live", False))
    drafts = []
    for lang in langs:
        view = arm_view(_reread(store, invite), lang, langs)
        drafts.append(publish(store, client, view, key, url, **options))
    audience = (options.get("listing") or StudyListing()).audience
    short = [d.arm for d in drafts if d.arm and d.arm.short and not d.published]
    if go_live and short and not audience.accept_few:
        raise too_few(short[0])
    if not go_live:
        return drafts
    return [
        publish(
            store,
            client,
            arm_view(_reread(store, invite), lang, langs),
            key,
            url,
            go_live=True,
            **options,
        )  # fmt: skip
        for lang in langs
    ]


def _reread(store: Store, invite: Invite) -> Invite:
    """The link as stored now (an arm's study id was just recorded)."""
    row = Crowd(store).invite(invite.id)
    return Invite.from_row(row) if row else invite


def _existing_study(store: Store, client: ProlificClient, invite: Invite) -> dict[str, Any] | None:
    """The link's study on Prolific: the stored one, else one carrying the link's internal
    name (a draft whose creation answer was lost), adopted; None when there is none."""
    if invite.prolific_study_id:
        path = f"/api/v1/studies/{invite.prolific_study_id}/"
        return client.call_object("reading the study", "GET", path, require=("id",))
    found = find_study(client, invite)
    if found is not None:
        _remember(store, invite, str(found["id"]))
    return found


def _remember(store: Store, invite: Invite, study_id: str) -> None:
    """The study the link (or its language arm) was published as."""
    if invite.arm:
        Crowd(store).set_prolific_arm(invite.id, invite.arm, study_id)
    else:
        Crowd(store).set_prolific_study(invite.id, study_id)


def _address_of(study: dict[str, Any] | None) -> str:
    """The app's address in an existing study's URL, checked as a new one would be.

    Raises:
        CrowdError: there is no study to take it from, or its address is not public.
    """
    link = str((study or {}).get("external_study_url") or "")
    if not link:
        raise no_address()
    return check_public_https(link.split("/join?", 1)[0])


def _create(
    store: Store, client: ProlificClient, invite: Invite, body: dict[str, Any]
) -> dict[str, Any]:
    try:
        study = client.call_object(
            "creating the draft study",
            "POST",
            "/api/v1/studies/",
            body,
            safe=False,
            require=("id",),
        )
    except ProlificAnswerLost:
        raise CrowdError(
            _(
                "Prolific's answer to creating the draft study never came, so the draft may "
                "exist there; run the same command again: it looks for a study named {name} "
                "among yours before it creates one",
                name=internal_name(invite),
            )
        ) from None
    _remember(store, invite, str(study["id"]))
    return dict(study)


def _priced(
    client: ProlificClient,
    study: dict[str, Any],
    body: dict[str, Any],
    changes: list[Change],
    go_live: bool,
    timing: tuple[float, str],
) -> Draft:
    """The study's cost for Prolific's own reward and places, then published if asked."""
    reward = int(study.get("reward") or 0)
    places = int(study.get("total_available_places") or 0)
    cost = client.call_object(
        "asking the study's cost",
        "POST",
        "/api/v1/study-cost-calculator/",
        {"reward": reward, "total_available_places": places},
    )
    status = str(study.get("status") or "UNPUBLISHED")
    if go_live and status == "UNPUBLISHED":
        answer = client.call_object(
            "publishing the study",
            "POST",
            f"/api/v1/studies/{study['id']}/transition/",
            {"action": "PUBLISH"},
        )
        status = str(answer.get("status") or "PUBLISHING")
    minutes, source = timing
    listed = int(study.get("estimated_completion_time") or listed_minutes(minutes))
    return Draft(
        study_id=str(study["id"]),
        status=status,
        body=body,
        cost_cents=cost.get("total_cost"),
        minutes=minutes,
        minutes_from=source,
        hourly=reward / 100 / (listed / 60),  # as Prolific computes it
        listed_minutes=listed,
        published=status not in ("UNPUBLISHED",),
        reward_cents=reward,
        places=places,
        changes=tuple(changes),
    )


def _default_description(langs: tuple[str, ...], minutes: float) -> str:
    which = " and ".join(LANGUAGE_NAMES[lang] for lang in langs)
    return (
        f"Read short conversations in {which} and rate how empathetic a listener's reply is, "
        f"on five scales. About {math.ceil(minutes)} minutes, on a computer. Native or "
        f"long-time speakers only: a short screening comes first."
    )
