"""Annotations out and back in as WebAnno TSV (INCEpTION), brat standoff and Label Studio
JSON: identical annotations after a round trip, the formats as their documentation shows
them, and bad files refused whole with a sentence."""

# ruff: noqa: F811 - the annotations fixture comes from tests/test_annotation.py

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from koed_core.annotation import exchange, formats
from koed_core.annotation.formats import layout, webanno
from koed_core.annotation.projects import Annotation, AnnotationRules
from koed_core.annotation.spans import Side, Span, side_at
from koed_core.annotation.taxonomy import (
    CONTEXT_MODIFIED,
    SIMPLY_TRANSFERRED,
    AnnotationError,
)
from koed_core.cli import main
from koed_core.db import Store
from koed_core.dialogues.dataset import Dataset, load_dataset, parse_dataset
from koed_core.paths import SAMPLE_FILE
from tests.conftest import place_span
from tests.test_annotation import annotations, first_turn_span  # noqa: F401 - a fixture

KEY = b"k" * 32
KO = "오늘 김치찌개🍲를 먹었어요. 👩‍👩‍👧 가족이랑 정을 느꼈어"  # emoji outside the BMP
EN = "Today I had pizza 🍕 with my family."
NOTE = "메모 | *x_y [1] -> a;b\\\n둘째 줄\t탭"  # every reserved character of TSV
COMMENT = "음식? | *x_y [1] -> a;b\\\n**굵게** 아님\t<b>"  # a span's comment: the same, and markup


def _record(n: int, ko: str, en: str) -> dict[str, object]:
    return {
        "conv_id": f"hit:{n}_conv:{n}",
        "ko_situation": f"상황 {n} 🍱",
        "situation": f"Situation {n}",
        "emotion": ["joyful"],
        "dialogue": [
            {"utter_idx": 1, "ko_utter": ko, "utter": en},
            {"utter_idx": 2, "ko_utter": "그랬구나.", "utter": "I see."},
            {"utter_idx": 3, "ko_utter": "응, 정말 좋았어.", "utter": ""},
        ],
    }


@pytest.fixture
def dataset() -> Dataset:
    records = [_record(1, KO, EN), _record(2, "말 2 떡볶이", "Line 2 fries")]
    return parse_dataset(json.dumps(records, ensure_ascii=False).encode())


def _annotated(dataset: Dataset, annotations: AnnotationRules) -> int:
    """A project with two annotators on each dialogue and a final answer on the first:
    spans ending inside a word, stacked on the same words, across two words, after an
    emoji, with and without an English counterpart, on the situation too."""
    one, two = dataset.get("hit:1_conv:1"), dataset.get("hit:2_conv:2")
    assert one is not None and two is not None
    project = annotations.create_project("p", dataset, [one.conv_id, two.conv_id])
    food = first_turn_span(dataset, one.conv_id, "김치찌개🍲", "food", en="pizza 🍕")
    stacked = first_turn_span(dataset, one.conv_id, "김치찌개🍲", "places")
    across = first_turn_span(dataset, one.conv_id, "찌개🍲를 먹었", "idioms", en="had pizza")
    family = first_turn_span(dataset, one.conv_id, "가족", "hierarchy", en="family")
    situation = Span(Side(0, 0, 2, "상황"), "places", Side(0, 0, 9, "Situation"))
    commented = dataclasses.replace(food, comment=COMMENT)
    across = dataclasses.replace(across, comment="한 줄 comment")
    annotations.save(
        project, one, "alice", CONTEXT_MODIFIED, NOTE, [commented, stacked, across, situation], True
    )
    annotations.save(project, one, "bob", CONTEXT_MODIFIED, "", [food, family], submit=True)
    annotations.adjudicate(project, one, "rev", CONTEXT_MODIFIED, "final", [food, family])
    annotations.save(project, two, "alice", SIMPLY_TRANSFERRED, "", [], submit=True)
    fries = first_turn_span(dataset, two.conv_id, "떡볶이", "food", en="fries")
    annotations.save(project, two, "bob", SIMPLY_TRANSFERRED, "", [fries], submit=True)
    return project


def _view(found: list[Annotation]) -> list[tuple[object, ...]]:
    """What must survive a round trip: dialogue, kind, category, note, spans (any order)."""
    return sorted((a.conv_id, a.kind, a.category, a.note, sorted(a.spans, key=repr)) for a in found)


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_every_format_round_trips_to_identical_annotations(
    fmt: str, dataset: Dataset, annotations: AnnotationRules, tmp_path: Path
) -> None:
    project = _annotated(dataset, annotations)
    written = formats.export(annotations, project, dataset, KEY, tmp_path / "out", fmt)
    assert any(p.name.startswith("annotation-agreement-") for p in written)
    source = {
        "jsonl": tmp_path / "out" / f"annotations-{project}.jsonl",
        "webanno-tsv": tmp_path / "out" / f"webanno-tsv-{project}",
        "brat": tmp_path / "out" / f"brat-{project}",
        "label-studio": tmp_path / "out" / f"label-studio-{project}.json",
    }[fmt]
    rows = formats.read(source, fmt, dataset)
    other = annotations.create_project("q", dataset, ["hit:1_conv:1", "hit:2_conv:2"])
    counts = exchange.import_lines(annotations, other, dataset, rows, where=source.name)
    assert counts == {"dialogues": 2, "annotations": 5, "spans": 9}
    before, after = annotations.annotations(project), annotations.annotations(other)
    assert _view(after) == _view(before)
    pseudonyms = {
        exchange.annotator_pseudonym(KEY, project, a.annotator): a.annotator for a in before
    }
    for a in after:  # stored under the import prefix, as the export's pseudonym
        assert a.annotator.startswith(exchange.IMPORTED)
        assert a.annotator.removeprefix(exchange.IMPORTED) in pseudonyms
    assert not any("alice" in p.read_text(encoding="utf-8") for p in written if p.is_file())


def test_webanno_tsv_is_written_as_inception_writes_it(
    dataset: Dataset, annotations: AnnotationRules, tmp_path: Path
) -> None:
    project = _annotated(dataset, annotations)
    formats.export(annotations, project, dataset, KEY, tmp_path, formats.WEBANNO)
    folder = tmp_path / f"webanno-tsv-{project}"
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 5 and all(
        re.fullmatch(r"hit%3A\d_conv%3A\d@a-[0-9a-f]{12}(@final)?\.tsv", n) for n in names
    )
    final = next(p for p in folder.iterdir() if p.stem.endswith("@final"))
    alice = exchange.annotator_pseudonym(KEY, project, "alice")
    text = (folder / f"hit%3A1_conv%3A1@{alice}.tsv").read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[:6] == [
        "#FORMAT=WebAnno TSV 3.3",
        "#T_SP=webanno.custom.CulturalSignal|type|comment",
        "#T_SP=webanno.custom.Dialogue|category|note",
        "#T_RL=webanno.custom.Counterpart|value|BT_webanno.custom.CulturalSignal",
        "",
        "",
    ]
    assert lines[6] == "#Text=상황 1 🍱"
    assert all(line.endswith("\t") for line in lines if re.match(r"\d+-\d", line))
    rows = {line.split("\t")[0]: line.split("\t") for line in lines if re.match(r"\d+-\d", line)}
    # 오늘 starts after "상황 1 🍱\n": 7 code points, 8 UTF-16 units (the lunch box is two)
    assert rows["2-1"][1:3] == ["8-10", "오늘"]
    # "김치찌개🍲" ends inside the token "김치찌개🍲를": a sub-token, two spans stacked on it
    assert rows["2-2.1"][1:3] == ["11-17", "김치찌개🍲"]
    assert re.fullmatch(r"food\[1\]\|places\[\d+\]", rows["2-2.1"][3])
    # the food span's comment beside its type, escaped; the stacked places span has none
    assert rows["2-2.1"][4] == webanno.escape_value(COMMENT) + "[1]|" + re.sub(
        r"^places", "*", rows["2-2.1"][3].split("|")[1]
    )
    # the span across two tokens carries one id on both units
    idiom = re.search(r"idioms\[(\d+)\]", rows["2-2.2"][3])
    assert idiom and f"idioms[{idiom.group(1)}]" in rows["2-3.1"][3]
    assert rows["1-1"][5:7] == ["context\\_modified", webanno.escape_value(NOTE)]
    assert rows["1-1"][6].count("\\n") == 1 and "\n" not in rows["1-1"][6]
    # the English "pizza 🍕" links back to the Korean food span (ids: governor_dependent)
    pizza = next(r for r in rows.values() if r[2] == "pizza")
    assert all(v.startswith("*") for v in pizza[4].split("|"))  # comments: the Korean side's
    assert pizza[7] == "*" and re.fullmatch(r"2-2\.1\[1_\d+\]", pizza[8])
    assert "#Text=응, 정말 좋았어." in lines  # a Korean-only turn is a sentence of its own
    # the final answer's food: its Korean sub-token and both tokens of "pizza 🍕"
    assert final.read_text(encoding="utf-8").count("\tfood") == 3


def test_brat_and_label_studio_files_follow_their_documentation(
    dataset: Dataset, annotations: AnnotationRules, tmp_path: Path
) -> None:
    project = _annotated(dataset, annotations)
    formats.export(annotations, project, dataset, KEY, tmp_path, formats.BRAT)
    folder = tmp_path / f"brat-{project}"
    conf = (folder / "annotation.conf").read_text(encoding="utf-8")
    assert "[entities]\nDialogue\nfood\n" in conf and "Category\tArg:Dialogue" in conf
    bob = exchange.annotator_pseudonym(KEY, project, "bob")
    txt = (folder / f"hit%3A1_conv%3A1@{bob}.txt").read_text(encoding="utf-8")
    ann = (folder / f"hit%3A1_conv%3A1@{bob}.ann").read_text(encoding="utf-8").splitlines()
    for line in ann:
        assert re.fullmatch(
            r"(T\d+\t\w+ \d+ \d+\t.+|R\d+\tCounterpart Arg1:T\d+ Arg2:T\d+|A\d+\tCategory T1 \w+)",
            line,
        ), line
        if line.startswith("T"):  # brat counts code points: the .txt sliced gives the text
            start, end = map(int, line.split("\t")[1].split()[1:])
            assert txt[start:end] == line.split("\t")[2]
    assert "A1\tCategory T1 context_modified" in ann
    alice = exchange.annotator_pseudonym(KEY, project, "alice")
    notes = (folder / f"hit%3A1_conv%3A1@{alice}.ann").read_text(encoding="utf-8").splitlines()
    food = next(line.split("\t")[0] for line in notes if line.startswith("T2\tfood "))
    escaped = COMMENT.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    assert f"#2\tAnnotatorNotes {food}\t{escaped}" in notes  # a comment on its Korean span
    formats.export(annotations, project, dataset, KEY, tmp_path, formats.LABEL_STUDIO)
    tasks = json.loads((tmp_path / f"label-studio-{project}.json").read_text(encoding="utf-8"))
    assert [t["data"]["conv_id"] for t in tasks] == ["hit:1_conv:1", "hit:2_conv:2"]
    first = tasks[0]
    assert [a["ground_truth"] for a in first["annotations"]].count(True) == 1
    assert all(isinstance(a["completed_by"], int) for a in first["annotations"])
    regions = [r for a in first["annotations"] for r in a["result"] if r["type"] == "labels"]
    for region in regions:
        assert region["from_name"] == "type" and region["to_name"] == "text"
        value = region["value"]
        assert first["data"]["text"][value["start"] : value["end"]] == value["text"]
    pizza = next(r["value"] for r in regions if r["value"]["text"] == "pizza 🍕")
    assert pizza["labels"] == ["food"]
    config = (tmp_path / f"label-studio-config-{project}.xml").read_text(encoding="utf-8")
    assert '<Labels name="type" toName="text">' in config
    assert '<TextArea name="comment" toName="text" perRegion="true"/>' in config
    alice_ls = next(a for a in first["annotations"] if not a["ground_truth"])
    comments = [r for r in alice_ls["result"] if r.get("from_name") == "comment"]
    labelled = {r["id"]: r["value"] for r in alice_ls["result"] if r["type"] == "labels"}
    assert {c["value"]["text"][0] for c in comments} == {COMMENT, "한 줄 comment"}
    for c in comments:  # per region: the id and the extent of the Korean region it is on
        assert c["type"] == "textarea" and c["id"].startswith("ko")
        assert (c["value"]["start"], c["value"]["end"]) == (
            labelled[c["id"]]["start"],
            labelled[c["id"]]["end"],
        )


def test_a_text_that_is_not_the_datasets_is_refused_and_nothing_is_stored(
    dataset: Dataset, annotations: AnnotationRules, tmp_path: Path
) -> None:
    project = _annotated(dataset, annotations)
    formats.export(annotations, project, dataset, KEY, tmp_path, formats.BRAT)
    folder = tmp_path / f"brat-{project}"
    victim = sorted(folder.glob("hit%3A2*.txt"))[-1]
    victim.write_text(
        victim.read_text(encoding="utf-8").replace("떡볶이", "떡국"), encoding="utf-8"
    )
    with pytest.raises(
        AnnotationError,
        match=rf"{re.escape(victim.name)}: its text is not the text of hit:2_conv:2",
    ):
        formats.read(folder, formats.BRAT, dataset)
    formats.export(annotations, project, dataset, KEY, tmp_path, formats.WEBANNO)
    tsv = sorted((tmp_path / f"webanno-tsv-{project}").glob("hit%3A2*.tsv"))[-1]
    tsv.write_text(
        tsv.read_text(encoding="utf-8").replace("Line 2 fries", "Line 2 chips"), encoding="utf-8"
    )
    with pytest.raises(AnnotationError, match="its text is not the text of hit:2_conv:2"):
        formats.read(tsv.parent, formats.WEBANNO, dataset)
    # A document that reads but does not check out: nothing of the others is stored.
    other = annotations.create_project("q", dataset, ["hit:1_conv:1", "hit:2_conv:2"])
    tsv.write_text(
        tsv.read_text(encoding="utf-8").replace("Line 2 chips", "Line 2 fries"), encoding="utf-8"
    )
    rows = formats.read(tsv.parent, formats.WEBANNO, dataset)
    rows[-1][1]["annotations"][0]["category"] = "odd"
    with pytest.raises(AnnotationError, match=rf"{re.escape(tsv.name)}, annotation 1: .*'odd'"):
        exchange.import_lines(annotations, other, dataset, rows)
    assert annotations.annotations(other) == []


def test_label_studio_offsets_in_utf16_units_are_refused_with_a_hint(
    dataset: Dataset, tmp_path: Path
) -> None:
    dialogue = dataset.get("hit:1_conv:1")
    assert dialogue is not None
    text = layout.layout(dialogue).text
    start = text.index("먹었어요")  # after two emoji: JavaScript counts two more
    units = layout.to_utf16(text, start)
    assert units == start + 2 and layout.from_utf16(text, units, "x") == start
    region = {
        "id": "r",
        "type": "labels",
        "from_name": "type",
        "to_name": "text",
        "value": {"start": units, "end": units + 4, "text": "먹었어요", "labels": ["food"]},
    }
    task = {
        "data": {"text": text, "conv_id": dialogue.conv_id},
        "annotations": [{"completed_by": 3, "result": [region]}],
    }
    path = tmp_path / "ls.json"
    path.write_text(json.dumps([task], ensure_ascii=False), encoding="utf-8")
    with pytest.raises(AnnotationError, match="ls.json task 1, annotation 1: .*UTF-16 units"):
        formats.read(path, formats.LABEL_STUDIO, dataset)
    region["value"]["start"], region["value"]["end"] = start, start + 4
    path.write_text(json.dumps([task], ensure_ascii=False), encoding="utf-8")
    ((_n, row),) = formats.read(path, formats.LABEL_STUDIO, dataset)
    span = row["annotations"][0]["spans"][0]
    assert row["annotations"][0]["annotator"] == "ls-user-3"  # no map: Label Studio's user
    assert span["ko"] == {
        "position": 1,
        "start": KO.index("먹었어요"),
        "end": KO.index("먹었어요") + 4,
        "text": "먹었어요",
    }
    assert span["no_counterpart"] is True


def test_the_layout_maps_every_turn_exactly_and_refuses_a_span_across_turns(
    dataset: Dataset,
) -> None:
    dialogue = dataset.get("hit:1_conv:1")
    assert dialogue is not None
    document = layout.layout(dialogue)
    assert [(s.lang, s.position) for s in document.segments] == [
        ("ko", 0),
        ("ko", 1),
        ("ko", 2),
        ("ko", 3),
        ("en", 0),
        ("en", 1),
        ("en", 2),
    ]  # the Korean-only turn 3 has no English line
    for segment in document.segments:
        assert document.text[segment.start : segment.end] == segment.text
    with pytest.raises(AnnotationError, match="not inside one turn"):
        document.locate(document.segments[1].end - 2, document.segments[2].start + 2, "doc")
    assert layout.parse_doc_name(layout.doc_name("a:b/c@d", "x@y", True), "f") == (
        "a:b/c@d",
        "x@y",
        True,
    )
    with pytest.raises(AnnotationError, match="CONV_ID@ANNOTATOR"):
        layout.parse_doc_name("just-a-name", "just-a-name.tsv")


def test_the_command_line_exports_and_imports_each_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = load_dataset(SAMPLE_FILE)
    first = dataset.dialogues[0]
    assert main(["annotations", "project", "--name", "cli", "--limit", "2"]) == 0
    line = {
        "conv_id": first.conv_id,
        "annotator": "kim",
        "category": "context_modified",
        "note": "두 줄\n메모",
        "spans": [
            {"type": "places", "ko": {"position": 3, "start": 3, "end": 6}, "no_counterpart": True}
        ],
    }
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["annotations", "import", str(source), "--project", "1"]) == 0
    store = AnnotationRules(Store(Path(os.environ["KOED_DB"])))
    want = _view(store.annotations(1))
    for number, (fmt, name) in enumerate(
        [
            ("webanno-tsv", "webanno-tsv-1"),
            ("brat", "brat-1"),
            ("label-studio", "label-studio-1.json"),
        ],
        2,
    ):
        out = tmp_path / fmt
        assert (
            main(["annotations", "export", "--out", str(out), "--project", "1", "--format", fmt])
            == 0
        )
        capsys.readouterr()
        assert main(["annotations", "import", str(out / name), "--format", fmt, "--name", fmt]) == 0
        said = capsys.readouterr().out
        assert (
            f"annotation project {number} created" in said
            and "1 annotation(s) with 1 span(s)" in said
        )
        assert _view(store.annotations(number)) == want
    broken = tmp_path / "brat" / "brat-1"
    next(broken.glob("*.ann")).write_text("E1\tEvent:T1\n", encoding="utf-8")
    assert main(["annotations", "import", str(broken), "--format", "brat", "--project", "1"]) == 1
    err = capsys.readouterr().err
    assert ".ann line 1: not a line KoED Studio reads" in err and "Traceback" not in err
    assert main(["annotations", "import", str(source), "--project", "1"]) == 0  # CSV/JSONL default


@pytest.mark.slow
def test_the_projects_page_exports_in_the_chosen_format() -> None:
    from streamlit.testing.v1 import AppTest

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    start = dialogue.turns[2].ko.index("편의점")
    annotations = AnnotationRules(Store(Path(os.environ["KOED_DB"])))
    project = annotations.create_project("page", dataset, [dialogue.conv_id], per_item=1)
    span = Span(side_at(dialogue, "ko", 3, start, start + 3), "places", no_counterpart=True)
    annotations.save(project, dialogue, "alice", CONTEXT_MODIFIED, "", [span], submit=True)
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/annotation/projects.py").run()
    assert not at.exception, [e.value for e in at.exception]
    chooser = at.selectbox(key=f"projects.format.{project}")
    assert chooser.options == [
        "JSONL (KoED Studio's own)",
        "for INCEpTION (WebAnno TSV 3.3)",
        "for brat (standoff .txt and .ann)",
        "for Label Studio (its JSON export)",
    ]
    chooser.select("brat").run()
    at.button(key=f"projects.export.{project}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [b.proto.label for b in at.get("download_button")][-1] == "Download the export (zip)"


# Imports -----------------------------------------------------------------------------


def _exported_label_studio(tmp_path: Path, sample_dataset: Dataset) -> Path:
    annotations = AnnotationRules(Store(os.environ["KOED_DB"]))
    dialogue, span = place_span(sample_dataset)
    project = annotations.create_project("ls", sample_dataset, [dialogue.conv_id], per_item=1)
    annotations.save(project, dialogue, "alice", CONTEXT_MODIFIED, "a note", [span], True)
    out = tmp_path / "exported"
    formats.export(annotations, project, sample_dataset, KEY, out, formats.LABEL_STUDIO)
    return out / f"label-studio-{project}.json"


def test_an_unpaired_surrogate_in_label_studio_json_is_one_sentence(
    tmp_path: Path, sample_dataset: Dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _exported_label_studio(tmp_path, sample_dataset)
    tasks = json.loads(source.read_text(encoding="utf-8"))
    for item in tasks[0]["annotations"][0]["result"]:
        if item["type"] == "textarea":
            item["value"]["text"] = ["half \ud800 a pair"]
    bad = tmp_path / "surrogate.json"
    bad.write_text(json.dumps(tasks), encoding="utf-8")  # ASCII: the lone \ud800 escaped
    before = len(AnnotationRules(Store(os.environ["KOED_DB"])).projects())
    code = main(["annotations", "import", str(bad), "--format", "label-studio", "--name", "s"])
    err = capsys.readouterr().err
    assert code == 1 and "surrogate.json task 1" in err and "unpaired surrogate" in err, err
    assert "UnicodeEncodeError" not in err
    assert len(AnnotationRules(Store(os.environ["KOED_DB"])).projects()) == before


def _sheet(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["conv_id", "annotator", "category", "note", "turn", "ko", "type", "en"])
        writer.writerows(rows)
    return path


def test_line_breaks_in_a_quoted_csv_note_are_kept(tmp_path: Path, sample_dataset: Dataset) -> None:
    conv_id = sample_dataset.dialogues[0].conv_id
    note = "first line\nsecond line, with a comma\n\nthird"
    sheet = _sheet(
        tmp_path / "sheet.csv",
        [
            [conv_id, "kim", CONTEXT_MODIFIED, note, "3", "편의점", "places", ""],
            [conv_id, "kim", "", "", "1", "야근", "institutions", ""],
        ],
    )
    rows = exchange.read_csv_rows(sheet, sample_dataset)
    entry = rows[0][1]["annotations"][0]
    assert entry["note"] == note and len(entry["spans"]) == 2


def test_an_oversized_csv_cell_names_the_file_and_row(
    tmp_path: Path, sample_dataset: Dataset
) -> None:
    conv_id = sample_dataset.dialogues[0].conv_id
    sheet = _sheet(
        tmp_path / "big.csv",
        [
            [conv_id, "kim", CONTEXT_MODIFIED, "fine", "", "", "", ""],
            [conv_id, "lee", CONTEXT_MODIFIED, "x" * 200_000, "", "", "", ""],
        ],
    )
    with pytest.raises(AnnotationError, match=r"big\.csv row 3: a cell longer than"):
        exchange.read_csv_rows(sheet, sample_dataset)


@pytest.mark.parametrize("name", ["kim\x1b[31m", "kim\nlee", "kim\u2028", "\x00kim", "k\tim"])
def test_control_characters_in_an_annotator_name_are_refused(
    tmp_path: Path, sample_dataset: Dataset, name: str
) -> None:
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    dialogue, _span = place_span(sample_dataset)
    project = annotations.create_project("p", sample_dataset, [dialogue.conv_id], per_item=1)
    line = {"conv_id": dialogue.conv_id, "annotator": name, "category": CONTEXT_MODIFIED}
    with pytest.raises(AnnotationError, match="import line 1, annotation 1: 'annotator' holds"):
        exchange.import_lines(annotations, project, sample_dataset, [(1, line)])
    assert annotations.annotations(project) == []
    with pytest.raises(AnnotationError, match="annotator name holds a control character"):
        annotations.create_project("q", sample_dataset, [dialogue.conv_id], 1, [name])
    with pytest.raises(AnnotationError, match="control character"):
        annotations.save(project, dialogue, name, CONTEXT_MODIFIED, "", [])


def test_a_second_export_format_in_the_same_folder_keeps_the_first(
    tmp_path: Path, sample_dataset: Dataset
) -> None:
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    dialogue, span = place_span(sample_dataset)
    project = annotations.create_project("p", sample_dataset, [dialogue.conv_id], per_item=1)
    annotations.save(project, dialogue, "alice", CONTEXT_MODIFIED, "", [span], submit=True)
    out = tmp_path / "out"
    written: dict[str, list[Path]] = {}
    for fmt in (formats.JSONL, formats.WEBANNO, formats.BRAT, formats.LABEL_STUDIO):
        written[fmt] = formats.export(annotations, project, sample_dataset, KEY, out, fmt)
        for earlier, files in written.items():
            missing = [f.name for f in files if not f.is_file()]
            assert not missing, f"{fmt} removed {earlier}'s {missing}"
    again = formats.export(annotations, project, sample_dataset, KEY, out, formats.JSONL)
    assert all(f.is_file() for files in [*written.values(), again] for f in files)
