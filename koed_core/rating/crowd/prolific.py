"""A crowd link run through Prolific's API: the study created as a draft from the link and
published when asked, and the sync that reads its submissions back.

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
from datetime import datetime
from typing import Any

from koed_core.db import Store, utcnow
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.i18n import _
from koed_core.rating.crowd.decisions import estimate, report_rows
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.joining import _place_cutoff
from koed_core.rating.crowd.links import PLACEHOLDERS, CrowdError, Invite, token_for
from koed_core.rating.crowd.prolific_client import ProlificClient
from koed_core.rating.studies import StudyRules

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

LANGUAGE_NAMES = {"ko": "Korean", "en": "English"}
LANGUAGE_FILTER = "first-language"

ENDED = ("RETURNED", "TIMED-OUT")
"""Submissions whose place Prolific has freed."""

HOLDING = ("RESERVED", "ACTIVE", "AWAITING REVIEW", "APPROVED", "REJECTED", "SCREENED OUT",
           "PARTIALLY APPROVED")  # fmt: skip
"""Submissions that hold one of the study's places on Prolific."""

FAST_SHARE = 1 / 3
"""A submission faster than this share of the median real visit is flagged."""


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
    published: bool


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
        "internal_name": f"koed-{invite.id}",
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


def language_filters(client: ProlificClient, langs: tuple[str, ...]) -> list[dict[str, Any]]:
    """A one-language study's first-language filter, its choice found by name in Prolific's
    own list; none for a study in both languages (the app screens again either way).

    Raises:
        ProlificError: Prolific's list has no such filter or choice.
    """
    if len(langs) != 1:
        return []
    wanted = LANGUAGE_NAMES[langs[0]]
    for item in client.pages("reading Prolific's filters", "/api/v1/filters/", ("filter_id",)):
        if item.get("filter_id") == LANGUAGE_FILTER:
            choices = item.get("choices") or {}
            for choice, label in choices.items():
                if str(label).strip().lower() == wanted.lower():
                    return [{"filter_id": LANGUAGE_FILTER, "selected_values": [str(choice)]}]
    raise CrowdError(
        _(
            "Prolific's filter list has no {filter} choice named {language}",
            filter=LANGUAGE_FILTER,
            language=wanted,
        )
    )


def publish(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    key: bytes,
    url: str,
    *,
    listing: StudyListing | None = None,
    go_live: bool = False,
    pilot: Invite | None = None,
) -> Draft:
    """Create the link's study on Prolific as a draft (once: a link already published
    reuses its study), show its cost, and publish it only when ``go_live``.

    Raises:
        CrowdError: not a Prolific link, a reward under the minimum, or a bad action.
        ProlificError: Prolific refused a call.
    """
    if invite.platform != "prolific":
        raise CrowdError(_("only a Prolific link can be published on Prolific"))
    listing = listing or StudyListing()
    chosen = {**DEFAULT_ACTIONS, **listing.actions}
    bad = [a for a in chosen.values() if a not in ACTIONS]
    if bad:
        raise CrowdError(_("a code's action is one of {choices}", choices=", ".join(ACTIONS)))
    minutes, source = study_minutes(store, invite, pilot)
    hourly = check_reward(invite, minutes, source)
    langs = tuple(StudyRules(store).config(invite.study_id).langs)
    text = listing.description or _default_description(langs, minutes)
    body = study_body(
        invite, key, url, minutes, replace(listing, description=text, actions=chosen), []
    )
    if invite.prolific_study_id:
        study = client.call_object(
            "reading the study",
            "GET",
            f"/api/v1/studies/{invite.prolific_study_id}/",
            require=("id",),
        )
    else:
        body["filters"] = language_filters(client, langs)
        study = client.call_object(
            "creating the draft study",
            "POST",
            "/api/v1/studies/",
            body,
            safe=False,
            require=("id",),
        )
        Crowd(store).set_prolific_study(invite.id, str(study["id"]))
    cost = client.call_object(
        "asking the study's cost",
        "POST",
        "/api/v1/study-cost-calculator/",
        {"reward": body["reward"], "total_available_places": invite.cap},
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
    return Draft(
        study_id=str(study["id"]),
        status=status,
        body=body,
        cost_cents=cost.get("total_cost"),
        minutes=minutes,
        minutes_from=source,
        hourly=hourly,
        published=status not in ("UNPUBLISHED",),
    )


def _default_description(langs: tuple[str, ...], minutes: float) -> str:
    which = " and ".join(LANGUAGE_NAMES[lang] for lang in langs)
    return (
        f"Read short conversations in {which} and rate how empathetic a listener's reply is, "
        f"on five scales. About {math.ceil(minutes)} minutes, on a computer. Native or "
        f"long-time speakers only: a short screening comes first."
    )


@dataclass
class SyncReport:
    """What one sync read and did."""

    read: int = 0
    ended: list[str] = field(default_factory=list)
    """Participants whose visit ended because Prolific freed their place."""
    flagged: list[tuple[str, str]] = field(default_factory=list)
    """(participant, reason) newly flagged."""
    places: int | None = None
    """Prolific's places now."""
    raised_from: int | None = None
    """Prolific's places before this sync raised them."""
    study_status: str | None = None


def sync(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    at: datetime | None = None,
    *,
    raise_places: bool = True,
) -> SyncReport:
    """Read the study's submissions: a RETURNED or TIMED-OUT one ends that visit in the app
    and frees its place at once; a code with no visit behind it, a code the app did not
    show, or a submission far faster than the real visits is flagged with the reason;
    Prolific's places are raised when the app's places need more (unless
    ``raise_places`` is False: a review's dry run reads and changes nothing on Prolific).

    Raises:
        CrowdError: the link was never published on Prolific.
        ProlificError: Prolific refused a call.
    """
    if not invite.prolific_study_id:
        raise CrowdError(_("the link has no Prolific study yet: `koed prolific publish` first"))
    study_path = f"/api/v1/studies/{invite.prolific_study_id}/"
    keys = ("id", "participant_id", "status")  # what the sync and the stored row read
    found = list(client.pages("reading the submissions", study_path + "submissions/", keys))
    log, crowd = ProlificLog(store), Crowd(store)
    known = {r["id"]: r for r in log.submissions(invite.id)}
    report = SyncReport(read=len(found))
    fastest = _real_median(store, invite)
    rows = []
    for sub in found:
        worker = crowd.worker_by_platform_id(
            invite.study_id, "prolific", str(sub.get("participant_id") or "")
        )
        if sub.get("status") in ENDED and _same_session(worker, sub):
            assert worker is not None
            if worker["status"] in UNDER_WAY:
                why = "returned" if sub["status"] == "RETURNED" else "timed out"
                crowd.update_worker(
                    worker["username"], status="returned", stop_reason=f"{why} on Prolific"
                )
                report.ended.append(str(sub["participant_id"]))
        flag = None if (known.get(sub["id"]) or {}).get("flag") else _flag(sub, worker, fastest)
        if flag:
            report.flagged.append((str(sub["participant_id"]), flag))
        rows.append({**sub, "flag": flag})
    log.save_submissions(invite.id, rows)
    study = client.call_object(
        "reading the study", "GET", study_path, require=("status", "total_available_places")
    )
    report.study_status = study.get("status")
    report.places = int(study.get("total_available_places") or 0)
    needed = _places_needed(store, invite, found, at)
    if raise_places and needed > report.places and study.get("status") != "COMPLETED":
        client.call(
            "raising the study's places", "PATCH", study_path, {"total_available_places": needed}
        )
        report.raised_from, report.places = report.places, needed
    return report


def synced_within(store: Store, invite_id: str, seconds: float) -> bool:
    """Whether a sync stored this link's submissions in the last ``seconds`` (the
    dashboard reads Prolific at most that often, however many clicks and admins)."""
    last = ProlificLog(store).last_read(invite_id)
    if not last:
        return False
    return (utcnow() - datetime.fromisoformat(last)).total_seconds() < seconds


def _same_session(worker: dict[str, Any] | None, sub: dict[str, Any]) -> bool:
    """The worker's visit is this submission (Prolific's SESSION_ID is the submission id)."""
    return worker is not None and (worker.get("session_ref") or "") == str(sub.get("id"))


def _real_median(store: Store, invite: Invite) -> float | None:
    median = report_rows(store, invite)[1].get("median_min")
    if median:
        return float(median)
    return estimate(store, invite)["minutes"]


def _flag(sub: dict[str, Any], worker: dict[str, Any] | None, median: float | None) -> str | None:
    """Why a submission needs a look before anyone approves it, or None."""
    code = sub.get("study_code")
    if sub.get("status") in (*ENDED, "ACTIVE", "RESERVED"):
        return None
    if code and worker is None:
        return f"completion code {code} with no visit in our database"
    if code and worker is not None and not worker.get("code_given"):
        return f"code {code} entered, but the app never showed this person a code"
    if code and worker is not None and code != worker.get("code_given"):
        return f"code {code} entered, but the app showed {worker.get('code_given')}"
    minutes = _minutes(sub)
    if minutes is not None and median and minutes < FAST_SHARE * median:
        return (
            f"finished in {minutes:.1f} minutes on Prolific, under a third of the real "
            f"visits' median ({median:.1f} minutes)"
        )
    return None


def _minutes(sub: dict[str, Any]) -> float | None:
    try:
        start = datetime.fromisoformat(str(sub["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(sub["completed_at"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds() / 60


def _places_needed(
    store: Store, invite: Invite, found: list[dict[str, Any]], at: datetime | None
) -> int:
    """The app's places plus the submissions that hold a place on Prolific but none in the
    app (screened out, stopped, replaced, gone quiet, or unknown to it): Prolific must
    have that many for the app's places to be fillable."""
    crowd = Crowd(store)
    holders = 0
    for sub in found:
        if sub.get("status") not in HOLDING:
            continue
        worker = crowd.worker_by_platform_id(
            invite.study_id, "prolific", str(sub.get("participant_id") or "")
        )
        if worker is None or not _holds_place(store, invite, worker, at):
            holders += 1
    return invite.cap + holders


def _holds_place(store: Store, invite: Invite, worker: dict[str, Any], at: datetime | None) -> bool:
    if worker.get("decision") == "replace":
        return False
    if worker["status"] == "completed":
        return True
    if worker["status"] not in UNDER_WAY:
        return False
    last = Crowd(store).last_activity(worker["username"]) or ""
    return last >= _place_cutoff(store, invite, at)
