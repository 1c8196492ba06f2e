"""The talk demo: two models on one situation, ko and en, replayed from stored answers.

A venue without network still gets a demo: answers from a real run are replayed word by
word at a speaking pace, and the page says they are a replay and of which run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields

import pandas as pd

from koed_core.db import Runs, Store
from koed_core.errors import KoedError
from koed_core.models.registry import ModelSpec
from koed_core.text.redact import redact_url

WORD = re.compile(r"\S+\s*")


def demo_runs(store: Store) -> pd.DataFrame:
    """Runs with at least one stored answer: id, model, provenance, protocol, updated."""
    frame = Runs(store).demo_runs()
    columns = ["run_id", "model", "provenance", "protocol", "reference", "updated"]
    return frame if not frame.empty else pd.DataFrame(columns=columns)


def shared_dialogues(store: Store, run_ids: Sequence[str]) -> list[str]:
    """conv_ids every run answered in both languages."""
    return Runs(store).shared_dialogues(run_ids)


def stored_answers(
    store: Store, run_ids: Sequence[str], conv_id: str
) -> dict[tuple[str, str], str]:
    """(run_id, lang) -> the stored reply text."""
    return Runs(store).stored_answers(run_ids, conv_id)


def partners(store: Store, run_ids: Sequence[str]) -> dict[str, list[str]]:
    """For each run, the other runs it shares at least one dialogue with (in both
    languages), best partner first: the demo never offers a pair with nothing to show."""
    counts = {
        (a, b): len(Runs(store).shared_dialogues([a, b]))
        for a in run_ids
        for b in run_ids
        if a != b
    }
    return {
        a: sorted((b for b in run_ids if counts.get((a, b))), key=lambda b: -counts[(a, b)])
        for a in run_ids
    }


def run_spec(store: Store, run_id: str, registry: Mapping[str, ModelSpec]) -> ModelSpec:
    """The model behind a run, to ask it live: the stored spec, key name included.

    The registry entry of the same name wins when it is the same model on the same server
    (it has the real URL; the stored one is redacted). Otherwise the stored spec is used;
    a run stored by 0.1.0 kept no key name and is refused (guessing would send one
    provider's key to another).

    Raises:
        KoedError: no such run, or a 0.1.0 run whose key name cannot be known.
    """
    stored = Runs(store).run_config(run_id)
    if stored is None:
        raise KoedError(f"no run {run_id!r}")
    config, spec = stored
    entry = registry.get(config["model_name"])
    if entry is not None and (entry.backend, entry.model, redact_url(entry.base_url) or None) == (
        config["backend"],
        config["model_id"],
        config["base_url"] or None,
    ):
        return entry  # the registry's entry holds the real server URL and key name
    if spec is not None and spec.get("api_key_env"):
        allowed = {f.name for f in fields(ModelSpec)}
        return ModelSpec(**{k: v for k, v in spec.items() if k in allowed})
    raise KoedError(
        f"run {run_id[:8]} ({config['model_name']}) was stored without the name of its "
        "API key and models.toml has no matching entry; it can only be replayed"
    )


def replay(texts: Sequence[str]) -> Iterator[list[str]]:
    """Grow all texts together, one word each per step, as if streamed side by side."""
    words = [WORD.findall(text) for text in texts]
    for step in range(1, max((len(w) for w in words), default=0) + 1):
        yield ["".join(w[:step]) for w in words]
