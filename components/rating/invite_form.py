"""The Studies page's invite link form: a signed link with its places, codes, consent and,
for Prolific, its arrival grace and most places; and where the link points."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.core import auth, resources, tables
from components.core.literal import md
from components.rating import prolific_audience
from components.rating.crowd_admin import (
    PLATFORM_NAMES,
    app_url,
    invite_url,
    platform_names,
    public_base,
)
from koed_core import i18n
from koed_core.i18n import _
from koed_core.rating import crowd
from koed_core.rating.crowd import address
from koed_core.text import csv_safe


def render_invite_form(open_studies: dict[int, str]) -> None:
    """Create a signed, expiring invite link with a cap on places; then, for a Prolific
    link, who can take part (:mod:`prolific_audience`)."""
    if not open_studies:
        return
    _link_form(open_studies)
    prolific_audience.render_audience(open_studies)


def _link_form(open_studies: dict[int, str]) -> None:
    with st.form("studies.crowd_invite"):
        st.subheader(_("Invite link for a crowd study"), anchor=False)
        st.caption(
            _(
                "People who open the link join the study with no password, under a pseudonym "
                "bound to their platform id; they see only the rating page. A returning worker "
                "goes on where they stopped."
            )
        )
        left, right = st.columns(2)
        study_id = left.selectbox(_("Study"), list(open_studies), format_func=open_studies.get)
        platform = left.radio(
            _("Platform"),
            list(PLATFORM_NAMES),
            format_func=platform_names().__getitem__,
            horizontal=True,
            help=_(
                "account: people create a rater account for this study alone (password "
                "login), instead of coming from a platform"
            ),
        )
        days = left.number_input(_("Valid for (days)"), 1, 365, 14)
        cap = left.number_input(_("Places"), 1, 10_000, 30)
        batch_size = right.number_input(
            _("Responses per batch"),
            1,
            500,
            20,
            help=_("the study's attention checks come on top"),
        )
        batches = right.number_input(_("Batches per worker"), 1, 50, 1)
        reward = right.number_input(_("Reward per worker (for the pay figures)"), 0.0, 1000.0, 3.0)
        currency = right.text_input(_("Currency"), "GBP", max_chars=3)
        attempts = right.number_input(_("Calibration attempts"), 1, 5, 1)
        code = left.text_input(_("Completion code (empty: generated)"))
        screenout = left.text_input(_("Screen-out code (empty: generated)"))
        failed = left.text_input(_("Failed-checks code (empty: generated)"))
        prolific_id = right.text_input(_("Prolific study id (checks STUDY_ID; optional)"))
        grace = right.number_input(
            _("Prolific: minutes someone is on their way"),
            0,
            240,
            crowd.DEFAULT_ARRIVAL_GRACE,
            help=_(
                "A Prolific submission whose person has no place in the app yet raises the "
                "study's places only after this long from its start."
            ),
        )
        most = right.number_input(
            _("Prolific: most places a sync may ask for (0: the places plus a fifth)"),
            0,
            100_000,
            0,
        )
        redirect = right.text_input(_("Redirect when done (Prolific: made from the code)"))
        people = st.text_area(
            _("Ids of your own list (platform none): one per line, each gets its own link")
        )
        contact = st.text_input(
            _("Contact for workers (required: named in the consent)"),
            placeholder="researcher@example.org",
        )
        default_ko, default_en = crowd.default_consent()
        consent_ko = st.text_area(_("Consent (Korean)"), default_ko, height=300)
        consent_en = st.text_area(_("Consent (English)"), default_en, height=300)
        st.caption(
            _(
                "{fields} in the consent are filled in when the link is made: the app's "
                "estimate of the minutes, the reward above and the contact. The default text "
                "promises to keep the data for five years: change that sentence to what your "
                "ethics approval says.",
                fields="`{time}`, `{pay}`, `{contact}`",
            )
        )
        made = st.form_submit_button(_("Create the link"), type="primary")
    if made:
        try:
            request = crowd.InviteRequest(
                platform=platform,
                days=float(days),
                cap=int(cap),
                batch_size=int(batch_size),
                batches=int(batches),
                completion_code=code.strip() or None,
                screenout_code=screenout.strip() or None,
                failed_code=failed.strip() or None,
                prolific_study_id=prolific_id.strip() or None,
                calibration_attempts=int(attempts),
                arrival_grace_minutes=int(grace),
                max_places=int(most) or None,
                redirect_url=redirect.strip() or None,
                consent_ko=consent_ko,
                consent_en=consent_en,
                reward=float(reward),
                currency=currency.strip() or "GBP",
                created_by=auth.username(),
                contact=contact,
            )
            store, key = resources.store(), resources.server_key()
            invite, token = crowd.create_invite(store, key, int(study_id), request)
            links = (
                crowd.personal_links(key, invite, token, people.splitlines())
                if platform == "none"
                else {}
            )
        except crowd.CrowdError as err:
            st.error(md(str(err)))
        else:
            st.success(
                _(
                    "Invite link created. Codes: completion {completion}, screen-out "
                    "{screenout}, failed checks {failed}. Paste the link as the study's URL on "
                    "the platform; its placeholders fill in the worker's ids.",
                    completion=md(invite.completion_code),
                    screenout=md(invite.screenout_code),
                    failed=md(invite.failed_code),
                )
            )
            share = crowd.check_share(resources.store(), invite)
            if share > crowd.CHECK_SHARE_WARN:
                st.warning(
                    _(
                        "{share} of what a worker is shown are attention checks (the study's "
                        "checks per batch over the batch's responses): unpaid reading for "
                        "them. Larger batches, or a study with fewer checks, lower it.",
                        share=i18n.percent(share),
                    ),
                    icon=":material/warning:",
                )
            if links:
                personal_links_download(links, invite.id)
            else:
                st.code(invite_url(token, platform), language=None, wrap_lines=True)
            render_address_warning(platform)


def render_address_warning(platform: str) -> None:
    """Say so when a platform's link points where strangers cannot go: no public address
    is set and the browser's is local or plain http."""
    if platform in ("none", "account") or public_base():
        return
    where = app_url("").rstrip("/")
    try:
        address.check_public_https(where)
    except crowd.CrowdError:
        st.warning(
            _(
                "This link is on the address your browser is on ({url}), which people on "
                "the platform cannot open. Set the app's public address: KOED_PUBLIC_URL, or "
                "serve the app with `koed serve --domain HOST`, which records it.",
                url=md(where),
            ),
            icon=":material/public_off:",
        )


def personal_links_download(links: dict[str, str], invite_id: str) -> None:
    """A researcher's own list: one link per id, to send each person theirs."""
    rows = [{"id": person, "link": app_url(f"join?{query}")} for person, query in links.items()]
    tables.show(rows, hide_index=True, column_config={"id": _("id"), "link": _("link")})
    st.download_button(
        _("Personal links (CSV)"),
        csv_safe.to_csv(pd.DataFrame(rows)),
        file_name=f"koed-links-{invite_id}.csv",
        mime="text/csv",
    )
