from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError
from undertow.storage import (
    LEGACY_KEY_FILE,
    CheckpointKey,
    CheckpointStorageError,
    default_key_file,
    legacy_key_hint,
    load_or_create_key,
    parse_key,
    read_key,
)


def test_configured_hex_key_is_decoded() -> None:
    assert parse_key("00ff" * 8) == bytes.fromhex("00ff" * 8)
    assert parse_key("  " + "AB" * 16 + "\n") == b"\xab" * 16


def test_configured_text_key_is_utf8() -> None:
    assert parse_key("correct horse battery staple") == b"correct horse battery staple"
    assert parse_key("abcd") == b"abcd"  # too short to be read as hex
    assert parse_key("é" * 3) == "é".encode() * 3


@pytest.mark.parametrize("value", ["", "   ", "\n"])
def test_empty_configured_key_is_an_error(value: str) -> None:
    with pytest.raises(ConfigurationError, match="hmac-key"):
        parse_key(value)


def test_configured_key_wins_and_creates_nothing(tmp_path: Path) -> None:
    key_file = tmp_path / "cfg" / "checkpoint.key"
    assert load_or_create_key(configured="secret text", key_file=key_file) == b"secret text"
    assert not key_file.parent.exists()


def test_default_key_file_is_under_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_key_file() == tmp_path / "xdg" / "undertow" / "checkpoint.key"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_key_file() == tmp_path / "home" / ".config" / "undertow" / "checkpoint.key"


def test_the_suite_never_touches_the_real_home() -> None:
    # tests/conftest.py points XDG_CONFIG_HOME at a temporary directory for the whole run.
    real = Path(os.path.expanduser("~")) / ".config"
    assert real not in default_key_file().parents
    assert os.environ["XDG_CONFIG_HOME"] != str(real)


def test_creates_key_file_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "undertow" / "checkpoint.key"
    assert read_key(key_file=path) is None
    key = load_or_create_key(key_file=path)
    assert len(key) == 32
    assert path.read_text() == key.hex() + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_or_create_key(key_file=path) == key
    assert read_key(key_file=path) == key
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left behind


def test_key_comes_from_the_key_file_option(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.key"
    config = Configuration({"undertow.checkpointing.hmac-key-file": str(path)})
    key = CheckpointKey.from_config(config)
    assert key.key_file == path and key.load() == read_key(key_file=path)
    configured = Configuration({"undertow.checkpointing.hmac-key": "ab" * 16})
    assert CheckpointKey.from_config(configured).load() == bytes.fromhex("ab" * 16)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666, 0o622])
def test_group_or_world_writable_key_file_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "checkpoint.key"
    key = load_or_create_key(key_file=path)
    os.chmod(path, mode)
    for attempt in (lambda: read_key(key_file=path), lambda: load_or_create_key(key_file=path)):
        with pytest.raises(CheckpointStorageError, match=f"{path}.*mode {mode:04o}"):
            attempt()
    os.chmod(path, 0o640)  # group may read: allowed
    assert read_key(key_file=path) == key


def test_key_file_in_a_group_writable_directory_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    path = directory / "checkpoint.key"
    load_or_create_key(key_file=path)
    os.chmod(directory, 0o770)
    with pytest.raises(CheckpointStorageError, match=f"directory {directory} has mode 0770"):
        read_key(key_file=path)


def test_concurrent_creators_agree(tmp_path: Path) -> None:
    path = tmp_path / "undertow" / "checkpoint.key"
    start = threading.Barrier(8)
    keys: list[bytes] = []

    def create() -> None:
        start.wait()
        keys.append(load_or_create_key(key_file=path))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1
    assert sorted(os.listdir(path.parent)) == [path.name]


@pytest.mark.parametrize("content", [b"not hex\n", b"\xff\xfe", b"\n"])
def test_garbled_key_file_is_reported(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "checkpoint.key"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(CheckpointStorageError, match=str(path)):
        load_or_create_key(key_file=path)
    with pytest.raises(CheckpointStorageError, match=str(path)):
        read_key(key_file=path)


def test_legacy_key_in_the_checkpoint_root_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    root.mkdir()
    assert legacy_key_hint(str(root)) is None
    (root / LEGACY_KEY_FILE).write_text("ab" * 32 + "\n")
    path = tmp_path / "cfg" / "checkpoint.key"
    assert load_or_create_key(key_file=path) != bytes.fromhex("ab" * 32)
    hint = legacy_key_hint(str(root))
    assert hint is not None and str(root / LEGACY_KEY_FILE) in hint
    assert "undertow.checkpointing.hmac-key=" in hint


def test_checkpoint_key_creates_nothing_until_loaded(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "checkpoint.key"
    key = CheckpointKey(None, path)
    assert not key.is_loaded and not path.parent.exists()
    loaded = key.load()
    assert key.is_loaded and read_key(key_file=path) == loaded
    path.unlink()
    assert key.load() == loaded, "loaded once: later calls do no I/O"
    assert not path.exists()
    assert "checkpoint.key" in repr(key) and loaded.hex() not in repr(key)


def test_checkpoint_key_loads_once_under_concurrent_calls(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.key"
    key = CheckpointKey(None, path)
    start = threading.Barrier(8)
    keys: list[bytes] = []

    def load() -> None:
        start.wait()
        keys.append(key.load())

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 1 and sorted(os.listdir(tmp_path)) == [path.name]


def test_checkpoint_key_retries_after_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.key"
    path.write_bytes(b"not hex\n")
    path.chmod(0o600)
    key = CheckpointKey(None, path)
    with pytest.raises(CheckpointStorageError, match=str(path)):
        key.load()
    assert not key.is_loaded
    path.unlink()
    assert key.load() == read_key(key_file=path)


def test_checkpoint_key_configured_or_known_does_no_io(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "checkpoint.key"
    assert CheckpointKey("ab" * 16, path).load() == bytes.fromhex("ab" * 16)
    assert CheckpointKey.of(b"k" * 32).load() == b"k" * 32
    assert not path.parent.exists()
