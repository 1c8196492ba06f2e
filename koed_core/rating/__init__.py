"""People rating responses: studies and blind assignment, the admin's report and
export, crowd invite links for Prolific and MTurk, accounts, and the server's key for
pseudonyms and signed links.
"""

from __future__ import annotations

from koed_core.rating.studies import RaterProfile, RatingError, StudyConfig, StudyRules

__all__ = ["RaterProfile", "RatingError", "StudyRules", "StudyConfig"]
