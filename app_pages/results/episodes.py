"""Episodes for a talk or a reader: one KoED situation carried on over several turns by a
simulated Speaker, ko and en side by side, replayed turn by turn."""

import streamlit as st

from components.core import auth, resources, state
from components.core.literal import md
from components.results import episode_scores_view
from components.results.talk import talk_toggle
from components.shared import episode_view
from components.shared.source_banner import load_or_stop
from koed_core.db.episodes import Episodes
from koed_core.i18n import _
from koed_core.models.runs import run_labels

st.title(_("Episodes, turn by turn"))
talk = talk_toggle()
source, dataset = load_or_stop()
store = resources.store()
# turns under a study still being rated stay blind
runs = auth.viewer().shown(Episodes(store).runs())
if runs.empty:
    st.info(
        _(
            "An episode carries a KoED situation on after the dataset's turns: the model "
            "listens, a simulated Speaker (told the situation and the emotion, which the "
            "Listener never sees) answers, for a few turns. None is stored yet. Offline, "
            "with the embedded model in both roles (to try the pipeline, not for "
            "results):\n\n"
            "`koed episodes --model smollm2 --speaker smollm2 --turns 2 --limit 3`"
        )
    )
    st.stop()
labels = run_labels(store)
choices = st.expander(_("Choices"), expanded=False) if talk else st.container()
run_id = choices.selectbox(
    _("Episode run"),
    list(reversed(list(runs["run_id"]))),
    format_func=labels.get,
    key=state.EPISODES_RUN,
)
row = runs[runs["run_id"] == run_id].iloc[0]
st.caption(
    _(
        "Listener: {listener} · Speaker: {speaker} (simulated) · up to {turns} Listener "
        "turns. Turns where the Speaker broke character are flagged and shown, never "
        "silently kept.",
        listener=md(row["model"]),
        speaker=md(row["speaker"]),
        turns=md(row["turns"]),
    )
)
episode_view.episode_pair(
    store, run_id, dataset, talk=talk, key=state.EPISODES_VIEW, pick_in=choices
)
if not talk:
    episode_view.understanding(store, run_id)
    closed = [s["id"] for s in resources.rules().studies() if s["closed"]]
    episode_scores_view.whole_episodes(store, run_id, closed)
    episode_scores_view.speaker_checks(store, run_id)
