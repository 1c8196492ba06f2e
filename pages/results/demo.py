"""Demo for a talk: one situation, ko and en side by side, two models, answers streaming."""

import time

import streamlit as st

from components import auth, resources, state
from components.literal import md
from components.models import client_for
from components.source_banner import load_or_stop
from components.talk import talk_toggle
from koed_core import demo
from koed_core.db import Ratings
from koed_core.errors import KoedError
from koed_core.llm import GenerationSettings
from koed_core.protocol import build_task
from koed_core.runner import Item, timed_stream

st.title("Same situation, two languages")
talk = talk_toggle()
source, dataset = load_or_stop()
store = resources.store()
admin = auth.is_admin()
runs = demo.demo_runs(store)
if not admin:  # answers under a study still being rated stay blind: no model names on them
    runs = runs[~runs["run_id"].isin(Ratings(store).runs_under_open_studies())]
if len(runs) < 2:
    st.info(
        "The demo replays stored answers of two runs, so it works without network. "
        "Store two runs in both languages first, for example:\n\n"
        "`koed run --model smollm2 --lang ko,en --limit 10`  \n"
        "`koed run --model human --lang ko,en --limit 10`"
    )
    st.stop()
labels = {r.run_id: f"{r.model} ({r.provenance}, {r.protocol})" for r in runs.itertuples()}
left, right = st.columns(2)
first = left.selectbox("Model A", list(labels), format_func=labels.get, key=state.DEMO_A)
second = right.selectbox(
    "Model B", [r for r in labels if r != first], format_func=labels.get, key=state.DEMO_B
)
shared = demo.shared_dialogues(store, [first, second])
if not shared:
    st.info("These two runs have no dialogue answered by both in both languages.")
    st.stop()
conv_id = st.selectbox("Situation", shared, key=state.DEMO_DIALOGUE)
dialogue = dataset.get(conv_id)
pace = st.slider("Words per second", 2, 40, 8, key=state.DEMO_PACE)
live = admin and st.toggle("Ask the models live (needs their servers or keys)", key=state.DEMO_LIVE)

answers = demo.stored_answers(store, [first, second], conv_id)
ko, en = st.columns(2)
panes = []
for column, lang in ((ko, "ko"), (en, "en")):
    with column:
        st.subheader("한국어" if lang == "ko" else "English", anchor=False)
        if dialogue is not None:
            st.text(dialogue.situation(lang))
        for run_id in (first, second):
            st.markdown(f"**{md(labels[run_id])}**")
            panes.append(((run_id, lang), st.empty()))
protocols = dict(zip(runs["run_id"], runs["protocol"], strict=True))
if live:
    st.caption("Live: each model answers now, pane by pane; nothing is replayed.")
    if st.button("Ask", type="primary", key=state.DEMO_ASK) and dialogue is not None:
        for (run_id, lang), box in panes:
            item = Item(dialogue, build_task(dialogue, lang), protocols[run_id])
            try:
                client = client_for(demo.run_spec(store, run_id, resources.registry()))
                _, parsed = timed_stream(client, item, GenerationSettings(max_tokens=160), box.text)
            except KoedError as err:
                box.error(str(err))
            else:
                box.text(parsed.text)  # the reply without its "Emotion:" line
    st.stop()
st.caption(
    f"Replay of stored answers from runs {first[:8]} and {second[:8]}, paced at {pace} words "
    "a second; not generated live."
)
if st.button("Play", type="primary", key=state.DEMO_PLAY):
    for texts in demo.replay([answers.get(key, "") for key, _ in panes]):
        for (_, box), text in zip(panes, texts, strict=True):
            box.text(text)
        time.sleep(1 / pace)
else:
    for key, box in panes:
        box.text(answers.get(key, ""))
