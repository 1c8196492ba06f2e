"""Read the predicted emotion labels and the reply out of a model's free text, and score them.

Models are asked for ``Emotion: ...`` then ``Response: ...``; they answer in English or
Korean, with label names or Korean glosses, in bold, with brackets. Only the emotion
line is read for labels: Korean one-syllable glosses (정, 한) occur everywhere in prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from koed_core.db.types import EmotionScore
from koed_core.dialogues.labels import all_labels, label_names
from koed_core.models.pipeline import EARLIER, Steps, postprocessed, read_emotions_authors
from koed_core.models.protocol import MAX_MULTI_LABELS, Protocol

EMOTION_LINE = re.compile(
    r"^\W*(?:emotions?|감정|정서)\W*\s*[:：]\s*(?P<labels>.+)$", re.IGNORECASE | re.MULTILINE
)
# The label only: "Response:", "**Response:**", "**Response**:", "- Reply:". Markdown
# markers after the colon are stripped only when they close the ones that opened the
# label; the reply itself ("Response: **Oh no**, ...") is never touched.
RESPONSE_LINE = re.compile(
    r"^[ \t#>\-]*(?P<open>[*_]{0,2})[ \t]*(?:response|reply|listener|응답|답변|청자)"
    r"[ \t]*(?P=open)?[ \t]*[:：](?:[ \t]*(?P=open)(?=\s))?[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
# Separators between labels; Korean 와/과 only as a particle ending a word ("슬픔과 외로움").
SPLIT = re.compile(
    r"\s*(?:[,/;、·|+&]|\band\b|\bor\b|그리고|및|(?<=\S)[와과](?=\s))\s*", re.IGNORECASE
)
STRIP = " \t*_`\"'“”‘’.()[]{}<>:-–—!?。"


@dataclass(frozen=True)
class ParsedReply:
    """What a model's answer says: its labels, the reply itself, and what was odd."""

    labels: tuple[str, ...]
    text: str
    unknown: tuple[str, ...] = ()
    """Emotion words that are not among the 34 labels (flagged, never scored as right)."""
    notes: tuple[str, ...] = field(default=())


@cache
def _english() -> dict[str, str]:
    return {name: name for name in label_names()}


def match_label(segment: str) -> str | None:
    """The KoED label a segment of the emotion line names, in English or Korean."""
    word = segment.strip(STRIP).lower()
    if not word:
        return None
    if word in _english():
        return word
    english = [n for n in label_names() if re.search(rf"\b{n}\b", word)]
    if len(english) == 1:
        return english[0]
    for label in all_labels():
        for alias in label.ko_aliases:
            short = len(alias) == 1
            if (short and word.split("(")[0] == alias) or (not short and alias in word):
                return label.name
    return None


def parse_reply(raw: str, protocol: Protocol, reader: str = "extended") -> ParsedReply:
    """Split a raw answer into labels and reply text.

    For ``direct`` the whole answer is the reply. For ``single`` the first recognised
    label counts; for ``multi`` up to four, in the order given. ``reader`` is the run's
    emotion reader: ``authors`` reads the ``Emotion:`` line as the authors' script reads
    an emotion answer (English names and 정/한, in list order), so a one-call run says
    the reader it really used; ``extended`` also takes Korean glosses.
    """
    text = raw.strip()
    if protocol == "direct":
        return ParsedReply((), _strip_response_prefix(text))
    notes: list[str] = []
    match = EMOTION_LINE.search(text)
    if match is None:
        return ParsedReply((), _strip_response_prefix(text), (), ("no 'Emotion:' line",))
    labels: list[str] = []
    unknown: list[str] = []
    reply = (text[: match.start()] + text[match.end() :]).strip()
    if reader == "authors":
        found = read_emotions_authors(match.group("labels"), single=protocol == "single")
        notes = [] if found else ["no label given"]
        return ParsedReply(found, _strip_response_prefix(reply), (), tuple(notes))
    for segment in SPLIT.split(match.group("labels")):
        label = match_label(segment)
        if label is not None and label not in labels:
            labels.append(label)
        elif label is None and segment.strip(STRIP):
            unknown.append(segment.strip(STRIP))
    limit = 1 if protocol == "single" else MAX_MULTI_LABELS
    if len(labels) > limit:
        notes.append(f"{len(labels)} labels given, kept the first {limit}")
        labels = labels[:limit]
    return ParsedReply(tuple(labels), _strip_response_prefix(reply), tuple(unknown), tuple(notes))


def extract_anywhere(text: str, protocol: Protocol) -> tuple[str, ...]:
    """The KoED authors' reading of an emotion answer: every label named anywhere in it,
    in the label list's order (the first one only, for ``single``).

    English names match as whole words, any case; Korean glosses as in our parser (a
    one-syllable gloss, 정 or 한, only as a word of its own). So "I'd say sad, not afraid"
    reads as afraid for ``single``: list order, not the order in the text, as the
    authors' post-processing does.
    """
    found = []
    for label in all_labels():
        english = re.search(rf"\b{re.escape(label.name)}\b", text, re.IGNORECASE)
        if english or any(_korean_in(alias, text) for alias in label.ko_aliases):
            found.append(label.name)
            if protocol == "single":
                break
    return tuple(found)


def _korean_in(alias: str, text: str) -> bool:
    if len(alias) == 1:
        return re.search(rf"(?<!\w){re.escape(alias)}(?!\w)", text) is not None
    return alias in text


def parse_two_calls(
    emotion_text: str, reply: str, protocol: Protocol, steps: Steps = EARLIER
) -> ParsedReply:
    """The paper set's two answers: labels read from the first with the run's emotion
    reader, and the second, post-processed as the run says, is the reply."""
    if steps.emotion_reader == "authors":
        labels = read_emotions_authors(emotion_text, single=protocol == "single")
    else:
        labels = extract_anywhere(emotion_text, protocol)
    notes = [] if labels else ["no label given"]
    text = postprocessed(reply, steps)
    if not text:
        notes.append("post-processing kept no text")
    elif text != reply.strip():
        notes.append(f"post-processed ({steps.postprocess}, {steps.family} rule)")
    return ParsedReply(labels, text, (), tuple(notes))


def _strip_response_prefix(text: str) -> str:
    found = RESPONSE_LINE.search(text)
    if found is not None:
        text = text[found.end() :]
    return text.strip()


def score_emotions(predicted: tuple[str, ...], gold: frozenset[str]) -> EmotionScore:
    """Score one prediction (either protocol) against the gold labels."""
    pred = set(predicted)
    both = len(pred & gold)
    precision = both / len(pred) if pred else 0.0
    recall = both / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    jaccard = both / len(pred | gold) if pred | gold else 0.0
    hit = bool(predicted) and predicted[0] in gold
    return EmotionScore(hit, precision, recall, f1, jaccard, given=bool(predicted))
