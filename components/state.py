"""Every session-state key the pages use, defined once.

The explorer's filter widgets are bound to URL query parameters (``bind="query-params"``),
so their keys are also the parameter names of a shared link: keep them short and stable.
"""

from __future__ import annotations

# Explorer filters: session keys == URL query parameters.
LABELS = "labels"
MODE = "mode"
ORIGIN = "origin"
TEXT = "q"
TURNS = "turns"
KO_ONLY = "ko_only"
DIALOGUE = "d"

# Adaptation page: its own dialogue picker, also linkable.
ADAPT_DIALOGUE = "ad"
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

# Runs page.
RUNS_MODEL = "runs.model"
RUNS_SELECTED = "runs.selected"

# Rating pages.
RATE_STUDY = "rate.study"
RATE_STARTED = "rate.started"  # {assignment_id: time first shown}
RATE_CALIBRATION = "rate.calibration"  # {"index": int, "feedback": dict | None}
