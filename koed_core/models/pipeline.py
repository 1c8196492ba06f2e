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
from typing import Literal

from koed_core.dialogues.labels import all_labels
from koed_core.errors import KoedError
from koed_core.run_steps import authors_steps, declared, earlier_steps, step_named, step_names

Postprocess = Literal["authors", "authors-repr", "none"]
Commas = Literal["raw", "decoded"]
EmotionReader = Literal["authors", "extended"]
Family = Literal["open", "claude"]
POSTPROCESS: tuple[str, ...] = step_named("postprocess").choices
COMMAS: tuple[str, ...] = step_named("commas").choices
EMOTION_READERS: tuple[str, ...] = step_named("emotion_reader").choices
FAMILIES: tuple[Family, ...] = ("open", "claude")
LISTENER = "Listener:"
BLANK_LINE = "\n\n"


class StepError(KoedError, ValueError):
    """A step set to a value it does not have; names the step and its values."""


class Steps:
    """How one run turns dataset text into a prompt and a raw reply into what is scored:
    one value per declared step (:data:`koed_core.run_steps.PIPELINE_STEPS`), read as an
    attribute (``steps.commas``), and the model's ``family``.

    A step not given takes the value runs had before it was a choice, so a run made then
    keeps its identity (see :class:`~koed_core.db.types.RunConfig`).
    """

    __slots__ = ("_values", "family")

    def __init__(self, family: str = "open", **chosen: str) -> None:
        unknown = set(chosen) - set(step_names())
        if unknown:
            raise StepError(
                f"no pipeline step {', '.join(sorted(unknown))}; steps: {', '.join(step_names())}"
            )
        values = {**earlier_steps(), **chosen}
        object.__setattr__(self, "_values", tuple(values.items()))
        object.__setattr__(self, "family", family)

    def __getattr__(self, name: str) -> str:
        for key, value in object.__getattribute__(self, "_values"):
            if key == name:
                return str(value)
        raise AttributeError(name)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Steps are fixed: use with_()")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Steps):
            return NotImplemented
        return (self.chosen(), self.family) == (other.chosen(), other.family)

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.chosen().items())), self.family))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.chosen().items())
        return f"Steps({shown}, family={self.family!r})"

    def with_(self, family: str | None = None, **chosen: str) -> Steps:
        """These steps with some changed (a step's name, or the model's family)."""
        return Steps(family or self.family, **{**self.chosen(), **chosen})

    def check(self) -> Steps:
        """The steps, or an error naming the one set to an unknown value.

        Raises:
            StepError: a value outside the step's choices.
        """
        allowed = {s.name: s.choices for s in declared()}
        for name, value in (*self.chosen().items(), ("family", self.family)):
            choices = allowed.get(name, FAMILIES)
            if value not in choices:
                raise StepError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
        return self

    def chosen(self) -> dict[str, str]:
        """The run's choices (every step but the model's family), by name."""
        return dict(object.__getattribute__(self, "_values"))


def earlier() -> Steps:
    """What runs did before the steps were choices (and what the native set still does)."""
    return Steps()


def authors() -> Steps:
    """The authors' pipeline, step for step (the family comes from the model)."""
    return Steps(**authors_steps())


EARLIER = earlier()
"""What runs did before the steps were choices, as the steps were when this was imported."""
AUTHORS = authors()
"""The authors' pipeline, as the steps were when this was imported."""


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
    base = authors() if prompt_set == "paper" else earlier()
    picked = base.with_(family=family)
    if prompt_set == "paper" and family == "open" and model in AUTHORS_OPEN_MODELS:
        picked = picked.with_(postprocess="authors-repr")  # their open models' path
    return picked.with_(**{k: v for k, v in chosen.items() if v is not None}).check()


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
