"""The 34 KoED emotion labels and their Korean glosses, read from the shipped data file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from koed_core.paths import LABELS_FILE

KOREAN_LABELS = frozenset({"jeong", "han"})


@dataclass(frozen=True)
class Label:
    """One emotion label: its KoED name, Korean gloss and where it comes from."""

    name: str
    ko: str
    origin: str  # "ed" for the 32 EmpatheticDialogues emotions, "korean" for jeong and han
    description: str = ""
    ko_aliases: tuple[str, ...] = ()
    """Korean stems the label parser accepts for this label (the gloss and its variants)."""

    @property
    def display(self) -> str:
        """Name with gloss, as shown on every label chip (``jeong · 정(情)``)."""
        return f"{self.name} · {self.ko}"


@cache
def all_labels() -> tuple[Label, ...]:
    """Every label in the order of the shipped file (the 32 ED ones, then jeong and han)."""
    raw = json.loads(LABELS_FILE.read_text(encoding="utf-8"))
    return tuple(
        Label(**{**entry, "ko_aliases": tuple(entry.get("ko_aliases", ()))})
        for entry in raw["labels"]
    )


@cache
def label_names() -> tuple[str, ...]:
    """The 34 label names, alphabetically, the order used by tables and charts."""
    return tuple(sorted(label.name for label in all_labels()))


@cache
def by_name() -> dict[str, Label]:
    """Label lookup by name."""
    return {label.name: label for label in all_labels()}


def gloss(name: str) -> str:
    """The Korean gloss of a label, or the name itself for an unknown one."""
    label = by_name().get(name)
    return label.ko if label else name


def display(name: str) -> str:
    """A label as its chips show it (``afraid · 두려운``): the name, which stays the same in
    every language, with its gloss; an unknown name as it is."""
    label = by_name().get(name)
    return label.display if label else name
