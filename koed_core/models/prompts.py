"""Prompt sets, chosen per run and stored with it: wording as data, structure in code.

A prompt set is a TOML file (``data/prompts/paper.toml``, ``native.toml``, or a
researcher's own, e.g. the authors' wording pasted from their scripts): a system and a
user template per protocol, optionally per language, with placeholders, the label list's
format and glosses, and whether the set asks in two calls. Its version, stored with every
answer, is a hash of the file's content.

``paper`` follows the KoED authors' setup (their scripts, read and restated in our own
words): one English task definition for both languages (naming the dialogue's language),
English ``Speaker:``/``Listener:`` labels also for Korean turns, the 34 labels glossed
(their word list) with jeong and han defined, no length instruction, and two calls: first
the emotion (exactly one label for ``single``, every label that applies for ``multi``),
then the reply, given the emotion the model named. ``native`` is the one-call prompt in the
dialogue's own language, kept as a named variant: with it, instruction language is a
factor a researcher can study, never the paper's setup.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from koed_core.dialogues.labels import all_labels
from koed_core.errors import KoedError
from koed_core.models.protocol import ListenerTask, Message, Protocol
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import content_version, read_toml, shipped_or_path

PromptSetName = Literal["paper", "native", "paper-ko"]
PROMPT_SETS: tuple[PromptSetName, ...] = ("paper", "native", "paper-ko")
PROMPTS_DIR = DATA_DIR / "prompts"
LANGUAGE = {"ko": "Korean", "en": "English"}
PAPER_MAX_TOKENS = 256
PROTOCOL_NAMES = ("single", "multi", "direct")


class PromptSetError(KoedError, ValueError):
    """A prompt set that cannot be used; names the file and what is wrong."""


def _per_lang(value: Any, lang: str) -> Any:
    """A value given once for both languages, or as a table ``{en = ..., ko = ...}``."""
    if isinstance(value, Mapping) and set(value) <= {"en", "ko"} and value:
        return value.get(lang)
    return value


@dataclass(frozen=True)
class PromptSet:
    """One prompt set, loaded from its file."""

    name: str
    profile: str
    two_calls: bool
    raw: Mapping[str, Any]
    source: str

    @property
    def version(self) -> str:
        """A short hash of the set's content (``native`` hashes as release 0.1 did)."""
        if self.raw.get("version_scheme") == "0.1":
            return _version_0_1(self.raw)
        return content_version(self.raw)

    def roles(self, lang: str) -> tuple[str, str]:
        """The names the transcript gives the two parts."""
        found = _per_lang(self.raw.get("roles", ["Speaker", "Listener"]), lang)
        return (str(found[0]), str(found[1]))

    def labels(self, lang: str) -> str:
        """The 34 labels as the set lists them."""
        form = str(_per_lang(self.raw.get("label", "{name}"), lang))
        glosses = self.raw.get("glosses", {})
        exact = self.raw.get("label_text", {})
        parts = []
        for label in all_labels():
            if label.name in exact:
                parts.append(str(exact[label.name]))
                continue
            gloss = glosses.get(label.name, label.ko)
            parts.append(form.format(name=label.name, Name=label.name.capitalize(), gloss=gloss))
        return ", ".join(parts)

    def text(self, part: str, protocol: str, lang: str) -> str:
        """A template of the set: ``system`` or ``user`` for a protocol, in a language."""
        table = _per_lang(self.raw.get(part, {}), lang)
        found = _per_lang(table.get(protocol) if isinstance(table, Mapping) else table, lang)
        if not isinstance(found, str):
            raise PromptSetError(f"{self.source}: no {part} text for {protocol} ({lang})")
        return found


def _version_0_1(raw: Mapping[str, Any]) -> str:
    """How release 0.1 hashed its one prompt set: instructions per protocol/language, the
    role names, and the user message around the transcript."""
    users = {lang: str(raw["user"][lang]).split("{transcript}") for lang in ("en", "ko")}
    return content_version(
        {
            "instructions": {
                f"{p}/{lang}": raw["system"][lang][p]
                for p in PROTOCOL_NAMES
                for lang in ("en", "ko")
            },
            "roles": {lang: list(raw["roles"][lang]) for lang in ("en", "ko")},
            "header": {lang: users[lang][0].rstrip("\n") for lang in ("en", "ko")},
            "footer": {lang: users[lang][1].lstrip("\n") for lang in ("en", "ko")},
        }
    )


def load_prompt_set(source: str | Path) -> PromptSet:
    """A shipped set by name (``paper``, ``native``) or a TOML file by path.

    Raises:
        PromptSetError: no such set, not TOML, a key missing, a template that does not fill.
    """
    return shipped_or_path(source, PROMPTS_DIR, PROMPT_SETS, _read)


def _read(path: Path) -> PromptSet:
    raw = read_toml(path, "prompt set", PROMPT_SETS, PromptSetError)
    if "extends" in raw:
        parent = raw["extends"]
        if parent not in PROMPT_SETS or parent == raw.get("name"):
            raise PromptSetError(
                f"{path}: extends must name a shipped set ({', '.join(PROMPT_SETS)}), "
                f"not {parent!r}"
            )
        raw = _extend(load_prompt_set(str(parent)).raw, raw)
    if not isinstance(raw.get("name"), str) or not raw["name"]:
        raise PromptSetError(f"{path}: needs a name")
    found = PromptSet(
        name=raw["name"],
        profile=str(raw.get("profile", "custom")),
        two_calls=bool(raw.get("two_calls", False)),
        raw=raw,
        source=str(path),
    )
    _check(found)
    return found


def _extend(base: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """A set made from a shipped one: each key the child gives replaces the base's, and a
    child's ``{ko = ...}`` replaces the Korean side only (the English stays the base's)."""
    out = dict(base)
    for key, value in child.items():
        if key == "extends":
            continue
        if isinstance(value, Mapping) and value and set(value) <= {"en", "ko"} and key in base:
            out[key] = {
                "en": _per_lang(base[key], "en"),
                "ko": _per_lang(base[key], "ko"),
                **value,
            }
        else:
            out[key] = value
    return out


def _check(prompts: PromptSet) -> None:
    """Fill every template once with placeholder values: a typo, a placeholder in the
    wrong call or a transcript left out is found at load time, not after a run started.

    Raises:
        PromptSetError: naming the file, the template and what is wrong.
    """
    where = prompts.source
    for key in ("two_calls",):
        if key in prompts.raw and not isinstance(prompts.raw[key], bool):
            raise PromptSetError(f"{where}: {key} must be true or false, not {prompts.raw[key]!r}")
    first = {"task": "", "language": "", "labels": "", "transcript": ""}
    for lang in ("en", "ko"):
        roles = _per_lang(prompts.raw.get("roles", ["Speaker", "Listener"]), lang)
        if not (
            isinstance(roles, list)
            and len(roles) == 2
            and all(isinstance(r, str) and r.strip() for r in roles)
        ):
            raise PromptSetError(
                f"{where}: roles must be two names, the Speaker's and the Listener's "
                f'(roles = ["Speaker", "Listener"], or a table of them per language), not '
                f"{roles!r}"[:300]
            )
        try:
            prompts.labels(lang)
        except (KeyError, IndexError, ValueError) as err:
            raise PromptSetError(
                f"{where}: the label template has a placeholder we do not fill ({err}); "
                "use {name} {Name} {gloss}"
            ) from None
        label_form = str(_per_lang(prompts.raw.get("label", "{name}"), lang))
        _plain_fields(where, "label", label_form, ("name", "Name", "gloss"))
        checks = [(f"system.{p}", prompts.text("system", p, lang), first) for p in PROTOCOL_NAMES]
        checks += [(f"user.{p}", prompts.text("user", p, lang), first) for p in PROTOCOL_NAMES]
        if prompts.two_calls:
            reply = prompts.text("user", "reply", lang)
            checks.append(("user.reply", reply, {**first, "first": "", "emotion": ""}))
            if "{first}" not in reply or "{emotion}" not in reply:
                raise PromptSetError(
                    f"{where}: user.reply must hold {{first}} and {{emotion}} (the first "
                    "call's message and the emotion the model named)"
                )
        checks.append(("task", str(_per_lang(prompts.raw.get("task", ""), lang)), {"language": ""}))
        for name, text, values in checks:
            _plain_fields(where, name, text, tuple(values))
            try:
                text.format(**values)
            except (KeyError, IndexError, ValueError) as err:
                fills = ", ".join("{" + v + "}" for v in values)
                raise PromptSetError(
                    f"{where}: {name} has a placeholder we do not fill there ({err}); it may "
                    f"use {fills}; double any other brace"
                ) from None
        for protocol in PROTOCOL_NAMES:
            if "{transcript}" not in prompts.text("user", protocol, lang):
                raise PromptSetError(
                    f"{where}: user.{protocol} has no {{transcript}}: the model would never "
                    "see the dialogue"
                )


def _plain_fields(where: str, name: str, text: str, allowed: Sequence[str]) -> None:
    """Every placeholder of a template is a plain ``{field}`` it may use there: no width
    or format (``{language:>300000000}`` would send a 300-million-character prompt), no
    conversion, no attribute or index (``{language.__class__}``).

    Raises:
        PromptSetError: naming the file, the template and the placeholder.
    """
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise PromptSetError(
            f"{where}: {name} is not a template ({err}); double a lone brace"
        ) from None
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        shown = "{" + field + (f"!{conversion}" if conversion else "")
        shown += (f":{spec}" if spec else "") + "}"
        if spec or conversion:
            raise PromptSetError(
                f"{where}: {name} has {shown[:60]}: a placeholder takes no width, format or "
                f"conversion; write {{{field.split('.')[0].split('[')[0]}}}"
            )
        if field not in allowed:
            fills = ", ".join("{" + v + "}" for v in allowed)
            raise PromptSetError(
                f"{where}: {name} has a placeholder we do not fill there ({shown[:60]}); it "
                f"may use {fills}; double any other brace"
            )


def glossed_labels() -> str:
    """The 34 labels as the paper set lists them: name (Korean gloss), jeong and han defined."""
    return load_prompt_set("paper").labels("en")


def _transcript(task: ListenerTask, prompts: PromptSet) -> str:
    speaker, listener = prompts.roles(task.lang)
    return "\n".join(
        f"{speaker if t.role == 'speaker' else listener}: {t.text}" for t in task.transcript
    )


@dataclass(frozen=True)
class PromptPlan:
    """The first call's messages, and for two-call sets the builder of the second."""

    first: list[Message]
    two_calls: bool
    prompts: PromptSet | None = None

    def second(self, task: ListenerTask, emotion: str) -> list[Message]:
        """The reply call: the first call's request with the model's emotion added."""
        prompts = self.prompts or load_prompt_set("paper")
        user = prompts.text("user", "reply", task.lang).format(
            first=self.first[-1]["content"],
            emotion=emotion.strip(),
            language=LANGUAGE[task.lang],
        )
        return [self.first[0], {"role": "user", "content": user}]


def plan_messages(
    task: ListenerTask, protocol: Protocol, prompt_set: str | PromptSet
) -> PromptPlan:
    """What to send for one item under one prompt set (a name, a file, or a loaded set).

    Raises:
        PromptSetError: the set cannot be loaded or has no text for the protocol.
    """
    prompts = prompt_set if isinstance(prompt_set, PromptSet) else load_prompt_set(prompt_set)
    language = LANGUAGE[task.lang]
    values = {
        "language": language,
        "labels": prompts.labels(task.lang),
        "transcript": _transcript(task, prompts),
        "task": str(_per_lang(prompts.raw.get("task", ""), task.lang)).format(language=language),
    }
    system = prompts.text("system", protocol, task.lang).format(**values)
    user = prompts.text("user", protocol, task.lang).format(**values)
    first: list[Message] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    return PromptPlan(first, prompts.two_calls and protocol != "direct", prompts)


def same_exchange(
    task: ListenerTask, protocol: Protocol, sent: PromptPlan, prompts: str | PromptSet
) -> bool:
    """Whether ``prompts`` sends exactly ``sent``'s requests for this item: the first
    request and, for two-call sets, the reply call after any one emotion answer."""
    theirs = plan_messages(task, protocol, prompts)
    if theirs.first != sent.first or theirs.two_calls != sent.two_calls:
        return False
    probe = "\u241e"  # any text: both reply calls wrap the same emotion answer
    return not sent.two_calls or theirs.second(task, probe) == sent.second(task, probe)


def prompt_set_version(prompt_set: str | PromptSet) -> str:
    """A short hash of a set's templates (``native`` keeps its 0.1.0 version hash)."""
    prompts = prompt_set if isinstance(prompt_set, PromptSet) else load_prompt_set(prompt_set)
    return prompts.version


def default_prompt_set(protocol: Protocol) -> PromptSetName:
    """``paper`` for the paper's protocols (single, multi); ``native`` for direct."""
    return "paper" if protocol in ("single", "multi") else "native"


def build_messages(task: ListenerTask, protocol: Protocol) -> list[Message]:
    """The native set's one call: instructions in the dialogue's language, then the
    labelled transcript (what the Chat page sends)."""
    return plan_messages(task, protocol, "native").first


def prompt_version() -> str:
    """The native set's version (hashed as 0.1.0 hashed its only prompts)."""
    return prompt_set_version("native")
