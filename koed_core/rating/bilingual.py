"""A bilingual design that does not prime: who may see both language versions of a dialogue.

A rater who reads a dialogue's English version and then its Korean one rates the second
against the first. A ko+en study is ``separate`` by default: no rater is given a
dialogue's response in one language after meeting the dialogue in the other. A
``counterbalanced`` study lets a rater meet both, Korean first for half of their
dialogues and English first for the other half (chosen by the study's seed), and every
rating records its position: 1, the rater's first version of that dialogue, or 2.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from koed_core.db import StudyConfig
from koed_core.db.types import CandidateItem
from koed_core.dialogues.variants import text_lang
from koed_core.i18n import N_

DESIGNS = ("separate", "counterbalanced", "free")
DESIGN_WORDS = {
    "separate": N_("no rater sees both language versions of a dialogue"),
    "counterbalanced": N_("a rater may see both: half Korean first, half English first"),
    "free": N_("no rule"),
}
"""Each design as the Studies page and the human-evaluation card say it."""


def first_language(seed: int, username: str, conv_id: str) -> str:
    """The language this rater meets this dialogue in first (counterbalanced): ko for
    about half of the rater's dialogues, en for the rest, the same every time."""
    digest = hashlib.sha256(f"{seed}:{username}:{conv_id}:first".encode()).digest()
    return "ko" if digest[0] % 2 else "en"


def allowed(
    config: StudyConfig, candidates: Sequence[CandidateItem], seen: Mapping[str, set[str]]
) -> list[CandidateItem]:
    """The candidates the design lets this rater have: separate leaves out a response
    whose dialogue the rater met in another language."""
    if config.bilingual != "separate":
        return list(candidates)
    return [
        c
        for c in candidates
        if c.kind == "attention" or not (seen.get(c.conv_id, set()) - {c.lang})
    ]


def order_rank(
    config: StudyConfig, username: str, candidate: CandidateItem, seen: Mapping[str, set[str]]
) -> int:
    """0 when the design would give this candidate now, 1 when it should wait: in a
    counterbalanced study a dialogue not met yet is met first in its first language."""
    if config.bilingual != "counterbalanced" or candidate.kind == "attention":
        return 0
    if candidate.conv_id in seen:
        return 0
    first = first_language(config.seed, username, candidate.conv_id)
    return 0 if text_lang(candidate.lang) == first else 1  # a variant: its text's language


def position(done: Mapping[str, set[str]], conv_id: str, lang: str) -> int:
    """1 if the rater had rated no other language version of the dialogue, else 2."""
    return 2 if done.get(conv_id, set()) - {lang} else 1
