"""The admin's side of a crowd study: invite links, and the workers to pay or not."""

from __future__ import annotations

import streamlit as st

from components import auth, resources, tables
from components.literal import md
from koed_core.db.crowd import Crowd
from koed_core.rating import crowd

DEFAULT_CONSENT_KO = (
    "이 연구는 대화 속 청자의 답변이 얼마나 공감적인지 평가합니다. 참여는 자발적이며 "
    "언제든 그만둘 수 있습니다. 평가와 의견은 가명으로 저장되고 연구 목적으로만 "
    "사용됩니다. 플랫폼 ID는 보상 지급에만 쓰입니다."
)
DEFAULT_CONSENT_EN = (
    "This study asks you to rate how empathetic a listener's replies are. Taking part is "
    "voluntary and you may stop at any time. Your ratings and comments are stored under a "
    "pseudonym and used for research only. Your platform id is used only to pay you."
)
PLACEHOLDERS = {
    "prolific": "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
    "&SESSION_ID={{%SESSION_ID%}}",
    "mturk": "",  # MTurk appends workerId, assignmentId and hitId itself
    "none": "&worker=NAME",
    "account": "",
}


def app_url(path: str) -> str:
    """An address in this app, from the one the browser is on (works behind a proxy)."""
    base = str(st.context.url or "").split("?")[0].rstrip("/")
    root = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return f"{root}/{path}"


def invite_url(token: str, platform: str) -> str:
    """The link to paste into the platform (its own placeholders included)."""
    return app_url(f"join?invite={token}{PLACEHOLDERS.get(platform, '')}")


def bound_study(username: str | None) -> int | None:
    """The one study an account made through an account invite may rate, or None."""
    if not username:
        return None
    return Crowd(resources.store()).bound_study(username)


def render_invite_form(open_studies: dict[int, str]) -> None:
    """Create a signed, expiring invite link with a cap on places."""
    if not open_studies:
        return
    with st.form("studies.crowd_invite"):
        st.subheader("Invite link for a crowd study", anchor=False)
        st.caption(
            "People who open the link join the study with no password, under a pseudonym "
            "bound to their platform id; they see only the rating page. A returning worker "
            "goes on where they stopped."
        )
        left, right = st.columns(2)
        study_id = left.selectbox("Study", list(open_studies), format_func=open_studies.get)
        platform = left.radio(
            "Platform",
            ["prolific", "mturk", "none", "account"],
            horizontal=True,
            help="account: people create a rater account for this study alone (password "
            "login), instead of coming from a platform",
        )
        days = left.number_input("Valid for (days)", 1, 365, 14)
        cap = left.number_input("Places", 1, 10_000, 30)
        batch_size = right.number_input("Items per batch", 1, 500, 20)
        batches = right.number_input("Batches per worker", 1, 50, 1)
        reward = right.number_input("Reward per batch (for the pay figures)", 0.0, 1000.0, 3.0)
        currency = right.text_input("Currency", "GBP", max_chars=3)
        code = right.text_input("Completion code (empty: generated)")
        redirect = right.text_input("Redirect when done (Prolific: made from the code)")
        consent_ko = st.text_area("Consent (Korean)", DEFAULT_CONSENT_KO)
        consent_en = st.text_area("Consent (English)", DEFAULT_CONSENT_EN)
        made = st.form_submit_button("Create the link", type="primary")
    if made:
        try:
            invite, token = crowd.create_invite(
                resources.store(),
                resources.server_key(),
                int(study_id),
                platform=platform,
                days=float(days),
                cap=int(cap),
                batch_size=int(batch_size),
                batches=int(batches),
                completion_code=code.strip() or None,
                redirect_url=redirect.strip() or None,
                consent_ko=consent_ko,
                consent_en=consent_en,
                reward=float(reward),
                currency=currency.strip() or "GBP",
                created_by=auth.username(),
            )
        except crowd.CrowdError as err:
            st.error(md(str(err)))
        else:
            st.success(
                f"Invite link created (completion code {md(invite.completion_code)}). Paste it "
                "as the study's URL on the platform; its placeholders fill in the worker's ids."
            )
            st.code(invite_url(token, platform), language=None, wrap_lines=True)


def render_crowd_dashboard(study_id: int) -> None:
    """Per invite: time per batch, effective hourly pay, who to approve, the platform file."""
    rows = Crowd(resources.store()).invites(study_id)
    if not rows:
        return
    st.subheader("Crowd workers", anchor=False)
    key = resources.server_key()
    for row in rows:
        invite = crowd.Invite.from_row(row)
        used = Crowd(resources.store()).places_used(invite.id)
        with st.expander(
            f"{invite.platform} link {invite.id}: {used} of {invite.cap} places", expanded=True
        ):
            st.code(
                invite_url(crowd.token_for(invite.id, key), invite.platform),
                language=None,
                wrap_lines=True,
            )
            frame, summary = crowd.pay_report(resources.store(), invite)
            a, b, c = st.columns(3)
            a.metric("Median minutes per batch", _num(summary["median_batch_min"]))
            b.metric("Slowest 10% (minutes)", _num(summary["p90_batch_min"]))
            c.metric(
                f"Effective pay per hour ({invite.currency})",
                _num(summary["hourly_pay"]),
                help=f"{invite.reward} {invite.currency} per batch over the median batch time",
            )
            if frame.empty:
                st.caption("Nobody has joined through this link yet.")
                continue
            tables.show(
                frame,
                hide_index=True,
                column_config={
                    "username": "Worker (pseudonym)",
                    "worker_id": "Platform id",
                    "status": "Status",
                    "stop_reason": "Why stopped",
                    "batches": "Batches done",
                    "median_batch_min": st.column_config.NumberColumn(
                        "Median minutes per batch", format="%.1f"
                    ),
                    "attention_failed": "Attention checks failed",
                    "suggested": st.column_config.TextColumn(
                        "Suggested",
                        help="reject: 2 or more failed attention checks; review: 1; accept: "
                        "finished cleanly; replace: screened out or stopped; wait: at work",
                    ),
                    "decision": "Your decision",
                },
            )
            with st.form(f"crowd.decide.{invite.id}"):
                who = st.selectbox("Worker", frame["username"].tolist())
                decision = st.radio("Decision", crowd.DECISIONS, horizontal=True)
                if st.form_submit_button("Record the decision"):
                    crowd.decide(resources.store(), who, decision, auth.username())
                    st.rerun()
            st.download_button(
                f"Approve / reject list ({invite.platform} format)",
                crowd.platform_csv(resources.store(), invite),
                file_name=f"koed-{invite.platform}-{invite.id}.csv",
                mime="text/csv",
                key=f"crowd.csv.{invite.id}",
            )
            if not invite.revoked and st.button(
                "Withdraw the link", key=f"crowd.revoke.{invite.id}"
            ):
                Crowd(resources.store()).revoke(invite.id)
                st.rerun()


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
