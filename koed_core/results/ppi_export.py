"""The gap three ways and the judge artefact in the paper bundle (``koed export``).

For every study with ratings, its runs' gaps from the most recent judge configuration
that scored them: one file of the three estimates (PPI++ named in the file and in every
row), one of the judge's gap minus the people's per rater group, and their provenance
(ppi-python's version, how each study chose its dialogues, the judge configuration).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from koed_core.db import Ratings, Store
from koed_core.results import ppi_table, score_sources
from koed_core.text import csv_safe

PPI_FILES = {
    "gap_estimates_ppi.csv": "The gap three ways per study, run, dimension and quantity (en, "
    "ko, gap): estimator judge (the judge alone), human (people alone; an item's score is "
    "the mean of its k ratings) and ppi (PPI++: the judge corrected by people on the rated "
    "random sample, from ppi-python), each with its 95% interval, n_people, N_judge and "
    "n_effective; a refused PPI row says why in note. Columns name the study and judge.",
    "judge_artefact.csv": "Is the gap a judge artefact? Per study, run, dimension and rater "
    "group (all, native ko, not native ko): the judge's gap minus the people's on the "
    "dialogues both scored, with a bootstrap 95% CI.",
    "gap_estimates_ppi_provenance.json": "Where those two files come from: ppi-python's "
    "version, each study's design (how it chose its dialogues), the judge configuration, "
    "runs and dataset sha256.",
}


def ppi_results(store: Store) -> list[ppi_table.GapEstimates]:
    """One result per study with ratings and a judge configuration that scored its runs."""
    found = []
    for study in Ratings(store).studies_with_ratings():
        study_id = int(study["id"])
        choice = score_sources.choose_judge(store, score_sources.study_runs(store, study_id))
        if choice is not None:
            found.append(ppi_table.gap_estimates(store, study_id, choice.config))
    return found


def write_ppi(store: Store, out: Path) -> list[Path]:
    """Add the three files to a bundle folder and list them in its README."""
    results = ppi_results(store)
    estimates = [r.estimates.assign(
        estimator_name=r.estimates["estimator"].map(ppi_table.ESTIMATOR_WORDS)
    ) for r in results]  # fmt: skip
    artefacts = [r.artefact for r in results]
    (out / "gap_estimates_ppi.csv").write_text(
        csv_safe.to_csv(pd.concat(estimates) if estimates else pd.DataFrame()), encoding="utf-8"
    )
    (out / "judge_artefact.csv").write_text(
        csv_safe.to_csv(pd.concat(artefacts) if artefacts else pd.DataFrame()), encoding="utf-8"
    )
    (out / "gap_estimates_ppi_provenance.json").write_text(
        json.dumps([r.provenance for r in results], ensure_ascii=False, indent=1, default=str),
        encoding="utf-8",
    )
    readme = out / "README.md"
    rows = "".join(f"| {name} | {text} |\n" for name, text in PPI_FILES.items())
    readme.write_text(readme.read_text(encoding="utf-8") + rows, encoding="utf-8")
    for name in PPI_FILES:
        (out / name).chmod(0o600)
    return [out / name for name in PPI_FILES]
