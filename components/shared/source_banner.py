"""Which data the page shows, its licence, its load warnings, and the way to the real file."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from components.core import auth, resources, state, tables
from components.core.literal import md, without_paths
from koed_core import i18n
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.records import WARNING_KINDS
from koed_core.dialogues.sources import (
    ATTRIBUTION,
    SAMPLE_NOTE,
    DataSource,
    download_official,
    official_cache_path,
)
from koed_core.errors import DatasetError, KoedError
from koed_core.i18n import _


def load_or_stop() -> resources.Loaded:
    """The current dataset; on a bad file, a clear error and a stopped page."""
    try:
        return resources.current_dataset()
    except DatasetError as err:
        st.error(
            _(
                "The dataset could not be loaded.\n\n{reason}",
                reason=md(err if auth.is_admin() else without_paths(err)),
            ),
            icon=":material/error:",
        )
        st.info(_("Fix the file, or unset KOED_DATA to use the official file or the sample."))
        st.stop()


def render_source_banner(source: DataSource, dataset: Dataset) -> None:
    """One line naming the source, with attribution, licence and warnings a click away."""
    icon = ":material/science:" if source.kind == "sample" else ":material/database:"
    described = source.description if auth.is_admin() else without_paths(source.description)
    with st.expander(_("Data: {source}", source=described), icon=icon):
        # where the file sits on the server is the operator's business: visitors get its name
        admin = auth.is_admin()
        shown = source.path if admin else Path(source.path).name
        digest = dataset.sha256 if admin else dataset.sha256[:12] + "…"  # enough to compare
        st.text(_("File: {name}", name=shown) + f"\nsha256: {digest}")
        about = SAMPLE_NOTE if source.kind == "sample" else ATTRIBUTION
        st.text(_(about))
        if source.kind != "sample":
            st.caption(_("Shown for research. Licence: CC BY-NC 4.0 (non-commercial)."))
        _render_warnings(dataset)
        if source.kind == "sample":
            _download_button()


def _render_warnings(dataset: Dataset) -> None:
    counts = dataset.stats().warnings
    if not counts:
        return
    st.caption(
        _(
            "Oddities in the file, loaded anyway: {kinds}",
            kinds=md(", ".join(f"{_kind(kind)} ({i18n.number(n)})" for kind, n in counts.items())),
        )
    )
    rows = [
        {"kind": _kind(w.kind), "record": w.index, "conv_id": w.conv_id, "message": w.text}
        for w in dataset.warnings
    ]
    tables.show(rows, hide_index=True, height=200)


def _kind(kind: str) -> str:
    return _(WARNING_KINDS[kind]) if kind in WARNING_KINDS else kind


def _download_button() -> None:
    if not st.button(_("Download the official KoED (2.9 MB, sha256-verified)"), key=state.DOWNLOAD):
        return
    target = official_cache_path(resources.settings().cache_dir)
    bar = st.progress(0.0, text=_("Downloading KoED.json..."))
    try:
        download_official(
            target,
            url=resources.settings().data_url,
            progress=lambda done, total: bar.progress(min(done / total, 1.0)),
        )
    except KoedError as err:
        bar.empty()
        st.error(
            _(
                "{reason}\n\nNo network here? Copy KoED.json onto this machine another way "
                "and start the app with `KOED_DATA=/path/to/KoED.json`.",
                reason=md(err if auth.is_admin() else without_paths(err)),
            )
        )
        return
    st.rerun()
