"""One folder a paper can cite: gap and agreement tables, charts, every configuration.

Every row names its source: the run (and its dataset sha256), the judge configuration
(model, mode, prompt version, rubric version) or the study. Nothing is averaged across
sources; provenance.json is built from the runs, judgments and ratings actually exported.
Nothing personal leaves: raters appear only as aggregate counts.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from koed_core import __version__
from koed_core.db import Decoding, JudgeConfig, Judgments, Ratings, Runs, Store
from koed_core.rating.report import rater_summary
from koed_core.rating.studies import StudyRules
from koed_core.results import agreement, gaps, score_sources
from koed_core.results.figures import gap_figure
from koed_core.run_steps import stored_steps
from koed_core.text import csv_safe
from koed_core.text.redact import redact_url

FILES = {
    "gaps.csv": "Korean minus English per run and score source: one row per run, metric and "
    "source, where a source is one judge configuration (judge_model, judge_mode, "
    "judge_prompt_version, judge_rubric_version, judge_template, judge_parse), one study "
    "(study_id: the mean of its raters) "
    "or emotion recognition; with the run's dataset_sha256, en and ko means over dialogues "
    "answered in both, gap, bootstrap 95% CI and pairs.",
    "agreement.csv": "Judge-human and human-human agreement per study and judge configuration, "
    "dimension, language and rater group, with plain readings (empty when nobody has rated).",
    "alt_test.csv": "Could the judge replace one of the raters? The Alternative Annotator Test "
    "(Calderon et al. 2025) per study and judge configuration, dimension, language and rater "
    "group: raters tested, winning rate (Benjamini-Yekutieli at 0.05, epsilon 0.1), whether "
    "the judge passes, the advantage probability and a plain reading (undefined ones say why).",
    "gap_judge.svg": "Gap chart from the most recent judge configuration (named in its title).",
    "gap_judge.png": "The same chart as PNG.",
    "runs.json": "Every run's configuration: model spec, backend, provenance, protocol, listener "
    "prompt version, decoding settings, dataset sha256.",
    "judges.json": "Every judge configuration used: model, backend, mode, judge prompt version, "
    "rubric version, number of judgments and of unscored ones.",
    "sensitivity.csv": "What moves the gap: for each run with the KoED authors' pipeline steps "
    "(base_run_id) and each stored run or judge configuration differing from it in one step "
    "(variant), the KoED-ED gap per metric with its bootstrap 95% CI, and the variant's paired "
    "change from the base (change, change_ci_low, change_ci_high); header only when none.",
    "perception.csv": "The gap split into perception and response, under the most recent "
    "judge configuration (judge_* columns): per run and rubric dimension, the score where "
    "the emotion was recognised and where it was missed per language with their "
    "difference, and the KoED-ED gap over all dialogues, over those recognised in both "
    "languages (the response part) and over those missed in Korean only, each with a "
    "bootstrap 95% CI; header only when nothing is judged.",
    "turn_gaps.csv": "The gap over turns of multi-turn episodes (koed episodes): per episode "
    "run, source (each judge configuration apart, and emotion recognition) and metric, the "
    "KoED-ED gap at each Listener turn over the dialogues that reached it in both languages "
    "(pairs), with its bootstrap 95% CI and the simulated Speaker's name; header only when "
    "no episode is stored.",
    "episode_understanding.csv": "Did the Listener come to understand what the Speaker "
    "felt: per episode run and language, the share of episodes naming a gold label at the "
    "first and at the last Listener turn, and of those missed at first the share that had "
    "it by the end (came_to_it); header only when no episode is stored.",
    "episode_scores.csv": "Multi-turn episodes scored whole: per episode run, source (one "
    "whole-episode judge configuration, judge_mode episode, or one closed study of whole "
    "episodes, study_id) and metric (EX, IP, ER, EEA, CA, and UND: came to understand), the "
    "mean in English and Korean over dialogues with both episodes scored, the paired gap and "
    "its bootstrap 95% CI; oracle marks a run whose Listener was told the situation and "
    "emotion (the upper reference); header only when none.",
    "speaker_checks.csv": "How well the simulated Speaker played each side: per episode run "
    "and check (SIT stays in the situation, HID keeps the feeling unnamed, NAT sounds "
    "native; 1-5, judge_mode speaker), the mean per dialogue in English and Korean, the "
    "paired gap and its CI; header only when no Speaker turn was checked.",
    "adaptation_gaps.csv": "The gap broken down by what the Korean reconstruction adapted: "
    "per annotation project (named with its taxonomy_version), per source as in gaps.csv, "
    "the KoED-ED gap of each adaptation category (breakdown=category) and of the dialogues "
    "carrying each cultural-signal type (breakdown=signal_type), from each dialogue's final "
    "answer (the reviewer's, else the annotators' when they agree); header only when no "
    "project has one.",
    "annotation_agreement.csv": "Agreement between annotators per annotation project: "
    "Cohen's or Fleiss' kappa on the category with a bootstrap 95% CI, and span F1 (exact "
    "and overlapping) per signal type; header only when there is no project.",
    "provenance.json": "Where the numbers come from: the dataset sha256 values of the exported "
    "runs (a warning if more than one), listener and judge prompt versions, rubric versions "
    "of judges and raters, KoED Studio version, export time.",
    "raters.json": "Raters in aggregate only (counts, median years) and the rubric versions "
    "each study's ratings were given under; no personal data.",
    "README.md": "This file.",
}


def gap_rows(store: Store) -> pd.DataFrame:
    """Every source's gap table, stacked: each judge configuration, each study, emotions."""
    tables = [gaps.gap_table(gaps.score_frame(store))]  # emotion recognition
    for use in Judgments(store).configs():
        frame = gaps.score_frame(store, judge=use.config)
        tables.append(gaps.gap_table(frame[frame["source"] == "judge"]))
    for study in Ratings(store).studies_with_ratings():
        frame = gaps.score_frame(store, study_id=int(study["id"]))
        tables.append(gaps.gap_table(frame[frame["source"] == "raters"]))
    kept = [t for t in tables if not t.empty]
    if not kept:
        return pd.DataFrame(columns=gaps.TABLE_COLUMNS)
    return pd.concat(kept, ignore_index=True)


def agreement_rows(store: Store, alt_test: bool = False) -> pd.DataFrame:
    """Agreement per study and per judge configuration that scored that study's responses
    (``alt_test``: the Alternative Annotator Test's rows instead)."""
    parts = []
    for study in Ratings(store).studies_with_ratings():
        study_id = int(study["id"])
        run_ids = sorted(set(Ratings(store).long_scores(study_id)["run_id"]))
        configs: list[JudgeConfig | None] = [u.config for u in Judgments(store).configs(run_ids)]
        for config in configs or [None]:
            inputs = agreement.load_inputs(store, study_id, config)
            table = agreement.alt_test(inputs) if alt_test else agreement.table(inputs)
            if table.empty:
                continue
            columns = (
                config.as_columns()
                if config
                else dict.fromkeys(JudgeConfig("", "", "", "").as_columns())
            )
            parts.append(table.assign(study_id=study_id, **columns))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def provenance(store: Store, gap_table: pd.DataFrame) -> dict[str, Any]:
    """Versions taken from what is exported, not from today's settings."""
    runs = Runs(store).run_table()
    configs = [json.loads(c) for c in runs["config"]] if not runs.empty else []
    shas = sorted({sha for sha in runs.get("dataset_sha256", []) if sha})
    judges = Judgments(store).summary()
    out: dict[str, Any] = {
        "dataset_sha256": shas,
        "listener_prompt_versions": sorted({c["prompt_version"] for c in configs}),
        "judge_configurations": [
            {
                k: j[k]
                for k in (
                    "judge_model",
                    "mode",
                    "prompt_version",
                    "rubric_version",
                    "template",
                    "parse",
                    "temperature",
                )
            }
            for j in judges
        ],
        "pipeline_steps": [
            {
                "run_id": run_id,
                "prompt_set": c.get("prompt_set", "native"),
                "prompt_version": c.get("prompt_version"),
                **stored_steps(c),
                "family": c.get("family", "open"),
                **asdict(Decoding.from_stored(c)),  # every decoding key, max_tokens too
            }
            for run_id, c in sorted(zip(runs.get("run_id", []), configs, strict=False))
        ],
        "rater_rubric_versions": Ratings(store).rubric_versions(),
        "runs_in_gap_table": sorted(set(gap_table["run_id"])) if not gap_table.empty else [],
        "koed_studio_version": __version__,
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if len(shas) > 1:
        out["warning"] = (
            f"the runs use {len(shas)} different datasets; compare only rows with the same "
            "dataset_sha256"
        )
    return out


def export_bundle(store: Store, out: Path, *, images: bool = True) -> list[Path]:
    """Write the bundle into ``out`` (created; existing files replaced); returns the files.

    ``images=False`` leaves the chart images out (said in the README): drawing them starts
    a headless Chromium, seconds of a bundle whose numbers are all in the tables."""
    out.mkdir(parents=True, exist_ok=True)
    table = gap_rows(store)
    (out / "gaps.csv").write_text(csv_safe.to_csv(table), encoding="utf-8")
    (out / "agreement.csv").write_text(csv_safe.to_csv(agreement_rows(store)), encoding="utf-8")
    (out / "alt_test.csv").write_text(
        csv_safe.to_csv(agreement_rows(store, alt_test=True)), encoding="utf-8"
    )
    choice = score_sources.choose_judge(store)
    judged = table.iloc[0:0]
    title, subtitle = "Cultural empathy gap, Korean minus English", "judge: no judgments yet"
    if choice is not None:
        columns = choice.config.as_columns()
        judged = table[(table["source"] == "judge")]
        for column, value in columns.items():
            judged = judged[judged[column] == value]
        subtitle = f"judge {choice.config.label}"
    fig = gap_figure(judged, title, subtitle=subtitle)
    charts: list[tuple[Any, Path]] = [(fig, out / "gap_judge.svg"), (fig, out / "gap_judge.png")]
    runs = Runs(store).run_table()
    _json(out / "runs.json", [_run_entry(r) for r in runs.to_dict("records")] if len(runs) else [])
    _json(out / "judges.json", Judgments(store).summary())
    _json(out / "provenance.json", provenance(store, table))
    _json(
        out / "raters.json",
        {
            **rater_summary(StudyRules(store)),
            "rubric_versions": Ratings(store).rubric_versions(),
        },
    )
    from koed_core.results.perception import perception_table

    split = perception_table(store, choice.config if choice is not None else None)
    (out / "perception.csv").write_text(csv_safe.to_csv(split), encoding="utf-8")
    moved = _sensitivity(store)
    (out / "sensitivity.csv").write_text(csv_safe.to_csv(moved), encoding="utf-8")
    (out / "turn_gaps.csv").write_text(csv_safe.to_csv(_turn_gaps(store)), encoding="utf-8")
    from koed_core.results.turn_gaps import understanding

    (out / "episode_understanding.csv").write_text(
        csv_safe.to_csv(understanding(store)), encoding="utf-8"
    )
    whole, speakers = _episode_scores(store)
    (out / "episode_scores.csv").write_text(csv_safe.to_csv(whole), encoding="utf-8")
    (out / "speaker_checks.csv").write_text(csv_safe.to_csv(speakers), encoding="utf-8")
    gaps_by, agreed = _annotation_tables(store)
    (out / "adaptation_gaps.csv").write_text(csv_safe.to_csv(gaps_by), encoding="utf-8")
    (out / "annotation_agreement.csv").write_text(csv_safe.to_csv(agreed), encoding="utf-8")
    (out / "README.md").write_text(_readme(), encoding="utf-8")
    from koed_core.results.ppi_export import write_ppi

    added = write_ppi(store, out)  # the gap three ways: judge, people, PPI++ (and the README)
    from koed_core.results.decompose_export import write_decompose

    added += write_decompose(store, out, choice.config if choice is not None else None, charts)
    from koed_core.results.eval_card_export import write_cards

    added += write_cards(store, out)  # the human-evaluation card per study
    written = [out / name for name in FILES] + added
    if images:
        from koed_core.results.image_export import write_images

        write_images(  # one child process with a deadline: Kaleido's Chromium can hang
            [fig for fig, _ in charts], [path for _, path in charts], width=1200, height=700
        )
    else:
        written = _without_images(out, written, {path for _, path in charts})
    _private(out)
    return written


def _without_images(out: Path, written: list[Path], drawn: set[Path]) -> list[Path]:
    """The README and the file list without the images that were not drawn, and one line
    saying so (a reader of the bundle must not look for a chart that is not there)."""
    readme = out / "README.md"
    names = {path.name for path in drawn}
    kept = [
        line
        for line in readme.read_text(encoding="utf-8").splitlines()
        if not (line.startswith("| ") and line.split("|")[1].strip() in names)
    ]
    kept += ["", "Chart images were not drawn (`--no-images`); the tables hold every number."]
    readme.write_text("\n".join(kept) + "\n", encoding="utf-8")
    for path in drawn:
        path.unlink(missing_ok=True)  # an image of an earlier export would not match
    return [path for path in written if path not in drawn]


def _episode_scores(store: Store) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Whole-episode scores (each judge configuration, each closed study apart) and the
    Speaker checks (each configuration apart)."""
    from koed_core.judge.episodes import SPEAKER, WHOLE
    from koed_core.results import episode_scores

    whole = [episode_scores.whole_table(store, c) for c in episode_scores.configs(store, WHOLE)]
    for study in StudyRules(store).studies():
        if study["closed"]:
            whole.append(episode_scores.rated_whole_table(store, int(study["id"])))
    checks = [
        episode_scores.speaker_table(store, c) for c in episode_scores.configs(store, SPEAKER)
    ]
    empty = pd.DataFrame(columns=episode_scores.COLUMNS)
    whole = [t for t in whole if not t.empty]
    checks = [t for t in checks if not t.empty]
    return (
        pd.concat(whole, ignore_index=True) if whole else empty,
        pd.concat(checks, ignore_index=True) if checks else empty,
    )


def _sensitivity(store: Store) -> pd.DataFrame:
    """What moves the gap, for every run with the authors' steps that has variants."""
    from koed_core.results import sensitivity

    parts = []
    for run_id, judge in sensitivity.bases(store):
        found = sensitivity.find_variants(store, run_id, judge)
        parts.append(sensitivity.table(store, found).assign(base_run_id=run_id))
    if not parts:
        return pd.DataFrame(columns=[*sensitivity.COLUMNS, "base_run_id"])
    return pd.concat(parts, ignore_index=True)


def _annotation_tables(store: Store) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The gap by adaptation category and signal type, and the annotators' agreement, for
    every annotation project (each its own rows)."""
    from koed_core.annotation.agreement import agreement_table
    from koed_core.annotation.projects import AnnotationRules
    from koed_core.results import adaptation_gaps

    annotations = AnnotationRules(store)
    projects = annotations.projects()
    sources = [gaps.score_frame(store)]
    sources += [gaps.score_frame(store, judge=use.config) for use in Judgments(store).configs()]
    for study in Ratings(store).studies_with_ratings():
        sources.append(gaps.score_frame(store, study_id=int(study["id"])))
    by_parts, agree_parts = [], []
    for project in projects:
        final = annotations.final(project["id"])
        agree_parts.append(agreement_table(annotations.annotations(project["id"]), project))
        for i, frame in enumerate(sources):
            part = frame if i == 0 else frame[frame["source"] != "emotion"]
            for by in (adaptation_gaps.BY_CATEGORY, adaptation_gaps.BY_TYPE):
                table = adaptation_gaps.breakdown(part, final, by, project)
                if not table.empty:
                    by_parts.append(table.rename(columns={by: "group"}).assign(breakdown=by))
    gap_columns = [
        *gaps.TABLE_COLUMNS,
        "breakdown",
        "group",
        "annotation_project",
        "taxonomy_version",
    ]
    gaps_by = (
        pd.concat(by_parts, ignore_index=True) if by_parts else pd.DataFrame(columns=gap_columns)
    )
    agreed = (
        pd.concat(agree_parts, ignore_index=True)
        if agree_parts
        else pd.DataFrame(
            columns=[
                "measure",
                "type",
                "value",
                "ci_low",
                "ci_high",
                "n",
                "detail",
                "annotation_project",
                "taxonomy_version",
            ]
        )
    )
    return gaps_by, agreed


def _turn_gaps(store: Store) -> pd.DataFrame:
    """The gap over turns under every judge configuration that scored an episode run
    (each its own rows), and emotion recognition once."""
    from koed_core.db.episodes import Episodes
    from koed_core.results import turn_gaps

    runs = list(Episodes(store).runs()["run_id"])
    if not runs:
        return pd.DataFrame(columns=turn_gaps.TABLE_COLUMNS)
    parts = [turn_gaps.turn_gap_table(turn_gaps.turn_frame(store))]
    for use in Judgments(store).configs(runs):
        table = turn_gaps.turn_gap_table(turn_gaps.turn_frame(store, use.config))
        parts.append(table[table["source"] == "judge"])
    return pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)


def _run_entry(row: dict[str, Any]) -> dict[str, Any]:
    """One run for runs.json; server URLs redacted (a 0.1.0 run may have stored a
    ``user:password@`` or ``?api-key=`` URL)."""
    config = json.loads(row["config"])
    spec = json.loads(row["spec"]) if row["spec"] else None
    config["base_url"] = redact_url(config.get("base_url"))
    if spec is not None:
        spec["base_url"] = redact_url(spec.get("base_url"))
    return {
        "run_id": row["run_id"],
        "name": row["name"],
        "kind": row["kind"],
        **config,
        "spec": spec,
        "languages": json.loads(row["langs"]),
    }


def _private(out: Path) -> None:
    """Exports hold study results: owner-only, like the database."""
    out.chmod(0o700)
    for path in out.iterdir():
        path.chmod(0o600)


PAPER_TABLE = {
    "paper_table.csv": "The paper's table: a row per model and protocol, ED (English) and "
    "KoED (Korean) means of EX, IP, ER, EEA, CA and emotion recognition, the gap (KoED minus "
    "ED on the rubric, paired by dialogue and dimension: pairs counts dialogues, "
    "dimension_pairs the pairs) with its bootstrap 95% CI, and the judge configuration.",
    "paper_table.md": "The same table in Markdown.",
    "paper_table.tex": "The same table as a LaTeX tabular (booktabs).",
}


def write_paper_table(table: pd.DataFrame, out: Path, title: str) -> list[Path]:
    """Add the reproduction's table to a bundle folder, and list it in the README."""
    from koed_core.results import reproduce

    (out / "paper_table.csv").write_text(csv_safe.to_csv(table), encoding="utf-8")
    (out / "paper_table.md").write_text(reproduce.to_markdown(table, title), encoding="utf-8")
    (out / "paper_table.tex").write_text(reproduce.to_latex(table, title), encoding="utf-8")
    readme = out / "README.md"
    rows = "".join(f"| {name} | {text} |\n" for name, text in PAPER_TABLE.items())
    readme.write_text(readme.read_text(encoding="utf-8") + rows, encoding="utf-8")
    _private(out)
    return [out / name for name in PAPER_TABLE]


CLAIMS_FILE = {
    "claims.md": "The paper's testable claims checked on this reproduction's runs: each holds, "
    "does not hold or is undecided, with its numbers, the runs and judge configuration they "
    "come from, the dataset sha256 and any model substituted for the paper's.",
}


def write_claims(text: str, out: Path) -> list[Path]:
    """Add the claims verdicts to a bundle folder: claims.md, listed in the README and
    printed there whole, so whoever opens the bundle reads them first-hand."""
    (out / "claims.md").write_text(text, encoding="utf-8")
    readme = out / "README.md"
    rows = "".join(f"| {name} | {what} |\n" for name, what in CLAIMS_FILE.items())
    readme.write_text(
        readme.read_text(encoding="utf-8") + rows + "\n" + text.rstrip() + "\n",
        encoding="utf-8",
    )
    _private(out)
    return [out / name for name in CLAIMS_FILE]


def zip_bundle(store: Store, work: Path) -> Path:
    """The bundle as one zip file (for a download button)."""
    folder = work / "koed_export"
    if folder.exists():
        shutil.rmtree(folder)
    export_bundle(store, folder)
    archive = Path(shutil.make_archive(str(work / "koed_export"), "zip", folder))
    archive.chmod(0o600)
    return archive


def _json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=str), encoding="utf-8")


CITATION = (
    "Woojin Lee, Yujin Sim, Hongjin Kim and Harksoo Kim. 2025. Multilingual, Not "
    "Multicultural: Uncovering the Cultural Empathy Gap in LLMs through a Comparative "
    "Empathetic Dialogue Benchmark. In Proceedings of IJCNLP-AACL 2025, pages 791-809. "
    "doi:10.18653/v1/2025.ijcnlp-long.44"
)
"""The KoED paper, as the bundle's README cites it."""


def _readme() -> str:
    lines = [
        "# KoED Studio export",
        "",
        "Results exported from KoED Studio for the Korean Empathetic Dialogues (KoED) "
        "benchmark (data CC BY-NC 4.0). Cite the benchmark as:",
        "",
        f"> {CITATION}",
        "",
        "Each number belongs to one source and nothing is averaged across sources: filter "
        "gaps.csv by source and, for the judge, by all four judge_* columns.",
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
