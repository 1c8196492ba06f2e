"""The consent a worker reads: the study's text with the link's own facts filled in (the
expected minutes, the pay, the contact), so that the admin types each of them once and
the text cannot say one figure while the link says another."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from koed_core.i18n import _
from koed_core.paths import DATA_DIR

CONSENT_FILE = DATA_DIR / "consent.json"

FIELDS = ("{time}", "{pay}", "{contact}")
"""What a consent text may leave to the link: filled when the link is made."""

CONTACT_LINE = {"ko": "문의처: {contact}", "en": "Contact: {contact}"}
"""Added to a consent text that names no contact: a worker always learns whom to ask."""

NOT_SET = {
    "time": {"ko": "플랫폼에 표시된 시간", "en": "the time shown on the platform"},
    "pay": {"ko": "플랫폼에 표시된 금액", "en": "the amount shown on the platform"},
}
"""What the text says when the link does not know a figure: where the worker finds it,
never a guess."""


def default_consent() -> tuple[str, str]:
    """The consent text a new link starts from, Korean and English (data/consent.json),
    its ``{time}``, ``{pay}`` and ``{contact}`` still to be filled."""
    texts = json.loads(CONSENT_FILE.read_text(encoding="utf-8"))
    return str(texts["ko"]), str(texts["en"])


@dataclass(frozen=True)
class ConsentFacts:
    """What the link knows and its consent states."""

    minutes: float | None
    """The app's estimate of the minutes from joining to the code (None: no items)."""
    reward: float | None
    """The pay per submission (None: the link sets none)."""
    currency: str
    """The reward's currency."""
    contact: str
    """Whom a worker writes to: the researcher's address."""

    def time(self, lang: str) -> str:
        """The expected time in words, rounded up to whole minutes."""
        if self.minutes is None:
            return NOT_SET["time"][lang]
        whole = max(1, math.ceil(self.minutes))
        return f"{whole}분" if lang == "ko" else f"about {whole} minutes"

    def pay(self, lang: str) -> str:
        """The reward with its currency."""
        if self.reward is None:
            return NOT_SET["pay"][lang]
        return f"{self.reward:.2f} {self.currency}"


def fill_consent(text: str, lang: str, facts: ConsentFacts) -> str:
    """``text`` with its ``{time}``, ``{pay}`` and ``{contact}`` filled from the link (other
    braces are left as written), and a contact line added when the text names none."""
    filled = (
        text.replace("{time}", facts.time(lang))
        .replace("{pay}", facts.pay(lang))
        .replace("{contact}", facts.contact)
    )
    if facts.contact not in filled:
        filled = f"{filled}\n\n{CONTACT_LINE[lang].format(contact=facts.contact)}"
    return filled


def contact_problem(contact: str) -> str | None:
    """Why a contact cannot stand in a consent (None: it can): a worker needs a way to
    reach the researchers before they agree, so a link is not made without one."""
    text = contact.strip()
    if not text:
        return _(
            "give a contact for the consent (an email address or another way to reach the "
            "researchers): a worker must know whom to ask before agreeing"
        )
    if len(text) > 200 or "\n" in text:
        return _("the contact is one line of at most 200 characters")
    return None
