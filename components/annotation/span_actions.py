"""What the span widget sends, checked and applied: an add, a removal, an undo, a
comment, in the widget's callback, before the page's script runs (one run per action).

The widget runs in the annotator's browser, so every message is read as a forged one
would be: each side's language, turn and offsets inside that turn (the text taken from
the dialogue itself), a type the project's taxonomy knows, a removal or a comment naming
a span the annotator has (a comment is text of at most 2,000 characters). Anything else
is one sentence on the page and changes nothing. Adds and removals (from the widget or
the form below it) go on a per-dialogue undo list in the session, so Ctrl+Z takes back
the last of them, one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from components.annotation.span_select import span_key
from components.core import language, state
from components.core.literal import md, without_paths
from koed_core.annotation.projects import Annotation, AnnotationRules
from koed_core.annotation.spans import (
    MAX_COMMENT,
    Side,
    Span,
    side_at,
    span_from_dict,
    span_to_dict,
)
from koed_core.annotation.taxonomy import AnnotationError, Taxonomy
from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.i18n import _

UNDO_DEPTH = 50


@dataclass(frozen=True)
class Sheet:
    """One annotator's answer to one dialogue of a project, as read from the store: what
    every way of changing spans (the widget, the forms, undo) needs, passed as one thing.
    A change stores a new list of spans with the answer's category, note and submitted
    state unchanged."""

    annotations: AnnotationRules
    project: dict[str, Any]
    dialogue: Dialogue
    who: str
    taxonomy: Taxonomy
    answer: tuple[str | None, str, bool]  # category, note, whether it stays submitted
    spans: tuple[Span, ...]

    @classmethod
    def read(
        cls,
        annotations: AnnotationRules,
        project: dict[str, Any],
        dialogue: Dialogue,
        who: str,
        taxonomy: Taxonomy,
    ) -> Sheet:
        """The annotator's answer as stored now."""
        own = annotations.own(int(project["id"]), dialogue.conv_id, who)
        return cls.of(annotations, project, dialogue, who, taxonomy, own)

    @classmethod
    def of(
        cls,
        annotations: AnnotationRules,
        project: dict[str, Any],
        dialogue: Dialogue,
        who: str,
        taxonomy: Taxonomy,
        own: Annotation | None,
    ) -> Sheet:
        """The sheet of an answer the page has just read (none yet: no spans, a draft)."""
        answer = (own.category, own.note, own.submitted) if own else (None, "", False)
        spans = own.spans if own else ()
        return cls(annotations, project, dialogue, who, taxonomy, answer, spans)

    def undo_list(self) -> list[dict[str, Any]]:
        """This dialogue's adds and removals, the last one last (session-only)."""
        key = f"{state.ANN_UNDO}.{self.project['id']}.{self.dialogue.conv_id}.{self.who}"
        found: list[dict[str, Any]] = st.session_state.setdefault(key, [])
        return found

    def remember(self, action: str, span: Span) -> None:
        """Put an add or a removal on the undo list."""
        done = self.undo_list()
        done.append({"action": action, "span": span_to_dict(span)})
        del done[:-UNDO_DEPTH]

    def refusal(self, spans: list[Span]) -> str | None:
        """Store these spans; None, or the refusal in one sentence (for the page to show):
        a refusal, or a database busy past its wait."""
        category, note, submit = self.answer
        try:
            self.annotations.save(
                self.project["id"], self.dialogue, self.who, category, note, spans, submit=submit
            )
        except KoedError as err:
            return without_paths(err)[:300]
        return None

    def save(self, spans: list[Span]) -> bool:
        """Store these spans; a refusal is one sentence on the page."""
        refused = self.refusal(spans)
        if refused is not None:
            st.error(md(refused), icon=":material/error:")
        return refused is None


def on_widget(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    taxonomy: Taxonomy,
    key: str,
) -> None:
    """The widget's callback: Streamlit runs it before the page's script, so an add, a
    removal or an undo is stored first and the one run that follows draws everything
    (the picker's status, the spans, the table) from the store. The annotator's answer
    is read afresh here; a refusal waits in the session for the page to show (in the
    reader's language: a callback runs before the page has settled it)."""
    language.start()
    result = st.session_state.get(key)
    events = {e: _event(result, e) for e in ("selected", "add", "remove", "undo", "comment")}
    events = {e: v for e, v in events.items() if isinstance(v, dict)}
    if not events:
        return
    if "selected" in events:
        st.session_state[state.ANN_NOTICE] = str(events["selected"].get("error", ""))[:200]
        return
    try:
        notice = apply(events, Sheet.read(annotations, project, dialogue, who, taxonomy))
    except KoedError as err:
        notice = without_paths(err)[:300]
    if notice:
        st.session_state[state.ANN_NOTICE] = notice


def _event(result: Any, name: str) -> Any:
    """A trigger's value from the widget's state, whatever shape Streamlit keeps it in."""
    if result is None:
        return None
    if isinstance(result, dict):
        return result.get(name)
    return getattr(result, name, None)


def _side(dialogue: Dialogue, lang: str, raw: Any) -> Side:
    """A side of an ``add`` message, checked against the dialogue (AnnotationError if
    not): the same reading as a selection's (:func:`read_selection`)."""
    if not isinstance(raw, dict) or raw.get("lang", lang) != lang:
        raise AnnotationError(_("The selection could not be read; select the text again."))
    read_lang, side, notice = read_selection(dialogue, {**raw, "lang": lang})
    if notice or side is None or read_lang != lang:
        raise AnnotationError(
            notice or _("The selection could not be read; select the text again.")
        )
    return Side(side["position"], side["start"], side["end"], side["text"])


def read_selection(
    dialogue: Dialogue, chosen: dict[str, Any]
) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(lang, side, notice) from the span selector's message. The message comes from the
    browser, so it is read as a forged one would be: the language, a whole-number turn
    and offsets inside that turn's text, the text taken from the dialogue itself (never
    from the message). Anything else is a notice, one sentence, and no side."""
    if chosen.get("error"):
        return None, None, str(chosen["error"])[:200]
    lang, fields = chosen.get("lang"), [chosen.get(k) for k in ("position", "start", "end")]
    if lang not in ("ko", "en") or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in fields
    ):
        return None, None, _("The selection could not be read; select the text again.")
    position, start, end = (int(str(v)) for v in fields)
    try:
        side = side_at(dialogue, lang, position, start, end)
    except AnnotationError as err:
        return None, None, str(err)[:200]
    return str(lang), side.as_dict(), None


def read_add(message: dict[str, Any], dialogue: Dialogue, taxonomy: Taxonomy) -> Span:
    """The span an ``add`` message asks for, every part checked.

    Raises:
        AnnotationError: a side outside the dialogue's text, an unknown type.
    """
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in taxonomy.codes:
        raise AnnotationError(
            _("{type} is not a signal type of this project.", type=str(kind)[:40])
        )
    ko = _side(dialogue, "ko", message.get("ko"))
    none = message.get("none") is True
    en_raw = message.get("en")
    en = None if none or en_raw is None else _side(dialogue, "en", en_raw)
    return Span(ko=ko, type=kind, en=en, no_counterpart=none)


def apply(events: dict[str, dict[str, Any]], sheet: Sheet) -> str | None:
    """Apply what the widget sent; return a notice (one sentence) when the message cannot
    be applied or the store refuses it. Nothing is stored for a refused message."""
    spans = list(sheet.spans)
    if "add" in events:
        try:
            new = read_add(events["add"], sheet.dialogue, sheet.taxonomy)
        except AnnotationError as err:
            return str(err)[:200]
        st.session_state[state.ANN_LAST_TYPE] = new.type  # the panel keeps it
        refused = sheet.refusal([*spans, new])
        if refused is None:
            sheet.remember("add", new)
        return refused
    if "remove" in events:
        key = events["remove"].get("key")
        gone = [s for s in spans if span_key(s) == key]
        if not gone:
            return _("That span is no longer there; nothing was removed.")
        refused = sheet.refusal([s for s in spans if span_key(s) != key])
        if refused is None:
            sheet.remember("remove", gone[0])
        return refused
    if "undo" in events:
        return _undo(sheet)
    if "comment" in events:
        return _comment(events["comment"], sheet)
    return None


def _comment(message: dict[str, Any], sheet: Sheet) -> str | None:
    """A span's new comment (empty: none), stored in place; the span stays as it was."""
    key, text = message.get("key"), message.get("comment")
    if not isinstance(text, str) or len(text) > MAX_COMMENT:
        return _("The comment could not be read; write it again (at most 2,000 characters).")
    if not any(span_key(s) == key for s in sheet.spans):
        return _("That span is no longer there; the comment was not saved.")
    text = text.replace("\r\n", "\n").strip()
    edited = [replace(s, comment=text) if span_key(s) == key else s for s in sheet.spans]
    return sheet.refusal(edited)


def _undo(sheet: Sheet) -> str | None:
    """Take back the last add or removal on this dialogue's undo list."""
    done = sheet.undo_list()
    if not done:
        return _("Nothing to undo.")
    last = done[-1]
    span = span_from_dict(last["span"], "undo")
    spans = list(sheet.spans)
    if last["action"] == "add":
        after = [s for s in spans if s.key != span.key]
    else:
        after = [*spans, span] if all(s.key != span.key for s in spans) else spans
    refused = sheet.refusal(after)
    if refused is None:
        done.pop()
    return refused
