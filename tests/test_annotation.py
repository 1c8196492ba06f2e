"""Annotation of the adaptation: spans in code points, blind projects, agreement, breakdown."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

from koed_core.annotation import agreement, exchange
from koed_core.annotation.projects import ADJUDICATED, Annotation, AnnotationRules
from koed_core.annotation.spans import Side, Span, find, side_at, span_from_dict, span_to_dict
from koed_core.annotation.taxonomy import (
    CONTEXT_MODIFIED,
    HANDCRAFTED,
    SIMPLY_TRANSFERRED,
    AnnotationError,
    load_taxonomy,
)
from koed_core.db import Store
from koed_core.dialogues.dataset import Dataset, parse_dataset
from koed_core.results import adaptation_gaps

NFD = unicodedata.normalize("NFD", "한국 눈치")  # jamo: each syllable 2-3 code points
EMOJI_KO = f"오늘 김치찌개🍲를 먹었어요. 👩‍👩‍👧 가족이랑 정을 느꼈어 {NFD}"


def _record(n: int, labels: list[str], ko: str = "", en: str = "") -> dict[str, object]:
    return {
        "conv_id": f"t:{n}",
        "ko_situation": f"상황 {n}",
        "situation": f"Situation {n}",
        "emotion": labels,
        "dialogue": [
            {"utter_idx": 1, "ko_utter": ko or f"말 {n}", "utter": en or f"Line {n}"},
            {"utter_idx": 2, "ko_utter": "그랬구나.", "utter": "I see."},
        ],
    }


@pytest.fixture
def dataset() -> Dataset:
    records = [_record(1, ["joyful"], EMOJI_KO, "Today I had pizza 🍕 with my family.")]
    records += [_record(n, ["sad"]) for n in range(2, 9)]
    records.append(_record(9, ["jeong"]))
    return parse_dataset(json.dumps(records, ensure_ascii=False).encode())


@pytest.fixture
def annotations(tmp_path: Path) -> AnnotationRules:
    """The annotation rules over a fresh database (test_annotation_formats takes it too)."""
    return AnnotationRules(Store(tmp_path / "koed.db"))


def first_turn_span(
    dataset: Dataset, conv_id: str, needle: str, kind: str, en: str | None = None
) -> Span:
    """A span of type ``kind`` over ``needle`` in the first turn's Korean, with ``en`` its
    English counterpart in the same turn (None: no counterpart)."""
    dialogue = dataset.get(conv_id)
    assert dialogue is not None
    start, end = find(dialogue.turns[0].ko, needle)
    en_side = None
    if en is not None:
        es, ee = find(dialogue.turns[0].en, en)
        en_side = side_at(dialogue, "en", 1, es, ee)
    return Span(
        ko=side_at(dialogue, "ko", 1, start, end),
        type=kind,
        en=en_side,
        no_counterpart=en is None,
    )


def test_spans_round_trip_in_code_points_on_hangul_jamo_and_emoji(
    dataset: Dataset, annotations: AnnotationRules, tmp_path: Path
) -> None:
    dialogue = dataset.get("t:1")
    assert dialogue is not None and dialogue.turns[0].ko == EMOJI_KO  # never normalised
    project = annotations.create_project("p", dataset, ["t:1"], per_item=1)
    spans = [
        first_turn_span(dataset, "t:1", "김치찌개🍲", "food", en="pizza 🍕"),
        first_turn_span(dataset, "t:1", "👩‍👩‍👧", "hierarchy", en="family"),
        first_turn_span(dataset, "t:1", unicodedata.normalize("NFD", "눈치"), "values"),  # as jamo
    ]
    assert spans[0].ko.start == 3 and spans[0].ko.end == 8  # the emoji is one code point
    annotations.save(project, dialogue, "ann1", CONTEXT_MODIFIED, "메모 📝", spans)
    # A fresh store on the same file: what a reload sees.
    again = AnnotationRules(Store(tmp_path / "koed.db")).own(project, "t:1", "ann1")
    assert again is not None and again.spans == tuple(spans) and again.note == "메모 📝"
    for span in again.spans:
        assert EMOJI_KO[span.ko.start : span.ko.end] == span.ko.text
    assert again.spans[2].ko.text == unicodedata.normalize("NFD", "눈치")
    # The JSON form round-trips as well.
    assert [span_from_dict(span_to_dict(s), "x") for s in again.spans] == list(again.spans)


def test_offsets_counted_in_utf16_are_refused_with_a_hint(
    dataset: Dataset, annotations: AnnotationRules
) -> None:
    dialogue = dataset.get("t:1")
    assert dialogue is not None
    project = annotations.create_project("p", dataset, ["t:1"], per_item=1)
    # "를" right after the emoji: JavaScript counts the emoji as two units.
    utf16 = len(EMOJI_KO[:8].encode("utf-16-le")) // 2
    assert EMOJI_KO[8] == "를" and utf16 == 9
    bad = Span(ko=Side(1, utf16, utf16 + 1, "를"), type="food", no_counterpart=True)
    with pytest.raises(AnnotationError, match="UTF-16"):
        annotations.save(project, dialogue, "ann1", CONTEXT_MODIFIED, "", [bad])
    with pytest.raises(AnnotationError, match="not in taxonomy"):
        annotations.save(
            project, dialogue, "ann1", None, "", [Span(Side(1, 0, 2, "오늘"), "sushi", None, True)]
        )
    other_turn = Span(Side(1, 0, 2, "오늘"), "food", Side(2, 0, 1, "I"))
    with pytest.raises(AnnotationError, match="same turn"):
        annotations.save(project, dialogue, "ann1", None, "", [other_turn])
    with pytest.raises(AnnotationError, match="no English counterpart"):
        annotations.save(project, dialogue, "ann1", None, "", [Span(Side(1, 0, 2, "오늘"), "food")])


def test_categories_follow_the_file_for_jeong_and_han(
    dataset: Dataset, annotations: AnnotationRules
) -> None:
    project = annotations.create_project("p", dataset, ["t:2", "t:9"], per_item=1)
    jeong, ed = dataset.get("t:9"), dataset.get("t:2")
    assert jeong is not None and ed is not None
    saved = annotations.save(project, jeong, "ann1", None, "", [], submit=True)
    assert saved.category == HANDCRAFTED
    with pytest.raises(AnnotationError, match="handcrafted"):
        annotations.save(project, ed, "ann1", HANDCRAFTED, "", [])
    with pytest.raises(AnnotationError, match="before submitting"):
        annotations.save(project, ed, "ann1", None, "", [], submit=True)


def test_annotators_are_blind_until_both_submitted_then_frozen(
    dataset: Dataset, annotations: AnnotationRules
) -> None:
    project = annotations.create_project(
        "p", dataset, ["t:1", "t:2"], annotators=["alice", "bob", "carol"]
    )
    dialogue = dataset.get("t:2")
    assert dialogue is not None
    annotations.save(project, dialogue, "alice", CONTEXT_MODIFIED, "mine", [], submit=True)
    items = annotations.items(project, "bob")
    shown = items.to_string()
    assert "alice" not in shown and CONTEXT_MODIFIED not in shown and "mine" not in shown
    assert annotations.others(project, "t:2", "alice") == []  # b has not answered
    annotations.save(project, dialogue, "bob", SIMPLY_TRANSFERRED, "", [], submit=False)
    assert annotations.others(project, "t:2", "bob") == []  # b's is a draft
    with pytest.raises(AnnotationError, match="already has its 2 annotators"):
        annotations.save(project, dialogue, "carol", SIMPLY_TRANSFERRED, "", [])
    annotations.save(project, dialogue, "bob", SIMPLY_TRANSFERRED, "", [], submit=True)
    seen = annotations.others(project, "t:2", "alice")
    assert [(o.annotator, o.category) for o in seen] == [("bob", SIMPLY_TRANSFERRED)]
    with pytest.raises(AnnotationError, match="frozen"):
        annotations.save(project, dialogue, "alice", SIMPLY_TRANSFERRED, "", [], submit=True)
    with pytest.raises(AnnotationError, match="not an annotator"):
        annotations.save(project, dialogue, "zed", SIMPLY_TRANSFERRED, "", [])
    assert annotations.next_item(project, "carol") == "t:1"  # t:2 is full


def test_adjudication_becomes_the_final_answer(
    dataset: Dataset, annotations: AnnotationRules
) -> None:
    project = annotations.create_project("p", dataset, ["t:1", "t:2", "t:3"])
    one = dataset.get("t:1")
    assert one is not None
    food = first_turn_span(dataset, "t:1", "김치찌개", "food", en="pizza")
    with pytest.raises(AnnotationError, match="complete"):
        annotations.adjudicate(project, one, "boss", CONTEXT_MODIFIED, "", [food])
    annotations.save(project, one, "a", CONTEXT_MODIFIED, "", [food], submit=True)
    annotations.save(project, one, "b", SIMPLY_TRANSFERRED, "", [], submit=True)
    final = annotations.final(project, dataset).set_index("conv_id")
    assert final.loc["t:1", "basis"] == "undecided" and final.loc["t:1", "category"] is None
    annotations.adjudicate(project, one, "boss", CONTEXT_MODIFIED, "agreed at review", [food])
    final = annotations.final(project, dataset).set_index("conv_id")
    assert final.loc["t:1", "basis"] == ADJUDICATED
    assert final.loc["t:1", "types"] == ["food"]


def _annotation(conv_id: str, who: str, category: str, spans: tuple[Span, ...] = ()) -> Annotation:
    return Annotation(1, conv_id, who, "annotator", category, "", "submitted", "1-x", spans)


def test_cohen_kappa_matches_scikit_learn_and_statsmodels() -> None:
    rng = np.random.default_rng(3)
    cats = [SIMPLY_TRANSFERRED, CONTEXT_MODIFIED]
    first = rng.integers(0, 2, 60)
    second = np.where(rng.random(60) < 0.7, first, 1 - first)
    items = []
    for i, (x, y) in enumerate(zip(first, second, strict=True)):
        items += [_annotation(f"c{i}", "a", cats[x]), _annotation(f"c{i}", "b", cats[y])]
    result = agreement.category_agreement(items, per_item=2)
    assert result["method"] == "Cohen's kappa"
    reference = cohen_kappa_score(first, second)
    table = pd.crosstab(first, second).to_numpy()
    assert result["kappa"] == pytest.approx(reference, abs=1e-4)
    assert result["kappa"] == pytest.approx(cohens_kappa(table).kappa, abs=1e-4)
    assert result["ci_low"] < result["kappa"] < result["ci_high"]


def test_fleiss_kappa_matches_statsmodels_for_three_annotators() -> None:
    rng = np.random.default_rng(5)
    cats = [SIMPLY_TRANSFERRED, CONTEXT_MODIFIED]
    truth = rng.integers(0, 2, 40)
    answers = np.array([np.where(rng.random(40) < 0.8, truth, 1 - truth) for _ in range(3)]).T
    items = [
        _annotation(f"c{i}", who, cats[answers[i, j]])
        for i in range(40)
        for j, who in enumerate("xyz")
    ]
    result = agreement.category_agreement(items, per_item=3)
    counts = np.stack([(answers == k).sum(axis=1) for k in (0, 1)], axis=1)
    assert result["method"] == "Fleiss' kappa"
    assert result["kappa"] == pytest.approx(fleiss_kappa(counts), abs=1e-4)
    assert result["dialogues"] == 40


def test_kappa_of_one_category_only_is_undefined_not_a_number() -> None:
    items = [_annotation(f"c{i}", w, SIMPLY_TRANSFERRED) for i in range(4) for w in "ab"]
    result = agreement.category_agreement(items, per_item=2)
    assert result["kappa"] is None and "undefined" in str(result["note"])


def _s(position: int, start: int, end: int, kind: str) -> Span:
    return Span(Side(position, start, end, "x" * (end - start)), kind, None, True)


def test_span_f1_exact_matches_scikit_learn_and_overlap_counts_near_misses() -> None:
    a = (_s(1, 0, 3, "food"), _s(1, 5, 8, "food"), _s(2, 0, 2, "names"), _s(3, 1, 4, "idioms"))
    b = (_s(1, 0, 3, "food"), _s(1, 6, 9, "food"), _s(2, 0, 2, "places"))
    items = [
        _annotation("c1", "a", CONTEXT_MODIFIED, a),
        _annotation("c1", "b", CONTEXT_MODIFIED, b),
    ]
    table = agreement.span_agreement(items).set_index("type")
    for kind in ("food", "names", agreement.ALL_TYPES):
        left = [s.key for s in a if kind in (agreement.ALL_TYPES, s.type)]
        right = [s.key for s in b if kind in (agreement.ALL_TYPES, s.type)]
        union = sorted(set(left) | set(right))
        reference = f1_score(
            [k in left for k in union], [k in right for k in union], zero_division=0
        )
        assert table.loc[kind, "exact_f1"] == pytest.approx(reference, abs=1e-4)
    assert table.loc["food", "exact_f1"] == pytest.approx(0.5)
    assert table.loc["food", "overlap_f1"] == pytest.approx(1.0)  # 5-8 and 6-9 overlap
    assert table.loc["names", "overlap_f1"] == 0  # same text, other type


@pytest.mark.slow
def test_breakdown_recovers_a_planted_category_gap(dataset: Dataset) -> None:
    final = pd.DataFrame(
        {
            "conv_id": [f"t:{n}" for n in range(1, 9)],
            "category": [CONTEXT_MODIFIED] * 4 + [SIMPLY_TRANSFERRED] * 4,
            "types": [["food"]] * 2 + [[]] * 6,
            "basis": ["adjudicated"] * 8,
            "annotators": [2] * 8,
        }
    )
    rows = []
    for n in range(1, 9):
        ko = 2.0 if n <= 4 else 4.0  # planted: -2 in adapted dialogues, 0 elsewhere
        rows += [
            {
                "run_id": "r",
                "conv_id": f"t:{n}",
                "lang": "en",
                "value": 4.0,
                "source": "judge",
                "metric": "CA",
            },
            {
                "run_id": "r",
                "conv_id": f"t:{n}",
                "lang": "ko",
                "value": ko,
                "source": "judge",
                "metric": "CA",
            },
        ]
    scores = pd.DataFrame(rows)
    project = {"id": 1, "name": "p", "taxonomy_version": "1-abc"}
    table = adaptation_gaps.breakdown(scores, final, "category", project).set_index("category")
    assert table.loc[CONTEXT_MODIFIED, "gap"] == pytest.approx(-2.0)
    assert table.loc[SIMPLY_TRANSFERRED, "gap"] == pytest.approx(0.0)
    assert set(table["annotation_project"]) == {"1: p"}
    by_type = adaptation_gaps.breakdown(scores, final, "signal_type", project).set_index(
        "signal_type"
    )
    assert by_type.loc["food", "gap"] == pytest.approx(-2.0)
    assert by_type.loc[adaptation_gaps.NO_SIGNAL, "pairs"] == 6

    # A gap of exactly 0 (simply transferred here) still draws: an outlined bar with its
    # value written on it, and the run named in the legend even when it is the only one.
    from koed_core.results.figures import breakdown_figure

    only_zero = table.reset_index()
    only_zero = only_zero[only_zero["category"] == SIMPLY_TRANSFERRED]
    fig = breakdown_figure(only_zero, "category", "CA", "The gap", "judge")
    (bar,) = fig.data
    assert list(bar.y) == [pytest.approx(0.0)] and bar.text == ("+0.00",)
    assert bar.marker.line.width > 0 and bar.name and fig.layout.showlegend is True


def test_drift_predicts_adaptation_when_adapted_dialogues_drift() -> None:
    final = pd.DataFrame(
        {
            "conv_id": [f"c{i}" for i in range(10)],
            "category": [CONTEXT_MODIFIED] * 5 + [SIMPLY_TRANSFERRED] * 5,
            "types": [[]] * 10,
        }
    )
    departures = pd.DataFrame(
        {"conv_id": [f"c{i}" for i in range(10)], "mean_similarity": [0.2] * 5 + [0.9] * 5}
    )
    assert adaptation_gaps.drift_predicts(departures, final)["auc"] == 1.0
    table = adaptation_gaps.similarity_by_category(departures, final).set_index("category")
    assert table.loc[CONTEXT_MODIFIED, "mean"] == pytest.approx(0.2)


def test_jsonl_round_trip_names_pseudonyms_and_refuses_a_bad_file_whole(
    dataset: Dataset, annotations: AnnotationRules, tmp_path: Path
) -> None:
    project = annotations.create_project("p", dataset, ["t:1", "t:2"])
    one = dataset.get("t:1")
    assert one is not None
    food = first_turn_span(dataset, "t:1", "김치찌개🍲", "food", en="pizza 🍕")
    annotations.save(project, one, "alice", CONTEXT_MODIFIED, "", [food], submit=True)
    annotations.save(project, one, "bob", CONTEXT_MODIFIED, "", [food], submit=True)
    lines = exchange.export_lines(annotations, project, dataset, b"k" * 32)
    assert len(lines) == 1 and "alice" not in json.dumps(lines)
    assert lines[0]["final"] == {"category": CONTEXT_MODIFIED, "types": ["food"], "basis": "agreed"}
    path = exchange.write_jsonl(lines, tmp_path / "out.jsonl")
    assert "김치찌개🍲" in path.read_text(encoding="utf-8")
    other = annotations.create_project("q", dataset, ["t:1", "t:2"])
    counts = exchange.import_lines(annotations, other, dataset, exchange.read_jsonl(path))
    assert counts == {"dialogues": 1, "annotations": 2, "spans": 2}
    again = [a for a in annotations.annotations(other)]
    assert [a.spans for a in again] == [(food,), (food,)]
    assert all(a.annotator.startswith(exchange.IMPORTED) for a in again)
    bad = tmp_path / "bad.jsonl"
    good_line = {"conv_id": "t:2", "annotator": "x", "category": SIMPLY_TRANSFERRED}
    bad.write_text(
        json.dumps(good_line)
        + "\n"
        + json.dumps({"conv_id": "t:2", "annotator": "y", "category": "odd"}),
        encoding="utf-8",
    )
    with pytest.raises(AnnotationError, match="line 2.*category 'odd'"):
        exchange.import_lines(annotations, other, dataset, exchange.read_jsonl(bad))
    assert len(annotations.annotations(other)) == 2  # the good first line was not kept
    # a dialogue both submitted without agreeing, not yet adjudicated: category null,
    # and the file strict JSON (NaN is no JSON: JavaScript's JSON.parse rejects it)
    split = annotations.create_project("split", dataset, ["t:1", "t:2"])
    two = dataset.get("t:2")
    assert two is not None
    annotations.save(split, one, "alice", CONTEXT_MODIFIED, "", [food], submit=True)
    annotations.save(split, one, "bob", CONTEXT_MODIFIED, "", [food], submit=True)
    annotations.save(split, two, "alice", CONTEXT_MODIFIED, "", [], submit=True)
    annotations.save(split, two, "bob", SIMPLY_TRANSFERRED, "", [], submit=True)
    undecided = exchange.export_lines(annotations, split, dataset, b"k" * 32)[1:]
    assert undecided[0]["final"] == {"category": None, "types": [], "basis": "undecided"}
    text = exchange.write_jsonl(undecided, tmp_path / "split.jsonl").read_text(encoding="utf-8")

    def no_constant(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    assert json.loads(text, parse_constant=no_constant)["final"]["category"] is None


def test_the_shipped_taxonomy_has_the_issues_types_and_a_stable_version() -> None:
    taxonomy = load_taxonomy()
    assert {
        "food",
        "honorifics",
        "hierarchy",
        "institutions",
        "customs",
        "places",
        "names",
        "idioms",
        "values",
        "other",
    } == set(taxonomy.codes)
    assert taxonomy.version == load_taxonomy().version and taxonomy.version.startswith("2-")


def test_the_bootstrap_kappas_and_aucs_are_the_libraries_values_draw_by_draw() -> None:
    rng = np.random.default_rng(9)
    matrix = rng.integers(0, 3, size=(30, 2))
    draws = rng.integers(0, 30, size=(20, 30))
    fast = agreement._boot_kappa(matrix, draws, 3, cohen=True)
    slow = [cohen_kappa_score(matrix[d, 0], matrix[d, 1]) for d in draws]
    assert fast == pytest.approx(slow, abs=1e-9)
    three = rng.integers(0, 2, size=(30, 3))
    fast = agreement._boot_kappa(three, draws, 2, cohen=False)
    slow = [
        fleiss_kappa(np.stack([(three[d] == c).sum(axis=1) for c in (0, 1)], axis=1)) for d in draws
    ]
    assert fast == pytest.approx(slow, abs=1e-9)
    y = rng.integers(0, 2, size=(20, 30))
    score = rng.integers(0, 5, size=(20, 30)).astype(float)  # ties on purpose
    from sklearn.metrics import roc_auc_score

    assert adaptation_gaps._boot_auc(y, score) == pytest.approx(
        [roc_auc_score(a, b) for a, b in zip(y, score, strict=True)], abs=1e-9
    )


def test_a_span_edge_inside_a_decomposed_syllable_or_an_emoji_sequence_is_refused(
    dataset: Dataset,
) -> None:
    dialogue = dataset.get("t:1")
    assert dialogue is not None
    text = dialogue.turns[0].ko
    nfd = text.index(unicodedata.normalize("NFD", "눈치"))
    family = text.index("👩‍👩‍👧")
    for start, end in ((nfd, nfd + 2), (nfd + 1, nfd + 3), (family, family + 1)):
        with pytest.raises(AnnotationError, match="inside a character"):
            side_at(dialogue, "ko", 1, start, end)
    assert side_at(dialogue, "ko", 1, family, family + 5).text == "👩‍👩‍👧"


def test_three_sessions_saving_one_fresh_dialogue_at_once_leave_two(
    dataset: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 31.9: three sessions saving the same fresh dialogue of a 2-per-dialogue
    project all got in (the limit was checked outside the write). Here each session has
    its own connection, as another process would, and each waits after reading the
    dialogue's annotators until the others have read too (or a second has passed): on the
    old code all three read "open" and all three were stored."""
    import contextlib
    import threading

    db = tmp_path / "koed.db"
    project = AnnotationRules(Store(db)).create_project(
        "p", dataset, ["t:2"], annotators=["alice", "bob", "carol"]
    )
    dialogue = dataset.get("t:2")
    assert dialogue is not None
    everyone_read = threading.Barrier(3)
    items = AnnotationRules.items

    def read_then_wait(self: AnnotationRules, *args: object) -> pd.DataFrame:
        frame = items(self, *args)  # type: ignore[arg-type]
        # taken one by one, nobody else can read meanwhile: the wait breaks after a second
        with contextlib.suppress(threading.BrokenBarrierError):
            everyone_read.wait(timeout=1.0)
        return frame

    monkeypatch.setattr(AnnotationRules, "items", read_then_wait)
    refused: list[str] = []

    def annotate(name: str) -> None:
        try:
            AnnotationRules(Store(db)).save(project, dialogue, name, CONTEXT_MODIFIED, "", [])
        except AnnotationError as err:
            refused.append(f"{name}: {err}")

    threads = [threading.Thread(target=annotate, args=(n,)) for n in ("alice", "bob", "carol")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    stored = Store(db).rows("select annotator from annotations where conv_id = 't:2'")
    assert len(stored) == 2, stored
    assert len(refused) == 1 and "already has its 2 annotators" in refused[0]


def test_location_f1_and_the_type_confusion_show_agreement_the_per_type_f1_hides() -> None:
    """The same words marked with two types scored 0 on both types; the
    location-only F1 counts them as agreement, and the confusion table says which types
    met there, so a taxonomy can be refined."""
    a = (_s(1, 0, 3, "food"), _s(2, 0, 2, "names"), _s(3, 1, 4, "idioms"), _s(4, 0, 2, "food"))
    b = (_s(1, 0, 3, "food"), _s(2, 0, 2, "places"), _s(3, 2, 6, "names"))
    items = [
        _annotation("c1", "a", CONTEXT_MODIFIED, a),
        _annotation("c1", "b", CONTEXT_MODIFIED, b),
    ]
    assert agreement.span_agreement(items).set_index("type").loc["names", "overlap_f1"] == 0
    location = agreement.location_agreement(items)
    assert location["exact_f1"] == pytest.approx(2 * 2 / 7, abs=1e-4)  # turns 1 and 2
    assert location["overlap_f1"] == pytest.approx(2 * 3 / 7, abs=1e-4)  # and turn 3
    table = agreement.type_confusion(items)
    none = agreement.NO_SPAN
    assert list(table.index) == ["food", "idioms", "names", "places", none]
    assert (table.to_numpy() == table.to_numpy().T).all()
    assert table.loc["food", "food"] == 2  # one agreed pair, counted from both sides
    assert table.loc["names", "places"] == 1 and table.loc["places", "names"] == 1
    assert table.loc["idioms", "names"] == 1  # overlapping texts, other types
    assert table.loc["food", none] == 1  # turn 4: marked by one annotator only
    # three matched pairs and one lone span, each counted in two mirrored cells
    assert table.to_numpy().sum() == 2 * 3 + 2 * 1
    rows = agreement.agreement_table(
        items, {"id": 1, "name": "p", "per_item": 2, "taxonomy_version": "v"}
    ).set_index("measure")
    assert rows.loc["span F1 location overlap", "value"] == location["overlap_f1"]
