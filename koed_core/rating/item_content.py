"""What one study item shows a rater: the dialogue so far and the reply to rate."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ItemContent:
    """The content of one study item, as stored with it."""

    kind: str
    """response, episode or attention."""
    conv_id: str
    """The dialogue it comes from."""
    lang: str
    """The language it is shown in (ko or en)."""
    context: list[list[str]]
    """The turns before the reply, as (role, text) pairs."""
    text: str
    """The reply to rate ("" for an episode: the context is the item)."""
    instruction: str | None = None
    """An attention check's instruction (which score to give), shown with the item."""
    score: int | None = None
    """The score that instruction asks for."""
