"""Demo for a talk: one situation, ko and en side by side, two models, answers streaming."""

import time

import streamlit as st

from components.core import auth, resources, state
from components.core.literal import md
from components.results.talk import talk_toggle
from components.shared.model_choice import client_for
from components.shared.source_banner import load_or_stop
from koed_core import i18n
from koed_core.db import Runs
from koed_core.dialogues.records import decode_ed_text
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.models.client import GenerationSettings
from koed_core.models.protocol import ROLE_NAMES, build_task
from koed_core.models.runs import Item, timed_stream
from koed_core.results import demo
from koed_core.results.figures import run_label

st.title(_("Same situation, two languages"))
talk = talk_toggle()
source, dataset = load_or_stop()
store = resources.store()
viewer = auth.viewer()
admin = viewer.sees_all
# answers under a study still being rated stay blind: no model names on them
runs = viewer.shown(demo.demo_runs(store))
pairs = demo.partners(store, list(runs["run_id"]))
with_partner = [run_id for run_id, others in pairs.items() if others]
if not with_partner:
    st.info(
        _(
            "The demo replays stored answers of two runs on the same dialogues, so it works "
            "without network. Store two runs in both languages first, for example:\n\n"
            "`koed run --model smollm2 --lang ko,en --limit 10`  \n"
            "`koed run --model human --lang ko,en --limit 10`"
        )
    )
    st.stop()
labels = {
    r.run_id: run_label(r.model, r.provenance, r.protocol, bool(r.reference))
    for r in runs.itertuples()
}
# In talk mode the choices fold away so that the answers and Play fit a 1280x720 screen.
choices = st.expander(_("Choices"), expanded=False) if talk else st.container()
left, right = choices.columns(2)
first = left.selectbox(_("Model A"), with_partner, format_func=labels.get, key=state.DEMO_A)
second = right.selectbox(_("Model B"), pairs[first], format_func=labels.get, key=state.DEMO_B)
shared = demo.shared_dialogues(store, [first, second])
situations = {  # the situation as the reader reads it (Korean on a Korean page)
    conv: f"{conv} · {(d.situation(i18n.language()) or d.situation_en)[:70]}"
    if (d := dataset.get(conv))
    else conv
    for conv in shared
}
conv_id = left.selectbox(
    _("Situation"), shared, format_func=situations.get, key=state.DEMO_DIALOGUE
)
pace = right.slider(_("Words per second"), 2, 40, 8, key=state.DEMO_PACE)
live = admin and choices.toggle(
    _("Ask the models live (needs their servers or keys)"), key=state.DEMO_LIVE
)
dialogue = dataset.get(conv_id)
if live:
    go = st.button(_("Ask"), type="primary", key=state.DEMO_ASK)
    st.caption(_("Live: each model answers now, pane by pane; nothing is replayed."))
else:
    go = st.button(_("Play"), type="primary", key=state.DEMO_PLAY)
    st.caption(  # on screen in talk mode too: the room must know it is no live answer
        _(
            "Replay of stored answers ({pace} words a second), not generated live. The "
            "answers appear when you press Play.",
            pace=int(pace),
        )
    )

ko, en = st.columns(2)
panes = []
for column, lang in ((ko, "ko"), (en, "en")):
    with column:
        st.subheader(i18n.NAMES[lang], anchor=False)
        speaker, listener = ROLE_NAMES[lang]
        # what the models answered, as people read it (no _comma_ a raw run sent); on a
        # projector the turn they answer, the whole conversation a click away
        turns = [
            f"{speaker if role == 'speaker' else listener}: {decode_ed_text(text)}"
            for role, text in Runs(store).stored_context(first, conv_id, lang)
        ]
        if talk and turns:
            st.text(turns[-1])
        else:
            with st.container(height=220, border=True):
                for turn in turns:
                    st.text(turn)
        for run_id in (first, second):
            st.markdown(f"**{md(labels[run_id])}**")
            panes.append(((run_id, lang), st.empty()))

protocols = dict(zip(runs["run_id"], runs["protocol"], strict=True))
if live and go and dialogue is not None:
    for (run_id, lang), box in panes:
        item = Item(dialogue, build_task(dialogue, lang), protocols[run_id])
        try:
            client = client_for(demo.run_spec(store, run_id, resources.registry()))
            _done, parsed = timed_stream(client, item, GenerationSettings(max_tokens=160), box.text)
        except KoedError as err:
            box.error(md(str(err)))
        else:
            box.text(parsed.text)  # the reply without its "Emotion:" line
elif go:
    answers = demo.stored_answers(store, [first, second], conv_id)
    shown = [decode_ed_text(answers.get(key, "")) for key, _box in panes]
    for texts in demo.replay(shown):
        for (_pane, box), text in zip(panes, texts, strict=True):
            box.text(text)
        time.sleep(1 / pace)
