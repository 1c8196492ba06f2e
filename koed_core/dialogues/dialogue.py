"""The domain objects of one KoED record: a dialogue, its turns, and load warnings.

Frozen dataclasses, so that a cached dataset can be shared by every Streamlit session
without one of them changing it under the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from koed_core.dialogues.labels import KOREAN_LABELS
from koed_core.i18n import _

Lang = Literal["ko", "en"]
Role = Literal["speaker", "listener"]


@dataclass(frozen=True)
class Turn:
    """One utterance, in both languages where both exist.

    ``position`` is the 1-based place in the file's list, which is the reading order;
    ``source_idx`` keeps the file's ``utter_idx``, which is out of order in a few records.
    """

    position: int
    ko: str
    en: str
    source_idx: int | None = None
    user_id: str | None = None
    en_file: str = ""
    """The English text as the file has it, kept only where it differs from ``en`` (it
    held EmpatheticDialogues' ``_comma_``): the authors sent that text to their models."""

    @property
    def role(self) -> Role:
        """Speaker on odd positions and Listener on even ones, as in EmpatheticDialogues."""
        return "speaker" if self.position % 2 == 1 else "listener"

    @property
    def ko_only(self) -> bool:
        """A turn the Korean reconstruction added, with no English counterpart."""
        return bool(self.ko) and not self.en

    @property
    def en_only(self) -> bool:
        """A turn with English text and no Korean (two in the official file)."""
        return bool(self.en) and not self.ko

    def text(self, lang: Lang, commas: str = "decoded") -> str:
        """The turn's text in one language, ``""`` where it has none; ``commas="raw"``
        gives the English as the file encodes it (``_comma_`` kept)."""
        if lang == "ko":
            return self.ko
        return (self.en_file or self.en) if commas == "raw" else self.en


@dataclass(frozen=True)
class Dialogue:
    """A KoED record: one conversation with its situation, gold labels and turns."""

    index: int
    conv_id: str
    situation_ko: str
    situation_en: str
    labels: tuple[str, ...]
    turns: tuple[Turn, ...]

    @property
    def label_set(self) -> frozenset[str]:
        """The gold labels as a set: filters compare combinations, not order."""
        return frozenset(self.labels)

    @property
    def korean_emotion(self) -> bool:
        """A jeong or han record (the 80 handcrafted dialogues in the official file)."""
        return bool(self.label_set & KOREAN_LABELS)

    @property
    def ko_only_turns(self) -> int:
        """How many turns the reconstruction added in Korean only."""
        return sum(turn.ko_only for turn in self.turns)

    def situation(self, lang: Lang) -> str:
        """The situation prompt in one language."""
        return self.situation_ko if lang == "ko" else self.situation_en


@dataclass(frozen=True)
class LoadWarning:
    """A recoverable oddity found while loading; the record still loads.

    ``message`` is an English template, ``values`` its placeholders; :attr:`text` is what a
    reader sees, in the language being spoken (as :class:`koed_core.errors.Problem`).
    """

    kind: str
    message: str
    index: int
    conv_id: str
    values: tuple[tuple[str, object], ...] = ()

    @property
    def text(self) -> str:
        """The message in the language being spoken, its values filled in."""
        return _(self.message, **dict(self.values))


def preview(text: str, limit: int) -> str:
    """``text`` whole when it has ``limit`` characters or fewer, else its first words up
    to ``limit`` - 1 characters and an ellipsis: a table cell of fixed height shows a
    preview that ends where a word does, never a line cut through (the whole text is one
    click away). A first word longer than the limit is cut at the limit."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,.;:") + "…"
