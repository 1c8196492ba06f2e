"""The rating layer's refusal, in a module of its own so that the modules studies.py
builds on (episode items, sampling) can raise it without importing studies.py back."""

from __future__ import annotations

from koed_core.errors import KoedError


class RatingError(KoedError):
    """A rating action that cannot be done (bad score, not your item, no such study)."""
