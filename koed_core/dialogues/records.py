"""Turn one raw JSON record of the official format into a :class:`Dialogue`.

Kept apart from file handling so that each rule (what is an error, what is only a
warning) reads in one place and is tested record by record.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from koed_core.dialogues.dialogue import Dialogue, LoadWarning, Turn
from koed_core.dialogues.labels import label_names
from koed_core.errors import Problem
from koed_core.i18n import N_

REQUIRED_FIELDS = ("conv_id", "ko_situation", "situation", "emotion", "dialogue")
COMMA_TOKEN = "_comma_"
WARNING_KINDS = {
    "repeated_label": N_("a label listed twice"),
    "ko_missing": N_("a turn with no Korean"),
    "user_id_missing": N_("turns with no user_id"),
    "single_turn": N_("a single turn"),
    "utter_idx_order": N_("utter_idx out of order"),
}
"""Each kind of load warning in words (the kinds themselves are codes the CLI prints)."""


@dataclass
class ParsedRecord:
    """What one record gave: a dialogue (None when it has problems) and what was odd."""

    dialogue: Dialogue | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[LoadWarning] = field(default_factory=list)


def decode_ed_text(text: str) -> str:
    """Undo EmpatheticDialogues' encoding of commas as ``_comma_``."""
    return text.replace(COMMA_TOKEN, ",")


def parse_record(index: int, record: Any) -> ParsedRecord:
    """Validate one record; problems make it unusable, warnings do not."""
    if not isinstance(record, dict):
        kind = type(record).__name__
        message = N_("expected an object, found {found}")
        return ParsedRecord(None, [Problem("(record)", message, index, values=(("found", kind),))])
    conv_id = record.get("conv_id")
    conv = str(conv_id) if isinstance(conv_id, str | int) and str(conv_id) else None
    out = ParsedRecord(None)

    def problem(field_name: str, message: str, **values: object) -> None:
        out.problems.append(Problem(field_name, message, index, conv, tuple(values.items())))

    def warn(kind: str, message: str, **values: object) -> None:
        out.warnings.append(LoadWarning(kind, message, index, conv or "", tuple(values.items())))

    for name in REQUIRED_FIELDS:
        if name not in record:
            problem(
                name, N_("missing (a record needs {fields})"), fields=", ".join(REQUIRED_FIELDS)
            )
    if out.problems:
        return out
    if conv is None:
        problem("conv_id", N_("must be a non-empty string"))
    situations = {}
    for name in ("ko_situation", "situation"):
        value = record[name]
        if not isinstance(value, str):
            problem(name, N_("must be a string, found {found}"), found=type(value).__name__)
        situations[name] = value if isinstance(value, str) else ""
    labels = _parse_labels(record["emotion"], problem, warn)
    turns = _parse_turns(record["dialogue"], problem, warn)
    if out.problems or conv is None:
        return out
    out.dialogue = Dialogue(
        index=index,
        conv_id=conv,
        situation_ko=situations["ko_situation"].strip(),
        situation_en=decode_ed_text(situations["situation"]).strip(),
        labels=labels,
        turns=turns,
    )
    return out


def _parse_labels(value: Any, problem: Any, warn: Any) -> tuple[str, ...]:
    raw = [value] if isinstance(value, str) else value
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        problem("emotion", N_("must be a label or a list of labels (strings)"))
        return ()
    if not raw:
        problem("emotion", N_("the list of labels is empty"))
        return ()
    known = label_names()
    distinct: list[str] = []
    for label in raw:
        if label not in known:
            close = difflib.get_close_matches(label, known, n=1)
            if close:
                message = N_(
                    "unknown label {label}, not one of the 34 KoED labels; did you mean {close}?"
                )
                problem("emotion", message, label=repr(label), close=repr(close[0]))
            else:
                message = N_("unknown label {label}, not one of the 34 KoED labels")
                problem("emotion", message, label=repr(label))
        elif label in distinct:
            warn(
                "repeated_label", N_("label {label} is listed twice; kept once"), label=repr(label)
            )
        else:
            distinct.append(label)
    return tuple(distinct)


def _parse_turns(value: Any, problem: Any, warn: Any) -> tuple[Turn, ...]:
    if not isinstance(value, list):
        problem(
            "dialogue", N_("must be a list of turns, found {found}"), found=type(value).__name__
        )
        return ()
    if not value:
        problem("dialogue", N_("has no turns"))
        return ()
    turns: list[Turn] = []
    for position, raw in enumerate(value, start=1):
        where = f"dialogue[{position - 1}]"
        if not isinstance(raw, dict):
            problem(where, N_("a turn must be an object, found {found}"), found=type(raw).__name__)
            continue
        texts = {}
        for key in ("ko_utter", "utter"):
            text = raw.get(key)
            if text is not None and not isinstance(text, str):
                found = type(text).__name__
                problem(f"{where}.{key}", N_("must be a string, found {found}"), found=found)
                text = None
            texts[key] = (text or "").strip()
        if not texts["ko_utter"] and not texts["utter"]:
            problem(where, N_("the turn has no text in either language (ko_utter and utter empty)"))
            continue
        if not texts["ko_utter"]:
            warn("ko_missing", N_("turn {turn} has English text but no Korean"), turn=position)
        source_idx = raw.get("utter_idx")
        turns.append(
            Turn(
                position=position,
                ko=texts["ko_utter"],
                en=decode_ed_text(texts["utter"]),
                en_file=texts["utter"] if COMMA_TOKEN in texts["utter"] else "",
                source_idx=source_idx if isinstance(source_idx, int) else None,
                user_id=_normalise_user_id(raw.get("user_id")),
            )
        )
    _check_order(value, warn)
    missing_ids = sum(t.user_id is None for t in turns)
    if missing_ids:
        message = N_("{n} turn(s) have no user_id (null, empty or absent)")
        warn("user_id_missing", message, n=missing_ids)
    if len(value) == 1:
        warn("single_turn", N_("the dialogue has a single turn, so no Listener turn"))
    return tuple(turns)


def _normalise_user_id(value: Any) -> str | None:
    """The file mixes 15, 15.0, null and ""; all become "15" or None."""
    if isinstance(value, bool) or value is None or value == "":
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _check_order(turns: list[Any], warn: Any) -> None:
    indices = [t.get("utter_idx") if isinstance(t, dict) else None for t in turns]
    if indices != list(range(1, len(turns) + 1)):
        shown = ", ".join(str(i) for i in indices)
        warn("utter_idx_order", N_("utter_idx runs {shown}; turns kept in file order"), shown=shown)
