"""Browse KoED as ko/en pairs, filtered by emotion combination."""

import pandas as pd
import streamlit as st

from components.core import resources, state, tables, terms
from components.core.link_notice import check_link, note
from components.dialogues.dialogue_view import render_dialogue, scroll_into_view
from components.dialogues.filter_form import BIND, filter_form
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core import i18n
from koed_core.dialogues.dialogue import preview
from koed_core.dialogues.export import to_csv, to_jsonl
from koed_core.dialogues.links import DIALOGUE, Dropped
from koed_core.i18n import N_, _

st.title(_("Dialogue explorer"))
source, dataset = load_or_stop()
render_source_banner(source, dataset)
index = resources.filter_index(dataset, dataset.sha256)
turn_range = (min(index.n_turns, default=1), max(index.n_turns, default=1))
conv_ids = {d.conv_id for d in dataset.dialogues}
link = check_link("explorer", conv_ids, turn_range, {state.TURNS: turn_range})
flt = filter_form(index)
matches = index.filter(flt)

EAGER_DOWNLOAD = 200
st.subheader(
    _(
        "{n} of {total} dialogues match",
        n=i18n.number(len(matches)),
        total=i18n.number(len(dataset)),
    ),
    anchor=False,
)
st.text(_("Filter: {filter}", filter=flt.describe()))
buttons = st.container(horizontal=True)
# A small selection is ready at once; the whole file is made only when asked for.
small = len(matches) <= EAGER_DOWNLOAD
buttons.download_button(
    _("CSV (one row per turn)"),
    to_csv(matches) if small else lambda: to_csv(matches),
    file_name="koed_filtered.csv",
    mime="text/csv",
    icon=":material/download:",
    disabled=not matches,
)
buttons.download_button(
    _("JSONL (one dialogue per line)"),
    to_jsonl(matches) if small else lambda: to_jsonl(matches),
    file_name="koed_filtered.jsonl",
    mime="application/jsonl",
    icon=":material/download:",
    disabled=not matches,
)
wanted = (link.get(DIALOGUE) or [""])[0]
if wanted and dataset.get(wanted) and wanted not in {d.conv_id for d in matches}:
    note("explorer", [Dropped(DIALOGUE, wanted, N_("not among the dialogues the filters leave"))])
if not matches:
    st.info(_("No dialogue matches. Loosen a filter in the sidebar."))
    st.stop()

# Situations as previews ending on a word, on three lines of their cell; the whole one
# opens. English before Korean: the grid guesses a line's width from the characters it
# drew before, column by column, and after Korean it cut English lines.
PREVIEW = {"ko": 40, "en": 80}
table = pd.DataFrame(
    {
        "conv_id": [d.conv_id for d in matches],
        _("labels"): [" + ".join(map(terms.label, d.labels)) for d in matches],
        _("situation (en)"): [preview(d.situation_en, PREVIEW["en"]) for d in matches],
        _("situation (ko)"): [preview(d.situation_ko, PREVIEW["ko"]) for d in matches],
        _("turns"): [len(d.turns) for d in matches],
        _("ko-only"): [d.ko_only_turns for d in matches],
    }
)
# Widths that fit a laptop's 1366 px beside the filters, situations wrapped on three lines
# (the grid wraps only in rows over 64 px), Korean headers whole.
WIDTHS = dict(zip(table.columns, (125, 140, 230, 230, 64, 72), strict=True))
ROW = 66


def _open_selected() -> None:
    rows = state.explorer_selected_rows()
    if rows:
        state.open_dialogue(str(table["conv_id"].iloc[rows[0]]))


opened = st.container(key="explorer_opened")  # above the table: in view at 1366x768
tables.show(
    table,
    hide_index=True,
    column_config={name: st.column_config.Column(width=w) for name, w in WIDTHS.items()},
    row_height=ROW,
    height=min(38 + ROW * 5, 38 + ROW * len(table)),  # one match: one row, not an empty box
    key=state.EXPLORER_TABLE,
    on_select=_open_selected,
    selection_mode="single-row",
)
conv_id = st.selectbox(
    _("Open a dialogue"),
    table["conv_id"].tolist(),
    index=None,
    key=state.DIALOGUE,
    bind=BIND,
    placeholder=_("Pick a conv_id, or click a row above"),
)
if conv_id and (dialogue := dataset.get(conv_id)) is not None:
    with opened:
        scroll_into_view("explorer_opened", conv_id)
        render_dialogue(dialogue, [w for w in dataset.warnings if w.conv_id == conv_id])
        st.page_link(
            "app_pages/models/chat.py",
            label=_("Chat with models about this dialogue"),
            icon=":material/chat:",
            query_params={DIALOGUE: conv_id},
        )
