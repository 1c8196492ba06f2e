"""The one database layer: the connection, numbered migrations and every query.

Nothing outside this package writes SQL or probes tables. ``Store`` is the connection:
it opens (checks and migrates) the file and serialises writes. Each table's queries are a
class built on it, named for what it holds (``Runs``, ``Judgments``, ``Ratings``,
``Annotations``, ``Jobs``, ``Episodes``, ``Crowd``, ``ModelCalls``...); the rules that use
them (who may do what, in which order) live above, in ``StudyRules`` and
``AnnotationRules``.
"""

from koed_core.db.inclusion import Inclusions
from koed_core.db.judgments import JudgeConfigUse, Judgments
from koed_core.db.model_calls import ModelCalls
from koed_core.db.ratings import Ratings
from koed_core.db.runs import Runs
from koed_core.db.store import Store, StoreError
from koed_core.db.types import (
    Decoding,
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
    "Decoding",
    "Inclusions",
    "JudgeConfig",
    "JudgeConfigUse",
    "Judgments",
    "ModelCalls",
    "RaterProfile",
    "RatingItem",
    "Ratings",
    "ResponseRecord",
    "RunConfig",
    "Runs",
    "Sampling",
    "Store",
    "StoreError",
    "StudyConfig",
    "now",
    "set_clock",
    "short_hash",
    "utcnow",
]
