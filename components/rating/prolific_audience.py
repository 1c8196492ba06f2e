"""The Studies page's "who can take part on Prolific": per language arm of a Prolific link,
the filters it will set and Prolific's count of eligible people ("fewer than 25" said as
such), before anything costs money; publishing an arm Prolific may not fill asks first."""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from components.core import auth, resources, tables
from components.core.literal import md
from components.rating.crowd_admin import public_base
from koed_core import i18n
from koed_core.config import merged_env
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific, prolific_arms
from koed_core.rating.crowd.prolific_client import ProlificClient

LANGUAGES = {"ko": N_("Korean"), "en": N_("English")}


def render_audience(open_studies: dict[int, str]) -> None:
    """Each open study's Prolific links: ask Prolific who can take part, then publish."""
    store = resources.store()
    links = {
        row["id"]: crowd.Invite.from_row(row)
        for study_id in open_studies
        for row in Crowd(store).invites(study_id)
        if row["platform"] == "prolific" and not row["revoked"]
    }
    if not links or not auth.is_admin():
        return
    st.subheader(_("Who can take part on Prolific"), anchor=False)
    st.caption(
        _(
            "Per language arm (a ko+en link is one Prolific study per language): the filters "
            "it sets and how many people in your workspace pass them, as Prolific counts "
            "them. Asking costs nothing."
        )
    )
    chosen = st.selectbox(
        _("Link"),
        list(links),
        format_func=lambda key: f"{key} ({open_studies.get(links[key].study_id, '')})",
        key="prolific.audience.link",
    )
    invite = links[chosen]
    plans_key = f"prolific.audience.plans.{invite.id}"
    if st.button(_("Ask Prolific who can take part"), key=f"prolific.audience.ask.{invite.id}"):
        client = _client(invite)
        if client is not None:
            try:
                st.session_state[plans_key] = prolific_arms.plan_arms(store, client, invite)
            except KoedError as err:
                st.error(md(str(err)))
    plans = st.session_state.get(plans_key)
    if plans:
        _show(invite, plans)


def _show(invite: crowd.Invite, plans: list[prolific_arms.ArmPlan]) -> None:
    rows = [
        {
            "arm": _(LANGUAGES[p.lang]) if p.lang in LANGUAGES else p.lang,
            "filters": "; ".join(p.described),
            "places": p.places,
            "eligible": (
                _("fewer than {n}", n=prolific_arms.FEWEST_SHOWN)
                if p.eligible == 0
                else i18n.number(p.eligible)
            ),
        }
        for p in plans
    ]
    headers = {
        "arm": _("Language arm"),
        "filters": _("Filters (as sent to Prolific)"),
        "places": _("Places"),
        "eligible": _("Eligible on Prolific"),
    }
    tables.show(pd.DataFrame(rows), column_config=headers, hide_index=True)
    short = [p for p in plans if p.short]
    for p in short:
        st.warning(
            _(
                "The {arm} arm has {places} places, and Prolific counts {eligible} eligible "
                "people: it may never fill. Check its filters before publishing.",
                arm=_(LANGUAGES[p.lang]) if p.lang in LANGUAGES else md(p.lang),
                places=i18n.number(p.places),
                eligible=(
                    _("fewer than {n}", n=prolific_arms.FEWEST_SHOWN)
                    if p.eligible == 0
                    else i18n.number(p.eligible)
                ),
            ),
            icon=":material/group_off:",
        )
    sure = not short or st.checkbox(
        _("Publish anyway: I know an arm may not fill"), key=f"prolific.audience.few.{invite.id}"
    )
    if st.button(
        _("Publish on Prolific (it costs money)"),
        disabled=not sure,
        key=f"prolific.audience.publish.{invite.id}",
    ):
        _publish(invite, accept_few=bool(short))


def _publish(invite: crowd.Invite, accept_few: bool) -> None:
    client = _client(invite)
    if client is None:
        return
    try:
        drafts = prolific.publish_link(
            resources.store(),
            client,
            invite,
            resources.server_key(),
            public_base(),
            go_live=True,
            listing=prolific.StudyListing(audience=prolific_arms.Audience(accept_few=accept_few)),
        )
    except KoedError as err:
        st.error(md(str(err)))
        return
    for draft in drafts:
        st.success(
            _(
                "Prolific study {study}: {status} (Prolific's answer).",
                study=md(draft.study_id),
                status=md(draft.status),
            )
        )


def _client(invite: crowd.Invite) -> ProlificClient | None:
    try:
        env = merged_env(os.environ, resources.secrets())
        return ProlificClient.from_env(env, resources.store(), invite_id=invite.id)
    except KoedError as err:
        st.info(md(str(err)))
        return None
