"""The simulated Speaker of an episode: its prompt (data, versioned) and the checks on what
it says.

An episode carries a KoED situation on after the dataset's own turns: a model plays the
Speaker, told the situation and the emotion it felt (the Listener is told neither), in the
dialogue's language. A Speaker turn can break character: name the hidden emotion, answer
in the other language, or write the Listener's part. Such a turn is never silently kept:
:func:`check_turn` names each break, and the episode runner records the turn flagged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.labels import by_name
from koed_core.errors import KoedError
from koed_core.models.prompt_file import PromptFile, check_template
from koed_core.models.protocol import ContextTurn, Message
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import read_toml, shipped_or_path

SPEAKER_SETS = ("speaker",)
SPEAKER_FILE = DATA_DIR / "prompts" / "speaker.toml"
BREAKS = ("empty", "named the emotion", "switched language", "spoke as the Listener")
"""Every way a Speaker turn can break character, as recorded with it."""
HANGUL = re.compile(r"[\uac00-\ud7a3\u3131-\u318e]")
LATIN = re.compile(r"[A-Za-z]")


class SpeakerPromptError(KoedError, ValueError):
    """A speaker prompt file that cannot be used; names the file and what is wrong."""


@dataclass(frozen=True)
class SpeakerPrompt(PromptFile):
    """The Speaker's instructions, per language, loaded from a TOML file (its version is
    stored with every episode run)."""

    name: str

    @property
    def end(self) -> str:
        """What the Speaker writes to end the conversation."""
        return str(self.raw.get("end", "[END]"))

    def roles(self, lang: str) -> tuple[str, str]:
        """How the transcript names the two parts in ``lang``."""
        found = self.raw.get("roles", {}).get(lang, ["Speaker", "Listener"])
        return (str(found[0]), str(found[1]))

    def messages(
        self, dialogue: Dialogue, lang: str, transcript: Sequence[ContextTurn]
    ) -> list[Message]:
        """The Speaker's request: who it is and what it felt (system), the conversation so
        far (user)."""
        speaker, listener = self.roles(lang)
        lines = "\n".join(
            f"{speaker if turn.role == 'speaker' else listener}: {turn.text}" for turn in transcript
        )
        system = self.fill(
            "system",
            lang,
            situation=dialogue.situation(lang),  # type: ignore[arg-type]
            emotions=emotion_words(dialogue.labels, lang),
            end=self.end,
        )
        return self.ask(system, self.fill("user", lang, transcript=lines, end=self.end))


def emotion_words(labels: Sequence[str], lang: str) -> str:
    """The gold labels as the Speaker is told them: English names, or Korean glosses."""
    known = by_name()
    words = [
        (known[name].ko if lang == "ko" else name) if name in known else name for name in labels
    ]
    return ", ".join(words)


def load_speaker_prompt(source: str | Path = "speaker") -> SpeakerPrompt:
    """The shipped speaker prompt by name, or a TOML file by path.

    Raises:
        SpeakerPromptError: no such file, not TOML, a language missing, a template that
            does not fill.
    """
    return shipped_or_path(source, SPEAKER_FILE.parent, SPEAKER_SETS, _read)


def _read(path: Path) -> SpeakerPrompt:
    raw = read_toml(path, "speaker prompt", SPEAKER_SETS, SpeakerPromptError)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpeakerPromptError(f"{path}: needs a name")
    if not isinstance(raw.get("end", "[END]"), str) or not str(raw.get("end", "[END]")).strip():
        raise SpeakerPromptError(f"{path}: end must be a non-empty text")
    for part, fields in (("system", ("situation", "emotions", "end")), ("user", ("transcript",))):
        table = raw.get(part)
        for lang in ("ko", "en"):
            if not isinstance(table, Mapping) or not isinstance(table.get(lang), str):
                raise SpeakerPromptError(f"{path}: needs [{part}] {lang} = '''...'''")
            check_template(
                table[lang],
                f"{path}: [{part}] {lang}",
                fields,
                SpeakerPromptError,
                trial={"situation": "s", "emotions": "e", "end": "[END]", "transcript": "t"},
                hint="; placeholders: {situation} {emotions} {end} in system, {transcript} {end} "
                "in user",
            )
    return SpeakerPrompt(raw, str(path), name)


@dataclass(frozen=True)
class SpeakerTurn:
    """What the Speaker said, read: the words kept, whether it ended the conversation,
    and every way it broke character (empty when it did not)."""

    text: str
    ends: bool
    breaks: tuple[str, ...]


def check_turn(
    raw: str, lang: str, gold: Sequence[str], prompt: SpeakerPrompt | None = None
) -> SpeakerTurn:
    """Read one Speaker reply: strip its own role label and the end marker, and name each
    break of character.

    - *named the emotion*: a gold label's English name as a word, or (Korean) its gloss
      or one of the stems the emotion reader knows; jeong and han as 정(情) and 한(恨)
      (alone, 정 and 한 are everyday words: "한 번", "정말");
    - *switched language*: a Korean turn with more Latin letters than Hangul, an English
      turn with any Hangul word;
    - *spoke as the Listener*: a line that starts with the Listener's name, in either
      language;
    - *empty*: nothing said and the conversation not ended.
    """
    prompt = prompt or load_speaker_prompt()
    text = raw.strip()
    ends = prompt.end in text
    text = text.replace(prompt.end, " ").strip()
    for name in {prompt.roles(lang)[0], "Speaker", "화자"}:
        if text.lower().startswith(name.lower() + ":"):
            text = text[len(name) + 1 :].strip()
    text = re.sub(r"[ \t]+\n", "\n", text).strip()
    breaks: list[str] = []
    if not text and not ends:
        breaks.append("empty")
    if text and _names_emotion(text, gold):
        breaks.append("named the emotion")
    if text and other_language(text, lang):
        breaks.append("switched language")
    listeners = {prompt.roles(lang)[1], "Listener", "청자"}
    if any(
        line.strip().lower().startswith(name.lower() + ":")
        for line in text.splitlines()
        for name in listeners
    ):
        breaks.append("spoke as the Listener")
    return SpeakerTurn(text, ends, tuple(breaks))


def _names_emotion(text: str, gold: Sequence[str]) -> bool:
    known = by_name()
    for name in gold:
        if re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE):
            return True
        label = known.get(name)
        if label is None:
            continue
        # 정 and 한 alone are everyday words ("한 번", "정말"): only 정(情) and 한(恨) count
        if any(len(alias) > 1 and alias in text for alias in {label.ko, *label.ko_aliases}):
            return True
    return False


def other_language(text: str, lang: str) -> bool:
    """Whether a reply meant to be in ``lang`` is written in the other language: a Korean
    one with more Latin letters than Hangul, an English one with any Hangul (the reply
    reader of the perception split uses it too)."""
    hangul = len(HANGUL.findall(text))
    latin = len(LATIN.findall(text))
    if lang == "ko":
        return latin > hangul
    return hangul > 0
