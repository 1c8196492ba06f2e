"""``python -m components.core.warm_start run app.py [streamlit options]``: Streamlit's
own command, with the app's imports and the dataset warmed while the server waits for
its first browser (issue 66, item 5).

Streamlit imports a page's modules and reads the dataset on the first request, so the
first visitor after a start paid for pandas, Plotly, the app's modules and the file's
parsing (3.5-7 s on a loaded 2-core machine). Streamlit has no start-up hook, so this
wrapper starts one daemon thread that does that work ahead (``warm``) and then hands
the process to Streamlit's command line unchanged. A request that comes while the
thread still imports waits on Python's import lock for the rest, never for the whole.
``koed serve`` starts its app processes this way; so does bench/pages.py.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import threading
import time

MODULES = (
    "pandas",
    "plotly.graph_objects",
    "plotly.express",
    "app_pages",
    "components.account.login_form",
    "components.core.not_found",
    "components.models.jobs_panel",
    "components.rating.crowd_admin",
    "components.rating.crowd_visit",
    "components.dialogues.dialogue_view",
    "components.dialogues.filter_form",
    "components.shared.source_banner",
    "components.core.tables",
    "components.core.link_notice",
    "koed_core.dialogues.export",
    "koed_core.dialogues.filters",
)
"""What app.py and the first page (the Explorer) import, heaviest first."""


def warm() -> float:
    """Import the first page's modules, load the configured dataset into the cache the
    pages read (``resources._load``: process-wide), then import the other pages' pieces;
    returns the seconds it took. A failure is left for the page to say: warming never
    stops the server."""
    start = time.perf_counter()
    try:
        for name in MODULES:
            importlib.import_module(name)
        from components.core import resources

        loaded = resources.current_dataset()
        resources.filter_index(loaded.dataset, loaded.dataset.sha256)
        import components  # then every other page's pieces (0.5 s; no scipy or torch)

        for found in pkgutil.walk_packages(components.__path__, "components."):
            importlib.import_module(found.name)
    except Exception as err:  # noqa: BLE001 - the page reports the same problem in words
        print(f"warm start: stopped early ({type(err).__name__}: {err})", flush=True)
    return time.perf_counter() - start


def main() -> None:
    """Start warming, then run Streamlit's command line with this process's arguments."""
    from streamlit.web import cli

    threading.Thread(target=warm, name="koed-warm-start", daemon=True).start()
    sys.argv[0] = "streamlit"
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
