"""Issue 52, an outside fault audit (items 2, 3, 5, 6 and the taxonomy part of 7): each
finding replayed as it was reported, with what must happen instead.

2. an admin (or any account) took an annotator's slot in an "any annotator" project;
3. names and labels were live LaTeX and Markdown in the paper table (and raw text in
   CSV cells and chart titles);
5. deeply nested TOML or JSON escaped the error handling (RecursionError);
6. imports: an unpaired surrogate in Label Studio JSON, line breaks inside a quoted CSV
   note, an oversized CSV cell, control characters in annotator names, and a second
   export format deleting the first;
7. taxonomies had no size limits.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from koed_core.annotation import exchange, formats
from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.spans import Span, side_at
from koed_core.annotation.taxonomy import (
    CONTEXT_MODIFIED,
    AnnotationError,
    load_taxonomy,
    parse_taxonomy,
)
from koed_core.cli import main
from koed_core.db import Store
from koed_core.dialogues.dataset import Dataset, DatasetError, load_dataset
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts
from koed_core.results import figures
from koed_core.results.paper_export import write_paper_table

ROOT = Path(__file__).resolve().parents[1]
KEY = b"k" * 32
DEEP = 100_000
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters and Unicode line breaks; ``\\n`` is looked at apart (a line end)."""


@pytest.fixture
def dataset() -> Dataset:
    return load_dataset(SAMPLE_FILE)


def _people(folder: Path) -> Path:
    path = folder / "people.yaml"
    accounts.add_user(path, "boss", "admin", "Boss", "boss-password-1")
    accounts.add_user(path, "mina", "rater", "Mina", "mina-password-1")
    accounts.add_user(path, "lin", "annotator", "Lin", "lin-password-1")
    accounts.add_user(path, "kyu", "annotator", "Kyu", "kyu-password-1")
    return path


def _place(dataset: Dataset) -> tuple[Any, Span]:
    """The first sample dialogue and a span on its convenience store (turn 3)."""
    dialogue = dataset.dialogues[0]
    start = dialogue.turns[2].ko.index("편의점")
    return dialogue, Span(side_at(dialogue, "ko", 3, start, start + 3), "places", None, True)


# 2. Only annotator accounts take a slot ------------------------------------------------


def test_only_annotator_accounts_take_a_slot_and_names_that_are_no_account_are_refused(
    tmp_path: Path, dataset: Dataset
) -> None:
    people = _people(tmp_path)
    annotations = AnnotationRules(Store(tmp_path / "koed.db"), accounts_file=people)
    dialogue, span = _place(dataset)
    project = annotations.create_project("any", dataset, [dialogue.conv_id], per_item=2)
    for who, said in (
        ("boss", "'boss' is an admin account"),
        ("mina", "'mina' is a rater account"),
        ("ghost", "'ghost' is not an account"),
        ("local", "'local' is not an account"),
    ):
        with pytest.raises(AnnotationError, match=said):
            annotations.save(project, dialogue, who, CONTEXT_MODIFIED, "", [span])
    assert annotations.q.states(project) == []  # nobody took a slot
    annotations.save(project, dialogue, "lin", CONTEXT_MODIFIED, "", [span])
    annotations.save(project, dialogue, "kyu", CONTEXT_MODIFIED, "", [span], submit=True)
    assert sorted(r["annotator"] for r in annotations.q.states(project)) == ["kyu", "lin"]
    # a project naming its annotators names annotator accounts
    for named, said in ((["lin", "boss"], "'boss' is an admin"), (["ghost"], "not an account")):
        with pytest.raises(AnnotationError, match=said):
            annotations.create_project("named", dataset, [dialogue.conv_id], 1, named)
    assert len(annotations.projects()) == 1


def test_with_no_accounts_the_one_person_app_still_annotates(
    tmp_path: Path, dataset: Dataset
) -> None:
    absent = tmp_path / "nobody.yaml"
    annotations = AnnotationRules(Store(tmp_path / "koed.db"), accounts_file=absent)
    dialogue, span = _place(dataset)
    project = annotations.create_project("mine", dataset, [dialogue.conv_id], per_item=1)
    annotations.save(project, dialogue, "local", CONTEXT_MODIFIED, "", [span], submit=True)
    required = AnnotationRules(
        Store(tmp_path / "koed.db"), accounts_file=absent, accounts_required=True
    )
    with pytest.raises(accounts.AccountsError, match="does not exist"):
        required.save(project, dialogue, "local", CONTEXT_MODIFIED, "", [span])


@pytest.mark.slow
def test_an_admin_on_the_annotate_page_gets_a_sentence_not_a_slot(
    site: Path, dataset: Dataset
) -> None:
    accounts.add_user(site.parent / "accounts.yaml", "lin", "annotator", "Lin", "lin-password")
    dialogue, _span = _place(dataset)
    AnnotationRules(Store(site)).create_project("any", dataset, [dialogue.conv_id], per_item=2)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["authentication_status"] = True
    at.session_state["username"] = "boss"
    at.session_state["name"] = "Boss"
    at.run().switch_page("app_pages/annotation/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    said = [m.value for m in (*at.info, *at.warning, *at.error)]
    assert any("Admins do not annotate" in s for s in said), said
    assert not at.selectbox and [b.key for b in at.button] == ["sidebar.logout"]
    assert AnnotationRules(Store(site)).q.states(1) == []


# 3. Exports: no live LaTeX, Markdown, HTML or control characters -----------------------

PLAN = "tiny\n\\input{/etc/passwd}\r\n\\write18{touch pwned}\u2028%\u2029 end"
MODEL = "m\\def\\x{1}{}_$#&%~^^5cinput{y}|<b onmouseover=1>x</b>\x1b[31m"
PROTOCOL = "single, native prompts | x \\\\ \\& \n| a | b |"
TEX_OURS = {
    r"\begin",
    r"\end",
    r"\toprule",
    r"\midrule",
    r"\bottomrule",
    r"\textbackslash",
    r"\textasciicircum",
    r"\textasciitilde",
    r"\space",
    "\\\\",
    r"\&",
    r"\%",
    r"\$",
    r"\#",
    r"\_",
    r"\{",
    r"\}",
}


def _paper_table() -> pd.DataFrame:
    row: dict[str, Any] = {"model": MODEL, "protocol": PROTOCOL, "run_id": "run-1"}
    for side in ("ED", "KoED"):
        for metric in ("EX", "IP", "ER", "EEA", "CA", "emotion", "emotion (answered)"):
            row[f"{side} {metric}"] = 3.25
    row.update(gap=-0.5, ci_low=-0.75, ci_high=-0.25, pairs=12)
    row.update(judge_model=MODEL, judge_mode="paper")
    second = {**row, "model": "plain-model", "protocol": "multi, native prompts"}
    return pd.DataFrame([row, second])


def _tex_tokens(line: str) -> list[tuple[str, str]]:
    """A line of TeX as TeX reads it with the default catcodes: control sequences
    (a backslash and letters, or a backslash and one other character) and characters; a
    comment ends the line."""
    tokens, i = [], 0
    while i < len(line):
        char = line[i]
        if char == "%":
            break
        if char == "\\":
            j = i + 1
            while j < len(line) and line[j].isascii() and line[j].isalpha():
                j += 1
            j = max(j, i + 2)
            tokens.append(("cs", line[i:j]))
            i = j
            continue
        tokens.append(("char", char))
        i += 1
    return tokens


def _check_tex(tex: str, rows: int, columns: int) -> None:
    assert not CONTROL.search(tex), repr(CONTROL.search(tex))
    lines = tex.rstrip("\n").split("\n")
    # our lines only: the title's comment, begin, rules, the header, the rows, end
    assert len(lines) == 1 + 5 + 1 + rows, lines
    assert lines[0].startswith("% ") and lines[1].startswith(r"\begin{tabular}{")
    assert lines[-1] == r"\end{tabular}"
    for number, line in enumerate(lines[2:-1], 3):
        tokens = _tex_tokens(line)
        sequences = {text for kind, text in tokens if kind == "cs"}
        assert sequences <= TEX_OURS, (number, sequences - TEX_OURS)
        assert not [t for kind, t in tokens if kind == "char" and t in "{}$#^_~\\"], line
        if line in (r"\toprule", r"\midrule", r"\bottomrule"):
            continue
        cells = sum(1 for kind, text in tokens if kind == "char" and text == "&")
        assert cells == columns - 1, (number, line)
        assert tokens[-1] == ("cs", "\\\\"), line


def _md_cells(line: str) -> list[str]:
    """A GitHub table row's cells: split at every pipe not escaped by a backslash."""
    assert line.startswith("|") and line.endswith("|"), line
    return re.split(r"(?<!\\)\|", line)[1:-1]


def _check_md(text: str, rows: int, columns: int) -> None:
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    lines = text.rstrip("\n").split("\n")
    assert lines[0].startswith("# ") and lines[1] == ""
    table = lines[2:]
    assert len(table) == 2 + rows, table
    for line in table:
        assert len(_md_cells(line)) == columns, line
    assert not re.search(r"(?<!\\)[<>`*]", "\n".join(lines)), text  # no tag, no emphasis
    assert r"\<b onmouseover=1\>x\</b\>\[31m" in text  # the model id, as text


def test_the_paper_table_is_inert_latex_and_markdown_whatever_the_names(tmp_path: Path) -> None:
    table = _paper_table()
    shown = [c for c in table.columns if not c.startswith("judge_") and c != "run_id"]
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "README.md").write_text("# export\n", encoding="utf-8")
    write_paper_table(table, out, PLAN)
    tex = (out / "paper_table.tex").read_text(encoding="utf-8")
    _check_tex(tex, 2, len(shown))
    assert "input" in tex and r"\input" not in tex and r"\write18" not in tex
    _check_md((out / "paper_table.md").read_text(encoding="utf-8"), 2, len(shown))
    with (out / "paper_table.csv").open(encoding="utf-8-sig", newline="") as source:
        cells = [cell for row in csv.reader(source) for cell in row]
    assert MODEL.replace("\x1b", "") in cells and not any(CONTROL.search(c) for c in cells)
    assert not any("\n" in c for c in cells)
    if shutil.which("pdflatex"):  # not installed here; where it is, TeX itself says so
        document = tmp_path / "table.tex"
        document.write_text(
            "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n"
            + tex
            + "\\end{document}\n"
        )
        done = subprocess.run(
            ["pdflatex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "table"],
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-2000:]
        assert not (tmp_path / "pwned").exists()


def test_the_other_markdown_tables_keep_their_columns(tmp_path: Path) -> None:
    from koed_core.results import claims, sensitivity, turn_gaps

    moved = pd.DataFrame(
        [
            {
                "model": MODEL,
                "protocol": PROTOCOL,
                "variant": "commas | raw\n| x |",
                "metric": "EX",
                "pairs": 3,
                "gap": -0.1,
                "ci_low": -0.2,
                "ci_high": 0.0,
                "change": 0.1,
                "change_ci_low": 0.0,
                "change_ci_high": 0.2,
                "change_p": 0.5,
                "change_p_holm": 0.5,
            }
        ]
    )
    text = sensitivity.to_markdown(moved, PLAN)
    head = text.split("\n\n")[:2]
    _check_md("\n\n".join(head) + "\n", 1, 10)
    over = pd.DataFrame(
        [
            {
                "run_label": MODEL,
                "source": "judge",
                "metric": "EX",
                "turn": 1,
                "gap": 0.1,
                "ci_low": 0.0,
                "ci_high": 0.2,
                "pairs": 3,
            }
        ]
    )
    turns = turn_gaps.to_markdown(over, PLAN)
    assert turns.startswith("## ") and not CONTROL.search(turns)
    rows = [line for line in turns.split("\n") if line.startswith("|")]
    assert [len(_md_cells(r)) for r in rows] == [4, 4, 4]
    stated = claims.load_claims()
    verdict = claims.Verdict(stated[0], "holds", (MODEL,), (PROTOCOL,), MODEL, (PLAN,))
    said = claims.to_markdown([verdict], "aa" * 32)
    assert not CONTROL.search(said) and not re.search(r"(?<!\\)<", said)
    assert len([line for line in said.split("\n") if line.startswith("- ")]) == 1
    # the abstract's sentence, the number, the sources, what ran (issue 55 #7: the quote)
    assert len([line for line in said.split("\n") if line.startswith("  - ")]) == 4


def test_chart_titles_names_and_labels_are_text_not_html(tmp_path: Path) -> None:
    table = pd.DataFrame(
        [
            {
                "run_id": "r1",
                "model": MODEL,
                "provenance": "western",
                "protocol": "single",
                "reference": False,
                "metric": metric,
                "gap": -0.2,
                "ci_low": -0.3,
                "ci_high": -0.1,
                "en": 3.0,
                "ko": 2.8,
                "pairs": 4,
                "run_label": MODEL,
            }
            for metric in ("EX", "IP")
        ]
    )
    fig = figures.gap_figure(table, PLAN, subtitle=f"judge {MODEL}")
    texts = [fig.layout.title.text, fig.layout.title.subtitle.text]
    texts += [trace.name for trace in fig.data]
    for text in texts:
        assert not CONTROL.search(text) and "\n" not in text, repr(text)
        assert "<" not in text and ">" not in text, text
    assert all(MODEL not in (trace.hovertemplate or "") for trace in fig.data)
    breakdown = table.assign(category="context_modified")
    made = figures.breakdown_figure(breakdown, "category", "EX", PLAN, MODEL)
    for text in [made.layout.title.text, made.layout.title.subtitle.text, made.data[0].name]:
        assert not CONTROL.search(text) and "\n" not in text and "<" not in text, repr(text)


def _csv_text(frame: pd.DataFrame) -> list[list[str]]:
    from koed_core import csv_safe

    return list(csv.reader(io.StringIO(csv_safe.to_csv(frame, bom=False), newline="")))


def test_csv_cells_carry_no_control_characters_but_notes_keep_their_lines() -> None:
    from koed_core import csv_safe

    frame = pd.DataFrame([{"model": MODEL, "comment": "one\r\ntwo\u2028three\x07"}])
    rows = _csv_text(frame)
    assert rows[1][0] == MODEL.replace("\x1b", "") and not CONTROL.search(rows[1][1] + rows[1][0])
    kept = csv_safe.to_csv(frame, bom=False, multiline=("comment",))
    cells = list(csv.reader(io.StringIO(kept, newline="")))[1]
    assert cells[1] == "one\ntwo\nthree" and "\n" not in cells[0]


# 5. Deep nesting is one sentence naming the file ----------------------------------------


def _deep_toml(path: Path) -> Path:
    path.write_text("name = " + "[" * DEEP + "]" * DEEP + "\n", encoding="utf-8")
    return path


def test_a_deeply_nested_taxonomy_is_one_sentence_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from components.annotation.annotation_admin import _taxonomy_upload

    deep = _deep_toml(tmp_path / "deep.toml")
    with pytest.raises(AnnotationError, match="deep.toml: nested too deeply"):
        load_taxonomy(deep)

    class Upload:
        name = "deep.toml"

        def getvalue(self) -> bytes:
            return deep.read_bytes()

    with pytest.raises(AnnotationError, match="deep.toml: nested too deeply"):
        _taxonomy_upload(Upload())
    assert main(["annotations", "project", "--name", "x", "--taxonomy", str(deep)]) == 1
    err = capsys.readouterr().err
    assert "deep.toml: nested too deeply" in err and "RecursionError" not in err, err


def test_deeply_nested_claims_plans_and_json_are_one_sentence_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing may be called
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "small"\nmodels = ["openai:a"]\njudge = "gpt-4o"\nsubset = "full"\n'
        'protocols = ["single"]\n'
    )
    deep = _deep_toml(tmp_path / "claims.toml")
    code = main(["reproduce", str(plan), "--data", str(SAMPLE_FILE), "--claims", str(deep)])
    err = capsys.readouterr().err
    assert code == 1 and "claims.toml: nested too deeply" in err, err
    assert "RecursionError" not in err
    deep_plan = _deep_toml(tmp_path / "deep-plan.toml")
    assert main(["reproduce", str(deep_plan), "--data", str(SAMPLE_FILE), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "deep-plan.toml: nested too deeply" in err and "RecursionError" not in err, err
    studio = tmp_path / "deep.json"
    studio.write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    code = main(["annotations", "import", str(studio), "--format", "label-studio", "--name", "d"])
    err = capsys.readouterr().err
    assert code == 1 and "deep.json: nested too deeply" in err, err
    assert "RecursionError" not in err
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(studio)


# 6. Imports -----------------------------------------------------------------------------


def _exported_label_studio(tmp_path: Path, dataset: Dataset) -> Path:
    annotations = AnnotationRules(Store(os.environ["KOED_DB"]))
    dialogue, span = _place(dataset)
    project = annotations.create_project("ls", dataset, [dialogue.conv_id], per_item=1)
    annotations.save(project, dialogue, "alice", CONTEXT_MODIFIED, "a note", [span], True)
    out = tmp_path / "exported"
    formats.export(annotations, project, dataset, KEY, out, formats.LABEL_STUDIO)
    return out / f"label-studio-{project}.json"


def test_an_unpaired_surrogate_in_label_studio_json_is_one_sentence(
    tmp_path: Path, dataset: Dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _exported_label_studio(tmp_path, dataset)
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


def test_line_breaks_in_a_quoted_csv_note_are_kept(tmp_path: Path, dataset: Dataset) -> None:
    conv_id = dataset.dialogues[0].conv_id
    note = "first line\nsecond line, with a comma\n\nthird"
    sheet = _sheet(
        tmp_path / "sheet.csv",
        [
            [conv_id, "kim", CONTEXT_MODIFIED, note, "3", "편의점", "places", ""],
            [conv_id, "kim", "", "", "1", "야근", "institutions", ""],
        ],
    )
    rows = exchange.read_csv_rows(sheet, dataset)
    entry = rows[0][1]["annotations"][0]
    assert entry["note"] == note and len(entry["spans"]) == 2


def test_an_oversized_csv_cell_names_the_file_and_row(tmp_path: Path, dataset: Dataset) -> None:
    conv_id = dataset.dialogues[0].conv_id
    sheet = _sheet(
        tmp_path / "big.csv",
        [
            [conv_id, "kim", CONTEXT_MODIFIED, "fine", "", "", "", ""],
            [conv_id, "lee", CONTEXT_MODIFIED, "x" * 200_000, "", "", "", ""],
        ],
    )
    with pytest.raises(AnnotationError, match=r"big\.csv row 3: a cell longer than"):
        exchange.read_csv_rows(sheet, dataset)


@pytest.mark.parametrize("name", ["kim\x1b[31m", "kim\nlee", "kim\u2028", "\x00kim", "k\tim"])
def test_control_characters_in_an_annotator_name_are_refused(
    tmp_path: Path, dataset: Dataset, name: str
) -> None:
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    dialogue, _span = _place(dataset)
    project = annotations.create_project("p", dataset, [dialogue.conv_id], per_item=1)
    line = {"conv_id": dialogue.conv_id, "annotator": name, "category": CONTEXT_MODIFIED}
    with pytest.raises(AnnotationError, match="import line 1, annotation 1: 'annotator' holds"):
        exchange.import_lines(annotations, project, dataset, [(1, line)])
    assert annotations.annotations(project) == []
    with pytest.raises(AnnotationError, match="annotator name holds a control character"):
        annotations.create_project("q", dataset, [dialogue.conv_id], 1, [name])
    with pytest.raises(AnnotationError, match="control character"):
        annotations.save(project, dialogue, name, CONTEXT_MODIFIED, "", [])


def test_a_second_export_format_in_the_same_folder_keeps_the_first(
    tmp_path: Path, dataset: Dataset
) -> None:
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    dialogue, span = _place(dataset)
    project = annotations.create_project("p", dataset, [dialogue.conv_id], per_item=1)
    annotations.save(project, dialogue, "alice", CONTEXT_MODIFIED, "", [span], submit=True)
    out = tmp_path / "out"
    written: dict[str, list[Path]] = {}
    for fmt in (formats.JSONL, formats.WEBANNO, formats.BRAT, formats.LABEL_STUDIO):
        written[fmt] = formats.export(annotations, project, dataset, KEY, out, fmt)
        for earlier, files in written.items():
            missing = [f.name for f in files if not f.is_file()]
            assert not missing, f"{fmt} removed {earlier}'s {missing}"
    again = formats.export(annotations, project, dataset, KEY, out, formats.JSONL)
    assert all(f.is_file() for files in [*written.values(), again] for f in files)


# 7. Taxonomy limits ---------------------------------------------------------------------


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
