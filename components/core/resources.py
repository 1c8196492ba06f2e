"""The cached resources: settings, the database, the rules layers, the dataset, its filter
index and adaptation scores (the cached result tables are in ``computed``).

Objects cached here are shared by every session, so they hold only data that is the same
for everybody (the dataset is immutable) and never anything about one user.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import streamlit as st

from koed_core import i18n
from koed_core.annotation.projects import AnnotationRules
from koed_core.config import Settings
from koed_core.db import Store
from koed_core.dialogues import adaptation
from koed_core.dialogues.dataset import Dataset, load_dataset
from koed_core.dialogues.filters import FilterIndex
from koed_core.dialogues.sources import DataSource, resolve_source
from koed_core.i18n import _
from koed_core.models.registry import ModelSpec, load_registry
from koed_core.rating.server_key import server_key as server_key_of
from koed_core.rating.studies import StudyRules


def secrets() -> dict[str, Any]:
    """Streamlit secrets as a dict ({} when there is no secrets file)."""
    try:
        return dict(st.secrets)
    except FileNotFoundError:
        return {}


def settings() -> Settings:
    """Settings from secrets and the environment, read on every run (cheap, always current)."""
    return Settings.from_sources(os.environ, secrets())


def registry() -> dict[str, ModelSpec]:
    """The model registry, read again when the file changes.

    Raises:
        RegistryError: the file is broken; pages show the message.
    """
    path = settings().models_path
    return _registry(str(path), path.stat().st_mtime_ns if path.exists() else 0)


@st.cache_data(max_entries=2)
def _registry(path: str, mtime_ns: int) -> dict[str, ModelSpec]:
    return load_registry(Path(path))


@st.cache_resource(max_entries=2)
def _store(path: str) -> Store:
    return Store(path)


def store() -> Store:
    """The shared database (one connection, WAL, writes locked)."""
    return _store(str(settings().db_path))


def store_at(path: str) -> Store:
    """The shared connection to the database at ``path`` (what cached computations use)."""
    return _store(path)


@st.cache_resource(max_entries=2)
def _rules(path: str) -> StudyRules:
    return StudyRules(_store(path))


def rules() -> StudyRules:
    """The study rules (studies, assignments and ratings) on the shared database."""
    return _rules(str(settings().db_path))


@st.cache_resource(max_entries=2)
def _annotations(path: str, users: str, required: bool) -> AnnotationRules:
    return AnnotationRules(_store(path), Path(users), required)


def annotations() -> AnnotationRules:
    """Annotation projects and annotations on the shared database; only the accounts
    file's annotators take an annotator's place (checked by the store on every save)."""
    config = settings()
    return _annotations(str(config.db_path), str(config.users_path), config.users_configured)


class Loaded(NamedTuple):
    """The dataset the app shows and where it came from."""

    source: DataSource
    dataset: Dataset


def current_dataset() -> Loaded:
    """Resolve the source and load it (cached per file version).

    Raises:
        DatasetError: the chosen file is missing or malformed; the caller shows it.
    """
    config = settings()
    source = resolve_source(config.data_path, config.cache_dir)
    stat = source.path.stat()
    with st.spinner(_("Loading dialogues..."), show_time=True):  # shown only when it takes
        loaded = _load(str(source.path), stat.st_mtime_ns, stat.st_size)
    return Loaded(source, loaded)


@st.cache_resource(show_spinner=False, max_entries=4)
def _load(path: str, mtime_ns: int, size: int) -> Dataset:
    # mtime and size are part of the key so an edited file is read again.
    return load_dataset(Path(path))


@st.cache_resource(max_entries=4)
def filter_index(_dataset: Dataset, sha256: str) -> FilterIndex:
    """The filter index of a dataset, keyed by its hash."""
    return FilterIndex(_dataset.dialogues)


@st.cache_resource
def encoder() -> adaptation.UseEncoder:
    """The multilingual sentence encoder, loaded once per process."""
    return adaptation.UseEncoder()


def cached_similarities(dataset: Dataset) -> pd.DataFrame | None:
    """Adaptation scores if already on disk, else None (computing is the page's choice)."""
    path = adaptation.cache_file(dataset, encoder(), settings().cache_dir)
    if not path.is_file():
        return None
    return _read_similarities(dataset, str(path))


@st.cache_data(max_entries=4)
def _read_similarities(_dataset: Dataset, path: str) -> pd.DataFrame:
    return adaptation.pair_similarities(_dataset, encoder(), settings().cache_dir)


def compute_similarities(dataset: Dataset) -> pd.DataFrame:
    """Embed every ko/en pair, then cache on disk, with a progress bar and the time left
    from the first second: while the encoder loads (in a thread, so the bar moves), the
    estimate is this server's last measurement (the reference machine's before there is
    one, and the bar says which); once texts flow, their own rate. What this run measured
    is kept for the next estimate."""
    import threading
    import time

    from streamlit.runtime.scriptrunner import add_script_run_ctx

    cache_dir = settings().cache_dir
    expected = adaptation.timing(cache_dir)
    dialogues = len(dataset)
    basis = _("measured on this server") if expected.measured else _("a 2-core reference machine")
    bar = st.progress(0.0, text=_("Loading the sentence encoder (once per server)..."))
    start = time.perf_counter()
    failure: list[BaseException] = []

    def load() -> None:
        try:
            encoder().encode(["warm up"])
        except BaseException as err:  # shown by the page's thread, below
            failure.append(err)

    loader = threading.Thread(target=load, daemon=True)
    add_script_run_ctx(loader)
    loader.start()
    while loader.is_alive():
        elapsed = time.perf_counter() - start
        total = max(expected.total_s(dialogues), elapsed + 1.0)
        bar.progress(
            min(elapsed / total, 0.99),
            text=_(
                "Loading the sentence encoder (once per server): {elapsed} s; about {left} s "
                "left in all ({basis})",
                elapsed=i18n.number(elapsed),
                left=i18n.number(total - elapsed),
                basis=basis,
            ),
        )
        loader.join(0.5)
    if failure:
        raise failure[0]
    load_s = time.perf_counter() - start
    embedding = time.perf_counter()

    def progress(done: int, total: int) -> None:
        elapsed = time.perf_counter() - embedding
        left = elapsed / max(done, 1) * (total - done)
        bar.progress(
            (load_s + elapsed) / max(load_s + elapsed + left, 1e-9),
            text=_(
                "Embedding texts: {done} of {total} (about {left} s left)",
                done=i18n.number(done),
                total=i18n.number(total),
                left=i18n.number(left),
            ),
        )

    frame = adaptation.pair_similarities(dataset, encoder(), cache_dir, progress)
    embed_s = time.perf_counter() - embedding
    # a load under a second was the cached encoder, not a measurement of loading it
    adaptation.record_timing(cache_dir, load_s if load_s > 1.0 else None, embed_s / dialogues)
    bar.empty()
    return frame


def server_key() -> bytes:
    """The key for rater pseudonyms (configured, or generated beside the database)."""
    config = settings()
    return _server_key(config.secret_key, str(config.db_path))


@st.cache_resource(max_entries=2)
def _server_key(configured: str | None, db_path: str) -> bytes:
    return server_key_of(configured, Path(db_path))


def export_zip() -> bytes:
    """The paper bundle as zip bytes, built in a temporary folder."""
    import tempfile

    from koed_core.results.paper_export import zip_bundle

    with tempfile.TemporaryDirectory() as work:
        return zip_bundle(store(), Path(work)).read_bytes()
