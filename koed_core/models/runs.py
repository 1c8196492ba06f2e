"""Run a model over KoED in both languages: concurrent, resumable, every answer stored.

Requests run in a thread pool; the calling thread alone writes to SQLite, one response
per transaction as it arrives. A run killed mid-way therefore loses only the requests in
flight, and running it again skips every response already stored without error.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any

from koed_core.db import ResponseRecord, RunConfig, Runs, Store, short_hash
from koed_core.db.item_locks import ItemLocks
from koed_core.db.owners import this_process
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import VARIANTS, text_lang
from koed_core.errors import KoedError
from koed_core.models.client import (
    MAX_REPLY_CHARS,
    ChatClient,
    Completion,
    GenerationSettings,
    ModelError,
    capped,
)
from koed_core.models.emotions import ParsedReply, parse_reply, parse_two_calls, score_emotions
from koed_core.models.passes import (
    NO_HOOKS,
    Outcome,
    PassHooks,
    PassReport,
    patiently,
    run_pass,
    workers_for,
)
from koed_core.models.pipeline import EARLIER, Steps, postprocessed, reply_emotion
from koed_core.models.prompts import (
    PROMPT_SETS,
    PromptPlan,
    PromptSet,
    load_prompt_set,
    plan_messages,
    same_exchange,
)
from koed_core.models.protocol import (
    ListenerTask,
    Message,
    Protocol,
    build_task,
)
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.variant_texts import RunVariants, cells_asked, variants_for
from koed_core.run_steps import declared
from koed_core.text.redact import redact_url

Answer = tuple[Completion | ModelError, ParsedReply | None, str | None]
"""The outcome, the parsed reply, and the paper set's emotion answer (else None)."""


@dataclass(frozen=True)
class Item:
    """One request of a run: a dialogue in one language, under one prompt set."""

    dialogue: Dialogue
    task: ListenerTask
    protocol: Protocol
    prompt_set: str | PromptSet = "native"
    steps: Steps = EARLIER

    @cached_property
    def plan(self) -> PromptPlan:
        """What is sent: one call, or the paper set's emotion call then reply call."""
        return plan_messages(self.task, self.protocol, self.prompt_set)

    @cached_property
    def messages(self) -> list[Message]:
        """The first request, built once (it is sent, hashed and stored)."""
        return self.plan.first

    @cached_property
    def context_hash(self) -> str:
        """Identifies the context, so a rerun recognises a stored answer."""
        return short_hash(self.messages)


def run_config(
    spec: ModelSpec,
    protocol: Protocol,
    settings: GenerationSettings,
    dataset_sha256: str,
    kind: str = "batch",
    prompt_set: str | PromptSet = "native",
    steps: Steps = EARLIER,
    replicate: int = 0,
) -> RunConfig:
    """The configuration that identifies a run (and so what a rerun resumes)."""
    prompts = prompt_set if isinstance(prompt_set, PromptSet) else load_prompt_set(prompt_set)
    return RunConfig(
        model_name=spec.name,
        backend=spec.backend,
        model_id=spec.model,
        base_url=redact_url(spec.base_url),
        provenance=spec.provenance,
        protocol=protocol,
        prompt_version=prompts.version,
        decoding=settings.decoding,
        dataset_sha256=dataset_sha256,
        kind=kind,
        prompt_set=prompts.name,
        steps=tuple(steps.chosen().items()),  # every step is part of a run's identity
        family=steps.family,
        replicate=replicate,
    )


def request_config(
    request: RunRequest, spec: ModelSpec, dataset_sha256: str, kind: str = "batch"
) -> RunConfig:
    """The configuration of ``request``'s run of ``spec``: its prompt set, steps and
    decoding as the request resolves them, and nowhere else (``koed run``, a plan's run,
    an episode run and the chat's saved answers all go through here). ``kind``: batch, or
    live for answers saved from the chat page."""
    return run_config(
        spec,
        request.protocol,  # type: ignore[arg-type]
        request.settings(spec),
        dataset_sha256,
        kind,
        prompt_set=request.prompt_set(),
        steps=request.steps(spec),
        replicate=request.replicate,
    )


def public_spec(spec: ModelSpec) -> dict[str, Any]:
    """The model spec as stored with a run: everything but the notes. The key's *name*
    (``api_key_env``) is kept so a replayed model asks the right provider; the key never."""
    data = asdict(spec)
    data.pop("notes", None)
    data["base_url"] = redact_url(spec.base_url)
    return data


def open_run(
    store: Store,
    config: RunConfig,
    spec: ModelSpec,
    dialogues: Sequence[Dialogue],
    langs: Sequence[str],
) -> tuple[str, RunVariants]:
    """The run ``config`` names, made or found again, with the versions of the variants in
    ``langs`` it reads recorded in its identity; and those variants' dialogues. A run and
    an episode run start the same way.

    Raises:
        VariantError: a variant in ``langs`` that cannot be read (nothing is stored).
    """
    translated = variants_for(store, dialogues, langs)
    recorded = replace(config, variants=translated.recorded)
    return Runs(store).ensure_run(recorded, spec.name, list(langs), public_spec(spec)), translated


def plan(
    dialogues: Sequence[Dialogue],
    langs: Iterable[str],
    protocol: Protocol,
    limit: int | None = None,
    needs_reference: bool = False,
    prompt_set: str | PromptSet = "native",
    steps: Steps = EARLIER,
    variants: Mapping[str, Mapping[str, Dialogue]] | None = None,
) -> list[Item]:
    """Items in dataset order, each language; dialogues with no text in a language skip it.

    ``needs_reference`` (the human reference) also skips contexts with no Listener turn
    after them: there is nothing to replay, which is not a failure. A translated variant
    in ``langs`` reads each dialogue's translation from ``variants`` (variant -> conv_id
    -> the variant dialogue); a dialogue not translated skips it.
    """
    items = []
    for lang, source in cells_asked(dialogues, langs, limit, variants):
        task = build_task(source, text_lang(lang), steps.commas)
        if lang in VARIANTS:
            task = replace(task, variant=lang)
        if task.turns and (task.reference or not needs_reference):
            items.append(Item(source, task, protocol, prompt_set, steps))
    return items


def to_record(
    run_id: str,
    item: Item,
    outcome: Completion | ModelError,
    parsed: ParsedReply | None,
    emotion_raw: str | None = None,
    turn: int | None = None,
    sent: Sequence[Message] | None = None,
) -> ResponseRecord:
    """A response row from an answer or a failure (``turn``: an episode's Listener turn;
    ``sent``: the first request as the client sent it, when a wrapper added to the item's
    messages, such as the oracle's note: what is stored is what was sent)."""
    base: dict[str, Any] = {
        "turn": turn,
        "run_id": run_id,
        "conv_id": item.dialogue.conv_id,
        "lang": item.task.cell,
        "context_hash": item.context_hash,
        "prompt": [dict(m) for m in (item.messages if sent is None else sent)],
        "emotion_raw": emotion_raw,
        "context": [[turn.role, turn.text] for turn in item.task.transcript],
    }
    if isinstance(outcome, ModelError):
        return ResponseRecord(
            **base, raw=None, text=None, error=str(outcome), error_kind=outcome.kind
        )
    assert parsed is not None
    return ResponseRecord(
        **base,
        cut_at=MAX_REPLY_CHARS if outcome.full_chars else None,
        full_chars=outcome.full_chars,
        raw=outcome.text,
        text=parsed.text,
        predicted=parsed.labels,
        unknown_labels=parsed.unknown,
        parse_notes=parsed.notes,
        latency_s=outcome.latency_s,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
    )


def answer(client: ChatClient, item: Item, settings: GenerationSettings) -> Answer:
    """Ask (once, or twice for the paper set: the emotion, then the reply given it); a
    failure comes back as a value so a worker thread never dies with it."""
    try:
        first = capped(client.complete(item.messages, settings, item.task))
        if not item.plan.two_calls:
            parsed = parse_reply(first.text, item.protocol, item.steps.emotion_reader)
            kept = postprocessed(parsed.text, item.steps)
            return first, replace(parsed, text=kept) if kept != parsed.text else parsed, None
        reply = capped(
            client.complete(
                item.plan.second(item.task, reply_emotion(first.text, item.steps)),
                settings,
                item.task,
            )
        )
    except ModelError as err:
        return err, None, None
    both = Completion(
        reply.text,
        first.latency_s + reply.latency_s,
        _sum(first.prompt_tokens, reply.prompt_tokens),
        _sum(first.completion_tokens, reply.completion_tokens),
        reply.full_chars,
    )
    return both, parse_two_calls(first.text, reply.text, item.protocol, item.steps), first.text


def replayed(stored: dict[str, Any], item: Item) -> Answer:
    """A stored answer read again under this item's steps: no model call, the same raw
    text, so that a run changing only how answers are read differs in nothing else."""
    done = Completion(
        stored["raw"],
        stored["latency_s"] or 0.0,
        stored["prompt_tokens"],
        stored["completion_tokens"],
    )
    if not item.plan.two_calls:
        parsed = parse_reply(done.text, item.protocol, item.steps.emotion_reader)
        kept = postprocessed(parsed.text, item.steps)
        return done, replace(parsed, text=kept), None
    emotion = stored["emotion_raw"] or ""
    return done, parse_two_calls(emotion, done.text, item.protocol, item.steps), emotion


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def save(
    store: Store,
    run_id: str,
    item: Item,
    result: Answer,
    scored: bool,
    turn: int | None = None,
    sent: Sequence[Message] | None = None,
) -> ResponseRecord:
    """Store one outcome with its emotion score (when the protocol names emotions)."""
    outcome, parsed, emotion_raw = result
    record = to_record(run_id, item, outcome, parsed, emotion_raw, turn, sent)
    score = None
    if scored and parsed is not None and item.protocol != "direct":
        score = score_emotions(parsed.labels, item.dialogue.label_set)
    Runs(store).save_response(record, score, item.dialogue.label_set if score else None)
    return record


@dataclass(frozen=True)
class Reuse:
    """A run whose raw answers are read again instead of asked (a run differing from it
    only in post-processing or emotion reader); with ``prompts`` (its prompt set), only
    answers to requests byte-identical to its, reply call too."""

    run_id: str
    prompts: str | PromptSet | None = None


def run_benchmark(
    store: Store,
    client: ChatClient,
    spec: ModelSpec,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    request: RunRequest,
    *,
    hooks: PassHooks = NO_HOOKS,
    reuse: Reuse | None = None,
) -> PassReport:
    """Answer every planned item not already stored; store each answer as it arrives.

    ``dialogues`` are the ones chosen (``request.dialogues``); the request's ``limit``
    takes the first of them. Its prompt set, steps and decoding are resolved by the
    request (:class:`~koed_core.models.request.RunRequest`). ``reuse``: see :class:`Reuse`.
    ``hooks.stop`` cancels: nothing new starts, answers arriving within
    ``ABANDON_GRACE_S`` are stored, and a request given up because of the cancel is not
    stored at all (a rerun asks it).
    """
    prompts = request.prompt_set()
    steps = request.steps(spec)
    protocol: Protocol = request.protocol  # type: ignore[assignment]
    settings = request.settings(spec)
    config = request_config(request, spec, dataset_sha256)
    run_id, translated = open_run(store, config, spec, dialogues, request.langs)
    settings = replace(settings, stop=hooks.stop)  # a request in flight is given up on cancel
    langs = list(request.langs)
    items = plan(
        dialogues,
        langs,
        protocol,
        request.limit,
        needs_reference=spec.backend == "human",
        prompt_set=prompts,
        steps=steps,
        variants=translated.dialogues,
    )
    scored = spec.backend != "human"
    stored = Runs(store).raw_answers(reuse.run_id) if reuse else {}
    if stored and reuse and reuse.prompts is not None:  # the reply call byte-identical too
        sent = {(i.dialogue.conv_id, i.task.cell, i.context_hash): i for i in items}
        stored = {
            k: row
            for k, row in stored.items()
            if k in sent and same_exchange(sent[k].task, protocol, sent[k].plan, reuse.prompts)
        }

    owner = f"{this_process()}#{uuid.uuid4().hex[:12]}"  # this pass of this process
    locks = ItemLocks(store)
    finished = Runs(store).finished(run_id)

    def key(item: Item) -> tuple[str, str, str]:
        return item.dialogue.conv_id, item.task.cell, item.context_hash

    def response_id(item: Item) -> str:
        return short_hash(run_id, *key(item))

    def store_one(item: Item, result: Answer) -> Outcome:
        if isinstance(result[0], ModelError) and result[0].kind == "cancelled":
            patiently(lambda: locks.unlock_item(response_id(item), owner))
            return Outcome("cancelled")
        record = save(store, run_id, item, result, scored)
        if record.error:
            return Outcome("failed", record.error_kind, record.error)
        return Outcome("ok")

    try:
        return run_pass(
            items,
            done=lambda item: key(item) in finished,
            work=lambda item: (
                replayed(stored[key(item)], item)
                if key(item) in stored
                else answer(client, item, settings)
            ),
            save=store_one,
            workers=workers_for(client, request.concurrency),
            hooks=hooks,
            run_id=run_id,
            lock=lambda item: locks.lock_item(run_id, response_id(item), owner),
        )
    finally:
        patiently(lambda: locks.unlock_all(owner))  # an ended pass holds nothing


def timed_stream(
    client: ChatClient, item: Item, settings: GenerationSettings, sink: Callable[[str], None]
) -> tuple[Completion, ParsedReply]:
    """Stream one answer into ``sink`` (the chat page) and return it parsed.

    Raises:
        ModelError: the model failed; nothing is returned in its place.
    """
    start = time.perf_counter()
    pieces: list[str] = []
    size = 0
    for piece in client.stream(item.messages, settings, item.task):
        pieces.append(piece)
        size += len(piece)
        if size > MAX_REPLY_CHARS:  # the rest is not read: closing the stream ends it
            break
        sink("".join(pieces))
    done = capped(Completion("".join(pieces), time.perf_counter() - start))
    if done.full_chars:
        sink(done.text)
    return done, parse_reply(done.text, item.protocol, item.steps.emotion_reader)


def run_labels(store: Store) -> dict[str, str]:
    """One label per run that tells it apart from every other, for people: the same text
    in every picker, table, legend and export (run ids stay in exports beside it).

    "fake-bad · single · paper prompts · en+ko · 34 dialogues · 2026-12-01 09:14 UTC"; runs
    that agree on all of that get the pipeline steps that differ among them
    ("post-processing none, commas decoded"), then their temperature, then "(2)", "(3)"
    in age order.
    """
    facts = Runs(store).run_facts()
    labels: dict[str, str] = {}
    for row in facts:
        # the languages answered; a run with no answer yet: the languages it was asked for
        answered = str(row["answered_langs"] or "").split(",")
        langs = [x for x in answered if x] or json.loads(row["langs"] or "[]")
        langs_shown = "+".join(sorted(set(langs)))
        created = str(row["created"] or "")[:16].replace("T", " ") + " UTC"
        count = int(row["dialogues"] or 0)
        labels[row["run_id"]] = " · ".join(
            part
            for part in (
                str(row["name"]),
                str(row["protocol"] or ""),
                (
                    f"episodes of {row['turns']} turns, speaker {row['speaker']}"
                    + (", oracle Listener (told the situation)" if row.get("oracle") else "")
                    if row["turns"]
                    else ""
                ),
                _prompts_shown(str(row["prompt_set"]), row["prompt_version"]),
                langs_shown,
                f"{count} dialogue{'s' if count != 1 else ''}",
                created,
            )
            if part
        )
    # runs alike but for a pipeline step: name the steps that differ within the group
    steps = {r["run_id"]: {s.said: r[s.name] for s in declared()} for r in facts}
    groups: dict[str, list[str]] = {}
    for run_id, label in _repeated(labels).items():
        groups.setdefault(label, []).append(run_id)
    for members in groups.values():
        varying = [k for k in steps[members[0]] if len({steps[m][k] for m in members}) > 1]
        for m in members:
            if varying:
                labels[m] += " · " + ", ".join(f"{k} {steps[m][k]}" for k in varying)
    temperatures = {r["run_id"]: r["temperature"] for r in facts}
    for run_id, label in _repeated(labels).items():
        temp = temperatures.get(run_id)
        labels[run_id] = f"{label} · T={temp}" if temp is not None else label
    seen: Counter[str] = Counter()
    for row in facts:  # still alike: numbered in the order they were made
        label = labels[row["run_id"]]
        seen[label] += 1
        if seen[label] > 1:
            labels[row["run_id"]] = f"{label} ({seen[label]})"
    return labels


def _prompts_shown(name: str, version: str | None) -> str:
    """ "paper prompts" for the shipped set as it is today; any other wording (a file of
    one's own under that name, or an earlier release's set) shows its version."""
    try:
        today = load_prompt_set(name).version if name in PROMPT_SETS else None
    except KoedError:
        today = None
    if version and version != today:
        return f"{name} prompts {version[:8]}"
    return f"{name} prompts"


def _repeated(labels: dict[str, str]) -> dict[str, str]:
    counts = Counter(labels.values())
    return {run_id: label for run_id, label in labels.items() if counts[label] > 1}
