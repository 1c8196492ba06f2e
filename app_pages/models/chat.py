"""Chat live with one or two models on a KoED situation, ko and en side by side."""

import streamlit as st

from components.core import language, resources, state
from components.core.link_notice import check_link, set_param
from components.core.literal import md
from components.models.chat_view import (
    Pane,
    all_answered,
    protocol_radio,
    render_context,
    stream_together,
)
from components.shared.model_choice import (
    adhoc_model_input,
    model_picker,
    render_embedded_note,
    session_api_key_input,
)
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core import i18n
from koed_core.dialogues.links import DIALOGUE
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.models.chat import chat_variants, detect_lang, live_request, live_task

st.title(_("Chat with models on KoED"))
source, dataset = load_or_stop()
render_source_banner(source, dataset)
link = check_link("chat", {d.conv_id for d in dataset.dialogues})
session_api_key_input()

search = st.text_input(_("Search situations (ko or en)"), key=state.CHAT_SEARCH)
needle = search.strip().casefold()
options = [
    d.conv_id
    for d in dataset.dialogues
    if not needle or needle in (d.situation_ko + " " + d.situation_en).casefold()
]
if not options:
    st.info(_("No situation matches the search."))
    st.stop()
wanted = (link.get(DIALOGUE) or [""])[0]
conv_id = st.selectbox(
    _("Dialogue ({n} match)", n=i18n.number(len(options))),
    options,
    key=state.CHAT_DIALOGUE,
    index=options.index(wanted) if wanted in options else 0,
)
set_param(DIALOGUE, conv_id)  # the one name of a dialogue in a link
dialogue = dataset.get(conv_id)
assert dialogue is not None
st.text(f"{dialogue.situation_ko}\n{dialogue.situation_en}")

left, mid, right = st.columns([2, 3, 2])
variants = chat_variants(resources.store(), dialogue)  # the translations of this dialogue
langs = left.segmented_control(
    _("Languages"),
    ["ko", "en", *variants],
    selection_mode="multi",
    default=["ko", "en"],
    key=state.CHAT_LANGS,
    format_func=language.language_words,
) or ["ko"]
try:
    with mid:
        adhoc_model_input()
        specs = model_picker(_("Models (one or two)"), state.CHAT_MODELS)
except KoedError as err:
    st.error(md(str(err)))
    st.stop()
render_embedded_note(specs)
protocol = protocol_radio(right)
temperature = right.slider(_("Temperature"), 0.0, 1.5, 0.7, 0.1, key=state.CHAT_TEMPERATURE)
max_tokens = right.number_input(_("Max new tokens"), 16, 1024, 160, 16, key=state.CHAT_MAX_TOKENS)
if not specs:
    st.info(_("Pick at least one model."))
    st.stop()

chat = state.chat_session()
if chat.get("conv_id") != conv_id or chat.get("protocol") != protocol:
    chat.clear()
    chat.update(conv_id=conv_id, protocol=protocol, speaker={"ko": [], "en": []}, answers={})

with st.expander(_("What the Listener sees (no labels, no situation)")):
    for column, lang in zip(st.columns(len(langs)), langs, strict=True):
        with column:
            shown = variants[lang].dialogue if lang in variants else dialogue
            render_context(live_task(shown, lang, [], []))

asked = {"protocol": protocol, "temperature": temperature, "max_tokens": int(max_tokens)}
panes = [
    Pane(chat, dialogue, spec, live_request(spec.name, lang, **asked), dataset.sha256, variants)
    for spec in specs
    for lang in langs
]
# Inside a container the box sits here, inline: pinned to the window's bottom it made
# the page open scrolled down, past the dialogue picker.
typed = st.container().chat_input(_("Go on as the Speaker (type Korean for ko, English for en)"))
if typed:
    chat["speaker"][detect_lang(typed)].append(typed)
run_now = st.button(_("Answer as the Listener"), type="primary", key=state.CHAT_ASK) or bool(typed)
jobs = []
for row in range(0, len(panes), 2):
    for column, pane in zip(st.columns(2), panes[row : row + 2], strict=False):
        with column:
            box = pane.render(run_now)
            if box is not None:
                jobs.append((pane, box))
if jobs:
    stream_together(jobs)  # every pane answers at once, then the page reruns
elif run_now:
    all_answered()
