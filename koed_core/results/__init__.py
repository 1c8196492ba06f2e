"""Numbers from stored scores, each from one source: agreement (and the reliability
statistics behind it), the empathy gap, choosing a score source, figures, the talk
demo, the paper export and the reproduction of the paper's table.
"""

from __future__ import annotations

from koed_core.results.gaps import gap_table, paired_gap, score_frame
from koed_core.results.score_sources import choose_judge, choose_study

__all__ = ["choose_judge", "choose_study", "gap_table", "paired_gap", "score_frame"]
