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

from collections.abc import Sequence
from typing import Any

import streamlit as st

from koed_core import i18n
from koed_core.annotation.spans import Span
from koed_core.dialogues.dialogue import Dialogue
from koed_core.i18n import N_, _

CSS = """
.koed-spans { font-family: var(--st-font, sans-serif); font-size: 0.95rem; }
.koed-spans table { border-collapse: collapse; width: 100%; }
.koed-spans td { vertical-align: top; padding: 6px 8px; border-bottom: 1px solid #ddd; }
.koed-spans td.who { width: 5.5em; color: #555; font-size: 0.8rem; }
.koed-spans th { text-align: left; font-size: 0.8rem; color: #555; padding: 4px 8px; }
.koed-spans .txt { white-space: pre-wrap; cursor: text; line-height: 1.6; }
.koed-spans .txt:empty::after { content: attr(data-empty); color: #999; }
.koed-spans mark { background: #ffe08a; border-radius: 3px; padding: 0 1px; }
.koed-spans mark.en { background: #cde8ff; }
.koed-spans mark.pending { background: #b8f0c0; outline: 1px solid #2a8a3a; }
.koed-spans tr.suggested td.ko { outline: 2px dashed #d9822b; outline-offset: -3px; }
.koed-spans .hint { display: block; font-size: 0.75rem; color: #a65a10; }
"""

JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = document.createElement("div");
  root.className = "koed-spans";
  // Keep the stylesheet Streamlit placed beside us; replace only our previous drawing.
  parentElement.querySelectorAll(".koed-spans").forEach((old) => old.remove());
  parentElement.appendChild(root);
  const segmenter = typeof Intl.Segmenter === "function"
    ? new Intl.Segmenter("ko", { granularity: "grapheme" }) : null;
  const cp = (text, units) => Array.from(text.slice(0, units)).length;
  // Snap a UTF-16 offset out to the nearest whole character (grapheme cluster).
  const snap = (text, units, forward) => {
    if (!segmenter) return units;
    let edge = 0;
    for (const part of segmenter.segment(text)) {
      const end = part.index + part.segment.length;
      if (units <= part.index) return part.index;
      if (units < end) return forward ? end : part.index;
      edge = end;
    }
    return edge;
  };
  const table = document.createElement("table");
  const head = document.createElement("tr");
  for (const label of ["", ...data.headers]) {
    const th = document.createElement("th");
    th.textContent = label;
    head.appendChild(th);
  }
  table.appendChild(head);
  const fill = (cell, text, marks) => {
    // marks: [{start, end, cls, title}] in code points, not overlapping, sorted
    const chars = Array.from(text);
    let at = 0;
    for (const m of marks) {
      if (m.start < at) continue;
      cell.appendChild(document.createTextNode(chars.slice(at, m.start).join("")));
      const mark = document.createElement("mark");
      mark.className = m.cls;
      mark.title = m.title;
      mark.textContent = chars.slice(m.start, m.end).join("");
      cell.appendChild(mark);
      at = m.end;
    }
    cell.appendChild(document.createTextNode(chars.slice(at).join("")));
  };
  for (const turn of data.turns) {
    const row = document.createElement("tr");
    if (turn.suggested) row.className = "suggested";
    const who = document.createElement("td");
    who.className = "who";
    who.textContent = turn.who;
    if (turn.suggested) {
      const hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = turn.suggested;
      who.appendChild(hint);
    }
    row.appendChild(who);
    for (const lang of ["ko", "en"]) {
      const td = document.createElement("td");
      td.className = lang;
      const txt = document.createElement("div");
      txt.className = "txt";
      txt.dataset.lang = lang;
      txt.dataset.position = String(turn.position);
      txt.dataset.text = turn[lang];
      txt.dataset.empty = data.texts.empty;
      fill(txt, turn[lang], turn.marks[lang]);
      td.appendChild(txt);
      row.appendChild(td);
    }
    table.appendChild(row);
  }
  root.appendChild(table);
  const offset = (el, node, off) => {
    const range = document.createRange();
    range.setStart(el, 0);
    range.setEnd(node, off);
    return range.toString().length;
  };
  root.addEventListener("mouseup", () => {
    const shadow = root.getRootNode();
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 && !selection.getComposedRanges) return;
    const ranges = selection.getComposedRanges
      ? selection.getComposedRanges({ shadowRoots: shadow instanceof ShadowRoot ? [shadow] : [] })
      : [selection.getRangeAt(0)];
    const range = ranges[0];
    if (!range || range.collapsed) return;
    const holder = (n) => (n.nodeType === 1 ? n : n.parentElement)?.closest?.(".txt");
    const el = holder(range.startContainer);
    if (!el) return;
    if (el !== holder(range.endContainer)) {
      setTriggerValue("selected", { error: data.texts.across });
      return;
    }
    const text = el.dataset.text;
    const s = snap(text, offset(el, range.startContainer, range.startOffset), false);
    const e = snap(text, offset(el, range.endContainer, range.endOffset), true);
    if (e <= s) return;
    setTriggerValue("selected", {
      lang: el.dataset.lang,
      position: Number(el.dataset.position),
      start: cp(text, s),
      end: cp(text, e),
      text: text.slice(s, e),
    });
  });
}
"""

ROLES = {"speaker": N_("speaker"), "listener": N_("listener")}
"""A turn's role as the first column says it."""
_SELECTOR = st.components.v2.component("koed_span_selector", html="", css=CSS, js=JS)


def _marks(
    spans: Sequence[Span], pending: dict[str, Any] | None, position: int, chosen: str
) -> dict[str, list[dict[str, Any]]]:
    """The marks on one turn; ``chosen`` is the tooltip of the pending selection."""
    marks: dict[str, list[dict[str, Any]]] = {"ko": [], "en": []}
    for span in spans:
        if span.ko.position == position:
            marks["ko"].append(
                {"start": span.ko.start, "end": span.ko.end, "cls": "ko", "title": span.type}
            )
        if span.en is not None and span.en.position == position:
            marks["en"].append(
                {"start": span.en.start, "end": span.en.end, "cls": "en", "title": span.type}
            )
    for lang in ("ko", "en"):  # the pending sides only: a notice waits beside them
        side = (pending or {}).get(lang)
        if isinstance(side, dict) and side.get("position") == position:
            marks[lang].append(
                {"start": side["start"], "end": side["end"], "cls": "pending", "title": chosen}
            )
    for lang in marks:  # sorted, overlaps dropped (the list below the table shows every span)
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
) -> dict[str, Any] | None:
    """Draw the dialogue and return what was just selected (lang, position, start, end,
    text, offsets in code points), or None. ``suggested``: position -> why it is
    suggested (shown dashed, never stored)."""
    rows = [(0, _("situation"), dialogue.situation_ko, dialogue.situation_en)]
    roles = i18n.choices(ROLES)
    rows += [(t.position, f"{t.position}. {roles[t.role]}", t.ko, t.en) for t in dialogue.turns]
    selected = _("selected")
    data = {
        "headers": [
            _("{language} (select a span here)", language=i18n.NAMES["ko"]),
            _("{language} (then its counterpart)", language=i18n.NAMES["en"]),
        ],
        "texts": {  # what the script itself may write, in the page's language
            "empty": _("(no text in this language)"),
            "across": _(
                "A span lies within one turn of one language: select the Korean words, then "
                "(separately) their English counterpart."
            ),
        },
        "turns": [
            {
                "position": position,
                "who": who,
                "ko": ko,
                "en": en,
                "suggested": suggested.get(position, ""),
                "marks": _marks(spans, pending, position, selected),
            }
            for position, who, ko, en in rows
        ],
    }
    # No widget key: a keyed v2 component keeps an unpicklable proxy in session state,
    # which this app's enforceSerializableSessionState refuses. ``key`` only tells
    # instances apart (it is part of the data, so of the element's identity).
    data["instance"] = key
    result = _SELECTOR(data=data, on_selected_change=_ignore)
    chosen = getattr(result, "selected", None)
    return chosen if isinstance(chosen, dict) else None
