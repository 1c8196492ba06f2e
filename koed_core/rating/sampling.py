"""Which dialogues a study holds, and how they were chosen: the record PPI reads.

Prediction-powered inference corrects the judge by people only if the rated dialogues
are a random sample of those the judge scored. A study records its design
(:class:`~koed_core.db.Sampling`): every answered dialogue, a uniform random sample (the
first ``size`` of a permutation by the seed), a stratified one (a uniform random sample
within each stratum), or dialogues chosen by hand. A later batch takes the next
dialogues of the same permutation, so the sample stays uniform random as it grows.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from koed_core.db import Sampling, StudyConfig
from koed_core.dialogues.dataset import Dataset
from koed_core.errors import KoedError
from koed_core.i18n import _

METHODS = ("all", "random", "stratified", "manual")
RANDOM_METHODS = ("all", "random", "stratified", "active")
"""Designs PPI may use: ``active`` is a uniform pilot grown by batches drawn with known,
unequal probabilities (stored per dialogue, ``koed_core.results.ppi_active``)."""


class SamplingError(KoedError):
    """A sample that cannot be drawn (no size, a size larger than the population)."""


def permutation(conv_ids: Iterable[str], seed: int) -> list[str]:
    """The dialogues in the study's random order: sorted, then shuffled by ``seed``, so
    the same seed and population always give the same order."""
    order = sorted(set(conv_ids))
    random.Random(seed).shuffle(order)
    return order


def draw(sampling: Sampling, population: Sequence[str], strata: Mapping[str, str]) -> Sampling:
    """Fill in the dialogues a design chooses from the dialogues the runs answered.

    Args:
        sampling: the design asked for (``method``, ``seed``, ``size`` or ``sizes``).
        population: conv_ids answered by the study's runs.
        strata: conv_id -> stratum (used by ``stratified``).

    Raises:
        SamplingError: a random design with no size, or asking for more than there is.
    """
    everyone = sorted(set(population))
    if sampling.method == "all":
        return replace(sampling, conv_ids=(), population=len(everyone))
    if sampling.method == "manual":
        chosen = [c for c in sampling.conv_ids if c in set(everyone)]
        return replace(sampling, conv_ids=tuple(chosen), population=len(everyone))
    if sampling.method == "random":
        if not sampling.size or sampling.size < 1:
            raise SamplingError(_("a random sample needs a size of at least 1 dialogue"))
        if sampling.size > len(everyone):
            raise SamplingError(
                _(
                    "a sample of {size} dialogues from {n} answered ones is not a sample",
                    size=sampling.size,
                    n=len(everyone),
                )
            )
        chosen = permutation(everyone, sampling.seed)[: sampling.size]
        return replace(sampling, conv_ids=tuple(sorted(chosen)), population=len(everyone))
    if sampling.method == "stratified":
        return _stratified(sampling, everyone, strata)
    raise SamplingError(_("unknown sampling method {method}", method=sampling.method))


def _stratified(sampling: Sampling, everyone: list[str], strata: Mapping[str, str]) -> Sampling:
    groups = {c: strata.get(c, "other") for c in everyone}
    chosen: list[str] = []
    for stratum, size in sampling.sizes:
        members = [c for c in everyone if groups[c] == stratum]
        if size > len(members):
            raise SamplingError(
                _(
                    "stratum {stratum} has {n} answered dialogues; {size} asked",
                    stratum=stratum,
                    n=len(members),
                    size=size,
                )
            )
        chosen += permutation(members, _stratum_seed(sampling.seed, stratum))[:size]
    return replace(
        sampling,
        conv_ids=tuple(sorted(chosen)),
        strata=tuple(sorted(groups.items())),
        population=len(everyone),
    )


def _stratum_seed(seed: int, stratum: str) -> int:
    return seed * 1_000_003 + sum(ord(ch) for ch in stratum)


def next_batch(sampling: Sampling, population: Sequence[str], more: int) -> Sampling:
    """The design with ``more`` dialogues added: the next ones of the same permutation
    (random), or of each stratum's in proportion to its size (stratified).

    Raises:
        SamplingError: the design is not random, or nothing is left to add.
    """
    if sampling.method == "active":
        raise SamplingError(
            _(
                "this study grew by an active batch: its next batch is drawn the same way "
                "(koed study plan --build --active)"
            )
        )
    if sampling.method not in ("random", "stratified"):
        raise SamplingError(
            _(
                "only a random or stratified sample grows by batches; this one is {method}",
                method=sampling.method,
            )  # fmt: skip
        )
    everyone = sorted(set(population))
    if sampling.method == "random":
        size = min(len(everyone), (sampling.size or 0) + more)
        return draw(replace(sampling, size=size), everyone, {})
    strata = dict(sampling.strata)
    counts: dict[str, int] = {}
    for conv_id in everyone:
        counts[strata.get(conv_id, "other")] = counts.get(strata.get(conv_id, "other"), 0) + 1
    now_sizes = dict(sampling.sizes)
    total = sum(now_sizes.values()) or 1
    sizes = tuple(
        (s, min(counts.get(s, 0), n + round(more * n / total))) for s, n in sampling.sizes
    )
    return draw(replace(sampling, sizes=sizes), everyone, strata)


def refusal(sampling: Sampling) -> str | None:
    """Why PPI may not be used on this study's ratings, or None when it may."""
    if sampling.method == "manual":
        return _(
            "PPI refused: this study's dialogues were chosen by hand, so the rated ones are "
            "not a random sample of those the judge scored and the judge's correction "
            "would carry the choice's bias. The judge-only estimate covers every dialogue "
            "the judge scored; the people-only one describes only the dialogues chosen, "
            "not all of them."
        )
    if sampling.method not in RANDOM_METHODS:
        return _("PPI refused: the study records no known way of choosing its dialogues.")
    return None


def describe(sampling: Sampling) -> str:
    """One sentence on how a study chose its dialogues."""
    if sampling.method == "random":
        return _(
            "uniform random sample of {size} of {n} answered dialogues (seed {seed})",
            size=sampling.size,
            n=sampling.population,
            seed=sampling.seed,
        )
    if sampling.method == "stratified":
        parts = ", ".join(f"{s}: {n}" for s, n in sampling.sizes)
        return _(
            "stratified random sample ({parts}) of {n} answered dialogues (seed {seed})",
            parts=parts,
            n=sampling.population,
            seed=sampling.seed,
        )
    if sampling.method == "manual":
        return _("{size} dialogues chosen by hand", size=len(sampling.conv_ids))
    if sampling.method == "active":
        return _(
            "{size} of {n} answered dialogues: a uniform random sample, then batches favouring "
            "the dialogues the judge is least sure of, each dialogue's probability stored "
            "(seed {seed})",
            size=len(sampling.conv_ids),
            n=sampling.population,
            seed=sampling.seed,
        )
    return _("every answered dialogue, reached by raters in the study's seeded random order")


def sampled(
    config: StudyConfig, rows: list[dict[str, Any]], dataset: Dataset
) -> tuple[StudyConfig, list[dict[str, Any]]]:
    """The study's design drawn from the answered dialogues, and the responses it keeps."""
    strata = {d.conv_id: "jeong/han" if d.korean_emotion else "other" for d in dataset.dialogues}
    drawn = draw(config.sampling, [r["conv_id"] for r in rows], strata)
    if drawn.method == "all":
        return replace(config, sampling=drawn), rows
    keep = set(drawn.conv_ids)
    return replace(config, sampling=drawn), [r for r in rows if r["conv_id"] in keep]
