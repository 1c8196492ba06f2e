"""The human-evaluation card of one study (issue 64 item 5): what a 2026 reviewer's
checklist asks of a human evaluation, read from what the database holds.

Each item names the checklist questions it answers (ARR's Responsible NLP checklist,
section D, "human annotators"; HEDS, the Human Evaluation Datasheet, by section), its
value and where the value came from (table, study, version). Where the database holds
nothing the item says "not recorded": never a guessed or default value. Ethics review is
always "not recorded": the app stores no such approval. Raters appear in aggregate only.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from koed_core.db import JudgeConfig, Ratings, Store
from koed_core.db.crowd import Crowd
from koed_core.i18n import N_
from koed_core.rating.attention_rules import check_verdicts
from koed_core.rating.crowd.decisions import report_rows
from koed_core.rating.crowd.links import Invite
from koed_core.rating.sampling import describe
from koed_core.rating.studies import StudyRules
from koed_core.results import agreement, score_sources

NOT_RECORDED = N_("not recorded")


@dataclass(frozen=True)
class CardItem:
    """One line of the card: what is asked, the answer, and where it came from."""

    key: str
    label: str
    value: Any
    source: str
    checklist: str

    @property
    def recorded(self) -> bool:
        return self.value not in (None, "", [], {})


def card(store: Store, study_id: int) -> list[CardItem]:
    """Every item of one study's card, in the order a reader looks for them."""
    ratings = Ratings(store)
    study = ratings.study(study_id)
    if study is None:
        return []
    config = StudyRules(store).config(study_id)
    frame = ratings.ratings_frame(study_id)
    invites = [Invite.from_row(r) for r in Crowd(store).invites(study_id)]
    workers = Crowd(store).worker_rows(study_id)
    items = [
        CardItem(
            "study",
            N_("Study"),
            f"{study_id} · {study['name']}; created {study['created']}"
            + (f", closed {study['closed']}" if study.get("closed") else ", open"),
            f"studies id {study_id}",
            "HEDS: experimental design",
        ),
        CardItem(
            "design",
            N_("Items and design"),
            f"{describe(config.sampling)}; {config.overlap} raters per item; languages "
            f"{', '.join(config.langs)}; bilingual rule {config.bilingual}",
            f"studies.config of study {study_id}",
            "HEDS: output sample, experimental design",
        ),
        _instructions(frame, study, study_id),
        _consent(workers, study_id),
        CardItem(
            "platform",
            N_("Platform"),
            sorted({i.platform for i in invites}) or None,
            f"invites of study {study_id}",
            "ARR D2; HEDS: evaluators",
        ),
        _pay(store, invites, study_id),
        *_raters(ratings, frame, study_id),
        _attention(frame, config.attention_checks, study_id),
        _exclusions(workers, study_id),
        CardItem(
            "ethics",
            N_("Ethics review"),
            None,
            "the app stores no ethics approval",
            "ARR D4; HEDS: ethics",
        ),
    ]
    judge = score_sources.choose_judge(store, score_sources.study_runs(store, study_id))
    items.append(_agreement(store, study_id, judge.config if judge else None))
    items.append(
        CardItem(
            "judge",
            N_("Judge configuration"),
            judge.config.as_columns() if judge else None,
            "judgments of the study's runs (most recent configuration)",
            "HEDS: quality criteria",
        )
    )
    return items


def _instructions(frame: pd.DataFrame, study: dict[str, Any], study_id: int) -> CardItem:
    versions = sorted(set(frame["rubric_version"].dropna())) if not frame.empty else []
    value = versions or ([study["rubric_version"]] if study.get("rubric_version") else None)
    return CardItem(
        "instructions",
        N_("Instructions (rubric) version"),
        value,
        f"ratings.rubric_version of study {study_id}"
        if versions
        else f"studies.rubric_version of study {study_id}",
        "ARR D1; HEDS: quality criteria",
    )


def _consent(workers: list[dict[str, Any]], study_id: int) -> CardItem:
    counts: dict[str, int] = {}
    for w in workers:
        if w.get("consent_version"):
            counts[str(w["consent_version"])] = counts.get(str(w["consent_version"]), 0) + 1
    return CardItem(
        "consent",
        N_("Consent text versions (workers who agreed)"),
        counts or None,
        f"crowd_workers.consent_version of study {study_id}",
        "ARR D3; HEDS: ethics",
    )


def _pay(store: Store, invites: list[Invite], study_id: int) -> CardItem:
    found = []
    for invite in invites:
        _rows, summary = report_rows(store, invite)
        if invite.reward is None or summary.get("paid_hourly_pay") is None:
            continue
        found.append(
            {
                "link": invite.id,
                "platform": invite.platform,
                "reward": invite.reward,
                "currency": invite.currency,
                "per_hour": round(float(summary["paid_hourly_pay"] or 0), 2),
                "median_minutes": summary.get("median_min"),
            }
        )
    return CardItem(
        "pay",
        N_("Pay per hour (the reward over the median minutes from joining to the code)"),
        found or None,
        f"invites.reward and crowd_workers' times of study {study_id}; whether the platform "
        "paid is on the platform's own record",
        "ARR D2; HEDS: evaluators",
    )


def _raters(ratings: Ratings, frame: pd.DataFrame, study_id: int) -> list[CardItem]:
    who = set(frame["username"]) if not frame.empty else set()
    profiles = ratings.raters()
    mine = profiles[profiles["username"].isin(who)] if not profiles.empty else profiles
    source = f"ratings of study {study_id} joined with raters (profiles)"
    count = CardItem(
        "raters",
        N_("Raters who rated"),
        len(who) or None,
        f"ratings of study {study_id}",
        "ARR D5; HEDS: evaluators",
    )
    if mine.empty:
        return [count, CardItem("languages", N_("Raters' languages"), None, source, "ARR D5")]
    langs = mine["languages"].map(lambda v: json.loads(v) if v else [])
    value = {
        "profiles": len(mine),
        "rate_ko": int(sum("ko" in x for x in langs)),
        "rate_en": int(sum("en" in x for x in langs)),
        "native_korean": int((mine["native_language"] == "ko").sum()),
        "native_other": int((mine["native_language"].fillna("") != "ko").sum()),
        "median_years_korea": _median(mine["years_korea"]),
        "median_years_english_country": _median(mine["years_english"]),
    }
    return [count, CardItem("languages", N_("Raters' languages"), value, source, "ARR D5")]


def _median(values: pd.Series) -> float | None:
    known = pd.to_numeric(values, errors="coerce").dropna()
    return float(statistics.median(known)) if len(known) else None


def _attention(frame: pd.DataFrame, per_rater: int, study_id: int) -> CardItem:
    checks = frame[frame["kind"] == "attention"] if not frame.empty else frame
    value = None
    if not checks.empty:
        verdicts = [
            passed
            for _user, own in checks.groupby("username")
            for _told, passed in check_verdicts(own.to_dict("records")).values()
        ]
        value = {
            "checks_per_rater": per_rater,
            "checks_rated": len(verdicts),
            "pass_rate": round(sum(verdicts) / len(verdicts), 3),
        }
    return CardItem(
        "attention",
        N_("Attention checks passed"),
        value,
        f"ratings of attention items (study_items.instruction) of study {study_id}",
        "HEDS: evaluators",
    )


def _exclusions(workers: list[dict[str, Any]], study_id: int) -> CardItem:
    reasons: dict[str, int] = {}
    for w in workers:
        decided = w.get("decision")
        why = w.get("decision_reason") or w.get("stop_reason")
        if decided in ("reject", "rejected") or (w.get("stop_reason") and not decided):
            key = f"{decided or 'stopped'}: {why or 'no reason recorded'}"
            reasons[key] = reasons.get(key, 0) + 1
    value = reasons or ({"none": len(workers)} if workers else None)
    return CardItem(
        "exclusions",
        N_("Exclusions and why"),
        value,
        f"crowd_workers.decision, decision_reason and stop_reason of study {study_id}",
        "HEDS: evaluators",
    )


def _agreement(store: Store, study_id: int, judge: JudgeConfig | None) -> CardItem:
    table = agreement.table(agreement.load_inputs(store, study_id, judge))
    value = None
    if not table.empty:
        rows = table[table["group"] == "all"] if "group" in table else table
        value = [
            {
                "dimension": r["dimension"],
                "lang": r["lang"],
                "krippendorff_alpha": _round(r.get("alpha")),
                "ci_low": _round(r.get("alpha_ci_low")),
                "ci_high": _round(r.get("alpha_ci_high")),
                "judge_kappa": _round(r.get("judge_kappa")),
            }
            for r in rows.to_dict("records")
        ]
    return CardItem(
        "agreement",
        N_("Agreement (Krippendorff's alpha, 95% bootstrap CI; judge-people kappa)"),
        value,
        f"ratings of study {study_id}"
        + (f" and judgments of {judge.label}" if judge else "; no judge scored its runs"),
        "HEDS: quality criteria",
    )


def _round(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 3)


def as_json(items: list[CardItem]) -> list[dict[str, Any]]:
    """The card as plain records (an unrecorded value stays null, and says so)."""
    return [{**asdict(item), "recorded": item.recorded, "label": item.label} for item in items]


def as_markdown(study_id: int, items: list[CardItem]) -> str:
    """The card as a Markdown section of the paper export (English, as files are)."""
    lines = [
        f"## Human evaluation, study {study_id}",
        "",
        "| item | value | from | checklist |",
        "| --- | --- | --- | --- |",
    ]
    for item in items:
        shown = show_value(item.value) if item.recorded else NOT_RECORDED
        lines.append(f"| {item.label} | {shown} | {item.source} | {item.checklist} |")
    return "\n".join(lines) + "\n"


def show_value(value: Any) -> str:
    """One cell's text: lists and mappings as compact JSON, the rest as written."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text.replace("|", "/")
