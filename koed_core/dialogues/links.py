"""Link values a page could not use, named: a shared link never loses a value silently.

Streamlit's widgets bound to the URL drop a value they have no option for (a label that
does not exist, a conv_id of another file, turns ``9-1``) and rewrite the address without
a word. The pages check the link's values first with :func:`dropped_values` and say which
were left out, and why.

One name per idea across the pages: ``d`` is the dialogue (the Explorer's, Chat's, the
Adaptation page's); ``dialogue`` (Chat's) and ``ad`` (the Adaptation page's) are read as
aliases of it, for links made before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from koed_core.dialogues.filters import MODE_TEXT, ORIGIN_TEXT
from koed_core.dialogues.labels import label_names
from koed_core.i18n import N_, _

DIALOGUE = "d"
"""The dialogue's parameter on every page."""
ALIASES: dict[str, str] = {"dialogue": DIALOGUE, "ad": DIALOGUE}
"""Older names still read, each mapped to the one name of its idea."""
KO_ONLY = ("any", "with", "without")


@dataclass(frozen=True)
class Dropped:
    """One value of a link that was left out."""

    name: str
    value: str
    reason: str
    """An ``N_`` message, translated where it is shown; ``{low}``/``{high}``/``{options}``
    from ``values``."""
    values: tuple[tuple[str, str], ...] = ()
    words: tuple[tuple[str, str], ...] = ()
    """A page's own choices (code, ``N_`` words): ``{options}`` names each in the reader's
    language with the code a link holds, said when shown (the language may change)."""

    def sentence(self) -> str:
        """What the page says about it, in the reader's language."""
        values = dict(self.values)
        if self.words:
            values["options"] = ", ".join(_option(code, word) for code, word in self.words)
        return _(
            "The link's {name}={value} was left out: {reason}.",
            name=self.name,
            value=self.value,
            reason=_(self.reason, **values),
        )


def _option(code: str, word: str) -> str:
    """A choice as a notice lists it: its words, and the code a link holds when the
    words are not the code ("가장 가까운 순 (closest first)")."""
    said = _(word)
    return code if said == code else f"{said} ({code})"


def canonical(params: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The link's parameters under their one name each (an alias gives way to the name)."""
    out = {name: list(values) for name, values in params.items() if name not in ALIASES}
    for alias, name in ALIASES.items():
        if params.get(alias) and not out.get(name):
            out[name] = list(params[alias])
    return out


def _choice(name: str, values: Sequence[str], options: Collection[str]) -> list[Dropped]:
    listed = ", ".join(options)
    return [
        Dropped(name, v, N_("not one of {options}"), (("options", listed),))
        for v in values
        if v not in options
    ]


def _page_choice(name: str, values: Sequence[str], options: Collection[str]) -> list[Dropped]:
    """A page's own choice: its options listed in the reader's words when it gives them
    (a mapping of code to ``N_`` words), else as codes."""
    words = tuple(options.items()) if isinstance(options, Mapping) else ()
    if not words:
        return _choice(name, values, options)
    reason = N_("not one of {options}")
    return [Dropped(name, v, reason, (), words) for v in values if v not in options]


def _turns(values: Sequence[str], turn_range: tuple[int, int]) -> list[Dropped]:
    low, high = turn_range
    bounds = (("low", str(low)), ("high", str(high)))
    reason = N_("a range of turns is two numbers from {low} to {high}, the smaller first")
    try:
        numbers = [int(v) for v in values]
    except ValueError:
        numbers = []
    ok = len(numbers) == 2 and numbers[0] <= numbers[1] and all(low <= n <= high for n in numbers)
    return [] if ok else [Dropped("turns", "-".join(values), reason, bounds)]


def dropped_values(
    params: Mapping[str, Sequence[str]],
    conv_ids: Collection[str],
    turn_range: tuple[int, int] | None = None,
    choices: Mapping[str, Collection[str]] | None = None,
) -> list[Dropped]:
    """The Explorer's (and Chat's, the Adaptation page's) link values that name nothing in
    the loaded file or among a page's choices.

    Args:
        params: the URL's query parameters, each name with its values (repeated ones
            in order), aliases already mapped by :func:`canonical`.
        conv_ids: the dialogues of the loaded file (a sample id on the official file is
            not one of them).
        turn_range: the file's fewest and most turns; None where turns are no filter.
        choices: a page's own parameters and the values each may take (the Adaptation
            page's ``order``).

    Returns:
        One :class:`Dropped` per value left out, in the link's order of names.
    """
    known = set(label_names())
    dropped: list[Dropped] = []
    for name, values in params.items():
        if name == "labels":
            dropped += [
                Dropped(name, v, N_("no such emotion label")) for v in values if v not in known
            ]
        elif name == "mode":
            dropped += _choice(name, values, MODE_TEXT)
        elif name == "origin":
            dropped += _choice(name, values, ORIGIN_TEXT)
        elif name == "ko_only":
            dropped += _choice(name, values, KO_ONLY)
        elif name == "turns" and turn_range is not None:
            dropped += _turns(values, turn_range)
        elif name in (choices or {}):
            dropped += _page_choice(name, values, (choices or {})[name])
        elif name == DIALOGUE:
            dropped += [
                Dropped(name, v, N_("no dialogue of that id in the loaded file"))
                for v in values
                if v not in conv_ids
            ]
    return dropped
