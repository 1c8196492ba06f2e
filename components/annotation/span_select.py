"""The span selector: a dialogue's ko/en turns side by side, where a drag marks a span.

Built on Streamlit's own component API (``st.components.v2``), after trying the
maintained span components on Korean text in Chromium (README, "Annotating the
adaptation"): each returned offsets in UTF-16 units, and the best-known one widened
every selection to the next space, so "김치찌개" became "김치찌개🍲를". Here the selection
is snapped to whole characters (a decomposed syllable or an emoji sequence stays whole)
and counted in code points, as Python and the database count them. Texts are placed
with ``textContent``, never as HTML: dialogue text is data, not markup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from koed_core import i18n
from koed_core.annotation.spans import Span
from koed_core.dialogues.dialogue import Dialogue
from koed_core.i18n import N_, _

HERE = Path(__file__).parent
CSS = """
.koed-spans { font-family: var(--st-font, sans-serif); font-size: 0.95rem; position: relative; }
.koed-spans:focus { outline: none; }
.koed-spans table { border-collapse: collapse; width: 100%; }
.koed-spans td { vertical-align: top; padding: 6px 8px; border-bottom: 1px solid #ddd; }
.koed-spans td.who { width: 5.5em; color: #555; font-size: 0.8rem; }
.koed-spans th { text-align: left; font-size: 0.8rem; color: #555; padding: 4px 8px; }
.koed-spans .txt { white-space: pre-wrap; cursor: text; line-height: 1.6; }
.koed-spans .txt:empty::after { content: attr(data-empty); color: #999; }
.koed-spans mark { background: #ffe08a; border-radius: 3px; padding: 0 1px; cursor: pointer; }
.koed-spans mark.en { background: #cde8ff; }
.koed-spans mark.pending { background: #b8f0c0; outline: 1px solid #2a8a3a; }
.koed-spans mark.picked { outline: 2px solid #111827; }
.koed-spans mark mark { box-shadow: 0 0 0 1px #374151; margin: 0 1px; }
.koed-spans mark.outer { padding: 2px 3px; }
.koed-spans tr.suggested td.ko { outline: 2px dashed #d9822b; outline-offset: -3px; }
.koed-spans .hint { display: block; font-size: 0.75rem; color: #a65a10; }
.koed-spans .legend { display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 0.78rem;
  color: #374151; margin: 0 0 6px 0; }
.koed-spans .legend .swatch { display: inline-block; width: 0.9em; height: 0.9em;
  border-radius: 2px; margin-right: 4px; vertical-align: -0.1em; }
.koed-spans .legend .keys { color: #6b7280; }
.koed-spans .panel { position: absolute; z-index: 20; width: 420px; max-width: 95%;
  background: #fff; border: 1px solid #9ca3af; border-radius: 6px; padding: 8px 10px;
  box-shadow: 0 4px 14px rgba(0,0,0,0.18); font-size: 0.85rem; }
.koed-spans .panel .line { margin: 0 0 4px 0; word-break: break-word; }
.koed-spans .panel .chips { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0; }
.koed-spans .panel button { font: inherit; font-size: 0.8rem; border: 1px solid #9ca3af;
  background: #f9fafb; border-radius: 4px; padding: 2px 6px; cursor: pointer; }
.koed-spans .panel button.chip { border-width: 2px; }
.koed-spans .panel button.chip.on { font-weight: 600; }
.koed-spans .panel button.primary { background: #1d4ed8; color: #fff; border-color: #1d4ed8; }
.koed-spans .panel button:disabled { opacity: 0.5; cursor: default; }
.koed-spans .panel .guide { color: #4b5563; font-size: 0.78rem; margin: 0 0 4px 0; }
.koed-spans .panel .actions { display: flex; gap: 6px; margin-top: 6px; }
.koed-spans .panel .status { color: #a65a10; font-size: 0.8rem; margin-top: 4px; }
.koed-spans .panel label.guide { display: block; }
.koed-spans .panel textarea.comment { display: block; width: 100%; box-sizing: border-box;
  font: inherit; font-size: 0.85rem; margin-top: 2px; white-space: pre-wrap; }
.koed-spans mark.commented { border-bottom: 2px dotted #374151; }
"""
JS = (HERE / "span_select.js").read_text(encoding="utf-8")
COLOURS = (
    "#ffbf99", "#e680ff", "#ffe666", "#66b3b3", "#f28c00",
    "#00e6cc", "#ccb3e6", "#a6bf66", "#e6ffa6", "#b3a68c",
)  # fmt: skip
"""One colour per type, in the taxonomy's order (a legend names each). Chosen by a
farthest-point search over the sRGB colours dark text reads on (WCAG contrast 7.2 or
more): each as far as it can be, in CIEDE2000, from the others, the two states (a
pending selection's green, an English counterpart's blue) and the white page, for
normal sight and the three colour blindnesses (simulated); tests/test_palette.py
states the distances it keeps."""
STATES = {"pending": "#b8f0c0", "english": "#cde8ff"}
"""The states' colours, as CSS below draws them (mark.pending, mark.en)."""
EVENTS = ("selected", "add", "remove", "undo", "comment")
"""What the widget sends: a cross-turn notice, an add, a removal, an undo, a span's new
comment."""

ROLES = {"speaker": N_("speaker"), "listener": N_("listener")}
"""A turn's role as the first column says it."""
_SELECTOR = st.components.v2.component("koed_span_selector", html="", css=CSS, js=JS)


def span_key(span: Span) -> str:
    """A span as the widget names it back (turn, offsets and type): what a removal sends."""
    position, start, end, kind = span.key
    return f"{position}:{start}:{end}:{kind}"


def colour_of(codes: Sequence[str]) -> dict[str, str]:
    """Each type's colour, by its place in the taxonomy."""
    return {code: COLOURS[i % len(COLOURS)] for i, code in enumerate(codes)}


def _marks(
    spans: Sequence[Span],
    pending: dict[str, Any] | None,
    position: int,
    chosen: str,
    colours: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The marks on one turn; ``chosen`` is the tooltip of the pending selection. A span
    is drawn in its type's colour and carries its key, so a click can pick it, and its
    comment (in its tooltip, under its type's name, and in the panel a click opens)."""
    marks: dict[str, list[dict[str, Any]]] = {"ko": [], "en": []}
    colours, names = colours or {}, names or {}
    for span in spans:
        label = names.get(span.type, span.type)
        title = f"{label}\n{span.comment}" if span.comment else label
        colour = colours.get(span.type)
        if span.ko.position == position:
            mark = {"start": span.ko.start, "end": span.ko.end, "cls": "ko", "title": title}
            mark |= {"key": span_key(span), "label": label, "comment": span.comment}
            marks["ko"].append({**mark, "color": colour} if colour else mark)
        if span.en is not None and span.en.position == position:
            mark = {"start": span.en.start, "end": span.en.end, "cls": "en", "title": title}
            marks["en"].append(
                {**mark, "key": span_key(span), "label": label, "comment": span.comment}
            )
    for lang in ("ko", "en"):  # the pending sides only: a notice waits beside them
        side = (pending or {}).get(lang)
        if isinstance(side, dict) and side.get("position") == position:
            marks[lang].append(
                {"start": side["start"], "end": side["end"], "cls": "pending", "title": chosen}
            )
    for lang in marks:  # sorted; the widget draws nested and crossing spans stacked
        marks[lang].sort(key=lambda m: (m["start"], -m["end"]))
    return marks


def _ignore() -> None:
    """A trigger needs a callback to rerun the script; the value is read from the result."""


def span_selector(
    dialogue: Dialogue,
    spans: Sequence[Span],
    pending: dict[str, Any] | None,
    suggested: dict[int, str],
    key: str,
    types: Sequence[Mapping[str, str]] = (),
    last: str | None = None,
    on_event: Callable[[], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Draw the dialogue with its spans, the legend and the span panel; return what the
    widget just sent, by event (``EVENTS``): ``selected`` (a notice), ``add`` (ko, en,
    none, type), ``remove`` (key), ``undo`` or ``comment`` (key, comment). Nothing in it
    is trusted: the caller checks every offset and type. ``types``: code, label, guide
    per signal type, in order; ``suggested``: position -> why it is suggested (shown
    dashed, never stored)."""
    rows = [(0, _("situation"), dialogue.situation_ko, dialogue.situation_en)]
    roles = i18n.choices(ROLES)
    rows += [(t.position, f"{t.position}. {roles[t.role]}", t.ko, t.en) for t in dialogue.turns]
    colours = colour_of([t["code"] for t in types])
    names = {t["code"]: t["label"] for t in types}
    selected = _("selected")
    data = {
        "headers": [
            _("{language} (select a span here)", language=i18n.NAMES["ko"]),
            _("{language} (then its counterpart)", language=i18n.NAMES["en"]),
        ],
        "types": [{**t, "color": colours[t["code"]]} for t in types],
        "last": last or "",
        "texts": {  # what the script itself may write, in the page's language
            "empty": _("(no text in this language)"),
            "across": _(
                "A span lies within one turn of one language: select the Korean words, then "
                "(separately) their English counterpart."
            ),
            "keys": _(
                "Keys: 1-9 type, Enter add, Esc cancel, click a span then Delete, Ctrl+Z undo"
            ),
            "panel": _("New span"),
            "pending": selected,
            "korean": _("Korean"),
            "english": _("English"),
            "selectKorean": _("(select the Korean words)"),
            "dragEnglish": _("(drag over its English counterpart in the same turn, or none)"),
            "noCounterpart": _("No English counterpart"),
            "add": _("Add (Enter)"),
            "cancel": _("Cancel (Esc)"),
            "remove": _("Remove (Delete)"),
            "examples": _("e.g."),
            "adding": _("Adding..."),
            "needEnglish": _(
                "Drag over its English counterpart in the same turn, or tick No English "
                "counterpart."
            ),
            "removing": _("Removing..."),
            "comment": _("Comment on this span"),
            "commentHint": _("A doubt, a reading, a question for the reviewer"),
            "saveComment": _("Save comment"),
            "savingComment": _("Saving the comment..."),
        },
        "turns": [
            {
                "position": position,
                "who": who,
                "ko": ko,
                "en": en,
                "suggested": suggested.get(position, ""),
                "marks": _marks(spans, pending, position, selected, colours, names),
            }
            for position, who, ko, en in rows
        ],
    }
    # Keyed, so a callback can read what the widget sent before the page's script runs
    # (``on_event``: the add is stored first, and the single run after draws it).
    callback = on_event or _ignore
    result = _SELECTOR(data=data, key=key, **{f"on_{event}_change": callback for event in EVENTS})
    events = {event: getattr(result, event, None) for event in EVENTS}
    return {event: value for event, value in events.items() if isinstance(value, dict)}
