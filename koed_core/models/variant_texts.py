"""Variants as runs read them, and people's translations taken in (``koed translate
import``).

A run asked in ``en-from-ko`` reads the variant's newest version at its start, builds
each translated dialogue as an ordinary :class:`Dialogue` (see
:func:`koed_core.dialogues.variants.apply`) and records the version's id with the run. A
dialogue whose source text changed since it was translated is left out, not answered in
a stale translation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from koed_core.db import Store
from koed_core.db.variants import Variants, VariantVersion, VersionMeta
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import (
    VARIANTS,
    Translation,
    apply,
    mismatch,
    parse_line,
    recorded_versions,
    source_texts,
)
from koed_core.dialogues.variants import source_hash as hash_of
from koed_core.errors import KoedError


class VariantError(KoedError):
    """A variant that cannot be used or a translations file refused (one sentence)."""


@dataclass(frozen=True)
class VariantSet:
    """One version of a variant, read for a run: its translated dialogues by conv_id, and
    those left out because their source text changed since."""

    version: VariantVersion
    dialogues: dict[str, Dialogue]
    stale: tuple[str, ...] = ()


def read_variant(store: Store, dialogues: Sequence[Dialogue], variant: str) -> VariantSet:
    """The newest version of ``variant`` over ``dialogues``.

    Raises:
        VariantError: the variant has no version yet (translate or import it first).
    """
    version = Variants(store).latest(variant)
    if version is None:
        raise VariantError(
            f"{variant} has no translation yet: make one with `koed translate run --variant "
            f"{variant} --model MODEL` or `koed translate import FILE`"
        )
    stored = Variants(store).read(variant, version.version)
    built: dict[str, Dialogue] = {}
    stale: list[str] = []
    for dialogue in dialogues:
        found = stored.get(dialogue.conv_id)
        if found is None:
            continue
        if found.source_hash != hash_of(dialogue, variant):
            stale.append(dialogue.conv_id)
            continue
        built[dialogue.conv_id] = apply(dialogue, found.translation)
    return VariantSet(version, built, tuple(stale))


def import_lines(
    store: Store, dataset: Dataset, lines: Iterable[str], translator: str
) -> list[VariantVersion]:
    """Take a JSONL file of people's translations: each variant it holds becomes that
    variant's next version, made by ``translator``. The file is read whole first: one bad
    line refuses it all, naming the line, and nothing is stored.

    Raises:
        VariantError: the first bad line, in one sentence (not JSON, a field missing or
            of the wrong type, an unknown variant or conv_id, a turn count other than the
            source's, a dialogue given twice), or a file with no line at all.
    """
    if not translator.strip():
        raise VariantError("say who translated: --translator NAME")
    found: dict[str, list[tuple[Translation, str]]] = {}
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            translation = parse_line(number, line)
        except ValueError as err:
            raise VariantError(str(err)) from None
        dialogue = dataset.get(translation.conv_id)
        if dialogue is None:
            raise VariantError(
                f"line {number}: conv_id {translation.conv_id!r} is not in {dataset.path}"
            )
        problem = mismatch(dialogue, translation)
        if problem:
            raise VariantError(f"line {number}: {problem}")
        if (translation.variant, translation.conv_id) in seen:
            raise VariantError(
                f"line {number}: {translation.conv_id} is given twice for {translation.variant}"
            )
        seen.add((translation.variant, translation.conv_id))
        found.setdefault(translation.variant, []).append(
            (translation, hash_of(dialogue, translation.variant))
        )
    if not found:
        raise VariantError("the file holds no translation (one JSON object a line)")
    return [
        Variants(store).add_version(
            VersionMeta(variant, "person", dataset.sha256, translator=translator.strip()),
            items,
        )
        for variant, items in sorted(found.items())
    ]


def is_variant(lang: str) -> bool:
    """Whether a run's language is a translated variant."""
    return lang in VARIANTS


def cells_asked(
    dialogues: Sequence[Dialogue],
    langs: Iterable[str],
    limit: int | None,
    variants: Mapping[str, Mapping[str, Dialogue]] | None,
) -> Iterator[tuple[str, Dialogue]]:
    """Each of the first ``limit`` dialogues (all without one) in each of ``langs``, in
    dataset order, with the dialogue asked in that cell: the dialogue itself, or in a
    translated variant its translation from ``variants`` (variant -> conv_id -> the
    variant dialogue); a dialogue not translated into a variant is left out of it. A run
    and an episode run plan their requests from the same cells this way."""
    chosen = dialogues[:limit] if limit else dialogues
    for dialogue in chosen:
        for lang in langs:
            source = (
                (variants or {}).get(lang, {}).get(dialogue.conv_id)
                if is_variant(lang)
                else dialogue
            )
            if source is not None:
                yield lang, source


@dataclass(frozen=True)
class RunVariants:
    """The variants a run is asked in: their dialogues, and the versions to record."""

    dialogues: dict[str, dict[str, Dialogue]]
    """variant -> conv_id -> the translated dialogue."""
    recorded: str | None
    """``en-from-ko v2 <id>, ...`` as the run's configuration keeps it (None: no variant)."""


def variants_for(store: Store, dialogues: Sequence[Dialogue], langs: Sequence[str]) -> RunVariants:
    """Read the newest version of every variant in ``langs`` for a run.

    Raises:
        VariantError: a variant with no version yet, or one that translates none of
            ``dialogues`` (translated from other dialogues, or from text changed since).
    """
    found: dict[str, dict[str, Dialogue]] = {}
    recorded: list[str] = []
    for lang in langs:
        if not is_variant(lang):
            continue
        read = read_variant(store, dialogues, lang)
        if not read.dialogues:
            stale = f" ({len(read.stale)} translated from text that has changed since)"
            raise VariantError(
                f"{read.version.label} translates none of the {len(dialogues)} dialogues "
                f"chosen{stale if read.stale else ''}: translate them first"
            )
        found[lang] = read.dialogues
        recorded.append(f"{read.version.label} {read.version.id}")
    return RunVariants(found, ", ".join(recorded) or None)


def recorded_dialogues(
    store: Store, dialogues: Mapping[str, Dialogue], recorded: str | None
) -> dict[str, dict[str, Dialogue]]:
    """The variant dialogues a run was asked in, read again from the versions it recorded
    (``en-from-ko v2 <id>, ...``, see :class:`RunVariants`): what a judge of that run
    must show, whatever versions were made since. variant -> conv_id -> dialogue."""
    found: dict[str, dict[str, Dialogue]] = {}
    for variant, (version, _id) in recorded_versions(recorded).items():
        stored = Variants(store).read(variant, version)
        found[variant] = {
            conv_id: apply(dialogues[conv_id], row.translation)
            for conv_id, row in stored.items()
            if conv_id in dialogues and mismatch(dialogues[conv_id], row.translation) is None
        }
    return found


@dataclass(frozen=True)
class Coverage:
    """What a plan's runs would read of one variant before anything is sent: the newest
    version (None: none yet) and how many of the chosen dialogues it translates."""

    variant: str
    version: VariantVersion | None
    translated: int
    chosen: int
    stale: int = 0
    requests: int = 0
    """The translation calls the dialogues not translated would take (one per text)."""

    @property
    def runnable(self) -> bool:
        """Whether a run in this variant would answer anything at all."""
        return self.translated > 0

    def said(self, subset_args: str) -> str:
        """One line for the dry run (English, as the command line speaks): the version
        and who made it, the dialogues it leaves out, and the command that fills the gap."""
        make = f"koed translate run --variant {self.variant} --model MODEL {subset_args}".strip()
        make += f" ({self.requests:,} translation requests)"
        if self.version is None:
            return f"{self.variant}: no version yet; make it first: {make}"
        v = self.version
        by = (
            f"{v.model} (model, prompt {v.prompt_version})"
            if v.made_by == "model"
            else (f"{v.translator} (person)")
        )
        line = f"{v.label} ({v.id}) by {by}: {self.translated} of the {self.chosen} dialogues"
        missing = self.chosen - self.translated
        if missing:
            stale = f", {self.stale} of them translated from text changed since"
            stale = stale if self.stale else ""
            line += f"; {missing} not translated would be left out of this cell{stale}: {make}"
        return line


def coverage(store: Store, dialogues: Sequence[Dialogue], langs: Sequence[str]) -> list[Coverage]:
    """Each variant among ``langs``: its newest version's reach over ``dialogues`` (a run
    in a variant skips a dialogue it does not translate, so a thin version makes a thin
    cell, and a missing one fails the run)."""
    found = []
    for lang in langs:
        if not is_variant(lang):
            continue
        try:
            read = read_variant(store, dialogues, lang)
        except VariantError:
            found.append(Coverage(lang, None, 0, len(dialogues), 0, _texts(dialogues, lang)))
            continue
        left = [d for d in dialogues if d.conv_id not in read.dialogues]
        found.append(
            Coverage(
                lang,
                read.version,
                len(read.dialogues),
                len(dialogues),
                len(read.stale),
                _texts(left, lang),
            )
        )
    return found


def _texts(dialogues: Sequence[Dialogue], variant: str) -> int:
    """How many texts (situation and turns) translating ``dialogues`` asks for."""
    total = 0
    for dialogue in dialogues:
        situation, turns = source_texts(dialogue, variant)
        total += len(turns) + (1 if situation else 0)
    return total
