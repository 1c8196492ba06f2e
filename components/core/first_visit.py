"""The first visit after a server start, when it opens a deep link.

Until app.py's ``st.navigation`` has run once in the process, Streamlit treats the files
directly inside ``pages/`` as pages of its old multipage mode, and a first visitor who
opens ``/gap?talk=true`` from a slide would meet "Page not found" (or, with the page
scripts there, Streamlit's own sidebar of file names). So the real pages live in section
folders, and each has a same-named stand-in directly in ``pages/`` that only hands over
to app.py: its navigation then opens the real page, for the visitor's role. Once
``st.navigation`` has run, the stand-ins are never served again.
"""

from __future__ import annotations

import runpy
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"


def hand_over_to_app() -> None:
    """Run app.py as Streamlit would: the frame, the login check, the navigation."""
    runpy.run_path(str(APP), run_name="__main__")
