"""One folder a paper can cite: gap and agreement tables, charts, every configuration.

Nothing personal leaves: raters appear only as aggregate counts. The folder's README
lists each file, and the tests check that the folder holds exactly what it lists.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from koed_core import __version__, agreement_data, gaps
from koed_core.figures import gap_figure
from koed_core.judge import judge_prompt_version
from koed_core.protocol import prompt_version
from koed_core.rating import RatingStore
from koed_core.rating_report import rater_summary
from koed_core.rubric import rubric_version
from koed_core.storage import Store

FILES = {
    "gaps.csv": "Korean minus English per run, score source (judge, raters, emotion) and "
    "metric: en and ko means over dialogues answered in both, gap, bootstrap 95% CI, pairs.",
    "agreement.csv": "Judge-human and human-human agreement per dimension, language and rater "
    "group, with plain readings (empty when nobody has rated).",
    "gap_judge.svg": "Gap chart from the judge's scores (vector, for slides and papers).",
    "gap_judge.png": "The same chart as PNG.",
    "runs.json": "Every run's configuration: model, backend, provenance, protocol, listener "
    "prompt version, decoding settings, dataset sha256.",
    "judges.json": "Every judge used: model, mode, judge prompt version, number of judgments.",
    "provenance.json": "Versions that make the numbers reproducible: dataset sha256, rubric, "
    "prompts, KoED Studio version, export time.",
    "raters.json": "Raters in aggregate only (counts, median years); no personal data.",
    "README.md": "This file.",
}


def export_bundle(store: Store, out: Path, dataset_sha256: str) -> list[Path]:
    """Write the bundle into ``out`` (created; existing files replaced); returns the files."""
    out.mkdir(parents=True, exist_ok=True)
    frame = gaps.score_frame(store)
    table = gaps.gap_table(frame)
    table.to_csv(out / "gaps.csv", index=False)
    judge_pairs = agreement_data.judges(store)
    judge_model, mode = judge_pairs[0] if judge_pairs else (None, None)
    agreement = agreement_data.table(agreement_data.load_inputs(store, judge_model, mode))
    agreement.to_csv(out / "agreement.csv", index=False)
    judged = table[table["source"] == "judge"] if not table.empty else table
    fig = gap_figure(judged, "Cultural empathy gap (judge): Korean minus English")
    import plotly.io as pio

    pio.write_images(
        [fig, fig], [out / "gap_judge.svg", out / "gap_judge.png"], width=1200, height=700
    )
    _json(
        out / "runs.json",
        [
            {
                "run_id": r["id"],
                "name": r["name"],
                "kind": r["kind"],
                **json.loads(r["config"]),
                "languages": json.loads(r["langs"]),
            }
            for r in store.db.query("select * from runs order by created")
        ],
    )
    _json(
        out / "judges.json",
        [
            dict(r)
            for r in store.db.query(
                "select judge_model, judge_backend, mode, prompt_version, count(*) as judgments, "
                "sum(score is null) as unscored from judgments group by 1, 2, 3, 4"
            )
        ]
        if judge_pairs
        else [],
    )
    _json(
        out / "provenance.json",
        {
            "dataset_sha256": dataset_sha256,
            "rubric_version": rubric_version(),
            "listener_prompt_version": prompt_version(),
            "judge_prompt_version": judge_prompt_version(),
            "koed_studio_version": __version__,
            "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    _json(out / "raters.json", rater_summary(RatingStore(store)))
    (out / "README.md").write_text(_readme(), encoding="utf-8")
    return [out / name for name in FILES]


def zip_bundle(store: Store, work: Path, dataset_sha256: str) -> Path:
    """The bundle as one zip file (for a download button)."""
    folder = work / "koed_export"
    if folder.exists():
        shutil.rmtree(folder)
    export_bundle(store, folder, dataset_sha256)
    return Path(shutil.make_archive(str(work / "koed_export"), "zip", folder))


def _json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=str), encoding="utf-8")


def _readme() -> str:
    lines = [
        "# KoED Studio export",
        "",
        "Results exported from KoED Studio for the Korean Empathetic Dialogues (KoED) "
        "benchmark (Lee, Sim, Kim and Kim, IJCNLP-AACL 2025; data CC BY-NC 4.0).",
        "",
        "| file | what it is |",
        "| --- | --- |",
    ]
    lines += [f"| {name} | {text} |" for name, text in FILES.items()]
    return "\n".join(lines) + "\n"


def listed_files(readme: str) -> list[str]:
    """The file names a bundle's README lists (used to check a bundle is complete)."""
    return [
        line.split("|")[1].strip()
        for line in readme.splitlines()
        if line.startswith("| ") and not line.startswith("| file") and "---" not in line
    ]
