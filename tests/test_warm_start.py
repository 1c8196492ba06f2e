"""Cold start (issue 66, item 5): a server process imports the first page's modules and
reads the dataset while it waits for its first browser, so the first visitor does not."""

from __future__ import annotations

import pytest


def test_warming_reads_the_dataset_into_the_cache_the_pages_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from components.core import resources, warm_start

    warm_start.warm()

    def parse_again(path: object) -> None:
        raise AssertionError(f"the first page parsed {path} again")

    monkeypatch.setattr(resources, "load_dataset", parse_again)
    loaded = resources.current_dataset()  # what the first page asks: already there
    assert len(loaded.dataset) > 0
    index = resources.filter_index(loaded.dataset, loaded.dataset.sha256)
    assert index is resources.filter_index(loaded.dataset, loaded.dataset.sha256)


def test_a_warming_failure_leaves_the_server_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken data file is the page's to say, in words; warming only stops early."""
    from components.core import warm_start

    monkeypatch.setenv("KOED_DATA", "/nonexistent/KoED.json")
    assert warm_start.warm() >= 0  # no exception out of the thread's function
