"""Gather what the agreement statistics read from the database, and the views around them."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from koed_core.agreement import agreement_table, round_half_up
from koed_core.judging import JudgmentStore
from koed_core.rubric import SCALE
from koed_core.storage import Store

RATINGS_SQL = """
    select r.response_key as item, r.username as rater, r.dimension, i.lang, r.score
    from ratings r join study_items i on i.id = r.item_id where i.kind = 'response'
"""


@dataclass(frozen=True)
class AgreementInputs:
    """Long-form human ratings, one judge's scores, response lengths and rater groups."""

    ratings: pd.DataFrame
    judge: pd.DataFrame
    lengths: pd.Series
    groups: dict[str, str]


def judges(store: Store) -> list[tuple[str, str]]:
    """(judge model, mode) pairs that have judgments."""
    JudgmentStore(store)
    rows = store.db.execute("select distinct judge_model, mode from judgments order by 1, 2")
    return [(r[0], r[1]) for r in rows.fetchall()]


def load_inputs(store: Store, judge_model: str | None, mode: str | None) -> AgreementInputs:
    """Ratings of real responses (attention checks left out) and the chosen judge's scores."""
    ratings = pd.DataFrame()
    if "ratings" in store.db.table_names():
        ratings = pd.DataFrame(list(store.db.query(RATINGS_SQL)))
    if ratings.empty:
        ratings = pd.DataFrame(columns=["item", "rater", "dimension", "lang", "score"])
    scores = JudgmentStore(store).scores()
    if not scores.empty and judge_model:
        scores = scores[(scores["judge_model"] == judge_model) & (scores["mode"] == mode)]
    judge = (
        scores.rename(columns={"response_id": "item"})[["item", "dimension", "score"]]
        if not scores.empty
        else pd.DataFrame(columns=["item", "dimension", "score"])
    )
    lengths = pd.Series(
        {r["id"]: len(r["text"] or "") for r in store.db.query("select id, text from responses")},
        dtype=float,
    )
    groups = {}
    if "raters" in store.db.table_names():
        for row in store.db.query("select username, native_language from raters"):
            groups[row["username"]] = (
                "native ko" if row["native_language"] == "ko" else "not native ko"
            )
    return AgreementInputs(ratings, judge, lengths, groups)


def table(inputs: AgreementInputs) -> pd.DataFrame:
    """The agreement table for these inputs (empty when nobody has rated)."""
    if inputs.ratings.empty:
        return pd.DataFrame()
    return agreement_table(inputs.ratings, inputs.judge, inputs.lengths, inputs.groups)


def paired(inputs: AgreementInputs) -> pd.DataFrame:
    """Items with both a judge score and human ratings: judge, human mean and median."""
    if inputs.ratings.empty or inputs.judge.empty:
        return pd.DataFrame(
            columns=["item", "dimension", "lang", "judge", "human_mean", "human_median", "gap"]
        )
    human = inputs.ratings.groupby(["item", "dimension", "lang"])["score"].agg(
        human_mean="mean", human_median="median"
    )
    judge = inputs.judge.dropna(subset=["score"]).set_index(["item", "dimension"])["score"]
    frame = human.reset_index().join(judge.rename("judge"), on=["item", "dimension"], how="inner")
    frame["gap"] = frame["judge"] - frame["human_mean"]
    return frame


def confusion(pairs: pd.DataFrame) -> pd.DataFrame:
    """5 x 5 counts: judge score (rows) against rounded human median (columns)."""
    judge = pd.Categorical(pairs["judge"].round().astype(int), categories=list(SCALE))
    human = pd.Categorical(round_half_up(pairs["human_median"].to_numpy()), categories=list(SCALE))
    return pd.crosstab(judge, human, rownames=["judge"], colnames=["human median"], dropna=False)


def disagreements(
    store: Store, pairs: pd.DataFrame, judge_model: str, mode: str, limit: int = 20
) -> pd.DataFrame:
    """The items where judge and people differ most, with rationale and raters' comments."""
    if pairs.empty:
        return pairs
    worst = pairs.reindex(pairs["gap"].abs().sort_values(ascending=False).index).head(limit)
    rows = []
    for item in worst.itertuples():
        rationale = store.db.execute(
            "select rationale from judgments where response_id = ? and dimension = ? and "
            "judge_model = ? and mode = ? and score is not null limit 1",
            [item.item, item.dimension, judge_model, mode],
        ).fetchone()
        comments = [
            r[0]
            for r in store.db.execute(
                "select comment from ratings where response_key = ? and dimension = ? "
                "and comment != ''",
                [item.item, item.dimension],
            ).fetchall()
        ]
        text = store.db.execute("select text from responses where id = ?", [item.item]).fetchone()
        rows.append(
            {
                "item": item.item,
                "dimension": item.dimension,
                "lang": item.lang,
                "judge": item.judge,
                "human_mean": round(item.human_mean, 2),
                "gap": round(item.gap, 2),
                "response": text[0] if text else "",
                "judge_rationale": rationale[0] if rationale else "",
                "rater_comments": " | ".join(comments),
            }
        )
    return pd.DataFrame(rows)
