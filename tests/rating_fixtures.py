"""Builders shared by the rating tests: a store with a human-reference run and a study."""

from __future__ import annotations

from pathlib import Path

from koed_core.backends import make_client
from koed_core.dataset import Dataset, load_dataset
from koed_core.db import Store
from koed_core.llm import GenerationSettings
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import RaterProfile, RatingStore, StudyConfig
from koed_core.registry import ModelSpec
from koed_core.runner import run_benchmark

SCORES = {"EX": 3, "IP": 4, "ER": 4, "EEA": 3, "CA": 5}


def sample() -> Dataset:
    return load_dataset(SAMPLE_FILE)


def seeded_store(db: Path, dialogues: int = 6) -> tuple[Store, str]:
    """A database with one run of the human reference over the first dialogues, ko and en."""
    store = Store(db)
    dataset = sample()
    spec = ModelSpec(name="human", backend="human")
    report = run_benchmark(
        store,
        make_client(spec),
        spec,
        dataset.dialogues[:dialogues],
        dataset.sha256,
        langs=["ko", "en"],
        protocol="direct",
        settings=GenerationSettings(),
    )
    return store, report.run_id


def study(store: Store, run_id: str, **options: object) -> tuple[RatingStore, int]:
    ratings = RatingStore(store)
    config = StudyConfig(name="test", run_ids=(run_id,), **options)  # type: ignore[arg-type]
    return ratings, ratings.create_study(config, sample())


def rater(
    ratings: RatingStore,
    username: str,
    langs: tuple[str, ...] = ("ko", "en"),
    calibrated: bool = True,
) -> None:
    ratings.save_profile(RaterProfile(username, langs, "ko", 20.0, 1.0))
    if calibrated:
        ratings.mark_calibrated(username)
