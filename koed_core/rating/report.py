"""What an admin reads about a study: progress, speed, attention, agreement; and the export.

Per-rater agreement is leave-one-out: each rater's scores against the mean of the other
raters on the same item and dimension, as a Spearman correlation (scipy). It spots a
careless rater; the full agreement statistics come with the judge.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from koed_core.i18n import _
from koed_core.rating.server_key import pseudonym
from koed_core.rating.studies import StudyRules, check_verdicts
from koed_core.text import csv_safe

MIN_PAIRS = 5


def ratings_frame(rules: StudyRules, study_id: int) -> pd.DataFrame:
    """One row per (item, rater, dimension) with the item's kind and language."""
    return rules.q.ratings_frame(study_id)


def item_progress(rules: StudyRules, study_id: int) -> pd.DataFrame:
    """Per item: raters done and in progress, against the overlap target."""
    overlap = rules.config(study_id).overlap
    frame = rules.q.item_progress(study_id)
    if not frame.empty:
        frame = frame.fillna(0)
        frame["target"] = [overlap if k != "attention" else None for k in frame["kind"]]
    return frame


def study_totals(items: pd.DataFrame, raters: pd.DataFrame) -> dict[str, Any]:
    """Headline figures: items at their overlap target, items rated, raters, median time."""
    real = items[items["kind"] != "attention"] if not items.empty else items
    median = raters["median_s_per_item"].median() if not raters.empty else None
    return {
        "complete": int((real["done"] >= real["target"]).sum()) if not real.empty else 0,
        "items": len(real),
        "rated": int(items["done"].sum()) if not items.empty else 0,
        "raters": len(raters),
        "median_s": float(median) if median is not None and pd.notna(median) else None,
    }


def rater_report(rules: StudyRules, study_id: int) -> pd.DataFrame:
    """Per rater: items done, median seconds per item, attention pass rate, LOO agreement."""
    frame = rules.q.rater_counts(study_id)
    if frame.empty:
        return frame
    data = ratings_frame(rules, study_id)
    rows = []
    for username in frame["username"]:
        own = data[data["username"] == username] if not data.empty else data
        rows.append(
            {
                "median_s_per_item": _median_time(own),
                "attention_pass_rate": _attention_rate(own),
                **_leave_one_out(data, username),
            }
        )
    return pd.concat([frame, pd.DataFrame(rows)], axis=1)


def _median_time(own: pd.DataFrame) -> float | None:
    if own.empty:
        return None
    per_item = own.groupby("item_id")["time_spent_s"].first().dropna()
    return float(per_item.median()) if len(per_item) else None


def _attention_rate(own: pd.DataFrame) -> float | None:
    """Share of the rater's attention checks passed, by the crowd's own rule."""
    checks = own[own["kind"] == "attention"] if not own.empty else own
    if checks.empty:
        return None
    verdicts = check_verdicts(checks.to_dict("records"))
    return sum(passed for _told, passed in verdicts.values()) / len(verdicts)


def _leave_one_out(data: pd.DataFrame, username: str) -> dict[str, Any]:
    if data.empty:
        return {"loo_spearman": None, "loo_pairs": 0, "loo_note": _("no ratings yet")}
    rated = data[data["kind"] != "attention"]
    own = rated[rated["username"] == username].set_index(["item_id", "dimension"])["score"]
    others = rated[rated["username"] != username].groupby(["item_id", "dimension"])["score"].mean()
    joined = pd.concat([own.rename("own"), others.rename("others")], axis=1, join="inner")
    pairs = len(joined)
    if pairs < MIN_PAIRS:
        note = _(
            "needs {n} shared item-dimensions with other raters (has {pairs})",
            n=MIN_PAIRS,
            pairs=pairs,
        )
        return {"loo_spearman": None, "loo_pairs": pairs, "loo_note": note}
    if joined["own"].nunique() < 2 or joined["others"].nunique() < 2:
        return {
            "loo_spearman": None,
            "loo_pairs": pairs,
            "loo_note": _("undefined: the scores do not vary"),
        }
    from scipy.stats import spearmanr  # here: scipy.stats takes most of a second to import

    rho = float(spearmanr(joined["own"], joined["others"]).statistic)
    reading = _("agrees with the others") if rho >= 0.4 else _("check this rater's work")
    return {"loo_spearman": round(rho, 3), "loo_pairs": pairs, "loo_note": reading}


def export_rows(rules: StudyRules, study_id: int, key: bytes) -> list[dict[str, Any]]:
    """Every rating with its provenance; raters pseudonymous, no profile data."""
    out = []
    for row in rules.q.export_rows(study_id):
        run_config = json.loads(row["run_config"]) if row["run_config"] else {}
        out.append(
            {
                "study_id": study_id,
                "study": row["study_name"],
                "item_id": row["item_id"],
                "kind": row["kind"],
                "response_id": row["response_id"],
                "conv_id": row["conv_id"],
                "lang": row["lang"],
                "rater": pseudonym(key, study_id, row["username"]),
                "dimension": row["dimension"],
                "score": row["score"],
                "comment": row["comment"],
                "time_spent_s": row["time_spent_s"],
                "rubric_version": row["rubric_version"],
                "run_id": row["run_id"],
                "model": run_config.get("model_name"),
                "protocol": run_config.get("protocol"),
                "prompt_version": run_config.get("prompt_version"),
                "created": row["created"],
                "updated": row["updated"],
            }
        )
    return out


def rows_csv(rows: list[dict[str, Any]]) -> str:
    """Export rows as CSV text (a rater's comment keeps its line breaks)."""
    return csv_safe.to_csv(pd.DataFrame(rows), multiline=("comment",))


def rows_jsonl(rows: list[dict[str, Any]]) -> str:
    """Export rows as JSON Lines (Korean kept readable)."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def rater_summary(rules: StudyRules) -> dict[str, Any]:
    """Rater profiles in aggregate only (counts and medians), for exports and papers."""
    frame = rules.q.raters()
    if frame.empty:
        return {"raters": 0}
    langs = frame["languages"].map(json.loads)
    return {
        "raters": len(frame),
        "rate_ko": int(sum("ko" in x for x in langs)),
        "rate_en": int(sum("en" in x for x in langs)),
        "native_korean": int((frame["native_language"] == "ko").sum()),
        "median_years_korea": float(frame["years_korea"].median()),
        "median_years_english": float(frame["years_english"].median()),
    }
