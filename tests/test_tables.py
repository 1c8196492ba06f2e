"""Tables and exports: an empty cell reads "—", never "None"; numbers keep their format,
exports their gaps; and the names in them (the paper table's LaTeX and Markdown, the other
Markdown tables, chart titles, CSV cells) are inert text, whatever a model or a person named
themselves."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.testing.v1 import AppTest

from components.core.tables import MISSING, readable
from koed_core.results import figures
from koed_core.results.paper_export import write_paper_table
from tests.test_run_labels import four_runs  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[1]


def test_missing_cells_become_dashes_and_numbers_keep_their_format() -> None:
    frame = pd.DataFrame(
        {
            "run": ["a", "b"],
            "hit": [0.5, np.nan],
            "count": [3, None],
            "note": ["x", None],
            "whole": [1.0, 2.0],
        }
    )
    config = {"hit": st.column_config.NumberColumn("Hit rate", format="%.2f", help="single")}
    shown, adjusted = readable(frame, config)
    assert shown["hit"].tolist() == ["0.50", MISSING]
    assert shown["count"].tolist() == ["3", MISSING]  # not "3.0": it was a count
    assert shown["note"].tolist() == ["x", MISSING]
    assert shown["whole"].tolist() == [1.0, 2.0]  # nothing missing: left a number column
    assert adjusted["hit"]["label"] == "Hit rate" and adjusted["hit"]["help"] == "single"
    assert adjusted["hit"]["type_config"]["type"] == "text"
    assert adjusted["count"]["alignment"] == "right"
    assert frame["hit"].isna().sum() == 1  # the caller's frame (and so its exports) untouched


def test_the_runs_table_has_no_empty_cell(four_runs: object) -> None:  # noqa: F811
    """Single and direct runs side by side: direct runs have no hit rate, none has F1."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    runs = at.dataframe[0].value
    assert len(runs) == 8 and not runs.isna().any().any()  # a row per run and language
    assert (runs == MISSING).any().any()
    for table in at.dataframe:
        assert not table.value.isna().any().any()


def test_consent_text_keeps_a_safe_markdown_subset_only() -> None:
    from components.core.literal import consent_markdown

    text = (
        "**Voluntary.** See [the IRB page](https://irb.example.org/koed_1).\n"
        "- you may stop\n2. data kept 5 years\n\n"
        "<img src=x onerror=alert(1)> [pay](javascript:alert(1)) ![t](http://t.example/p.png)"
        " :red[warning] # not a heading"
    )
    shown = consent_markdown(text)
    assert "**Voluntary\\.**" in shown and "[the IRB page](https://irb.example.org/koed_1)" in shown
    assert "\n- you may stop\n2. data kept 5 years\n\n" in shown
    assert "\\<img" in shown and "\\[pay\\]\\(javascript" in shown
    assert "\\!\\[t\\]\\(http" in shown  # an image stays characters, not a fetch
    assert ":red[" not in shown and "\n#" not in shown


CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters and Unicode line breaks; ``\\n`` is looked at apart (a line end)."""


# Exports: no live LaTeX, Markdown, HTML or control characters -----------------------

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
    # the abstract's sentence, the number, the sources, what ran (the quote)
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
    from koed_core.text import csv_safe

    return list(csv.reader(io.StringIO(csv_safe.to_csv(frame, bom=False), newline="")))


def test_csv_cells_carry_no_control_characters_but_notes_keep_their_lines() -> None:
    from koed_core.text import csv_safe

    frame = pd.DataFrame([{"model": MODEL, "comment": "one\r\ntwo\u2028three\x07"}])
    rows = _csv_text(frame)
    assert rows[1][0] == MODEL.replace("\x1b", "") and not CONTROL.search(rows[1][1] + rows[1][0])
    kept = csv_safe.to_csv(frame, bom=False, multiline=("comment",))
    cells = list(csv.reader(io.StringIO(kept, newline="")))[1]
    assert cells[1] == "one\ntwo\nthree" and "\n" not in cells[0]
