"""The one database layer: the connection, numbered migrations and every query.

Nothing outside this package writes SQL or probes tables. ``Store`` opens (checks and
migrates) the file and holds run queries; ``Judgments`` and ``Ratings`` hold the rest.
"""

from koed_core.db.judgments import JudgeConfigUse, Judgments
from koed_core.db.ratings import Ratings
from koed_core.db.store import Store, StoreError
from koed_core.db.types import (
    JudgeConfig,
    RaterProfile,
    RatingItem,
    ResponseRecord,
    RunConfig,
    Sampling,
    StudyConfig,
    now,
    set_clock,
    short_hash,
    utcnow,
)

__all__ = [
    "JudgeConfig",
    "JudgeConfigUse",
    "Judgments",
    "RaterProfile",
    "RatingItem",
    "Ratings",
    "ResponseRecord",
    "RunConfig",
    "Sampling",
    "Store",
    "StoreError",
    "StudyConfig",
    "now",
    "set_clock",
    "short_hash",
    "utcnow",
]
