"""A study grown by a batch: the next dialogues of its random design become items.

Kept apart from sampling.py (which only draws designs, below the study rules) because
growing a study writes through the study rules: sampling.py cannot import them back.
"""

from __future__ import annotations

from dataclasses import asdict, replace

from koed_core.db import Runs, StudyConfig
from koed_core.rating.sampling import next_batch
from koed_core.rating.studies import StudyRules


def add_round(rules: StudyRules, study_id: int, more: int) -> tuple[StudyConfig, list[str]]:
    """Add the next ``more`` dialogues of a study's random design to the study: their
    responses become items, and the study's recorded design grows with them.

    Returns:
        The new configuration and the conv_ids added.
    """
    config = rules.config(study_id)
    rows = Runs(rules.store).answered(config.run_ids, config.langs)
    grown = next_batch(config.sampling, [r["conv_id"] for r in rows], more)
    added = sorted(set(grown.conv_ids) - set(config.sampling.conv_ids))
    new_config = replace(config, sampling=grown)
    with rules.store.write():
        for row in rows:
            if row["conv_id"] in added:
                rules.add_response_item(study_id, row)
        rules.q.update_config(study_id, asdict(new_config))
    return new_config, added
