"""Session-state keys, each named once, and typed accessors for the values read in
several places (the login, the crowd session, the chat).

Most keys are named here; a few that one module keeps to itself are named in that module
beside the code that reads them. Modules read and write ``st.session_state`` themselves
with these names (there is no accessor per key); what this module guarantees is that two
modules never spell one key differently.

The explorer's filter widgets are bound to URL query parameters (``bind="query-params"``),
so their keys are also the parameter names of a shared link: keep them short and stable.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

# Explorer filters: session keys == URL query parameters.
LABELS = "labels"
MODE = "mode"
ORIGIN = "origin"
TEXT = "q"
TURNS = "turns"
KO_ONLY = "ko_only"
DIALOGUE = "d"

# Talk mode on the results pages, also linkable (?talk=true).
TALK = "talk"

# Adaptation page: its own dialogue picker, also linkable.
ADAPT_DIALOGUE = "adaptation.dialogue"  # not in the URL: the link's dialogue is ``d``
ADAPT_ORDER = "order"

# Not in the URL.
EXPLORER_TABLE = "explorer.table"
OVERVIEW_TABLE = "overview.combinations"
ADAPT_COMPUTE = "adaptation.compute"
DOWNLOAD = "source.download"

# Chat page.
CHAT_DIALOGUE = "chat.dialogue"
CHAT_SEARCH = "chat.search"
CHAT_LANGS = "chat.langs"
CHAT_MODELS = "chat.models"
CHAT_PROTOCOL = "chat.protocol"
CHAT_TEMPERATURE = "chat.temperature"
CHAT_MAX_TOKENS = "chat.max_tokens"
CHAT_SESSION = "chat.session"
CHAT_ASK = "chat.ask"
API_KEY = "models.api_key"

# Jobs (any page).
JOBS_CHECKED = "jobs.checked"
JOBS_ACTIVE = "jobs.active"

# Runs page.
RUNS_MODEL = "runs.model"
RUNS_SELECTED = "runs.selected"
RUNS_PLAN = "runs.plan"
RUNS_REPRODUCE = "runs.reproduce"
RUNS_TRANSLATE_VARIANT = "runs.translate.variant"
RUNS_TRANSLATE_MODEL = "runs.translate.model"
RUNS_TRANSLATE_LIMIT = "runs.translate.limit"
JUDGE_TEMPLATE = "judge.template"
JUDGE_PARSE = "judge.parse"
JUDGE_TEMPERATURE = "judge.temperature"

# Results pages.
GAP_JUDGE = "gap.judge"
GAP_SENSITIVITY_BASE = "gap.sensitivity.base"
GAP_SENSITIVITY_METRIC = "gap.sensitivity.metric"
GAP_SENSITIVITY_CSV = "gap.sensitivity.csv"
GAP_STUDY = "gap.study"
GAP_SOURCE = "gap.source"
GAP_DATASET = "gap.dataset"
GAP_BREAKDOWN = "gap.breakdown"
GAP_GROUP = "gap.group"
GAP_ESTIMATOR = "gap.estimator"
GAP_DECOMPOSE_ESTIMATOR = "gap.decompose.estimator"
AGREEMENT_STUDY = "agreement.study"
AGREEMENT_JUDGE = "agreement.judge"
AGREEMENT_ROW = "agreement.row"
AGREEMENT_ALT_ROW = "agreement.alt_row"
AGREEMENT_ARTEFACT_GROUP = "agreement.artefact_group"
STUDIES_PLAN_STUDY = "studies.plan.study"
STUDIES_PLAN_JUDGE = "studies.plan.judge"
STUDIES_PLAN_UNSURE = "studies.plan.unsure"
DEMO_A = "demo.a"
DEMO_B = "demo.b"
DEMO_DIALOGUE = "demo.dialogue"
DEMO_PACE = "demo.pace"
DEMO_LIVE = "demo.live"
DEMO_ASK = "demo.ask"
DEMO_PLAY = "demo.play"
EPISODES_RUN = "episodes.run"
EPISODES_VIEW = "episodes.view"
RUNS_EPISODE_VIEW = "runs.episode"
RUNS_EPISODE_SUBSET = "runs.episode_subset"
GAP_TURN_METRIC = "gap.turn_metric"
GAP_TURN_SOURCE = "gap.turn_source"
GAP_TURN_CSV = "gap.turn_csv"
GAP_TURN_OPEN = "gap.turn_open"

# Rating pages.
RATE_STUDY = "rate.study"
RATE_STARTED = "rate.started"  # {assignment_id: time first shown}
RATE_CALIBRATION = "rate.calibration"  # {"index": int, "feedback": dict | None}
CROWD = "crowd.worker"  # {"username": str, "invite": str}: a worker who came by invite link
CROWD_AGREE = "crowd.agree"
ADHOC_MODELS = "models.adhoc"  # [openai:MODEL_ID, ...] an admin added this session
ADHOC_INPUT = "models.adhoc_input"
SERVED_MODELS = "models.served"  # the ids OPENAI_BASE_URL listed when the admin asked
SERVED_PICK = "models.served_pick"
# A session's login (the names streamlit-authenticator used, kept for open sessions).
AUTH_STATUS = "authentication_status"
AUTH_USERNAME = "username"
AUTH_NAME = "name"
AUTH_SINCE = "auth.since"  # when this session logged in (server-side revocation)


def rate_skip(assignment_id: str) -> str:
    """The Skip button of one assignment."""
    return f"skip.{assignment_id}"


def rate_flag(assignment_id: str) -> str:
    """The Flag button of one assignment."""
    return f"flag.{assignment_id}"


def rate_flag_reason(assignment_id: str) -> str:
    """The flag reason picker of one assignment."""
    return f"flag.reason.{assignment_id}"


# Typed accessors: pages and components read and write session state only through these.


def session_api_key() -> str | None:
    """The API key typed in this browser session, if any (never stored elsewhere)."""
    value = st.session_state.get(API_KEY)
    return str(value) if value else None


def chat_session() -> dict[str, Any]:
    """The chat page's conversation state, created on first use."""
    return st.session_state.setdefault(CHAT_SESSION, {})  # type: ignore[no-any-return]


def rate_started() -> dict[str, float]:
    """When each assignment was first shown to this rater (for time spent)."""
    return st.session_state.setdefault(RATE_STARTED, {})  # type: ignore[no-any-return]


def calibration_progress() -> dict[str, Any]:
    """Where the rater is in calibration: the item index and the last feedback."""
    return st.session_state.setdefault(  # type: ignore[no-any-return]
        RATE_CALIBRATION, {"index": 0, "feedback": None}
    )


def explorer_selected_rows() -> list[int]:
    """Rows selected in the explorer's dialogue table (empty before the table exists)."""
    table = st.session_state.get(EXPLORER_TABLE)
    return list(table.selection.rows) if table is not None else []


def open_dialogue(conv_id: str) -> None:
    """Show this dialogue in the explorer (also updates the shared URL)."""
    st.session_state[DIALOGUE] = conv_id


def auth_status() -> bool | None:
    """The login library's verdict: True logged in, False failed, None not tried."""
    return st.session_state.get(AUTH_STATUS)  # type: ignore[no-any-return]


def auth_username() -> str:
    """The username the login library recorded ('' when none)."""
    return str(st.session_state.get(AUTH_USERNAME) or "")


def auth_since() -> float | None:
    """When this session logged in (None: unknown, e.g. a session older than this check)."""
    value = st.session_state.get(AUTH_SINCE)
    return float(value) if value is not None else None


def set_login(username: str, name: str, since: float) -> None:
    """Record a login in this session."""
    st.session_state[AUTH_STATUS] = True
    st.session_state[AUTH_USERNAME] = username
    st.session_state[AUTH_NAME] = name
    st.session_state[AUTH_SINCE] = since


def clear_login() -> None:
    """Forget this session's login."""
    for key in (AUTH_STATUS, AUTH_USERNAME, AUTH_NAME, AUTH_SINCE):
        st.session_state.pop(key, None)


def crowd_session() -> dict[str, str] | None:
    """The crowd worker of this browser session (set by the join page), or None."""
    return st.session_state.get(CROWD)  # type: ignore[no-any-return]


def set_crowd_session(username: str, invite: str) -> None:
    """Remember, server-side, that this session is a crowd worker's."""
    st.session_state[CROWD] = {"username": username, "invite": invite}


# Annotation pages.
ANN_PROJECT = "annotate.project"
ANN_ITEM = "annotate.item"
ANN_OPENED = "annotate.opened"  # how often go_to opened a dialogue: part of the picker's key
ANN_SELECTOR = "annotate.selector"
ANN_TYPE = "annotate.type"
ANN_LAST_TYPE = "annotate.last_type"
"""The type last used: the emptied form opens on it (a run of spans is often one type)."""
ANN_NONE = "annotate.no_counterpart"
ANN_CATEGORY = "annotate.category"
ANN_NOTE = "annotate.note"
ANN_REMOVE = "annotate.remove"
ANN_UNDO = "annotate.undo"
ANN_NOTICE = "annotate.notice"
ANN_TYPED_TURN = "annotate.typed.turn"
ANN_TYPED_KO = "annotate.typed.ko"
ANN_TYPED_EN = "annotate.typed.en"
ANN_TYPED_AT = "annotate.typed.occurrence"
REVIEW_PROJECT = "review.project"
REVIEW_ITEM = "review.item"
REVIEW_CATEGORY = "review.category"
REVIEW_SPANS = "review.spans"
REVIEW_NOTE = "review.note"
PROJECT_SUBSET = "projects.subset"
PROJECT_CREATED = "projects.created"
"""The last project created (id, dialogues): a second press on the emptied form says so again."""
BREAKDOWN_PROJECT = "adaptation.project"
BREAKDOWN_BY = "adaptation.by"
BREAKDOWN_METRIC = "adaptation.metric"


def annotation_pending(project_id: int, conv_id: str) -> dict[str, Any]:
    """The Korean and English selections not yet added as a span, per dialogue."""
    found: dict[str, Any] = st.session_state.setdefault(
        f"annotate.pending.{project_id}.{conv_id}", {"ko": None, "en": None}
    )
    return found


BREAKDOWN_SOURCE = "adaptation.source"

LINK_DROPPED = "links.dropped"


def dropped_links(page: str) -> list[Any]:
    """The link values this page could not use: kept for the session, so the
    notice naming them stays after the bound widgets have rewritten the address."""
    found: dict[str, list[Any]] = st.session_state.setdefault(LINK_DROPPED, {})
    return found.setdefault(page, [])


def runs_step(name: str) -> str:
    """The Runs form's picker of pipeline step ``name`` (one per step ``Steps`` declares)."""
    return f"runs.{name}"


# The variant review on the Annotate page.
REVIEW_VARIANT = "annotate.review.variant"
REVIEW_DIALOGUE = "annotate.review.dialogue"


def review_text(variant: str, conv_id: str, turn: int) -> str:
    """The text box of one turn under review."""
    return f"annotate.review.text.{variant}.{conv_id}.{turn}"
