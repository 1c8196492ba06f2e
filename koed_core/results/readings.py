"""What an agreement statistic means, in the reader's language: ``Stat`` (a value, or
None with the reason it is undefined) and the conventional readings of alpha, kappa and
rho (``koed_core.i18n``: Korean on a Korean page, English on the command line)."""

from __future__ import annotations

from dataclasses import dataclass

from koed_core.i18n import N_, _

MIN_ITEMS = 3
"""Items a statistic needs before it is computed at all."""


@dataclass(frozen=True)
class Stat:
    """A statistic, or None with the reason it is undefined; ``reading`` says what it means."""

    value: float | None
    reading: str


KAPPA_BANDS = (
    (0.8, N_("almost perfect agreement")),
    (0.6, N_("substantial agreement")),
    (0.4, N_("moderate agreement")),
    (0.2, N_("fair agreement")),
    (0.0, N_("slight agreement")),
)
"""Landis and Koch's bands, each lower limit with its reading (whole, so it translates)."""
RHO_WORDS = {
    ("strong", True): N_("strong positive correlation"),
    ("strong", False): N_("strong negative correlation"),
    ("moderate", True): N_("moderate positive correlation"),
    ("moderate", False): N_("moderate negative correlation"),
    ("weak", True): N_("weak positive correlation"),
    ("weak", False): N_("weak negative correlation"),
}


def _too_few(items: int) -> str:
    return _("undefined: {items} items (needs {needed})", items=items, needed=MIN_ITEMS)


def read_alpha(alpha: float) -> str:
    """Krippendorff's conventions: .8 and up reliable, .667 tentative."""
    if alpha >= 0.8:
        return _("reliable agreement")
    if alpha >= 0.667:
        return _("tentative agreement: draw only cautious conclusions")
    if alpha > 0:
        return _("weak agreement: conclusions from these ratings are doubtful")
    return _("no agreement beyond chance")


def read_kappa(kappa: float) -> str:
    """Landis and Koch's bands."""
    for limit, words in KAPPA_BANDS:
        if kappa >= limit:
            return _(words)
    return _("worse than chance")


def read_rho(rho: float) -> str:
    """Strength of a rank correlation."""
    size = abs(rho)
    strength = "strong" if size >= 0.6 else "moderate" if size >= 0.3 else "weak"
    return _(RHO_WORDS[strength, rho >= 0])
