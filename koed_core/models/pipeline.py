"""The steps between a dataset turn and a scored answer, each a named choice of the run.

The KoED authors' scripts (simuzin/KoED at 2273b3e) do more than prompt: they send the
English text with EmpatheticDialogues' ``_comma_`` left in, cut each reply before it is
judged, and read the predicted emotion with a rule of their own. Each of those moves the
published numbers, so each is a choice here, stored with the run and shown with its
numbers: ``authors`` reproduces their step, the other value is what KoED Studio did before
(and still does for the native prompt set and the Chat page).

- ``postprocess``: ``authors`` judges what their post-processing kept, which depends on the
  model family (``open``: from the reply's first ``Listener:`` to its first blank line;
  ``claude``: the whole reply, or what follows its last ``Listener:``); ``none`` judges the
  whole reply. The raw reply is stored either way.
  ``authors-repr`` takes their open models' path literally (for Claude it is ``authors``):
  the reply call is given the emotion answer as the Python repr of the message dict
  (``{'role': 'assistant', 'content': ...}``), and the judged text is cut from the repr
  of the stored message, as their ``process_file`` did: repr quotes and backslashes kept,
  a line break as a literal backslash-n, cut at the first literal blank line (so a reply
  opening with a blank line leaves a lone quote). The paper profile takes it for their
  four open models (``AUTHORS_OPEN_MODELS``).
- ``commas``: ``raw`` sends the English turns as the file has them; ``decoded`` turns
  ``_comma_`` back into commas. Korean text never holds the token.
- ``emotion_reader``: ``authors`` finds the English label names (and 정, 한) as whole words
  anywhere in the emotion answer, in the label list's order; ``extended`` also reads the
  Korean glosses and stems of every label, which only Korean answers use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from koed_core.dialogues.labels import all_labels
from koed_core.errors import KoedError
from koed_core.i18n import N_

Postprocess = Literal["authors", "authors-repr", "none"]
Commas = Literal["raw", "decoded"]
EmotionReader = Literal["authors", "extended"]
Family = Literal["open", "claude"]
POSTPROCESS: tuple[Postprocess, ...] = ("authors", "authors-repr", "none")
COMMAS: tuple[Commas, ...] = ("raw", "decoded")
EMOTION_READERS: tuple[EmotionReader, ...] = ("authors", "extended")
FAMILIES: tuple[Family, ...] = ("open", "claude")
LISTENER = "Listener:"
BLANK_LINE = "\n\n"


class StepError(KoedError, ValueError):
    """A step set to a value it does not have; names the step and its values."""


def step(
    default: str, choices: tuple[str, ...], label: str, words: Mapping[str, str], help: str
) -> Any:
    """A pipeline step's field: its value before it was a choice (the default), its
    values, and what a form or ``--help`` says of it (``label`` and ``words`` marked for
    translation, ``help`` in the command line's English). Declared here once: the run
    request, the command line, the Runs form and a plan's keys all read it."""
    return field(
        default=default,
        metadata={"choices": choices, "label": label, "words": dict(words), "help": help},
    )


@dataclass(frozen=True)
class Steps:
    """How one run turns dataset text into a prompt and a raw reply into what is scored.

    The defaults are what KoED Studio did before these were choices, so a run made then
    keeps its identity (see :class:`~koed_core.db.types.RunConfig`). A field made with
    :func:`step` is a choice of the run; ``family`` belongs to the model.
    """

    postprocess: str = step(
        "none",
        POSTPROCESS,
        N_("Post-processing"),
        {
            "authors": N_("the authors' way"),
            "authors-repr": N_("the authors' way, literally (their open models' repr)"),
            "none": N_("none"),
        },
        "authors: judge what their post-processing kept (per model family); none: all",
    )
    commas: str = step(
        "decoded",
        COMMAS,
        N_("Commas"),
        {"raw": N_("as in the file"), "decoded": N_("decoded")},
        "raw: English with _comma_ as the file has it",
    )
    emotion_reader: str = step(
        "extended",
        EMOTION_READERS,
        N_("Emotion reader"),
        {"authors": N_("the authors' way"), "extended": N_("extended")},
        "authors: English label names and 정/한 only; extended: Korean glosses too",
    )
    family: str = "open"
    """Which of the authors' post-processing rules applies (their open models', Claude's)."""

    def check(self) -> Steps:
        """The steps, or an error naming the one set to an unknown value.

        Raises:
            StepError: a value outside the step's choices.
        """
        for name, allowed in (
            *((f.name, f.metadata["choices"]) for f in STEP_FIELDS),
            (
                "family",
                FAMILIES,
            ),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise StepError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
        return self

    def chosen(self) -> dict[str, str]:
        """The run's choices (every step but the model's family), by name."""
        return {f.name: getattr(self, f.name) for f in STEP_FIELDS}


STEP_FIELDS = tuple(f for f in fields(Steps) if "choices" in f.metadata)
"""The choices a run makes, in the order forms and ``--help`` show them."""
STEP_NAMES = tuple(f.name for f in STEP_FIELDS)


EARLIER = Steps()
"""What runs did before the steps were choices (and what the native set still does)."""
AUTHORS = Steps(postprocess="authors", commas="raw", emotion_reader="authors")
"""The authors' pipeline, step for step (the family comes from the model)."""


AUTHORS_OPEN_MODELS = frozenset(
    {
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-8B-Instruct",
        "Qwen/Qwen2-7B-Instruct",
        "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct",
        "mistralai/Mistral-7B-Instruct-v0.3",
    }
)
"""The four open models of their open_source.py (Llama under both its names): the paper
profile takes their literal path (``authors-repr``) for these."""


def steps_for(
    prompt_set: str, family: str = "open", *, model: str = "", **chosen: str | None
) -> Steps:
    """The steps of a run: the profile of its prompt set (``paper``: the authors' at every
    step, ``authors-repr`` post-processing for their four open models by ``model`` id;
    any other set: as before), with each explicit choice (a step's name, None: the
    profile's) overriding it.

    Raises:
        StepError: an unknown step or value.
    """
    unknown = set(chosen) - set(STEP_NAMES)
    if unknown:
        raise StepError(
            f"no pipeline step {', '.join(sorted(unknown))}; steps: {', '.join(STEP_NAMES)}"
        )
    base = AUTHORS if prompt_set == "paper" else EARLIER
    picked = replace(base, family=family)
    if prompt_set == "paper" and family == "open" and model in AUTHORS_OPEN_MODELS:
        picked = replace(picked, postprocess="authors-repr")  # their open models' path
    return replace(picked, **{k: v for k, v in chosen.items() if v is not None}).check()


def postprocessed(reply: str, steps: Steps) -> str:
    """What is judged and rated of a raw reply under the run's post-processing.

    The authors stored each reply as ``"Listener: " + reply`` and then, for the open models,
    kept from the first ``Listener:`` *inside the reply* (case as written) to the first
    blank line; for Claude, when the reply names ``Listener:`` itself (any case), only what
    follows the last one. The ``Listener: `` prefix they judged is the judge template's to
    add, so it is not part of the text kept here.
    """
    if steps.postprocess == "authors-repr" and steps.family == "open":
        return repr_cut(reply)
    text = reply.strip()
    if steps.postprocess == "none":
        return text
    if steps.family == "claude":
        marks = list(re.finditer(re.escape(LISTENER), text, re.IGNORECASE))
        return text[marks[-1].end() :].strip() if marks else text
    at = text.find(LISTENER)
    if at >= 0:
        text = text[at + len(LISTENER) :]
    cut = text.find(BLANK_LINE)
    return (text[:cut] if cut >= 0 else text).strip()


def message_repr(content: str) -> str:
    """``str()`` of the message dict a transformers chat pipeline returns, as their open
    models' script stored it and put it in the reply call."""
    return str({"role": "assistant", "content": content})


def repr_cut(reply: str) -> str:
    """The judged text their open-model post-processing kept, without the leading
    ``Listener: `` the judge template adds.

    They stored ``"Listener: " + str(message)``. From that string they took what follows
    ``'content': `` up to the last ``}``: from the repr's opening quote when the content
    names ``Listener:`` (then from its first ``Listener:``), else prefixed ``Listener: ``;
    then up to the first literal backslash-n backslash-n (a blank line in the repr).
    """
    stored = "Listener: " + message_repr(reply)
    named = re.search(r"'content': (.*?Listener:\s*.*)}", stored)
    if named:
        kept = named.group(1).strip()
    else:
        bare = re.search(r"'content':\s*(.*)}", stored)
        kept = f"Listener: {bare.group(1).strip()}" if bare else stored.strip()
    cut = re.search(r"(Listener:.*?)(?:\\n\\n|$)", kept, re.DOTALL)
    text = (cut.group(1) if cut else kept).strip()
    return re.sub(r"^Listener:\s*", "", text)


def reply_emotion(emotion: str, steps: Steps) -> str:
    """The emotion answer as the reply call is given it: the text, or (``authors-repr``,
    open models) the repr of its message dict, as their script sent it."""
    if steps.postprocess == "authors-repr" and steps.family == "open":
        return message_repr(emotion)
    return emotion


def same_reply_call(a: Steps, b: Steps) -> bool:
    """Whether two runs' steps send the same reply call (a post-processing change is then
    a reading only: the raw answers can be read again)."""
    return reply_emotion("", a) == reply_emotion("", b)


AUTHORS_KOREAN_WORDS = {"jeong": "정", "han": "한"}
"""Their list names the two Korean labels by the Korean word alone."""


def read_emotions_authors(text: str, single: bool) -> tuple[str, ...]:
    """The authors' reading of an emotion answer: every label whose word (English name,
    or 정 / 한) occurs as a whole word anywhere, any case, in the label list's order; the
    first one only for ``single``. Korean glosses other than 정 and 한 are not read."""
    found: list[str] = []
    for label in all_labels():
        word = AUTHORS_KOREAN_WORDS.get(label.name, label.name)
        if re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE):
            found.append(label.name)
            if single:
                break
    return tuple(found)
