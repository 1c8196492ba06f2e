"""Gather what the agreement statistics read: one study's ratings and one judge
configuration's scores, never more; and the views around them."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from koed_core.db import JudgeConfig, Judgments, Ratings, Runs, Store
from koed_core.judge.rubric import SCALE
from koed_core.models.runs import run_labels
from koed_core.results.reliability import agreement_table, round_half_up


@dataclass(frozen=True)
class AgreementInputs:
    """Long-form human ratings of one study, one judge's scores, lengths and rater groups."""

    ratings: pd.DataFrame
    judge: pd.DataFrame
    lengths: pd.Series
    groups: dict[str, str]
    study_id: int | None = None
    judge_config: JudgeConfig | None = None


def load_inputs(store: Store, study_id: int | None, judge: JudgeConfig | None) -> AgreementInputs:
    """Ratings of real responses in one study (attention checks left out) and one judge
    configuration's scores. Either may be None: that side is then empty."""
    ratings = Ratings(store)
    long = (
        ratings.long_scores(study_id)
        if study_id is not None
        else pd.DataFrame(columns=["item", "rater", "dimension", "lang", "score"])
    )
    scores = (
        Judgments(store).scores(judge)
        if judge is not None
        else pd.DataFrame(columns=["response_id", "dimension", "score"])
    )
    judged = scores.rename(columns={"response_id": "item"})[["item", "dimension", "score"]]
    groups = {
        user: "native ko" if native == "ko" else "not native ko"
        for user, native in ratings.native_languages().items()
    }
    return AgreementInputs(
        long[["item", "rater", "dimension", "lang", "score"]],
        judged,
        Runs(store).response_lengths(),
        groups,
        study_id,
        judge,
    )


def table(inputs: AgreementInputs) -> pd.DataFrame:
    """The agreement table for these inputs (empty when nobody has rated)."""
    if inputs.ratings.empty:
        return pd.DataFrame()
    return agreement_table(inputs.ratings, inputs.judge, inputs.lengths, inputs.groups)


def alt_test(inputs: AgreementInputs, epsilon: float | None = None) -> pd.DataFrame:
    """The Alternative Annotator Test for these inputs (``koed_core.results.alt_test``):
    could the judge replace one of the raters, per dimension, language and rater group;
    empty when nobody has rated or no judge scored."""
    from koed_core.results import alt_test as test

    if inputs.ratings.empty or inputs.judge.empty:
        return pd.DataFrame(columns=test.COLUMNS)
    chosen = test.EPSILON if epsilon is None else epsilon
    return test.alt_test_table(inputs.ratings, inputs.judge, inputs.groups, chosen)


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
    # rounded as the people's median is (half up), so equal scores meet on the diagonal
    judge = pd.Categorical(round_half_up(pairs["judge"].to_numpy()), categories=list(SCALE))
    human = pd.Categorical(round_half_up(pairs["human_median"].to_numpy()), categories=list(SCALE))
    return pd.crosstab(judge, human, rownames=["judge"], colnames=["human median"], dropna=False)


def disagreements(
    store: Store, inputs: AgreementInputs, pairs: pd.DataFrame, limit: int = 20
) -> pd.DataFrame:
    """The items where judge and people differ most, with rationale and raters' comments."""
    if pairs.empty or inputs.judge_config is None or inputs.study_id is None:
        return pairs
    worst = pairs.reindex(pairs["gap"].abs().sort_values(ascending=False).index).head(limit)
    texts = Runs(store).response_texts(list(worst["item"]))
    places = Runs(store).response_places(list(worst["item"]))
    labels = run_labels(store)
    judgments, ratings = Judgments(store), Ratings(store)
    rows = []
    for item in worst.itertuples():
        comments = ratings.comments(inputs.study_id, item.item, item.dimension)
        run_id, conv_id = places.get(item.item, ("", ""))
        rows.append(
            {
                "run": labels.get(run_id, ""),
                "dialogue": conv_id,
                "dimension": item.dimension,
                "lang": item.lang,
                "judge": item.judge,
                "human_mean": round(item.human_mean, 2),
                "gap": round(item.gap, 2),
                "response": texts.get(item.item, ""),
                "judge_rationale": judgments.rationale(
                    inputs.judge_config, item.item, item.dimension
                ),
                "rater_comments": " | ".join(comments),
            }
        )
    return pd.DataFrame(rows)
