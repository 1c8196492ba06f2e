"""The Study dashboard's Prolific messages: how many participants' messages about the
link's studies are unread, the newest one, and one message sent to every participant
behind a confirmation (each call in the call log, as every other)."""

from __future__ import annotations

import os

import streamlit as st

from components.core import resources
from components.core.literal import md
from koed_core import i18n
from koed_core.config import merged_env
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific_messages
from koed_core.rating.crowd.prolific_client import ProlificClient


def render_messages(invite: crowd.Invite) -> None:
    """Unread messages and the message form, for one link."""
    st.markdown(_("**Messages on Prolific**"))
    client = _client(invite)
    if client is None:
        return
    try:
        found = prolific_messages.unread(resources.store(), client, invite)
    except KoedError as err:
        st.error(md(str(err)))
        return
    if not found:
        st.caption(_("No unread message from participants about this link's studies."))
    else:
        newest = found[0]
        st.info(
            _(
                "{n} unread messages from participants (read and answer them in Prolific's "
                "app). Newest, from {who} at {at}: {text}",
                n=i18n.number(len(found)),
                who=md(newest.sender),
                at=md(newest.sent_at),
                text=md(newest.body[:300]),
            )
        )
    with st.form(f"prolific.message.{invite.id}"):
        text = st.text_area(_("One message to every participant of this link's studies"))
        sure = st.checkbox(_("Send it to all of them (it cannot be taken back)"))
        sent = st.form_submit_button(_("Send on Prolific"))
    if sent and not sure:
        st.warning(_("Tick the box to send the message."))
    elif sent:
        try:
            lines = prolific_messages.send_to_all(resources.store(), client, invite, text)
        except KoedError as err:
            st.error(md(str(err)))
            return
        for study, n in lines:
            st.success(
                _(
                    "Prolific study {study}: sent to {n} participants.",
                    study=md(study),
                    n=i18n.number(n),
                )
            )


def _client(invite: crowd.Invite) -> ProlificClient | None:
    try:
        env = merged_env(os.environ, resources.secrets())
        return ProlificClient.from_env(env, resources.store(), invite_id=invite.id)
    except KoedError as err:
        st.info(md(str(err)))
        return None
