"""The LLM judge: the five-dimension rubric, the prompt and verdict of one call, and
judging a whole run into stored judge configurations.
"""

from __future__ import annotations

from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest, current_config
from koed_core.judge.rubric import codes, dimensions, rubric_version
from koed_core.judge.verdicts import MODES, parse_verdict

__all__ = [
    "JudgeRequest",
    "MODES",
    "codes",
    "current_config",
    "dimensions",
    "judge_run",
    "parse_verdict",
    "rubric_version",
]
