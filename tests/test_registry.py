"""models.toml: the shipped registry, bad entries, and ad-hoc openai: models."""

from __future__ import annotations

from pathlib import Path

import pytest

from koed_core.models.registry import RegistryError, load_registry, resolve_model


def test_shipped_registry_has_the_papers_models() -> None:
    registry = load_registry()
    assert registry["smollm2"].backend == "embedded"
    assert registry["human"].backend == "human"
    assert registry["exaone-3.0-7.8b"].provenance == "korean-centric"
    for name in ("gpt-4o", "claude-3.5-sonnet", "llama-3.1-8b", "qwen2-7b", "mistral-7b"):
        assert registry[name].backend == "openai" and registry[name].model
    assert registry["claude-3.5-sonnet"].api_key_env == "ANTHROPIC_API_KEY"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.x\n", "not valid TOML"),
        (
            '[models.x]\nbackend = "openai"\nmodel = "m"\ncolour = "red"\n',
            "model 'x': unknown key(s) colour",
        ),
        ('[models.x]\nbackend = "ftp"\n', "model 'x': backend must be one of"),
        ('[models.x]\nbackend = "human"\nprovenance = "eastern"\n', "provenance must be one of"),
        ('[models.x]\nbackend = "openai"\n', "the openai backend needs a model id"),
    ],
)
def test_bad_entries_name_the_file_and_the_model(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(text)
    with pytest.raises(RegistryError) as info:
        load_registry(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_resolve_registry_names_and_adhoc_models() -> None:
    registry = load_registry()
    assert resolve_model("smollm2", registry, {}).backend == "embedded"
    adhoc = resolve_model(
        "openai:qwen2.5:7b", registry, {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}
    )
    assert (adhoc.backend, adhoc.model, adhoc.base_url) == (
        "openai",
        "qwen2.5:7b",
        "http://127.0.0.1:11434/v1",
    )
    assert resolve_model("openai:gpt-4o-mini", registry, {}).base_url is None
    with pytest.raises(RegistryError, match="unknown model 'gpt5'; known: .*smollm2"):
        resolve_model("gpt5", registry, {})
