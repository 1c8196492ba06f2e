"""A linguist checks a translated variant turn by turn (issue 65, item 4).

A reviewer reads a random sample of a variant's dialogues, source beside translation, and
accepts each turn as it is or edits it. An accepted turn is recorded against the version
that holds it; an edit is stored as the variant's next version (made by the reviewer,
with when and which turn it changed), so a run made before the edit keeps the text it was
asked with and the next run reads the edit. How far people moved a model's translation
is reported as chrF (Popović 2015) from sacrebleu, the maintained implementation the MT
literature reports, over the checked turns: the model's text against what the reviewer
left (an accepted turn counts as identical).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, replace

from koed_core.db import Store
from koed_core.db.variants import Check, StoredTranslation, Variants, VersionMeta
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import source_hash, source_texts
from koed_core.errors import KoedError
from koed_core.models.variant_texts import VariantError, read_variant


class ReviewError(KoedError):
    """A check that cannot be recorded (one sentence)."""


def review_sample(translated: Mapping[str, Dialogue], size: int, seed: int = 0) -> list[str]:
    """A uniform random sample of ``size`` translated dialogues (all when fewer), in the
    file's order: the same seed gives every reviewer the same sample."""
    ids = sorted(translated)
    chosen = set(random.Random(seed).sample(ids, min(size, len(ids))))
    return [conv for conv in translated if conv in chosen]


@dataclass(frozen=True)
class ReviewTurn:
    """One turn as the reviewer sees it."""

    turn: int
    source: str
    translation: str
    version_id: str
    """The version whose row holds this translation (what a check is recorded against)."""


def review_turns(store: Store, dialogue: Dialogue, variant: str) -> list[ReviewTurn]:
    """The dialogue's source turns beside the variant's newest translation of them.

    Raises:
        ReviewError: the variant has no translation of this dialogue.
    """
    found = _current(store, dialogue, variant)
    _situation, sources = source_texts(dialogue, variant)
    return [
        ReviewTurn(i, text, found.translation.turns[i], found.version_id)
        for i, text in enumerate(sources)
    ]


def accept(store: Store, dialogue: Dialogue, variant: str, turn: int, who: str) -> Check:
    """Record that ``who`` read turn ``turn`` and kept it as it is."""
    item = _turn(store, dialogue, variant, turn)
    check = Check(item.version_id, dialogue.conv_id, turn, who, "accepted", item.translation)
    Variants(store).record_check(check)
    return check


def edit(store: Store, dialogue: Dialogue, variant: str, turn: int, text: str, who: str) -> Check:
    """Store ``who``'s new text for one turn as the variant's next version, and the check
    against the version it replaced (an edit that changes nothing is an acceptance).

    Raises:
        ReviewError: an empty text, or a turn the dialogue does not have.
    """
    if not text.strip():
        raise ReviewError("an edited turn cannot be empty: write the translation")
    item = _turn(store, dialogue, variant, turn)
    if text.strip() == item.translation.strip():
        return accept(store, dialogue, variant, turn, who)
    found = _current(store, dialogue, variant)
    turns = list(found.translation.turns)
    turns[turn] = text.strip()
    variants = Variants(store)
    latest = variants.latest(variant)
    assert latest is not None  # _current found a translation
    before = variants.version(found.version_id)
    variants.add_version(
        VersionMeta(
            variant,
            "person",
            latest.source_sha256,
            translator=who,
            note=f"{who} edited turn {turn + 1} of {dialogue.conv_id} "
            f"(v{before.version if before else '?'})",
        ),
        [(replace(found.translation, turns=tuple(turns)), source_hash(dialogue, variant))],
    )
    check = Check(found.version_id, dialogue.conv_id, turn, who, "edited", text.strip())
    variants.record_check(check)
    return check


@dataclass(frozen=True)
class ReviewReport:
    """What people have checked of a variant, and how far they moved the model's text."""

    turns_checked: int
    accepted: int
    edited: int
    model_turns_checked: int
    """Checked turns of versions a model made: what chrF is computed over."""
    chrf: float | None
    """chrF (0-100) of the model's text against the checked text; None: no model turn
    has been checked."""


def review_report(store: Store, variant: str) -> ReviewReport:
    """Checked turns (a turn checked by two people counts once, as its latest verdict)."""
    variants = Variants(store)
    latest: dict[tuple[str, str, int], Check] = {}
    for check in variants.checks(variant):
        latest[(check.version_id, check.conv_id, check.turn)] = check
    made = {v.id: v.made_by for v in variants.versions(variant)}
    hypotheses, references = [], []
    for (version_id, conv_id, turn), check in latest.items():
        if made.get(version_id) != "model":
            continue
        original = variants.row(version_id, conv_id)
        if original is not None and turn < len(original.turns):
            hypotheses.append(original.turns[turn])
            references.append(check.text)
    verdicts = [c.verdict for c in latest.values()]
    return ReviewReport(
        turns_checked=len(latest),
        accepted=verdicts.count("accepted"),
        edited=verdicts.count("edited"),
        model_turns_checked=len(hypotheses),
        chrf=_chrf(hypotheses, references) if hypotheses else None,
    )


def _chrf(hypotheses: list[str], references: list[str]) -> float:
    from sacrebleu.metrics.chrf import CHRF

    return float(CHRF().corpus_score(hypotheses, [references]).score)


def _current(store: Store, dialogue: Dialogue, variant: str) -> StoredTranslation:
    """The variant's newest translation of the dialogue, and the version holding it."""
    try:
        read = read_variant(store, [dialogue], variant)
    except VariantError as err:
        raise ReviewError(str(err)) from None
    stored = Variants(store).read(variant, read.version.version).get(dialogue.conv_id)
    if stored is None or dialogue.conv_id not in read.dialogues:
        raise ReviewError(f"{variant} has no current translation of {dialogue.conv_id}")
    return stored


def _turn(store: Store, dialogue: Dialogue, variant: str, turn: int) -> ReviewTurn:
    turns = review_turns(store, dialogue, variant)
    if not 0 <= turn < len(turns):
        raise ReviewError(f"{dialogue.conv_id} has no turn {turn + 1} in {variant}")
    return turns[turn]
