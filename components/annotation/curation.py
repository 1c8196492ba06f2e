"""The curation view: a complete dialogue with every annotator's spans highlighted in its
text, one line per annotator under each turn where anyone marked something, a span every
annotator marked alike drawn as agreed; for the reviewer, the final answer's line too,
where one click on an annotator's span accepts it and one click on a final span takes it
out. As INCEpTION's curation does, but for a ko/en pair. Shown only once every annotator
has submitted (the callers check): blindness holds until then."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from components.annotation.span_form import type_name
from components.annotation.span_select import ROLES, colour_of
from components.shared.adaptation_gap import category_name
from koed_core import i18n
from koed_core.annotation.projects import Annotation
from koed_core.annotation.spans import Span
from koed_core.annotation.taxonomy import Taxonomy
from koed_core.dialogues.dialogue import Dialogue
from koed_core.i18n import _

HERE = Path(__file__).parent
CSS = """
.koed-curation { font-family: var(--st-font, sans-serif); font-size: 0.92rem; }
.koed-curation table { border-collapse: collapse; width: 100%; }
.koed-curation td { vertical-align: top; padding: 3px 8px; }
.koed-curation tr.last td, .koed-curation td.who { border-bottom: 1px solid #ddd; }
.koed-curation td.who { width: 5.5em; color: #555; font-size: 0.8rem; }
.koed-curation td.line { width: 10em; color: #374151; font-size: 0.78rem; }
.koed-curation th { text-align: left; font-size: 0.8rem; color: #555; padding: 4px 8px; }
.koed-curation .txt { white-space: pre-wrap; line-height: 1.6; }
.koed-curation mark { background: #ffe08a; border-radius: 3px; padding: 0 1px; }
.koed-curation mark[role=button] { cursor: pointer; }
.koed-curation mark.en { background: #cde8ff; }
.koed-curation mark mark { box-shadow: 0 0 0 1px #374151; margin: 0 1px; }
.koed-curation mark.outer { padding: 2px 3px; }
.koed-curation mark.agreed { box-shadow: inset 0 -3px 0 #111827; }
.koed-curation mark mark.agreed { box-shadow: inset 0 -3px 0 #111827, 0 0 0 1px #374151; }
.koed-curation mark.kept { outline: 2px solid #15803d; }
.koed-curation tr.final td { background: #f0fdf4; }
.koed-curation .legend { display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 0.78rem;
  color: #374151; margin: 0 0 6px 0; }
.koed-curation .legend .swatch { display: inline-block; width: 0.9em; height: 0.9em;
  border-radius: 2px; margin-right: 4px; vertical-align: -0.1em; }
.koed-curation .legend .agreed-key { box-shadow: inset 0 -3px 0 #111827; }
.koed-curation .legend .how { color: #6b7280; }
"""
_VIEW = st.components.v2.component(
    "koed_curation", html="", css=CSS, js=(HERE / "curation.js").read_text(encoding="utf-8")
)


def pool_key(span: Span) -> str:
    """A span's place and type, with its counterpart's place: the same words twice in a
    turn are two spans, and the same span with another counterpart is another span."""
    en = f"{span.en.position}:{span.en.start}-{span.en.end}" if span.en else "none"
    return f"{span.ko.position}:{span.ko.start}-{span.ko.end}:{span.type}:{en}"


def _marks(
    spans: Sequence[Span],
    position: int,
    extra: str,
    agreed: set[str],
    final: set[str],
    colours: dict[str, str],
    names: dict[str, str],
) -> dict[str, list[dict[str, Any]]]:
    marks: dict[str, list[dict[str, Any]]] = {"ko": [], "en": []}
    for span in spans:
        key = pool_key(span)
        cls = " ".join(
            [extra, *(["agreed"] if key in agreed else []), *(["kept"] if key in final else [])]
        )
        title = names.get(span.type, span.type) + (" · " + _("agreed") if key in agreed else "")
        if span.ko.position == position:
            marks["ko"].append(
                {
                    "start": span.ko.start,
                    "end": span.ko.end,
                    "cls": f"ko {cls}",
                    "color": colours.get(span.type),
                    "key": key,
                    "title": title,
                }
            )
        if span.en is not None and span.en.position == position:
            marks["en"].append(
                {
                    "start": span.en.start,
                    "end": span.en.end,
                    "cls": f"en {cls}",
                    "key": key,
                    "title": title,
                }
            )
    for lang in marks:
        marks[lang].sort(key=lambda m: (m["start"], -m["end"]))
    return marks


def curation_view(
    dialogue: Dialogue,
    answers: Sequence[tuple[str, Annotation]],
    taxonomy: Taxonomy,
    final: Sequence[str] | None = None,
    key: str = "curation",
) -> dict[str, Any] | None:
    """Draw the dialogue with each answer's spans (``answers``: label, annotation), and
    the final answer's line when ``final`` (pool keys) is given: then a click sends
    ``{"key", "final"}`` (``final``: the click was on the final answer's line), returned
    here (None when nothing was clicked). The caller checks the key against its pool."""
    codes = list(taxonomy.codes)
    colours = colour_of(codes)
    names = {kind.code: type_name(kind) for kind in taxonomy.types}
    keysets = [{pool_key(s) for s in a.spans} for _label, a in answers]
    agreed = set.intersection(*keysets) if len(keysets) > 1 else set()
    pool = {pool_key(s): s for _label, a in answers for s in a.spans}
    chosen = set(final or [])
    final_spans = [pool[k] for k in (final or []) if k in pool]
    roles = i18n.choices(ROLES)
    rows = [(0, _("situation"), dialogue.situation_ko, dialogue.situation_en)]
    rows += [(t.position, f"{t.position}. {roles[t.role]}", t.ko, t.en) for t in dialogue.turns]
    turns = []
    for position, who, ko, en in rows:
        touched = any(
            s.ko.position == position or (s.en is not None and s.en.position == position)
            for _label, a in answers
            for s in a.spans
        )
        lines = []
        if touched or position == 0:
            for label, answer in answers:
                lines.append(
                    {
                        "label": label
                        if position
                        else f"{label} · {category_name(answer.category)}",
                        "cls": "",
                        "marks": _marks(answer.spans, position, "", agreed, chosen, colours, names),
                    }
                )
            if final is not None:
                lines.append(
                    {
                        "label": _("final answer"),
                        "cls": "final",
                        "marks": _marks(
                            final_spans, position, "final", agreed, set(), colours, names
                        ),
                    }
                )
        turns.append({"position": position, "who": who, "ko": ko, "en": en, "lines": lines})
    data = {
        "instance": key,
        "clickable": final is not None,
        "headers": [_("Korean"), _("English")],
        "types": [
            {
                "code": kind.code,
                "label": type_name(kind),
                "short": kind.ko if i18n.language() == "ko" else kind.en,
                "color": colours[kind.code],
            }
            for kind in taxonomy.types
        ],
        "texts": {
            "agreed": _("underlined: every annotator marked it alike"),
            "how": _(
                "Click an annotator's span to put it in the final answer; click a span of "
                "the final answer to take it out."
            ),
        },
        "turns": turns,
    }
    # keyed: an unkeyed component's identity is its data, so a click drawn from one run
    # and read in a run whose data differs (a rerun in between) would be lost
    result = _VIEW(data=data, key=key, on_toggle_change=_ignore)
    clicked = getattr(result, "toggle", None)
    return clicked if isinstance(clicked, dict) else None


def _ignore() -> None:
    """A trigger needs a callback to rerun the script; the value is read from the result."""
