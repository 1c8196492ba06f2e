"""Annotation at the official file's size: a project of all 1,360 dialogues, each
annotated by two people with two spans, then what the pages compute from it.

Prints the seconds to save one annotation (the draft written on every "Add span"), to
list a project's items (the Annotate page's picker), to read the final answers (the gap
breakdown), the agreement table (kappa with its bootstrap, span F1) and the export.
Uses ../shared/data/KoED.json when present, else the built-in sample.

    python bench/annotation.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from koed_core.annotation.agreement import agreement_table  # noqa: E402
from koed_core.annotation.exchange import export_lines  # noqa: E402
from koed_core.annotation.projects import AnnotationStore  # noqa: E402
from koed_core.annotation.spans import Span, side_at  # noqa: E402
from koed_core.db import Store  # noqa: E402
from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

OFFICIAL = ROOT.parent / "shared" / "data" / "KoED.json"


def _spans(dialogue, shift: int) -> list[Span]:  # type: ignore[no-untyped-def]
    turn = next(t for t in dialogue.turns if len(t.ko) > 6)
    return [
        Span(side_at(dialogue, "ko", turn.position, 0, 2 + shift), "food", None, True),
        Span(side_at(dialogue, "ko", turn.position, 3, 5), "places", None, True),
    ]


def main() -> None:
    dataset = load_dataset(OFFICIAL if OFFICIAL.is_file() else SAMPLE_FILE)
    with tempfile.TemporaryDirectory() as work:
        annotations = AnnotationStore(Store(Path(work) / "koed.db"))
        ids = [d.conv_id for d in dataset.dialogues]
        project = annotations.create_project("bench", dataset, ids, annotators=["a", "b"])
        saves = []
        for i, dialogue in enumerate(dataset.dialogues):
            category = (
                None
                if dialogue.korean_emotion
                else ("context_modified" if i % 3 else "simply_transferred")
            )
            for who, shift in (("a", 0), ("b", i % 2)):
                start = time.perf_counter()
                annotations.save(
                    project, dialogue, who, category, "", _spans(dialogue, shift), submit=True
                )
                saves.append(time.perf_counter() - start)
        print(f"dialogues: {len(ids)}")
        print(f"save_median_s: {statistics.median(saves):.4f}")
        for name, work_fn in (
            ("items_s", lambda: annotations.items(project, "a")),
            ("final_s", lambda: annotations.final(project, dataset)),
            (
                "agreement_s",
                lambda: agreement_table(
                    annotations.annotations(project), annotations.project(project)
                ),
            ),
            ("export_s", lambda: export_lines(annotations, project, dataset, b"k" * 32)),
        ):
            start = time.perf_counter()
            work_fn()
            print(f"{name}: {time.perf_counter() - start:.3f}")


if __name__ == "__main__":
    main()
