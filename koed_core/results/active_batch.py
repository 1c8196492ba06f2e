"""The active next batch of a study: the judge's uncertainty per dialogue, then a batch
drawn with known probabilities and stored with the study (the method is in
:mod:`koed_core.results.ppi_active`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from koed_core.db import Inclusions, JudgeConfig, Judgments, Runs, Store, StudyConfig
from koed_core.i18n import _
from koed_core.judge.rubric import codes
from koed_core.rating.sampling import SamplingError
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi_active
from koed_core.results.ppi_table import judged_scores

GROWS_ACTIVELY = ("random", "active")
"""Designs an active batch may follow: a uniform random pilot, or an earlier active batch."""


@dataclass(frozen=True)
class ActiveBatch:
    """What one active batch did: the study's new configuration, the dialogues added, and
    every dialogue's row as stored (probability, uncertainty, chosen_in, batches)."""

    config: StudyConfig
    added: list[str]
    rows: pd.DataFrame
    source: str


def uncertainty(
    store: Store, config: StudyConfig, judge: JudgeConfig, second: JudgeConfig | None = None
) -> tuple[pd.Series, str]:
    """conv_id -> how unsure the judge is of the dialogue's gap, and where it came from.

    With ``second``: the mean over runs and dimensions of |gap under judge - gap under
    second|. Otherwise the standard error of the judge's own gap from its k samples per
    response (strict mode), sqrt(sd_ko^2 / k_ko + sd_en^2 / k_en), averaged likewise.

    Raises:
        SamplingError: the judge left nothing to be unsure of (one sample per response and
            no second configuration, or two configurations with no dialogue in common).
    """
    runs = list(config.run_ids)
    if second is not None:
        gaps = [_judge_gaps(store, c, runs, config.langs) for c in (judge, second)]
        both = gaps[0].merge(gaps[1], left_index=True, right_index=True, suffixes=("_a", "_b"))
        if both.empty:
            raise SamplingError(
                _("the two judge configurations scored no dialogue of this study in common")
            )
        spread = (both["gap_a"] - both["gap_b"]).abs()
        return spread.groupby("conv_id").mean(), f"disagreement with {second.label}"
    samples = Judgments(store).sample_spread(judge, runs)
    samples = samples[samples["dimension"].isin(codes()) & samples["lang"].isin(config.langs)]
    if samples.empty or float(samples["samples"].max()) < 2:
        raise SamplingError(
            _(
                "the judge gave one score per response, so nothing says where it is unsure: "
                "judge the runs in strict mode with two or more samples, or name a second "
                "judge configuration to compare with"
            )
        )
    samples = samples.assign(var=samples["sd"] ** 2 / samples["samples"].astype(float))
    wide = samples.pivot_table(
        index=["run_id", "dimension", "conv_id"], columns="lang", values="var", aggfunc="mean"
    )
    se = np.sqrt(wide.reindex(columns=["ko", "en"]).sum(axis=1, min_count=2)).dropna()
    return se.groupby("conv_id").mean(), f"strict-mode samples of {judge.label}"


def _judge_gaps(
    store: Store, judge: JudgeConfig, runs: list[str], langs: tuple[str, ...]
) -> pd.DataFrame:
    scored = judged_scores(store, judge, runs, langs)
    wide = scored.pivot_table(
        index=["run_id", "metric", "conv_id"], columns="lang", values="judge", aggfunc="mean"
    ).reindex(columns=["ko", "en"])
    return (wide["ko"] - wide["en"]).dropna().rename("gap").to_frame()


def add_active_batch(
    store: Store,
    study_id: int,
    judge: JudgeConfig,
    more: int,
    second: JudgeConfig | None = None,
) -> ActiveBatch:
    """Draw about ``more`` dialogues favouring the judge's uncertain ones, add their
    responses to the study and store every dialogue's inclusion probability.

    Raises:
        SamplingError: the design cannot grow actively, or the judge gives no uncertainty.
    """
    rules = StudyRules(store)
    config = rules.config(study_id)
    if config.sampling.method not in GROWS_ACTIVELY:
        raise SamplingError(
            _(
                "an active batch follows a uniform random sample; this study's dialogues "
                "were chosen as {method}",
                method=config.sampling.method,
            )
        )
    if more < 1:
        raise SamplingError(_("an active batch needs a size of at least 1 dialogue"))
    rows = Runs(store).answered(config.run_ids, config.langs)
    population = pd.Index(sorted({r["conv_id"] for r in rows}), name="conv_id")
    chosen = set(config.sampling.conv_ids)
    if len(chosen) >= len(population):
        raise SamplingError(_("every answered dialogue is in the study already"))
    stored = Inclusions(store).of_study(study_id).set_index("conv_id")
    before = _before(config, stored, population)
    unsure, source = uncertainty(store, config, judge, second)
    unsure = unsure.reindex(population)
    batch = ppi_active.batch_probabilities(unsure, chosen, float(more))
    batches = int(stored["batches"].max()) + 1 if len(stored) else 1
    added = ppi_active.draw(batch, chosen, config.sampling.seed * 1_000 + batches)
    everyone = sorted(chosen | set(added))
    grown = replace(
        config.sampling,
        method="active",
        conv_ids=tuple(everyone),
        size=len(everyone),
        population=len(population),
    )
    new_config = replace(config, sampling=grown)
    chosen_in = stored["chosen_in"].reindex(population) if len(stored) else None
    table = pd.DataFrame(
        {
            "conv_id": population,
            "probability": ppi_active.combined(before, batch).to_numpy(float),
            "uncertainty": unsure.to_numpy(float),
            "chosen_in": [
                _chosen_in(c, chosen, set(added), chosen_in, batches) for c in population
            ],
            "batches": batches,
        }
    )
    with store.write():
        for row in rows:
            if row["conv_id"] in set(added):
                rules.add_response_item(study_id, row)
        rules.q.update_config(study_id, asdict(new_config))
        Inclusions(store).save(study_id, table.replace({np.nan: None}).to_dict("records"))
    return ActiveBatch(new_config, added, table, source)


def _before(config: StudyConfig, stored: pd.DataFrame, population: pd.Index) -> pd.Series:
    """Each dialogue's probability of being in the study before this batch: stored after
    an active batch, n / N for a uniform sample (0 for a dialogue answered since)."""
    if len(stored):
        return stored["probability"].astype(float).reindex(population).fillna(0.0)
    drawn_from = config.sampling.population or len(population)
    share = len(config.sampling.conv_ids) / drawn_from
    return pd.Series(share, index=population, dtype=float)


def _chosen_in(
    conv_id: str, chosen: set[str], added: set[str], earlier: pd.Series | None, batch: int
) -> int | None:
    if conv_id in added:
        return batch
    if conv_id not in chosen:
        return None
    if earlier is not None and pd.notna(earlier.get(conv_id)):
        return int(earlier[conv_id])
    return 0  # the uniform pilot


def inclusion(store: Store, study_id: int) -> dict[str, float]:
    """The study's stored probabilities (empty for a uniformly drawn study)."""
    return Inclusions(store).probabilities(study_id)
