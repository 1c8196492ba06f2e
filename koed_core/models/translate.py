"""Machine translation of KoED dialogues into a variant (``koed translate run``).

Any configured backend translates: the situation, then each source turn in order, one call
per text. Asking text by text keeps the variant's speaker structure and turn count by
construction (a model asked for a whole dialogue at once can merge, drop or add turns);
the cost is more calls, which a batch of a hundred dialogues bears easily. The prompt is
data (``data/prompts/translate.toml``), versioned by a hash of its content and stored
with the version it made, as a run's prompts are. A pass keeps each dialogue as it comes
back (``koed_core.db.translation_drafts``) and makes its version at the end: killed
halfway, the same pass run again asks only for what it had not kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from koed_core.db import Store
from koed_core.db.translation_drafts import TranslationDrafts
from koed_core.db.variants import Variants, VariantVersion, VersionMeta
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import VARIANTS, Translation, source_hash, source_texts
from koed_core.errors import KoedError
from koed_core.models.client import ChatClient, GenerationSettings, ModelError, require_text
from koed_core.models.passes import NO_HOOKS, PassHooks, PassReport
from koed_core.models.prompt_file import PromptFile, check_template
from koed_core.models.prompts import LANGUAGE, PROMPTS_DIR
from koed_core.models.protocol import Message
from koed_core.models.registry import ModelSpec
from koed_core.tomlfile import read_toml, shipped_or_path

TRANSLATE_SETS = ("translate",)
KINDS = ("situation", "speaker", "listener")
MAX_TOKENS_CAP = 512


class TranslatePromptError(KoedError, ValueError):
    """A translation prompt file that cannot be used; names the file and what is wrong."""


@dataclass(frozen=True)
class TranslatePrompt(PromptFile):
    """The translator's instructions, loaded from a TOML file (its version is stored with
    every variant version it makes)."""

    @property
    def text(self) -> str:
        """The whole prompt as stored with a version (the templates, the kinds)."""
        return json.dumps(self.raw, ensure_ascii=False, sort_keys=True)

    def messages(self, variant: str, kind: str, text: str) -> list[Message]:
        """The request for one text of one dialogue (``kind``: situation, speaker or
        listener)."""
        spec = VARIANTS[variant]
        system = self.fill(
            "system",
            "text",
            source=LANGUAGE[spec.source],
            target=LANGUAGE[spec.target],
            kind=self.raw["kinds"][kind],
        )
        return self.ask(system, self.fill("user", "text", text=text))


def load_translate_prompt(source: str | Path = "translate") -> TranslatePrompt:
    """The shipped prompt by name, or a TOML file by path.

    Raises:
        TranslatePromptError: no such file, not TOML, a part missing, a template that
            does not fill.
    """
    return shipped_or_path(source, PROMPTS_DIR, TRANSLATE_SETS, _read)


def _read(path: Path) -> TranslatePrompt:
    raw = read_toml(path, "translation prompt", TRANSLATE_SETS, TranslatePromptError)
    kinds = raw.get("kinds")
    if not isinstance(kinds, Mapping) or any(not isinstance(kinds.get(k), str) for k in KINDS):
        raise TranslatePromptError(f"{path}: needs [kinds] with {', '.join(KINDS)}")
    for part, fills in (("system", ("source", "target", "kind")), ("user", ("text",))):
        table = raw.get(part)
        if not isinstance(table, Mapping) or not isinstance(table.get("text"), str):
            raise TranslatePromptError(f"{path}: needs [{part}] text = '''...'''")
        check_template(
            table["text"],
            f"{path}: [{part}]",
            fills,
            TranslatePromptError,
            trial={"source": "s", "target": "t", "kind": "k", "text": "x"},
        )
    return TranslatePrompt(raw, str(path))


def token_limit(text: str, ceiling: int | None = None) -> int:
    """Room for a translation of ``text``: about three tokens a character of the source
    (Hangul and Latin alike), never below 32, at most ``ceiling`` (default 512)."""
    return max(32, min(ceiling or MAX_TOKENS_CAP, 3 * len(text) + 16))


@dataclass(frozen=True)
class TranslateAsk:
    """What every call of a translation pass is asked with."""

    variant: str
    prompt: TranslatePrompt
    settings: GenerationSettings
    """Decoding; ``max_tokens`` caps each call's own limit (see :func:`token_limit`)."""


def translate_dialogue(
    client: ChatClient, dialogue: Dialogue, ask_with: TranslateAsk
) -> Translation:
    """One dialogue translated text by text.

    Raises:
        ModelError: a call failed for good, or the model answered nothing.
    """
    variant, prompt, settings = ask_with.variant, ask_with.prompt, ask_with.settings
    situation, turns = source_texts(dialogue, variant)

    def ask(kind: str, text: str) -> str:
        sized = GenerationSettings(
            temperature=settings.temperature,
            max_tokens=token_limit(text, settings.max_tokens),
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            stop=settings.stop,
        )
        done = client.complete(prompt.messages(variant, kind, text), sized, None)
        return require_text(done.text, client.name).strip()

    said = ask("situation", situation) if situation else ""
    kinds = ["speaker" if i % 2 == 0 else "listener" for i in range(len(turns))]
    return Translation(
        dialogue.conv_id,
        variant,
        said,
        tuple(ask(kind, text) for kind, text in zip(kinds, turns, strict=True)),
    )


@dataclass
class TranslateReport:
    """What a translation pass made: the version (None when nothing was translated, or
    the pass was stopped before its end), how many dialogues it holds (stopped: how many
    this pass translated and kept) and the dialogues that failed, each with its error;
    ``kept`` counts the dialogues an earlier, interrupted pass had translated (taken as
    they were, not asked again)."""

    version: VariantVersion | None
    translated: int
    failed: dict[str, str] = field(default_factory=dict)
    kept: int = 0
    stopped: bool = False


def pass_key(spec: ModelSpec, ask: TranslateAsk, dataset_sha256: str) -> str:
    """What a pass translates with, as a key: the same command or job started again
    after a kill finds what it had translated under it (``TranslationDrafts``)."""
    blob = json.dumps(
        [ask.variant, spec.name, spec.backend, spec.model, spec.base_url, ask.prompt.version]
        + [ask.settings.temperature, ask.settings.max_tokens, dataset_sha256],
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def translate_all(
    store: Store,
    client: ChatClient,
    spec: ModelSpec,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    ask: TranslateAsk,
    hooks: PassHooks = NO_HOOKS,
) -> TranslateReport:
    """Translate every dialogue and store the ones that came back whole as the variant's
    next version (a dialogue with a failed call is left out of it, and said).

    Each dialogue is kept as it comes back; the same pass run again after a kill takes
    the kept ones as they are and asks only for the rest. ``hooks.stop`` ends the pass
    before the next dialogue, with no version made (what is kept waits for the next
    run); ``hooks.progress`` and ``hooks.watch`` are told after every dialogue."""
    key = pass_key(spec, ask, dataset_sha256)
    drafts = TranslationDrafts(store)
    earlier = drafts.kept(key)
    done: dict[str, tuple[Translation, str]] = {}
    report = PassReport(planned=len(dialogues))
    failed: dict[str, str] = {}
    tell = _teller(hooks, report)
    tell()
    for dialogue in dialogues:
        hashed = source_hash(dialogue, ask.variant)
        found = earlier.get(dialogue.conv_id)
        if found is not None and found[1] == hashed:
            done[dialogue.conv_id] = found
            report.skipped += 1
            tell()
            continue
        if hooks.stop is not None and hooks.stop():
            report.stopped = True
            report.cancelled = len(dialogues) - report.finished
            break
        try:
            translation = translate_dialogue(client, dialogue, ask)
        except ModelError as err:
            failed[dialogue.conv_id] = str(err)
            report.failed += 1
            report.errors[str(err)] += 1
        else:
            drafts.keep(key, translation, hashed)
            done[dialogue.conv_id] = (translation, hashed)
            report.succeeded += 1
        tell()
    if report.stopped:  # what came back is kept for the next run; no version yet
        return TranslateReport(None, report.succeeded, failed, report.skipped, stopped=True)
    if not done:
        return TranslateReport(None, 0, failed)
    meta = VersionMeta(
        variant=ask.variant,
        made_by="model",
        source_sha256=dataset_sha256,
        model=f"{spec.name} ({spec.model})" if spec.model else spec.name,
        prompt_version=ask.prompt.version,
        prompt=ask.prompt.text,
        note=f"temperature {ask.settings.temperature}",
    )
    version = Variants(store).add_version(meta, list(done.values()))
    drafts.drop(key, done)
    return TranslateReport(version, len(done), failed, report.skipped)


def _teller(hooks: PassHooks, report: PassReport) -> Callable[[], None]:
    """Tell the hooks how far the pass is (a terminal's bar, a job's row)."""

    def tell() -> None:
        if hooks.progress is not None:
            hooks.progress(report.finished, report.planned)
        if hooks.watch is not None:
            hooks.watch(report)

    return tell
