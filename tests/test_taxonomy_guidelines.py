"""Guidelines at hand: a taxonomy type carries a guideline in Korean and English
and examples; an open project takes a revised taxonomy that keeps every code, and the
annotations already made keep the version they were made with."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.revision import revise_taxonomy
from koed_core.annotation.spans import Span, side_at
from koed_core.annotation.taxonomy import (
    CONTEXT_MODIFIED,
    AnnotationError,
    load_taxonomy,
    parse_taxonomy,
)
from koed_core.db import Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.paths import SAMPLE_FILE

ROOT = Path(__file__).resolve().parents[1]
BASE = {"name": "t", "version": "1", "types": [{"code": "places", "en": "Places", "ko": "장소"}]}


def test_every_shipped_type_has_a_guideline_in_both_languages() -> None:
    taxonomy = load_taxonomy()
    for kind in taxonomy.types:
        assert kind.guide_en and kind.guide_ko, kind.code
        assert any("\uac00" <= c <= "\ud7a3" for c in kind.guide_ko), kind.code
    places = taxonomy.get("places")
    assert places is not None and ("편의점", "a convenience store") in places.examples
    assert places.guide("ko") == places.guide_ko and places.guide("en") == places.guide_en


def test_a_type_without_a_guideline_keeps_its_version_and_falls_back_to_its_hint() -> None:
    plain = parse_taxonomy({**BASE, "types": [{**BASE["types"][0], "hint": "a place"}]}, "t")
    assert list(plain.as_rows()[0]) == ["code", "en", "ko", "hint"]  # as before: same hash
    kind = plain.types[0]
    assert kind.guide("ko") == kind.guide("en") == "a place"
    guided = parse_taxonomy(
        {**BASE, "types": [{**BASE["types"][0], "guide_en": "Mark the place."}]}, "t"
    )
    assert guided.version != plain.version  # a rewritten guideline is another version
    assert guided.types[0].guide("ko") == "Mark the place."  # the other language, else


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"examples": "편의점"}, "examples are"),
        ({"examples": [{"en": "store"}]}, "examples are"),
        ({"examples": [{"ko": 3}]}, "examples are"),
        ({"guide_en": ["x"]}, "guide_en and guide_ko are text"),
    ],
)
def test_a_bad_guideline_is_named(entry: dict[str, object], said: str) -> None:
    with pytest.raises(AnnotationError, match=said):
        parse_taxonomy({**BASE, "types": [{**BASE["types"][0], **entry}]}, "t.toml")


def test_a_revised_taxonomy_keeps_every_code_and_old_answers_their_version(
    tmp_path: Path,
) -> None:
    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    store = AnnotationRules(Store(tmp_path / "k.db"))
    first = parse_taxonomy(BASE, "t")
    project = store.create_project("p", dataset, [dialogue.conv_id], 2, [], first)
    text = dialogue.turns[2].ko
    at = text.index("편의점")
    span = Span(side_at(dialogue, "ko", 3, at, at + 3), "places", no_counterpart=True)
    store.save(project, dialogue, "ann1", CONTEXT_MODIFIED, "", [span], submit=True)
    dropping = parse_taxonomy(
        {**BASE, "version": "2", "types": [{"code": "food", "en": "Food", "ko": "음식"}]}, "t"
    )
    with pytest.raises(AnnotationError, match="missing: places"):
        revise_taxonomy(store, project, dropping)
    assert store.project(project)["taxonomy_version"] == first.version
    revised = parse_taxonomy(
        {
            **BASE,
            "version": "2",
            "types": [
                {**BASE["types"][0], "guide_en": "Mark the place."},
                {"code": "food", "en": "Food", "ko": "음식"},
            ],
        },
        "t",
    )
    assert revise_taxonomy(store, project, revised) == revised.version
    assert store.taxonomy(store.project(project)).codes == ("places", "food")
    store.save(project, dialogue, "ann2", CONTEXT_MODIFIED, "", [span], submit=True)
    versions = {a.annotator: a.taxonomy_version for a in store.annotations(project)}
    assert versions == {"ann1": first.version, "ann2": revised.version}
    store.close(project)
    with pytest.raises(AnnotationError, match="is closed"):
        revise_taxonomy(store, project, revised)


# Taxonomy limits ---------------------------------------------------------------------


def _types(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"code": f"t{i}", "en": f"Type {i}", "ko": f"유형 {i}", **extra} for i in range(n)]


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({"name": "big", "version": "1", "types": _types(20_000)}, "20,000 types: at most 200"),
        ({"name": "x" * 1_000_000, "version": "1", "types": _types(2)}, "'name' is 1,000,000"),
        (
            {"name": "t", "version": "1", "types": [{"code": "a", "en": "e" * 81, "ko": "k"}]},
            "type 'a': 'en' is 81 characters",
        ),
        (
            {"name": "t", "version": "1", "types": _types(1, guide_en="g" * 8_001)},
            "type 't0': 'guide_en' is 8,001 characters",
        ),
        (
            {"name": "t", "version": "1", "types": _types(1, hint="h" * 501)},
            "type 't0': 'hint' is 501 characters",
        ),
        (
            {
                "name": "t",
                "version": "1",
                "types": _types(1, examples=[{"ko": "가", "en": "a"}] * 21),
            },
            "type 't0': 21 examples",
        ),
    ],
)
def test_a_taxonomy_past_its_limits_is_refused_with_a_sentence(
    raw: dict[str, Any], said: str
) -> None:
    with pytest.raises(AnnotationError, match=re.escape(said)):
        parse_taxonomy(raw, "big.toml")


def test_a_taxonomy_file_past_its_size_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "huge.toml"
    big.write_text('name = "t"\nversion = "1"\n# ' + "x" * 1_100_000 + "\n", encoding="utf-8")
    with pytest.raises(AnnotationError, match="huge.toml: .* at most 1 MB"):
        load_taxonomy(big)
    shipped = load_taxonomy()
    assert len(shipped.types) <= 200


def test_the_limits_are_stated_in_the_security_docs() -> None:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    for said in ("200 types", "80 characters", "8,000 characters", "1 MB"):
        assert said in text, said
