"""Which dialogues a run answers: the paper's sample, the jeong/han set, all, or a sample.

``paper-100`` is the authors' evaluation sample (its conv_ids ship in
``data/subsets/paper-100.txt``; their file's text does not). ``jeong-han-80`` is every
dialogue labelled jeong or han. ``--sample N --seed S`` draws a sample, one of two ways
(``design``): ``label-sets`` groups dialogues by label set and takes them round-robin
over the groups in a seeded order, so every label is represented before any is repeated
(a look at many emotions; a dialogue's chance then depends on how many share its
labels, so its means are not the subset's); ``uniform`` gives every dialogue the same
chance (a seeded simple random sample), so a sample's mean estimates the subset's: what
a reproduction's ``sample = N`` draws (issue 64 #8).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.paths import DATA_DIR

SUBSETS = ("full", "paper-100", "jeong-han-80")
SAMPLE_DESIGNS = ("label-sets", "uniform")
PAPER_100 = DATA_DIR / "subsets" / "paper-100.txt"


class SubsetError(KoedError):
    """A subset that cannot be taken from this dataset (names what is missing)."""


def paper_100_ids() -> list[str]:
    """The authors' 100 conv_ids, in their order."""
    lines = PAPER_100.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def select(
    dialogues: Sequence[Dialogue],
    subset: str = "full",
    *,
    sample: int | None = None,
    seed: int = 0,
    design: str = "label-sets",
) -> list[Dialogue]:
    """The dialogues of a named subset, optionally a sample of it (``design``: see the
    module docstring).

    Raises:
        SubsetError: an unknown subset, a subset the dataset does not contain (e.g.
            ``paper-100`` on the built-in sample), or a sample larger than the subset.
    """
    if subset == "full":
        chosen = list(dialogues)
    elif subset == "jeong-han-80":
        chosen = [d for d in dialogues if d.korean_emotion]
    elif subset == "paper-100":
        by_id = {d.conv_id: d for d in dialogues}
        ids = paper_100_ids()
        missing = [conv for conv in ids if conv not in by_id]
        if missing:
            raise SubsetError(
                f"paper-100 needs the official KoED file: {len(missing)} of its dialogues "
                f"are not in this dataset (first: {missing[0]})"
            )
        chosen = [by_id[conv] for conv in ids]
    else:
        raise SubsetError(f"unknown subset {subset!r}; use {', '.join(SUBSETS)}")
    if sample is None:
        return chosen
    if sample < 1 or sample > len(chosen):
        raise SubsetError(f"--sample must be between 1 and {len(chosen)} for {subset}")
    if design == "uniform":
        return uniform(chosen, sample, seed)
    if design != "label-sets":
        raise SubsetError(f"unknown sample design {design!r}; use {', '.join(SAMPLE_DESIGNS)}")
    return stratified(chosen, sample, seed)


def uniform(dialogues: Sequence[Dialogue], size: int, seed: int) -> list[Dialogue]:
    """``size`` dialogues, each equally likely (a seeded simple random sample), in the
    subset's order."""
    positions = sorted(random.Random(seed).sample(range(len(dialogues)), size))
    return [dialogues[n] for n in positions]


def stratified(dialogues: Sequence[Dialogue], size: int, seed: int) -> list[Dialogue]:
    """``size`` dialogues balanced over label sets: round-robin over shuffled groups."""
    rng = random.Random(seed)
    groups: dict[frozenset[str], list[Dialogue]] = defaultdict(list)
    for dialogue in dialogues:
        groups[dialogue.label_set].append(dialogue)
    order = sorted(groups, key=lambda labels: sorted(labels))
    rng.shuffle(order)
    for key in order:
        rng.shuffle(groups[key])
    picked: list[Dialogue] = []
    depth = 0
    while len(picked) < size:
        for key in order:
            if depth < len(groups[key]) and len(picked) < size:
                picked.append(groups[key][depth])
        depth += 1
    return picked
