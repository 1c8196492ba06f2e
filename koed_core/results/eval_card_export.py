"""The human-evaluation cards in the paper bundle (``koed export``): one Markdown section
and one JSON record per study with ratings (:mod:`koed_core.results.eval_card`)."""

from __future__ import annotations

import json
from pathlib import Path

from koed_core.db import Ratings, Store
from koed_core.results import eval_card

CARD_FILES = {
    "human_evaluation.md": "The human-evaluation card of each study with ratings: "
    "instructions and consent versions, platform, pay per hour, raters and their languages, "
    "attention checks, exclusions, agreement with CIs and the judge configuration, each "
    "with where it came from and the checklist question it answers (ARR D1-D5, HEDS); "
    "'not recorded' where the database holds nothing.",
    "human_evaluation.json": "The same cards as JSON (study_id, items: key, label, value, "
    "source, checklist, recorded).",
}


def write_cards(store: Store, out: Path) -> list[Path]:
    """Add the two files to a bundle folder and list them in its README."""
    studies = [int(s["id"]) for s in Ratings(store).studies_with_ratings()]
    cards = {study: eval_card.card(store, study) for study in studies}
    text = "# Human evaluation\n\n" + (
        "\n".join(eval_card.as_markdown(s, items) for s, items in cards.items())
        or "No study has ratings.\n"
    )
    (out / "human_evaluation.md").write_text(text, encoding="utf-8")
    records = [{"study_id": s, "items": eval_card.as_json(i)} for s, i in cards.items()]
    (out / "human_evaluation.json").write_text(
        json.dumps(records, ensure_ascii=False, indent=1, default=str), encoding="utf-8"
    )
    readme = out / "README.md"
    rows = "".join(f"| {name} | {text} |\n" for name, text in CARD_FILES.items())
    readme.write_text(readme.read_text(encoding="utf-8") + rows, encoding="utf-8")
    for name in CARD_FILES:
        (out / name).chmod(0o600)
    return [out / name for name in CARD_FILES]
