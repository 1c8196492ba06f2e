"""Pieces of the chat page: the context a model sees, one answer, and one model's pane."""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import streamlit as st

from components.core import auth, resources, state
from components.core.literal import md
from components.shared.model_choice import client_for, render_model_note
from koed_core import i18n
from koed_core.db import Runs
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.labels import by_name
from koed_core.dialogues.variants import text_lang
from koed_core.i18n import _
from koed_core.models.chat import (
    ChatVariant,
    from_answer,
    live_task,
    needs_answer,
    pane_key,
    timeline,
    to_answer,
)
from koed_core.models.client import ModelError
from koed_core.models.protocol import PROTOCOLS, ROLE_NAMES, ListenerTask, Protocol, protocol_name
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import Item, public_spec, request_config, save, timed_stream


def render_context(task: ListenerTask) -> None:
    """The transcript exactly as the Listener receives it (no labels, no situation)."""
    speaker, listener = ROLE_NAMES[task.lang]
    for turn in task.turns:
        role = speaker if turn.role == "speaker" else listener
        st.text(f"{role}: {turn.text}")
    if not task.turns:
        st.caption(_("No turns in this language."))


def render_emotions(answer: dict[str, Any]) -> None:
    """Predicted labels with glosses; words outside the 34 flagged."""
    with st.container(horizontal=True):
        for name in answer.get("labels", []):
            st.badge(by_name()[name].display, color="orange", icon=":material/mood:")
        for word in answer.get("unknown", []):
            st.badge(
                _("not a KoED label"), color="red", help=_("The model said: {word}", word=word)
            )
        for note in answer.get("notes", []):
            st.badge(note, color="gray", icon=":material/info:")


def render_answer(answer: dict[str, Any]) -> None:
    """One reply (or its error) with its emotion and latency."""
    if answer.get("error"):
        st.error(md(answer["error"]), icon=":material/error:")
        return
    with st.chat_message("assistant", avatar=":material/hearing:"):
        st.text(answer["text"] or _("(empty)"))
        render_emotions(answer)
        st.caption(_("{seconds} s", seconds=i18n.number(answer["latency_s"], 1)))


def all_answered() -> None:
    """Answer pressed with nothing owed: say what the next step is."""
    st.info(
        _(
            "Every pane has answered the last Speaker turn. Type the Speaker's next turn "
            "below (Korean for ko, English for en) and the Listeners answer it."
        )
    )


def render_speaker_turn(text: str) -> None:
    """A Speaker turn the user typed."""
    with st.chat_message("user", avatar=":material/record_voice_over:"):
        st.text(text)


class Pane:
    """One model answering in one language, inside the chat page's session data."""

    def __init__(
        self,
        chat: dict[str, Any],
        dialogue: Dialogue,
        spec: ModelSpec,
        request: RunRequest,
        dataset_sha256: str,
        variants: Mapping[str, ChatVariant],
    ) -> None:
        # in a translated variant the pane reads the variant's dialogue and records its
        # version with a saved answer; typed turns go to every pane of that language
        self.lang = request.langs[0]
        self.variant = variant = variants.get(self.lang)
        self.dialogue = variant.dialogue if variant else dialogue
        self.spec = spec
        self.dataset_sha256 = dataset_sha256
        # asked, and saved, as the request resolves it: one default for each setting
        self.request = request
        self.protocol: Protocol = request.protocol  # type: ignore[assignment]
        self.settings = request.settings(spec)
        self.prompts, self.steps = request.prompt_set(), request.steps(spec)
        self.key = pane_key(spec.name, self.lang)
        self.answers: list[dict[str, Any]] = chat["answers"].setdefault(self.key, [])
        self.speaker: list[str] = chat["speaker"][text_lang(self.lang)]

    def item(self, upto: int | None = None) -> Item:
        """The request for the next answer, or for answer ``upto`` when saving it."""
        answers = self.answers if upto is None else self.answers[:upto]
        good = len([a for a in answers if not a.get("error")])
        speaker = self.speaker if upto is None else self.speaker[:good]
        task = live_task(self.dialogue, self.lang, speaker, answers)
        return Item(self.dialogue, task, self.protocol, self.prompts, self.steps)

    def render(self, run_now: bool) -> Any:
        """History and save buttons; returns a placeholder when a new answer is owed."""
        st.subheader(f"{md(self.spec.name)} · {self.lang}", anchor=False)
        render_model_note(self.spec)
        for kind, value in timeline(self.speaker, self.answers):
            if kind == "speaker":
                render_speaker_turn(value)
                continue
            render_answer(self.answers[value])
            self._save_button(value)
        return st.empty() if run_now and needs_answer(self.speaker, self.answers) else None

    def _save_button(self, index: int) -> None:
        answer = self.answers[index]
        if answer.get("error"):
            return
        if answer.get("saved"):
            st.caption(_("Saved for rating."))
            return
        if not auth.is_admin():  # saving writes a run an admin would rate: admins only
            return
        if st.button(_("Save for rating"), key=f"save.{self.key}.{index}", icon=":material/save:"):
            if not auth.is_admin():
                st.error(_("Only an admin can save answers for rating."))
                return
            config = request_config(self.request, self.spec, self.dataset_sha256, "live")
            if self.variant is not None:  # the version the answer was given in
                config = replace(config, variants=self.variant.recorded)
            store = resources.store()
            run_id = Runs(store).ensure_run(
                config, f"{self.spec.name} (live chat)", [self.lang], public_spec(self.spec)
            )
            completion, parsed = from_answer(answer)
            record = save(
                store,
                run_id,
                self.item(index),
                (completion, parsed, None),
                scored=self.spec.backend != "human",
            )
            answer["saved"] = record.response_id
            st.toast(_("Saved for rating"))
            st.rerun()


def stream_together(jobs: list[tuple[Pane, Any]]) -> None:
    """Stream every owed answer at once, each into its pane's placeholder, then rerun.

    Model calls run in threads; only this (the script) thread touches Streamlit and the
    session's data, reading the threads' progress from a queue.
    """
    updates: queue.Queue[tuple[int, str, Any]] = queue.Queue()
    started = []
    one_at_a_time = 0  # local models generate one answer at a time on this machine
    for index, (pane, box) in enumerate(jobs):
        try:
            client = client_for(pane.spec)  # reads the session's key: script thread only
        except ModelError as err:
            pane.answers.append({"error": str(err)})
            continue
        if client.max_concurrency == 1:
            if one_at_a_time:
                box.info(
                    _(
                        "{model} answers one pane at a time on this machine: this one starts "
                        "when the pane before it is done.",
                        model=md(pane.spec.name),
                    ),
                    icon=":material/hourglass_top:",
                )
            one_at_a_time += 1
        item = pane.item()

        def work(
            index: int = index, pane: Pane = pane, client: Any = client, item: Item = item
        ) -> None:
            try:
                done = timed_stream(
                    client, item, pane.settings, lambda text: updates.put((index, "text", text))
                )
            except ModelError as err:
                updates.put((index, "error", str(err)))
            except Exception as err:  # a bug: raised again in the script thread, never lost
                updates.put((index, "crash", err))
            else:
                updates.put((index, "done", done))

        started.append(threading.Thread(target=work, daemon=True))
    for thread in started:
        thread.start()
    waiting = len(started)
    while waiting:
        index, kind, value = updates.get()
        pane, box = jobs[index]
        if kind == "text":
            box.text(value)
            continue
        if kind == "crash":
            raise value
        waiting -= 1
        pane.answers.append({"error": value} if kind == "error" else to_answer(*value))
    st.rerun()


def protocol_radio(where: Any) -> Protocol:
    """The protocol picker, each protocol in the reader's words (a Korean page showed
    single/multi/direct), with what each asks."""
    named = {p: protocol_name(p) for p in PROTOCOLS}
    chosen: Protocol = where.radio(
        _("Protocol"),
        PROTOCOLS,
        key=state.CHAT_PROTOCOL,
        horizontal=True,
        format_func=named.__getitem__,
        help=_(
            "{single}: name one emotion, then answer. {multi}: name all that apply (up to 4), "
            "then answer. {direct}: answer only.",
            **named,
        ),
    )
    return chosen
