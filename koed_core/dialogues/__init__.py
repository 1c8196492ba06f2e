"""The KoED dialogues themselves: loading and checking a file, where it comes from, the
34 labels, filtering, label figures, the ko/en similarity of the adaptation, subsets
and the dialogue export. Nothing here knows about models or ratings.
"""

from __future__ import annotations

from koed_core.dialogues.dataset import Dataset, load_dataset, parse_dataset
from koed_core.dialogues.dialogue import Dialogue, Lang, LoadWarning, Turn
from koed_core.dialogues.labels import all_labels, gloss, label_names
from koed_core.dialogues.sources import DataSource, resolve_source

__all__ = [
    "DataSource",
    "Dataset",
    "Dialogue",
    "Lang",
    "LoadWarning",
    "Turn",
    "all_labels",
    "gloss",
    "label_names",
    "load_dataset",
    "parse_dataset",
    "resolve_source",
]
