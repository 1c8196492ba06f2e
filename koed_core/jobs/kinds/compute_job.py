"""A shared computation: the Adaptation page's similarities, computed once by the worker
for every visitor (issue 66: in a page's own run, "about 21 s" was one visitor's, a
second visitor saw "not computed yet" and started again, and nothing was kept when the
first one left).

The job writes its progress to its row, which every visitor's page reads, keeps the
scores in the on-disk cache the page reads, and stores what it measured (the encoder's
load, the seconds per dialogue) for the next estimate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from koed_core.db import Store
from koed_core.dialogues import adaptation
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import Environment, Hooks, Result, job_dataset, told
from koed_core.jobs.kinds.params import SimilarityJob, TableJob
from koed_core.models.passes import PassReport

SUMMARY = N_("similarities of {dialogues} dialogues computed in {seconds} s")
_encoders: dict[str, adaptation.UseEncoder] = {}
"""One encoder per worker process: a second file's job does not load it again."""


def _encoder() -> tuple[adaptation.UseEncoder, float | None]:
    """The worker's encoder, and the seconds its load took (None: loaded before)."""
    if "use" in _encoders:
        return _encoders["use"], None
    start = time.perf_counter()
    encoder = adaptation.UseEncoder()
    encoder.encode(["warm up"])
    _encoders["use"] = encoder
    return encoder, time.perf_counter() - start


def execute_similarities(
    params: SimilarityJob, store: Store, env: Environment, hooks: Hooks
) -> Result:
    """Embed every ko/en pair of the job's file (unless its cache is there already), with
    progress on the job's row, then keep this machine's timing for the next estimate."""
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    cache_dir = env.settings.cache_dir
    dialogues = len(dataset)
    hooks.say("loading the sentence encoder")
    started = time.perf_counter()
    encoder, load_s = _encoder()
    if adaptation.cache_file(dataset, encoder, cache_dir).is_file():
        summary, said = told(SUMMARY, dialogues=dialogues, seconds=0)
        return Result(summary, said)
    hooks.say("embedding texts")
    embedding = time.perf_counter()
    adaptation.pair_similarities(dataset, encoder, cache_dir, _progress(hooks))
    embed_s = time.perf_counter() - embedding
    adaptation.record_timing(cache_dir, load_s, embed_s / max(dialogues, 1))
    summary, said = told(SUMMARY, dialogues=dialogues, seconds=round(time.perf_counter() - started))
    return Result(summary, said)


def _progress(hooks: Hooks) -> Callable[[int, int], None]:
    """Texts embedded so far, as the job's done of total (what every visitor's bar shows)."""

    def progress(done: int, total: int) -> None:
        if hooks.watch is not None:
            hooks.watch(PassReport(planned=total, succeeded=done))

    return progress


TABLE_SUMMARY = N_("a shared result table computed in {seconds} s")


def execute_table(params: TableJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    """Compute one shared result table and keep it under its stamp and inputs (unless
    someone kept it already), with the seconds it took for the next visitor's estimate."""
    from koed_core.db.computed_results import ComputedResults
    from koed_core.results import shared_tables

    kept = ComputedResults(store)
    key = shared_tables.key(params.name, params.stamp, params.inputs)
    if kept.get(key) is None:
        dataset = None
        if shared_tables.needs_dataset(params.inputs):
            dataset = job_dataset(env, params.data, params.dataset_sha256)
        hooks.say(f"computing {params.name}")
        started = time.perf_counter()
        frame = shared_tables.compute(params.name, store, params.inputs, dataset)
        seconds = time.perf_counter() - started
        kept.keep(
            key,
            params.name,
            params.stamp,
            shared_tables.canonical(params.inputs),
            shared_tables.encode(frame),
            seconds,
        )
    else:
        seconds = 0.0
    if hooks.watch is not None:
        hooks.watch(PassReport(planned=1, succeeded=1))
    summary, said = told(TABLE_SUMMARY, seconds=f"{seconds:.1f}")
    return Result(summary, said)
