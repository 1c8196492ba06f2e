"""Source order, and the verified download against a local HTTP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from koed_core.config import Settings
from koed_core.dialogues.sources import (
    OFFICIAL,
    download_official,
    official_cache_path,
    resolve_source,
)
from koed_core.errors import DatasetError, DownloadError
from koed_core.paths import SAMPLE_FILE


def test_sample_when_nothing_else(tmp_path: Path) -> None:
    source = resolve_source(None, tmp_path)
    assert source.kind == "sample" and source.path == SAMPLE_FILE
    assert "not KoED" in source.description


def test_user_path_wins(tmp_path: Path, generated_release: bytes) -> None:
    cached = official_cache_path(tmp_path)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(generated_release)
    assert resolve_source(None, tmp_path).kind == "official"
    assert resolve_source(str(SAMPLE_FILE), tmp_path).kind == "path"


def test_missing_user_path_is_an_error_not_a_silent_fallback(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        resolve_source(str(tmp_path / "missing.json"), tmp_path)


def test_tampered_cache_is_not_used(tmp_path: Path) -> None:
    cached = official_cache_path(tmp_path)
    cached.parent.mkdir(parents=True)
    cached.write_text("[]")
    assert resolve_source(None, tmp_path).kind == "sample"


def test_download_verifies_and_caches(
    file_server, generated_release: bytes, tmp_path: Path
) -> None:
    server, folder = file_server
    (folder / "KoED.json").write_bytes(generated_release)
    seen: list[tuple[int, int]] = []
    target = official_cache_path(tmp_path / "cache")
    path = download_official(
        target, url=server.url("KoED.json"), progress=lambda d, t: seen.append((d, t))
    )
    assert path == target and path.read_bytes() == generated_release
    assert seen[-1] == (len(generated_release), len(generated_release))
    assert resolve_source(None, tmp_path / "cache").kind == "official"


def test_checksum_mismatch_keeps_nothing_and_keeps_the_old_copy(
    file_server, generated_release: bytes, tmp_path: Path
) -> None:
    server, folder = file_server
    (folder / "KoED.json").write_bytes(generated_release[:-1] + b" ")
    target = official_cache_path(tmp_path)
    target.parent.mkdir(parents=True)
    target.write_bytes(generated_release)
    with pytest.raises(DownloadError, match="checksum mismatch"):
        download_official(target, url=server.url("KoED.json"))
    assert target.read_bytes() == generated_release
    assert [p.name for p in target.parent.iterdir()] == ["KoED.json"]


def test_http_error_and_unreachable_server(file_server, tmp_path: Path) -> None:
    server, _ = file_server
    with pytest.raises(DownloadError, match="answered 404"):
        download_official(tmp_path / "x.json", url=server.url("missing.json"))
    with pytest.raises(DownloadError, match="could not download"):
        download_official(tmp_path / "x.json", url="http://127.0.0.1:9/KoED.json", timeout=2)
    assert not (tmp_path / "x.json").exists()


def test_settings_environment_wins_over_secrets(tmp_path: Path) -> None:
    env = {"KOED_DATA": "/env.json", "KOED_CACHE_DIR": str(tmp_path)}
    settings = Settings.from_sources(env, {"KOED_DATA": "/secret.json", "KOED_DB": "/s.db"})
    assert settings.data_path == "/env.json"
    assert str(settings.db_path) == "/s.db"  # given only in secrets: taken from there
    assert settings.cache_dir == tmp_path
    assert Settings.from_sources({}).data_url is None  # the pinned release's address


def test_the_real_release_constant_matches_the_shared_copy(official_file: Path) -> None:
    # an extra check on real data: the pinned sha256 is the official file's
    from koed_core.dialogues.sources import sha256_of

    assert sha256_of(official_file) == OFFICIAL.sha256
    assert official_file.stat().st_size == OFFICIAL.size
