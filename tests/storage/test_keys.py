from __future__ import annotations

import os
import stat
import threading
import uuid
from pathlib import Path

import fsspec  # type: ignore[import-untyped]
import pytest

from undertow.core.errors import ConfigurationError
from undertow.storage import (
    KEY_FILE,
    CheckpointKey,
    CheckpointStorageError,
    load_or_create_key,
    parse_key,
    read_key,
)

from .conftest import Backend


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
    assert load_or_create_key(str(tmp_path), "secret text") == b"secret text"
    assert not (tmp_path / KEY_FILE).exists()


def test_creates_key_file_once_with_mode_0600(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    assert read_key(str(root)) is None
    key = load_or_create_key(str(root), None)
    assert len(key) == 32
    path = root / KEY_FILE
    assert path.read_text() == key.hex() + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(str(root), None) == key
    assert read_key(str(root)) == key
    assert read_key(f"file://{root}") == key
    assert [p.name for p in root.iterdir()] == [KEY_FILE]  # no temporary left behind


def test_key_file_is_shared_by_backends(backend: Backend) -> None:
    key = load_or_create_key(backend.root_uri, None, storage_options=backend.options)
    assert read_key(backend.root_uri, storage_options=backend.options) == key
    assert load_or_create_key(backend.root_uri, None, storage_options=backend.options) == key
    assert backend.read(KEY_FILE) == (key.hex() + "\n").encode()


def test_concurrent_creators_agree(tmp_path: Path) -> None:
    root = str(tmp_path)
    start = threading.Barrier(8)
    keys: list[bytes] = []

    def create() -> None:
        start.wait()
        keys.append(load_or_create_key(root, None))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1
    assert sorted(os.listdir(root)) == [KEY_FILE]


@pytest.mark.parametrize("content", [b"not hex\n", b"\xff\xfe", b"\n"])
def test_garbled_key_file_is_reported(tmp_path: Path, content: bytes) -> None:
    (tmp_path / KEY_FILE).write_bytes(content)
    with pytest.raises(CheckpointStorageError, match=KEY_FILE):
        load_or_create_key(str(tmp_path), None)
    with pytest.raises(CheckpointStorageError, match=KEY_FILE):
        read_key(str(tmp_path))


def test_memory_root_without_key() -> None:
    root = f"memory://undertow-test-{uuid.uuid4().hex}"
    try:
        assert read_key(root) is None
        key = load_or_create_key(root, None)
        assert read_key(root) == key
    finally:
        fs = fsspec.filesystem("memory")
        if fs.exists(root):
            fs.rm(root, recursive=True)


def test_checkpoint_key_creates_nothing_until_loaded(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    key = CheckpointKey(str(root), None)
    assert not key.is_loaded and not root.exists()
    loaded = key.load()
    assert key.is_loaded and read_key(str(root)) == loaded
    (root / KEY_FILE).unlink()
    assert key.load() == loaded, "loaded once: later calls do no I/O"
    assert not (root / KEY_FILE).exists()
    assert "checkpoints" in repr(key) and loaded.hex() not in repr(key)


def test_checkpoint_key_loads_once_under_concurrent_calls(tmp_path: Path) -> None:
    key = CheckpointKey(str(tmp_path), None)
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
    assert len(set(keys)) == 1 and sorted(os.listdir(tmp_path)) == [KEY_FILE]


def test_checkpoint_key_retries_after_a_failure(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_bytes(b"not hex\n")
    key = CheckpointKey(str(tmp_path), None)
    with pytest.raises(CheckpointStorageError, match=KEY_FILE):
        key.load()
    assert not key.is_loaded
    (tmp_path / KEY_FILE).unlink()
    assert key.load() == read_key(str(tmp_path))


def test_checkpoint_key_configured_or_known_does_no_io(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    assert CheckpointKey(str(root), "ab" * 16).load() == bytes.fromhex("ab" * 16)
    assert CheckpointKey.of(b"k" * 32).load() == b"k" * 32
    assert not root.exists()
