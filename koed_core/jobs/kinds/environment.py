"""What a job runs with: the worker's hooks (progress, cancel), its result, the settings
and clients it may use, and the dataset it was queued on."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from koed_core.config import Settings, api_key, merged_env, read_secrets
from koed_core.db import Store
from koed_core.db.jobs import JobError, Jobs
from koed_core.models.client import ChatClient
from koed_core.models.passes import PassHooks, PassReport
from koed_core.models.registry import ModelSpec, load_registry, resolve_model
from koed_core.models.request import DEFAULT_BATCH_SIZE


@dataclass
class Hooks(PassHooks):
    """How a job shows progress and learns it should stop (a terminal's progress bar, or
    a worker writing to the job's row), and says what it is doing."""

    step: Callable[[str, PassReport], None] | None = None
    """A reproduction's per-step reports."""
    say: Callable[[str], None] = field(default=lambda _message: None)


@dataclass
class Result:
    """What a job did, in one sentence and as data for its row."""

    summary: str
    data: dict[str, Any]
    failed: int = 0
    cancelled: bool = False
    problems: dict[str, str] = field(default_factory=dict)
    """Models left out of a reproduction, with the reason."""


def told(message: str, **values: str | int) -> tuple[str, dict[str, Any]]:
    """A job's outcome: the sentence in English, as its row, its log and ``koed jobs``
    keep it whatever language a page reads, and, for its result, the message (marked
    with ``N_``) with its values, so that a page says it again in its reader's language
    (``dispatch.outcome_of``)."""
    return message.format(**values), {"said": {"message": message, "values": values}}


@dataclass
class Environment:
    """Where keys and settings come from for one execution (the worker's process, or the
    terminal's): environment, then .streamlit/secrets.toml."""

    settings: Settings
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    secrets: Mapping[str, Any] = field(default_factory=read_secrets)

    def resolve(self, name: str, family: str | None = None) -> ModelSpec:
        """A registry name or openai:MODEL_ID (of post-processing ``family``, open unless
        told)."""
        registry = load_registry(self.settings.models_path)
        return resolve_model(name, registry, merged_env(self.env, self.secrets), family or "open")

    def key(self, spec: ModelSpec) -> str | None:
        return api_key(spec.api_key_env, self.env, self.secrets)


def client_for(
    env: Environment,
    spec: ModelSpec,
    store: Store,
    *,
    batch: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    stop: Callable[[], bool] | None = None,
    say: Callable[[str], None] | None = None,
) -> ChatClient:
    """A live client, or one that sends its calls through the provider's Batch API (whose
    problems with the provider's output are told through ``say``)."""
    from koed_core.models.backends import make_client

    if not batch:
        return make_client(spec, env.key(spec))
    from koed_core.models.backends.openai_batch import ProviderBatchClient, ProviderBatchOptions

    options = ProviderBatchOptions(poll_s=env.settings.batch_poll_s, batch_size=batch_size)
    client = ProviderBatchClient(spec, env.key(spec), Jobs(store), options, stop=stop, say=say)
    client.check()
    return client


def close_client(client: ChatClient) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()


@contextmanager
def job_client(
    env: Environment,
    spec: ModelSpec,
    store: Store,
    hooks: Hooks,
    *,
    batch: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[ChatClient]:
    """A job's client for ``spec`` (see ``client_for``), stopped and heard through the job's
    hooks, and closed when the job's work with it ends, also when that work fails: every
    job kind holds its clients this way, so none can leave one open."""
    client = client_for(
        env, spec, store, batch=batch, batch_size=batch_size, stop=hooks.stop, say=hooks.say
    )
    try:
        yield client
    finally:
        close_client(client)


def pass_result(
    report: PassReport, message: str, data: Mapping[str, Any], **values: str | int
) -> Result:
    """A model pass's job result (a run, episodes, a judging pass): its sentence (``told``),
    ``data`` with the pass's errors by kind, its failures and whether it was stopped, the
    same for every kind so that the jobs panel reads them alike."""
    summary, said = told(message, **values)
    return Result(
        summary, {**data, "errors": dict(report.errors), **said}, report.failed, report.stopped
    )


def job_dataset(env: Environment, data: str | None, expected: str | None) -> Any:
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.sources import resolve_source

    settings = env.settings
    path = Path(data) if data else resolve_source(settings.data_path, settings.cache_dir).path
    dataset = load_dataset(path)
    if expected and dataset.sha256 != expected:
        raise JobError(
            f"the data changed since the job was queued: {path} has sha256 "
            f"{dataset.sha256[:12]}, the job was queued against {expected[:12]}; queue it again"
        )
    return dataset
