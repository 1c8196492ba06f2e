"""The cached resources: settings, the database, the rules layers, the dataset, its filter
index and adaptation scores (the cached result tables are in ``computed``).

Objects cached here are shared by every session, so they hold only data that is the same
for everybody (the dataset is immutable) and never anything about one user.

The study and annotation rules and the sentence encoder are imported where they are first
made: app.py imports this module, and a fresh server's first page (the Explorer, for a
visitor) needs none of them (koed_core.annotation.projects alone took 0.18 s to import).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd
import streamlit as st

from koed_core.config import Settings
from koed_core.db import Store
from koed_core.dialogues.dataset import Dataset, load_dataset
from koed_core.dialogues.filters import FilterIndex
from koed_core.dialogues.sources import DataSource, resolve_source
from koed_core.i18n import _
from koed_core.models.registry import ModelSpec, load_registry
from koed_core.rating.server_key import server_key as server_key_of

if TYPE_CHECKING:
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.dialogues import adaptation
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
    from koed_core.rating.studies import StudyRules

    return StudyRules(_store(path))


def rules() -> StudyRules:
    """The study rules (studies, assignments and ratings) on the shared database."""
    return _rules(str(settings().db_path))


@st.cache_resource(max_entries=2)
def _annotations(path: str, users: str, required: bool) -> AnnotationRules:
    from koed_core.annotation.projects import AnnotationRules

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
    from koed_core.dialogues import adaptation

    return adaptation.UseEncoder()


def cached_similarities(dataset: Dataset) -> pd.DataFrame | None:
    """Adaptation scores if already on disk, else None (computing is the page's choice)."""
    from koed_core.dialogues import adaptation

    path = adaptation.cache_file(dataset, encoder(), settings().cache_dir)
    if not path.is_file():
        return None
    return _read_similarities(dataset, str(path))


@st.cache_data(max_entries=4)
def _read_similarities(_dataset: Dataset, path: str) -> pd.DataFrame:
    from koed_core.dialogues import adaptation

    return adaptation.pair_similarities(_dataset, encoder(), settings().cache_dir)


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
