"""The transformers adapter on a tiny random GPT-2 built here, and the embedded default."""

from __future__ import annotations

from pathlib import Path

import pytest

from koed_core.dialogues.dataset import load_dataset
from koed_core.models.backends import make_client
from koed_core.models.backends.local import (
    CONVERTED_WEIGHTS,
    EMBEDDED_GGUF,
    _converted_folder,
    _from_pretrained,
    _load,
    _save_converted,
    embedded_model_dir,
    load_model,
)
from koed_core.models.client import GenerationSettings, ModelError
from koed_core.models.prompts import build_messages
from koed_core.models.protocol import build_task
from koed_core.models.registry import ModelSpec
from koed_core.paths import SAMPLE_FILE

GREEDY = GenerationSettings(temperature=0.0, max_tokens=12)
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer GPT-2 with a byte-level BPE tokenizer trained on the sample dialogues."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    texts = [t.ko + " " + t.en for d in load_dataset(SAMPLE_FILE).dialogues for t in d.turns]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<|endoftext|>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=8192,
        n_embd=32,
        n_layer=2,
        n_head=2,
        eos_token_id=None,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    model.generation_config.eos_token_id = None  # never stop early: always 12 new tokens
    model.save_pretrained(folder)
    return folder


def _messages():  # type: ignore[no-untyped-def]
    dialogue = load_dataset(SAMPLE_FILE).dialogues[32]
    return build_messages(build_task(dialogue, "ko"), "single")


@pytest.mark.slow
def test_local_folder_streams_and_completes(tiny_gpt2: Path) -> None:
    client = make_client(ModelSpec(name="tiny", backend="transformers", model=str(tiny_gpt2)))
    assert client.max_concurrency == 1
    pieces = list(client.stream(_messages(), GREEDY, None))
    assert len(pieces) >= 2, "tokens should arrive one piece at a time"
    done = client.complete(_messages(), GREEDY, None)
    assert done.text == "".join(pieces).strip()  # greedy decoding is repeatable
    assert done.completion_tokens and done.completion_tokens <= 14
    tokenizer, _ = load_model(str(tiny_gpt2), None)
    rendered = tokenizer.apply_chat_template(
        _messages(), add_generation_prompt=True, tokenize=False
    )
    assert done.prompt_tokens == len(tokenizer(rendered)["input_ids"])
    assert _load.cache_info().hits >= 2  # loaded once, reused


@pytest.mark.slow
def test_two_panes_on_a_fresh_process_both_answer(tiny_gpt2: Path) -> None:
    # A new interpreter, two threads asking at once: transformers is imported and the
    # model loaded by both at the same moment, as two chat panes do on a fresh server.
    import subprocess
    import sys

    script = f"""
import threading
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings
from koed_core.models.registry import ModelSpec
spec = ModelSpec(name="tiny", backend="transformers", model={str(tiny_gpt2)!r})
results, errors = [], []
def ask():
    try:
        client = make_client(spec)
        msgs = [{{"role": "user", "content": "hello"}}]
        results.append("".join(client.stream(msgs, GenerationSettings(temperature=0.0, max_tokens=6), None)))
    except Exception as err:
        errors.append(repr(err))
threads = [threading.Thread(target=ask) for _ in range(2)]
[t.start() for t in threads]; [t.join() for t in threads]
print(len(results), errors)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "2 []"


@pytest.mark.slow
def test_missing_model_folder_is_a_model_error(tmp_path: Path) -> None:
    client = make_client(
        ModelSpec(name="nowhere", backend="transformers", model=str(tmp_path / "none"))
    )
    with pytest.raises(ModelError, match="could not load model"):
        client.complete(_messages(), GREEDY, None)


@pytest.mark.slow
def test_embedded_default_answers_offline_from_a_copy_that_is_the_same_model(
    embedded_copy: dict[str, bool],
) -> None:
    """The GGUF is read once per run (tests/conftest.py's ``embedded_copy``) and kept as
    safetensors: the copy must hold exactly the GGUF's weights, tokenizer and chat
    template, and the client must answer from it."""
    assert embedded_copy == {
        "same_tensor_names": True,
        "same_weights": True,
        "same_tokens": True,
        "same_chat_template": True,
        "plain_config": True,
    }
    _load.cache_clear()
    client = make_client(ModelSpec(name="smollm2", backend="embedded"))
    messages = build_messages(build_task(load_dataset(SAMPLE_FILE).dialogues[10], "en"), "direct")
    done = client.complete(messages, GenerationSettings(temperature=0.0, max_tokens=24), None)
    assert len(done.text.split()) >= 3
    assert done.completion_tokens is not None and 3 <= done.completion_tokens <= 26
    folder = _converted_folder(str(embedded_model_dir()), EMBEDDED_GGUF)
    assert folder is not None and (folder / CONVERTED_WEIGHTS).is_file()


@pytest.mark.slow
def test_a_converted_copy_is_whole_or_absent(tiny_gpt2: Path, tmp_path: Path) -> None:
    """The copy is written to a staging folder renamed into place: after a save the folder
    loads to the same greedy answer; a save that cannot happen (the cache is a file)
    raises nothing and leaves nothing behind."""
    import torch

    tokenizer, model = _from_pretrained(str(tiny_gpt2), {})
    target = tmp_path / "models" / "tiny-0123"
    _save_converted(tokenizer, model, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny-0123"]
    reloaded_tokenizer, reloaded = _from_pretrained(str(target), {})
    ids = tokenizer("정 한 jeong", return_tensors="pt")
    torch.manual_seed(0)
    first = model.generate(**ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
    second = reloaded.generate(**ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert torch.equal(first, second)

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    _save_converted(tokenizer, model, blocked / "tiny-0123")
    assert blocked.read_text() == "not a folder"


@pytest.mark.slow
def test_the_converted_copy_is_named_by_the_file_and_follows_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another file (or the same file changed) gets another copy; KOED_MODEL_CACHE_DIR
    decides where, and a GGUF that is not there has no copy at all."""
    (tmp_path / "a.gguf").write_bytes(b"one")
    (tmp_path / "b.gguf").write_bytes(b"one")
    monkeypatch.setenv("KOED_MODEL_CACHE_DIR", str(tmp_path / "converted"))
    first = _converted_folder(str(tmp_path), "a.gguf")
    assert first is not None and first.parent == tmp_path / "converted"
    assert first != _converted_folder(str(tmp_path), "b.gguf")
    (tmp_path / "a.gguf").write_bytes(b"changed")
    assert _converted_folder(str(tmp_path), "a.gguf") != first
    assert _converted_folder(str(tmp_path), "missing.gguf") is None


@pytest.mark.slow
def test_a_cut_multibyte_character_is_never_shown(tiny_gpt2: Path) -> None:
    """A random byte-level model emits lone UTF-8 bytes (half a Hangul syllable) all the
    time: the raw decode shows U+FFFD, what reaches the page never does."""
    import torch

    client = make_client(ModelSpec(name="tiny", backend="transformers", model=str(tiny_gpt2)))
    sampled = GenerationSettings(temperature=1.0, max_tokens=30)
    tokenizer, model = load_model(str(tiny_gpt2), None)
    raw_had_halves = False
    for seed in range(2):
        torch.manual_seed(seed)
        ids = tokenizer.apply_chat_template(
            _messages(), add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        out = model.generate(**ids, do_sample=True, temperature=1.0, max_new_tokens=30)
        raw_had_halves |= "\ufffd" in tokenizer.decode(out[0][ids["input_ids"].shape[-1] :])
        torch.manual_seed(seed)
        shown = "".join(client.stream(_messages(), sampled, None))
        assert "\ufffd" not in shown
    assert raw_had_halves, "the case under test did not occur: raise max_tokens or seeds"
