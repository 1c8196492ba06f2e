"""Translated variants in studies and on the rating page (issue 65, item 2): a study built
on runs with variants holds the variant replies; a Korean rater is given ``ko-from-en``
replies, an English rater ``en-from-ko``; the rater reads the dialogue in the variant's
text, under the rating form of the language it is written in."""

from __future__ import annotations

from pathlib import Path

from koed_core.db import RaterProfile, Store, StudyConfig
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.variants import CELLS
from koed_core.models.backends import make_client
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.models.variant_texts import import_lines
from koed_core.paths import SAMPLE_FILE
from koed_core.rating.studies import StudyRules
from tests.test_variants import translation_lines

SAMPLE = load_dataset(SAMPLE_FILE)
CHOSEN = SAMPLE.dialogues[:3]


def four_cell_run(store: Store) -> str:
    """The human reference answering the three dialogues in all four cells; the
    variants' texts start with KT: (ko-from-en) and ET: (en-from-ko)."""
    import_lines(store, SAMPLE, translation_lines("ko-from-en", CHOSEN, "KT"), "J. Kim")
    import_lines(store, SAMPLE, translation_lines("en-from-ko", CHOSEN, "ET"), "J. Kim")
    spec = ModelSpec(name="human", backend="human")
    request = RunRequest("human", langs=CELLS, protocol="direct")
    report = run_benchmark(store, make_client(spec), spec, CHOSEN, SAMPLE.sha256, request)
    return report.run_id


def _drain(ratings: StudyRules, study_id: int, username: str) -> list[tuple[str, str]]:
    """Every item the rater is given, rated at once: (lang, first context line)."""
    seen = []
    while (item := ratings.next_item(study_id, username)) is not None:
        if item.kind != "attention":
            seen.append((item.lang, item.context[0][1]))
        scores = {c: item.instructed_score or 3 for c in ("EX", "IP", "ER", "EEA", "CA")}
        ratings.save_rating(item.assignment_id, username, scores)
    return seen


def test_a_study_on_a_run_with_variants_gives_each_rater_the_variant_of_their_language(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "k.db")
    run_id = four_cell_run(store)
    ratings = StudyRules(store)
    study = ratings.create_study(
        StudyConfig(
            name="four cells", run_ids=(run_id,), langs=("ko", "en"), overlap=1, attention_checks=0
        ),
        SAMPLE,
    )
    items = store.rows("select lang, context from study_items where study_id = ?", [study])
    assert sorted({r["lang"] for r in items}) == sorted(CELLS)  # the variant replies are in
    for lang in ("ko", "en"):
        ratings.save_profile(RaterProfile(f"r-{lang}", (lang,), lang, 30.0, 30.0))
        ratings.mark_calibrated(f"r-{lang}")
    korean, english = _drain(ratings, study, "r-ko"), _drain(ratings, study, "r-en")
    assert {lang for lang, _text in korean} == {"ko", "ko-from-en"}
    assert {lang for lang, _text in english} == {"en", "en-from-ko"}
    # the rater reads the dialogue the model saw: the variant's own text
    assert all(text.startswith("KT:") for lang, text in korean if lang == "ko-from-en")
    assert all(text.startswith("ET:") for lang, text in english if lang == "en-from-ko")
    assert not any(
        text.startswith(("KT:", "ET:")) for lang, text in korean + english if lang in ("ko", "en")
    )


def test_the_rating_form_of_a_variant_item_is_in_the_language_it_is_written_in() -> None:
    """A ko-from-en item is drawn with the Korean role names and rubric (it was a
    KeyError: the roles and rubric were looked up by the cell's name)."""
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from components.rating.rating_view import render_item, rubric_form

        render_item([("speaker", "KT: 안녕하세요")], "KT: 반가워요", "ko-from-en")
        rubric_form("variant-form", "ko-from-en")

    at = AppTest.from_function(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "화자: KT: 안녕하세요" in [t.value for t in at.text]
    assert any("CA · " in r.label and "문화" in r.label for r in at.radio)
