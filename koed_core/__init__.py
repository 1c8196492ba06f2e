"""KoED Studio's domain library: the dataset, filters and analyses, with no UI.

Nothing in this package imports Streamlit, so a notebook, the ``koed`` command and the
pages all share the same code.
"""

__version__ = "0.1.0"
