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
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific_messages
from koed_core.rating.crowd.prolific_client import ProlificClient

READ_EVERY_S = 30


def render_messages(invite: crowd.Invite) -> None:
    """Unread messages and the message form, for one link."""
    st.markdown(_("**Messages on Prolific**"))
    client = _client(invite)
    if client is None:
        return
    try:
        found = _unread(invite.id)
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


@st.cache_data(ttl=READ_EVERY_S, show_spinner=False)
def _unread(invite_id: str) -> list[prolific_messages.Message]:
    """The link's unread messages, read from Prolific at most every ``READ_EVERY_S`` (a
    click, another admin, the minute's rerun: not again)."""
    row = Crowd(resources.store()).invite(invite_id)
    if row is None:
        return []
    env = merged_env(os.environ, resources.secrets())
    client = ProlificClient.from_env(env, resources.store(), invite_id=invite_id)
    return prolific_messages.unread(resources.store(), client, crowd.Invite.from_row(row))


def _client(invite: crowd.Invite) -> ProlificClient | None:
    try:
        env = merged_env(os.environ, resources.secrets())
        return ProlificClient.from_env(env, resources.store(), invite_id=invite.id)
    except KoedError as err:
        st.info(md(str(err)))
        return None
