"""What the span widget sends, checked and applied: an add, a removal, an undo.

The widget runs in the annotator's browser, so every message is read as a forged one
would be: each side's language, turn and offsets inside that turn (the text taken from
the dialogue itself), a type the project's taxonomy knows, a removal naming a span the
annotator has. Anything else is one sentence on the page and changes nothing. Adds and
removals (from the widget or the form below it) go on a per-dialogue undo list in the
session, so Ctrl+Z takes back the last of them, one at a time.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.annotation.span_select import span_key
from components.shared import state
from components.shared.literal import md
from koed_core.annotation.projects import AnnotationStore
from koed_core.annotation.spans import Span, side_at, span_from_dict, span_to_dict
from koed_core.annotation.taxonomy import AnnotationError, Taxonomy
from koed_core.dialogues.dialogue import Dialogue
from koed_core.i18n import _

UNDO_DEPTH = 50


def undo_list(project_id: int, conv_id: str, who: str) -> list[dict[str, Any]]:
    """This dialogue's adds and removals, the last one last (session-only)."""
    found: list[dict[str, Any]] = st.session_state.setdefault(
        f"{state.ANN_UNDO}.{project_id}.{conv_id}.{who}", []
    )
    return found


def remember(project_id: int, conv_id: str, who: str, action: str, span: Span) -> None:
    """Put an add or a removal on the undo list."""
    done = undo_list(project_id, conv_id, who)
    done.append({"action": action, "span": span_to_dict(span)})
    del done[:-UNDO_DEPTH]


def save_spans(
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    answer: tuple[str | None, str, bool],
    spans: list[Span],
) -> bool:
    """Store the annotator's spans (``answer``: category, note, and whether it stays
    submitted); a refusal is one sentence on the page."""
    category, note, submit = answer
    try:
        annotations.save(project["id"], dialogue, who, category, note, spans, submit=submit)
    except AnnotationError as err:
        st.error(md(str(err)), icon=":material/error:")
        return False
    return True


def _side(dialogue: Dialogue, lang: str, raw: Any) -> Any:
    """A side of the message, checked against the dialogue (AnnotationError if not)."""
    if not isinstance(raw, dict) or raw.get("lang", lang) != lang:
        raise AnnotationError(_("The selection could not be read; select the text again."))
    fields = [raw.get(k) for k in ("position", "start", "end")]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in fields):
        raise AnnotationError(_("The selection could not be read; select the text again."))
    position, start, end = (int(str(v)) for v in fields)
    return side_at(dialogue, lang, position, start, end)  # type: ignore[arg-type]


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


def apply(
    events: dict[str, dict[str, Any]],
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    taxonomy: Taxonomy,
    answer: tuple[str | None, str, bool],
    spans: list[Span],
) -> str | None:
    """Apply what the widget sent and rerun; or return a notice (one sentence) when the
    message cannot be applied. Nothing is stored for a refused message."""
    project_id, conv_id = int(project["id"]), dialogue.conv_id
    if "add" in events:
        try:
            new = read_add(events["add"], dialogue, taxonomy)
        except AnnotationError as err:
            return str(err)[:200]
        st.session_state[state.ANN_LAST_TYPE] = new.type  # the panel keeps it
        if save_spans(annotations, project, dialogue, who, answer, [*spans, new]):
            remember(project_id, conv_id, who, "add", new)
            st.rerun()
        return None
    if "remove" in events:
        key = events["remove"].get("key")
        gone = [s for s in spans if span_key(s) == key]
        if not gone:
            return _("That span is no longer there; nothing was removed.")
        kept = [s for s in spans if span_key(s) != key]
        if save_spans(annotations, project, dialogue, who, answer, kept):
            remember(project_id, conv_id, who, "remove", gone[0])
            st.rerun()
        return None
    if "undo" in events:
        return _undo(annotations, project, dialogue, who, answer, spans)
    return None


def _undo(
    annotations: AnnotationStore,
    project: dict[str, Any],
    dialogue: Dialogue,
    who: str,
    answer: tuple[str | None, str, bool],
    spans: list[Span],
) -> str | None:
    done = undo_list(int(project["id"]), dialogue.conv_id, who)
    if not done:
        return _("Nothing to undo.")
    last = done[-1]
    span = span_from_dict(last["span"], "undo")
    if last["action"] == "add":
        after = [s for s in spans if s.key != span.key]
    else:
        after = [*spans, span] if all(s.key != span.key for s in spans) else spans
    if save_spans(annotations, project, dialogue, who, answer, after):
        done.pop()
        st.rerun()
    return None
