"""The loader on the official file, on the shipped sample and on broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from koed_core import i18n
from koed_core.dialogues.dataset import load_dataset, parse_dataset
from koed_core.dialogues.labels import all_labels, label_names
from koed_core.errors import DatasetError
from koed_core.paths import SAMPLE_FILE


def test_official_file_figures(official_file: Path) -> None:
    ds = load_dataset(official_file)
    stats = ds.stats()
    assert ds.sha256 == "aa4938164ce7c0c2bb4006d4c8f5ad65f168b3d99c718492810fffd30ef0b8b2"
    assert stats.dialogues == 1360
    assert stats.labels == 34
    assert stats.label_sets == 285
    assert stats.turns == 7820
    # 644 turns without "utter" + 1,172 with an empty one (shared/data/README.md)
    assert stats.ko_only_turns == 644 + 1172
    assert stats.en_only_turns == 2
    assert stats.korean_emotion_dialogues == 80
    assert stats.warnings["repeated_label"] == 10
    assert stats.warnings["utter_idx_order"] == 13
    assert stats.warnings["single_turn"] == 2
    assert stats.warnings["ko_missing"] == 2


@pytest.mark.slow
def test_official_quirks_are_normalised(official_file: Path) -> None:
    ds = load_dataset(official_file)
    handcrafted = ds.get("hit:100000_conv:80")
    assert handcrafted is not None and handcrafted.labels == ("jeong",)
    assert handcrafted.korean_emotion
    first = ds.get("hit:11_conv:22")
    assert first is not None and first.labels == ("afraid", "grateful")
    assert first.turns[0].user_id == "15"  # 15.0 in the file
    assert "_comma_" not in first.turns[2].en and "OK, though" in first.turns[2].en
    repeated = [
        d
        for d in ds.dialogues
        if any(w.kind == "repeated_label" and w.conv_id == d.conv_id for w in ds.warnings)
    ]
    assert len(repeated) == 10 and all(len(d.labels) == 1 for d in repeated)
    out_of_order = ds.get("hit:636_conv:1273")
    assert out_of_order is not None
    assert [t.source_idx for t in out_of_order.turns] == [1, 2, 3, 4, 5, 6, 5]
    assert [t.position for t in out_of_order.turns] == [1, 2, 3, 4, 5, 6, 7]
    assert [t.role for t in out_of_order.turns][-1] == "speaker"
    assert all("_comma_" not in t.en for d in ds.dialogues for t in d.turns)


def test_labels_file_has_34_with_glosses() -> None:
    labels = all_labels()
    assert len(labels) == 34 == len(set(label_names()))
    assert {"jeong", "han"} <= set(label_names())
    assert all(label.ko for label in labels)
    assert {label.name for label in labels if label.origin == "korean"} == {"jeong", "han"}


def test_sample_has_one_dialogue_per_label_in_both_languages(official_file: Path) -> None:
    sample = load_dataset(SAMPLE_FILE)
    primary = [d.labels[0] for d in sample.dialogues]
    assert sorted(primary) == sorted(label_names())
    assert all(d.situation_ko and d.situation_en for d in sample.dialogues)
    assert sample.stats().ko_only_turns > 0
    # Written by the team: no sentence of the sample appears in KoED.
    official = load_dataset(official_file)
    theirs = {t for d in official.dialogues for turn in d.turns for t in (turn.ko, turn.en) if t}
    ours = {t for d in sample.dialogues for turn in d.turns for t in (turn.ko, turn.en) if t}
    assert not ours & theirs


GOOD = {
    "conv_id": "c1",
    "ko_situation": "상황",
    "situation": "situation",
    "emotion": ["sad", "lonely"],
    "dialogue": [{"utter_idx": 1, "ko_utter": "안녕", "utter": "hi", "user_id": 1}],
}


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "broken.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def _with(**changes: object) -> str:
    record = {**GOOD, **changes}
    return json.dumps([{k: v for k, v in record.items() if v is not ...}])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "the file is empty"),
        ("   \n", "the file is empty"),
        ("{not json", "not valid JSON"),
        (json.dumps([GOOD])[:-10], "truncated"),
        (json.dumps({"data": [GOOD]}), "expected a JSON array of records, found an object"),
        ("[]", "holds no records"),
        ("[1]", "record 0, field '(record)': expected an object, found int"),
        (_with(conv_id=...), "record 0, field 'conv_id': missing"),
        (_with(emotion=...), "record 0, conv_id 'c1', field 'emotion': missing"),
        (_with(dialogue=...), "field 'dialogue': missing"),
        (
            _with(emotion=["sadd"]),
            "unknown label 'sadd', not one of the 34 KoED labels; did you mean 'sad'",
        ),
        (_with(emotion=[]), "the list of labels is empty"),
        (_with(emotion=5), "must be a label or a list of labels"),
        (
            _with(dialogue=[{"utter_idx": 1, "ko_utter": "", "utter": ""}]),
            "field 'dialogue[0]': the turn has no text in either language",
        ),
        (_with(dialogue=[]), "has no turns"),
        (_with(dialogue=[{"ko_utter": 3}]), "field 'dialogue[0].ko_utter': must be a string"),
        (_with(situation=None), "field 'situation': must be a string"),
        (
            json.dumps([GOOD, GOOD]),
            "record 1, conv_id 'c1', field 'conv_id': repeats the conv_id of record 0",
        ),
        (b"\xff\xfe[", "not UTF-8"),
    ],
)
def test_malformed_files_name_file_record_and_field(
    tmp_path: Path, content: str | bytes, expected: str
) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert str(path) in message
    assert expected in message


def test_missing_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(tmp_path / "nope.json")


def test_every_problem_is_listed_not_only_the_first(tmp_path: Path) -> None:
    records = [{**GOOD, "conv_id": f"c{i}", "emotion": ["nope"]} for i in range(12)]
    with pytest.raises(DatasetError) as info:
        load_dataset(_write(tmp_path, json.dumps(records)))
    assert len(info.value.problems) == 12
    assert "12 problems" in str(info.value) and "and 2 more" in str(info.value)


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"emotion": ["sad", "sad"]}, "repeated_label"),
        (
            {
                "dialogue": [
                    {"utter_idx": 2, "ko_utter": "가", "utter": "a", "user_id": 1},
                    {"utter_idx": 1, "ko_utter": "나", "utter": "b", "user_id": 2},
                ]
            },
            "utter_idx_order",
        ),
        ({"dialogue": [{"utter_idx": 1, "ko_utter": "", "utter": "only english"}]}, "ko_missing"),
        (
            {
                "dialogue": [
                    {"utter_idx": 1, "ko_utter": "가", "user_id": ""},
                    {"utter_idx": 2, "ko_utter": "나", "user_id": None},
                ]
            },
            "user_id_missing",
        ),
    ],
)
def test_recoverable_oddities_load_with_a_warning(change: dict[str, object], kind: str) -> None:
    ds = parse_dataset(json.dumps([{**GOOD, **change}]).encode())
    assert len(ds) == 1
    assert [w.kind for w in ds.warnings if w.kind == kind] == [kind]
    assert ds.warnings[0].conv_id == "c1"


def test_string_label_and_korean_only_turn() -> None:
    record = {**GOOD, "emotion": "han", "dialogue": [{"ko_utter": "한국어만", "user_id": 3.0}]}
    ds = parse_dataset(json.dumps([record]).encode())
    dialogue = ds.dialogues[0]
    assert dialogue.labels == ("han",)
    assert dialogue.turns[0].ko_only and dialogue.ko_only_turns == 1
    assert dialogue.turns[0].user_id == "3"


def test_problems_and_oddities_are_read_in_the_readers_language(tmp_path: Path) -> None:
    """A dataset is loaded once per server; each reader reads what is wrong with it in
    their own language, with the same record, field and values."""
    records = [{**GOOD, "emotion": ["sadd"]}, {**GOOD, "conv_id": "c2", "emotion": 5}]
    path = _write(tmp_path, json.dumps(records))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    with i18n.speaking("ko"):
        korean = str(info.value)
    english = str(info.value)
    assert "unknown label 'sadd'" in english and "did you mean 'sad'" in english
    assert "데이터셋을 불러올 수 없습니다" in korean and "문제 2건" in korean
    assert "알 수 없는 레이블 'sadd'" in korean and "'sad'을(를) 뜻했나요" in korean
    assert "레코드 1, conv_id 'c2', 필드 'emotion'" in korean
    assert "unknown label" not in korean
    oddity = parse_dataset(json.dumps([{**GOOD, "emotion": ["sad", "sad"]}]).encode())
    warning = oddity.warnings[0]
    assert warning.text == "label 'sad' is listed twice; kept once"
    with i18n.speaking("ko"):
        assert warning.text == "레이블 'sad'이(가) 두 번 적혀 있어 한 번만 남겼습니다"
