"""Who can take part in a link's Prolific study, before it costs anything, and nobody twice.

A ko+en link is published as one Prolific study per language arm (docs/rating.md, "One
study per language arm", says why not quotas): each arm has its own first-language filter,
places, codes and eligible count. Everyone who took part in any arm of a KoED study is put
in one participant group that every arm and every later link of that study exclude, so a
rater never rates both language versions nor the same items again.

Endpoints (https://docs.prolific.com/api-reference):
- ``GET /api/v1/filters/?workspace_id=`` lists the filters and their choices
  (filters/get-filters; the workspace id "is used to get contextual data such as previous
  studies and participant groups", so it is sent whenever ``PROLIFIC_WORKSPACE_ID`` is set):
  the first-language choice, the group blocklist filter and any filter the researcher adds
  are looked up there by id and choice label, never guessed. The reference names "a
  participant group allowlist or participant group blocklist filter" (participant-groups)
  but none of its pages we could read spells the blocklist's ``filter_id``: the app sends
  ``participant_group_blocklist`` only when Prolific's own list has a filter of that id,
  and otherwise refuses to publish with one sentence (``arm_filters``) rather than publish
  a study that would let an earlier rater in;
- ``POST /api/v1/participant-counts/`` with ``filters`` (and ``workspace_id``) counts the
  participants who pass every filter (filters/get-eligible-count: "Zero means that there are
  less than 25 participants. We do not show lower numbers to protect the privacy of the
  participants"; without a workspace id Prolific uses the caller's current workspace, whose
  country decides who may take part);
- ``GET`` and ``POST /api/v1/participant-groups/`` list and create the researcher's groups
  (participant-groups: "Use one or more participant groups as allowlist or blocklist filters
  for a new study"; "any participants added ... will be automatically ... ineligible for
  studies that use a participant group ... blocklist filter");
- ``POST /api/v1/participant-groups/{id}/participants/`` with ``participant_ids`` adds people
  (participant-groups/add-to-participant-group: "If a participant is already a member of the
  group, they will be ignored", so repeating it does no harm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from koed_core.db import Store
from koed_core.db.site import SiteSettings
from koed_core.i18n import _
from koed_core.rating.crowd.links import CrowdError, Invite
from koed_core.rating.crowd.prolific_client import ProlificClient
from koed_core.rating.studies import StudyRules

LANGUAGE_NAMES = {"ko": "Korean", "en": "English"}
LANGUAGE_FILTER = "first-language"
GROUP_FILTER = "participant_group_blocklist"
"""Prolific's filter that keeps a participant group's members out of a study."""
FEWEST_SHOWN = 25
"""Prolific's participant count answers 0 below this many people."""


@dataclass(frozen=True)
class Audience:
    """Who the researcher wants besides the arm's first language."""

    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(filter id, choice labels) pairs, e.g. ("fluent-languages", ("English",))."""
    accept_few: bool = False
    """Publish an arm even with fewer eligible people than places."""


@dataclass(frozen=True)
class ArmPlan:
    """One language arm: its filters, places and Prolific's count of eligible people."""

    lang: str
    places: int
    filters: tuple[dict[str, Any], ...]
    described: tuple[str, ...]
    """Each filter in words (in the reader's language; English on the command line)."""
    eligible: int
    """Prolific's count (0: fewer than 25)."""
    study_id: str | None = None

    @property
    def short(self) -> bool:
        """Whether Prolific may hold fewer eligible people than the arm's places."""
        return self.eligible == 0 or self.eligible < self.places

    @property
    def eligible_text(self) -> str:
        """The count as Prolific means it: "fewer than 25" for its 0."""
        return f"fewer than {FEWEST_SHOWN}" if self.eligible == 0 else str(self.eligible)


def link_langs(store: Store, invite: Invite) -> tuple[str, ...]:
    """The study's languages: one Prolific study each."""
    return tuple(StudyRules(store).config(invite.study_id).langs)


def arm_places(cap: int, langs: tuple[str, ...]) -> dict[str, int]:
    """The link's places split between its arms (the first arm takes an odd one)."""
    share = {lang: cap // len(langs) for lang in langs}
    for lang in langs[: cap % len(langs)]:
        share[lang] += 1
    return share


def arm_view(invite: Invite, lang: str, langs: tuple[str, ...]) -> Invite:
    """The link as one arm's Prolific study sees it: that study's id, places and most
    places (a one-language link is its own only arm, unchanged)."""
    if len(langs) == 1:
        return invite
    places = arm_places(invite.cap, langs)[lang]
    most = None if invite.max_places is None else math.ceil(invite.max_places * places / invite.cap)
    return replace(
        invite,
        arm=lang,
        cap=max(1, places),
        max_places=most,
        prolific_study_id=dict(invite.prolific_arms).get(lang),
    )


def arm_views(store: Store, invite: Invite) -> list[Invite]:
    """One view per arm the link was published as (a one-language link: itself)."""
    langs = link_langs(store, invite)
    if len(langs) == 1:
        return [invite]
    return [arm_view(invite, lang, langs) for lang in langs if dict(invite.prolific_arms).get(lang)]


def payers_by_arm(
    store: Store, invite: Invite, workers: dict[str, dict[str, Any]], people: list[str]
) -> list[tuple[Invite, frozenset[str]]]:
    """Who is paid through which Prolific study: a one-study link's own study for all; for
    a link published as one study per language arm, the arm whose ``STUDY_ID`` each person
    came in with (a bonus is set up on the study the submission belongs to).

    Raises:
        CrowdError: no study published yet, or someone whose study is none of the arms'.
    """
    if not invite.prolific_studies:
        raise CrowdError(_("the link has no Prolific study yet: `koed prolific publish` first"))
    views = arm_views(store, invite)
    if not invite.prolific_arms:
        return [(views[0], frozenset(people))]
    by_study = {str(view.prolific_study_id): view for view in views if view.prolific_study_id}
    groups: dict[str, set[str]] = {}
    for person in people:
        came = str(workers[person].get("study_ref") or "")
        if came not in by_study:
            raise CrowdError(
                _(
                    "{id} came in through no language arm's Prolific study of this link, so "
                    "the app cannot tell which study to pay the bonus on: pay it in "
                    "Prolific's app",
                    id=person,
                )
            )
        groups.setdefault(came, set()).add(person)
    return [(by_study[study], frozenset(groups[study])) for study in by_study if study in groups]


def group_name(study_id: int) -> str:
    """The participant group of everyone who took part in a KoED study on Prolific."""
    return f"koed-study-{study_id}-raters"


def _setting(study_id: int) -> str:
    return f"prolific_group:{study_id}"


def known_group(store: Store, study_id: int) -> str | None:
    """The study's participant group id, if the app made (or found) one."""
    return SiteSettings(store).get(_setting(study_id))


def ensure_group(store: Store, client: ProlificClient, study_id: int) -> str:
    """The study's participant group: the stored one, else one of the researcher's groups
    with its name (made before an answer was lost), else a new one.

    Raises:
        ProlificError: Prolific refused a call.
    """
    found = known_group(store, study_id)
    if found:
        return found
    name = group_name(study_id)
    query = f"?workspace_id={client.workspace_id}" if client.workspace_id else ""
    listed = client.call_object(
        "reading the participant groups",
        "GET",
        f"/api/v1/participant-groups/{query}",
        require=("results",),
    )
    same = [g for g in listed["results"] if isinstance(g, dict) and g.get("name") == name]
    if same:
        group_id = str(same[0].get("id") or "")
    else:
        body: dict[str, Any] = {"name": name}
        if client.workspace_id:
            body["workspace_id"] = client.workspace_id
        made = client.call_object(
            "creating the participant group",
            "POST",
            "/api/v1/participant-groups/",
            body,
            require=("id",),
        )
        group_id = str(made["id"])
    SiteSettings(store).put(_setting(study_id), group_id)
    return group_id


def add_to_group(
    store: Store, client: ProlificClient, study_id: int, participant_ids: list[str]
) -> int:
    """Everyone who took part goes into the study's group (nothing when the study has no
    group yet: a link published before groups); returns how many were sent."""
    group = known_group(store, study_id)
    people = sorted({p for p in participant_ids if p})
    if not group or not people:
        return 0
    client.call(
        "adding participants to the group",
        "POST",
        f"/api/v1/participant-groups/{group}/participants/",
        {"participant_ids": people},
    )
    return len(people)


def filter_list(client: ProlificClient) -> dict[str, dict[str, Any]]:
    """Prolific's filters by id."""
    query = f"?workspace_id={client.workspace_id}" if client.workspace_id else ""
    items = client.pages("reading Prolific's filters", f"/api/v1/filters/{query}", ("filter_id",))
    return {str(item["filter_id"]): item for item in items}


def choice(filters: dict[str, dict[str, Any]], filter_id: str, label: str) -> str:
    """The choice id of ``label`` in one of Prolific's select filters.

    Raises:
        CrowdError: no such filter, or no such choice in it.
    """
    item = filters.get(filter_id)
    if item is None:
        raise CrowdError(_("Prolific has no filter {filter}", filter=filter_id))
    for key, text in (item.get("choices") or {}).items():
        if str(text).strip().lower() == label.strip().lower():
            return str(key)
    raise CrowdError(
        _(
            "Prolific's filter list has no {filter} choice named {language}",
            filter=filter_id,
            language=label,
        )
    )


def arm_filters(
    filters: dict[str, dict[str, Any]], lang: str, group: str | None, audience: Audience
) -> tuple[list[dict[str, Any]], list[str]]:
    """One arm's filters and each in words: its first language, the researcher's own, and
    the study's participant group kept out.

    Raises:
        CrowdError: a filter or choice Prolific does not list, or no blocklist filter.
    """
    wanted = LANGUAGE_NAMES[lang]
    out = [
        {
            "filter_id": LANGUAGE_FILTER,
            "selected_values": [choice(filters, LANGUAGE_FILTER, wanted)],
        }
    ]
    words = [_("first language: {language}", language=wanted)]
    for filter_id, labels in audience.extra:
        out.append(
            {
                "filter_id": filter_id,
                "selected_values": [choice(filters, filter_id, label) for label in labels],
            }
        )
        words.append(f"{filters[filter_id].get('title') or filter_id}: {', '.join(labels)}")
    if group:
        if GROUP_FILTER not in filters:
            raise CrowdError(_("Prolific has no filter {filter}", filter=GROUP_FILTER))
        out.append({"filter_id": GROUP_FILTER, "selected_values": [group]})
        words.append(_("nobody who took part in this study before (its participant group)"))
    return out, words


def eligible(client: ProlificClient, filters: list[dict[str, Any]]) -> int:
    """Prolific's count of participants passing every filter (0: fewer than 25)."""
    body: dict[str, Any] = {"filters": filters}
    if client.workspace_id:
        body["workspace_id"] = client.workspace_id
    answer = client.call_object(
        "counting eligible participants",
        "POST",
        "/api/v1/participant-counts/",
        body,
        require=("count",),
    )
    try:
        return int(float(answer["count"]))
    except (TypeError, ValueError):
        return 0


def plan_arms(
    store: Store, client: ProlificClient, invite: Invite, audience: Audience | None = None
) -> list[ArmPlan]:
    """Per language arm: the filters it will set, its places and Prolific's count of
    eligible people, without creating anything on Prolific (the study's group is used when
    there is one: before it exists, nobody is in it).

    Raises:
        CrowdError: a filter or choice Prolific does not list.
        ProlificError: Prolific refused a call.
    """
    audience = audience or Audience()
    langs = link_langs(store, invite)
    filters = filter_list(client)
    group = known_group(store, invite.study_id)
    plans = []
    for lang in langs:
        view = arm_view(invite, lang, langs)
        chosen, words = arm_filters(filters, lang, group, audience)
        plans.append(
            ArmPlan(
                lang,
                view.cap,
                tuple(chosen),
                tuple(words),
                eligible(client, chosen),
                view.prolific_study_id,
            )
        )
    return plans


def too_few(plan: ArmPlan) -> CrowdError:
    """The refusal to publish an arm Prolific may not fill, and how to go on anyway."""
    return CrowdError(
        _(
            "Prolific counts {eligible} eligible participants for the {language} arm, which "
            "has {places} places: it may never fill. Check its filters, or publish anyway "
            "with --accept-few (on the Studies page: the confirmation box)",
            eligible=_eligible_words(plan),
            language=LANGUAGE_NAMES[plan.lang],
            places=plan.places,
        )
    )


def _eligible_words(plan: ArmPlan) -> str:
    if plan.eligible == 0:
        return _("fewer than {n}", n=FEWEST_SHOWN)
    return str(plan.eligible)
