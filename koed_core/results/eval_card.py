"""The human-evaluation card of one study (issue 64 item 5): what a 2026 reviewer's
checklist asks of a human evaluation, read from what the database holds.

Each item names the checklist questions it answers (ARR's Responsible NLP checklist,
section D, "human annotators"; HEDS, the Human Evaluation Datasheet, by section), its
value and where the value came from (table, study, version). Where the database holds
nothing the item says "not recorded": never a guessed or default value. Ethics review is
always "not recorded": the app stores no such approval. Raters appear in aggregate only.
Values are held as data and sentences as their messages, said in the reader's language
only when shown (:mod:`koed_core.results.eval_card_text`).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from koed_core import i18n
from koed_core.db import JudgeConfig, Ratings, Store
from koed_core.db.crowd import Crowd
from koed_core.i18n import N_
from koed_core.rating.attention_rules import check_verdicts
from koed_core.rating.bilingual import DESIGN_WORDS
from koed_core.rating.crowd import exclusions
from koed_core.rating.crowd.decisions import report_rows
from koed_core.rating.crowd.links import Invite
from koed_core.rating.sampling import describe
from koed_core.rating.studies import StudyRules
from koed_core.results import agreement, score_sources
from koed_core.results.eval_card_text import LANG_WORDS, Said, show_checklist
from koed_core.results.eval_card_text import show_value as show_value

HEDS_SECTIONS = {
    "design": N_("experimental design"),
    "sample": N_("output sample, experimental design"),
    "evaluators": N_("evaluators"),
    "criteria": N_("quality criteria"),
    "ethics": N_("ethics"),
}
"""The HEDS sections the card's items answer, as a reader is told them."""


@dataclass(frozen=True)
class CardItem:
    """One line of the card: what is asked, the answer, where it came from, and the
    checklist questions it answers (ARR's code; HEDS's section, a key of HEDS_SECTIONS)."""

    key: str
    label: str
    value: Any
    source: Said
    arr: str = ""
    heds: str = ""

    @property
    def recorded(self) -> bool:
        return self.value not in (None, "", [], {})

    @property
    def checklist(self) -> str:
        """The checklist questions in the reader's language."""
        return show_checklist(self.arr, HEDS_SECTIONS.get(self.heds, ""))


def card(store: Store, study_id: int) -> list[CardItem]:
    """Every item of one study's card, in the order a reader looks for them."""
    ratings = Ratings(store)
    study = ratings.study(study_id)
    if study is None:
        return []
    config = StudyRules(store).config(study_id)
    frame = ratings.ratings_frame(study_id)
    invites = [Invite.from_row(r) for r in Crowd(store).invites(study_id)]
    reports = {invite.id: report_rows(store, invite) for invite in invites}
    of = {"study": study_id}
    items = [
        CardItem(
            "study",
            N_("Study"),
            _study(study_id, study),
            Said(N_("studies, id {study}"), of),
            heds="design",
        ),
        CardItem(
            "design",
            N_("Items and design"),
            Said(
                N_("{sampling}; {overlap} raters per item; languages: {langs}; {bilingual}"),
                {
                    "sampling": lambda: describe(config.sampling),
                    "overlap": config.overlap,
                    "langs": lambda: ", ".join(i18n._(LANG_WORDS[lang]) for lang in config.langs),
                    "bilingual": Said(DESIGN_WORDS.get(config.bilingual, DESIGN_WORDS["free"])),
                },
            ),
            Said(N_("studies.config of study {study}"), of),
            heds="sample",
        ),
        _instructions(frame, study, study_id),
        _consent(Crowd(store).worker_rows(study_id), study_id),
        CardItem(
            "platform",
            N_("Platform"),
            sorted({i.platform for i in invites}) or None,
            Said(N_("invites of study {study}"), of),
            "ARR D2",
            "evaluators",
        ),
        _pay(invites, reports, study_id),
        *_raters(ratings, frame, study_id),
        _attention(frame, config.attention_checks, study_id),
        _exclusions(reports, frame, study_id),
        CardItem(
            "ethics",
            N_("Ethics review"),
            None,
            Said(N_("the app stores no ethics approval")),
            "ARR D4",
            "ethics",
        ),
    ]
    judge = score_sources.choose_judge(store, score_sources.study_runs(store, study_id))
    items.append(_agreement(store, study_id, judge.config if judge else None))
    items.append(
        CardItem(
            "judge",
            N_("Judge configuration"),
            judge.config.as_columns() if judge else None,
            Said(N_("judgments of the study's runs (most recent configuration)")),
            heds="criteria",
        )
    )
    return items


def _study(study_id: int, study: dict[str, Any]) -> Said:
    state = (
        Said(N_("closed {closed}"), {"closed": study["closed"]})
        if study.get("closed")
        else Said(N_("open"))
    )
    return Said(
        N_("{id} · {name}; created {created}, {state}"),
        {"id": study_id, "name": study["name"], "created": study["created"], "state": state},
    )


def _instructions(frame: pd.DataFrame, study: dict[str, Any], study_id: int) -> CardItem:
    versions = sorted(set(frame["rubric_version"].dropna())) if not frame.empty else []
    value = versions or ([study["rubric_version"]] if study.get("rubric_version") else None)
    return CardItem(
        "instructions",
        N_("Instructions (rubric) version"),
        value,
        Said(N_("ratings.rubric_version of study {study}"), {"study": study_id})
        if versions
        else Said(N_("studies.rubric_version of study {study}"), {"study": study_id}),
        "ARR D1",
        "criteria",
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
        Said(N_("crowd_workers.consent_version of study {study}"), {"study": study_id}),
        "ARR D3",
        "ethics",
    )


Reports = dict[str, tuple[list[dict[str, Any]], dict[str, float | None]]]
"""Invite id -> its workers' report rows and summary (``decisions.report_rows``)."""


def _pay(invites: list[Invite], reports: Reports, study_id: int) -> CardItem:
    found = []
    for invite in invites:
        summary = reports[invite.id][1]
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
        Said(
            N_(
                "invites.reward and crowd_workers' times of study {study}; whether the "
                "platform paid is on the platform's own record"
            ),
            {"study": study_id},
        ),
        "ARR D2",
        "evaluators",
    )


def _raters(ratings: Ratings, frame: pd.DataFrame, study_id: int) -> list[CardItem]:
    who = set(frame["username"]) if not frame.empty else set()
    profiles = ratings.raters()
    mine = profiles[profiles["username"].isin(who)] if not profiles.empty else profiles
    source = Said(N_("ratings of study {study} joined with raters (profiles)"), {"study": study_id})
    count = CardItem(
        "raters",
        N_("Raters who rated"),
        len(who) or None,
        Said(N_("ratings of study {study}"), {"study": study_id}),
        "ARR D5",
        "evaluators",
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
        Said(
            N_("ratings of attention items (study_items.instruction) of study {study}"),
            {"study": study_id},
        ),
        heds="evaluators",
    )


def _exclusions(reports: Reports, frame: pd.DataFrame, study_id: int) -> CardItem:
    """Each kind of exclusion apart, with its reason and its workers' ratings
    (:mod:`koed_core.rating.crowd.exclusions`); nothing where no crowd worker came."""
    rows = [row for found, _summary in reports.values() for row in found]
    responses = frame[frame["kind"] == "response"] if not frame.empty else frame
    per_rater = responses.groupby("username").size().to_dict() if not responses.empty else {}
    found = exclusions.exclusions(rows, {str(k): int(v) for k, v in per_rater.items()})
    value = None
    if rows:
        value = {
            "workers": len(rows),
            "excluded": sum(e.workers for e in found),
            "kinds": [asdict(e) for e in found],
        }
    return CardItem(
        "exclusions",
        N_("Exclusions and why"),
        value,
        Said(
            N_(
                "crowd_workers' status, stop_reason, decision and decision_reason of study "
                "{study}, and their ratings; no rating is dropped by an exclusion"
            ),
            {"study": study_id},
        ),
        heds="evaluators",
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
    source = (
        Said(
            N_("ratings of study {study} and judgments of {judge}"),
            {"study": study_id, "judge": judge.label},
        )
        if judge
        else Said(N_("ratings of study {study}; no judge scored its runs"), {"study": study_id})
    )
    return CardItem(
        "agreement",
        N_("Agreement (Krippendorff's alpha, 95% bootstrap CI; judge-people kappa)"),
        value,
        source,
        heds="criteria",
    )


def _round(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 3)


def as_json(items: list[CardItem]) -> list[dict[str, Any]]:
    """The card as plain records, keys and stored values as codes and the sentences in
    English (an unrecorded value stays null, and says so)."""
    with i18n.speaking("en"):
        return [
            {
                "key": item.key,
                "label": item.label,
                "value": item.value.say() if isinstance(item.value, Said) else item.value,
                "source": item.source.say(),
                "checklist": item.checklist,
                "recorded": item.recorded,
            }
            for item in items
        ]


def card_rows(items: list[CardItem]) -> list[dict[str, str]]:
    """Each item's cells (item, value, from, checklist) in the reader's language."""
    return [
        {
            "item": i18n._(item.label),
            "value": show_value(item.key, item.value),
            "from": item.source.say(),
            "checklist": item.checklist,
        }
        for item in items
    ]


def as_markdown(study_id: int, items: list[CardItem]) -> str:
    """The card as a Markdown section of the paper export (English, as files are)."""
    with i18n.speaking("en"):
        lines = [
            f"## Human evaluation, study {study_id}",
            "",
            "| item | value | from | checklist |",
            "| --- | --- | --- | --- |",
        ]
        for row in card_rows(items):
            cells = [row[k].replace("|", "/") for k in ("item", "value", "from", "checklist")]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
