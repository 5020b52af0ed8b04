"""Duplicating a restored shared file into this job's ``shared/`` (FLIP-193): a hard link on
a local file system (a copy across devices), a server-side copy on an object store (moto's
S3), and ``None`` -- re-upload -- where neither is possible. The source never changes."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped]
import pytest

from undertow.runtime.checkpoint.shared_files import SharedFiles
from undertow.storage import CheckpointStorage, CheckpointStorageError
from undertow.storage.duplicate import (
    DuplicateMethod,
    SharedFileDuplication,
    duplicate_method,
    link_or_copy,
)


def _restored(root: str, options: dict[str, Any] | None = None) -> tuple[CheckpointStorage, str]:
    old = CheckpointStorage(root, "old", storage_options=options)
    handle = old.write_shared_file("op-abc-3-000009.sst", b"sst bytes" * 100)
    return old, old.shared_file_uri(handle.path)


def test_the_decision_by_file_system_class() -> None:
    local, memory = fsspec.filesystem("file"), fsspec.filesystem("memory")
    assert duplicate_method(local, local) is DuplicateMethod.HARD_LINK
    assert duplicate_method(memory, memory) is DuplicateMethod.SERVER_SIDE_COPY
    assert duplicate_method(memory, local) is None, "another file system: re-upload"
    assert duplicate_method(local, memory) is None
    s3fs = pytest.importorskip("s3fs")
    s3 = s3fs.S3FileSystem(anon=True, skip_instance_cache=True)
    assert duplicate_method(s3, s3) is DuplicateMethod.SERVER_SIDE_COPY, "s3fs' async copy"


def test_a_local_file_is_hard_linked_and_the_source_never_changes(tmp_path: Path) -> None:
    _, source = _restored(str(tmp_path))
    before = os.stat(source)
    new = CheckpointStorage(str(tmp_path), "new")
    assert isinstance(new, SharedFileDuplication)
    assert new.duplicate_method(source) is DuplicateMethod.HARD_LINK

    duplicate = new.duplicate_shared_file(source)

    assert duplicate == str(tmp_path / "new" / "shared" / "op-abc-3-000009.sst")
    assert os.path.samefile(source, duplicate), "a hard link, not a copy"
    os.unlink(duplicate)  # the new job deletes its duplicate once no checkpoint holds it
    after = os.stat(source)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert Path(source).read_bytes() == b"sst bytes" * 100


def test_across_devices_the_file_is_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, source = _restored(str(tmp_path))

    def no_link(src: str, dst: str) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link", src)

    monkeypatch.setattr(os, "link", no_link)
    duplicate = CheckpointStorage(str(tmp_path), "new").duplicate_shared_file(source)
    assert not os.path.samefile(source, duplicate), "a copy"
    assert Path(duplicate).read_bytes() == Path(source).read_bytes()


def test_other_link_errors_are_raised_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, source = _restored(str(tmp_path))

    def denied(src: str, dst: str) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", src)

    monkeypatch.setattr(os, "link", denied)
    with pytest.raises(PermissionError, match=r"op-abc-3-000009\.sst"):
        CheckpointStorage(str(tmp_path), "new").duplicate_shared_file(source)


def test_link_or_copy_keeps_an_existing_target(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    source.write_bytes(b"x")
    assert link_or_copy(str(source), str(target)) is True
    assert link_or_copy(str(source), str(target)) is True, "the same file: kept"
    assert target.read_bytes() == b"x"


def test_an_s3_file_is_copied_on_the_server(s3_options: dict[str, Any]) -> None:
    root = "s3://undertow-test/duplicate"
    old, source = _restored(root, s3_options)
    new = CheckpointStorage(root, "new", storage_options=s3_options)
    assert new.duplicate_method(source) is DuplicateMethod.SERVER_SIDE_COPY
    fs: Any = new._fs  # the store, to watch what passes through this process
    reads: list[str] = []
    cat = fs.cat_file
    fs.cat_file = lambda path, *a, **k: reads.append(path) or cat(path, *a, **k)

    duplicate = new.duplicate_shared_file(source)

    assert duplicate == "s3://undertow-test/duplicate/new/shared/op-abc-3-000009.sst"
    assert reads == [], "a server-side copy reads no byte here"
    fs.cat_file = cat
    handle = old.write_shared_file("op-abc-3-000009.sst", b"sst bytes" * 100)
    assert new.read_file(handle, 4) == b"sst bytes" * 100
    new.discard_shared_file(duplicate)
    assert old.read_file(handle, 4) == b"sst bytes" * 100, "the source stays"


def test_another_file_system_cannot_duplicate_and_shared_files_fall_back_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old, source = _restored(CheckpointStorage.in_memory("x").root_uri)
    new = CheckpointStorage(str(tmp_path), "new")
    assert new.duplicate_method(source) is None
    with pytest.raises(CheckpointStorageError, match=r"job 'new': memory://.* cannot be dup"):
        new.duplicate_shared_file(source)
    handle = old.write_shared_file("two.sst", b"2")
    pointer = old.checkpoint_pointer(3)
    shared = [old.write_shared_file("op-abc-3-000009.sst", b"sst bytes" * 100), handle]
    with caplog.at_level(logging.INFO, logger="undertow.runtime.checkpoint.shared_files"):
        assert SharedFiles(new).duplicate(pointer, shared) == []
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "2 restored shared files" in lines[0], lines
    assert "uploads the restored state again" in lines[0]
    assert not (tmp_path / "new").exists(), "nothing duplicated, nothing written"


def test_shared_files_duplicate_each_file_once(tmp_path: Path) -> None:
    old, _ = _restored(str(tmp_path))
    handle = old.write_shared_file("op-abc-3-000009.sst", b"sst bytes" * 100)
    new = CheckpointStorage(str(tmp_path), "new")
    calls: list[str] = []
    duplicate = new.duplicate_shared_file
    new.duplicate_shared_file = lambda uri: calls.append(uri) or duplicate(uri)  # type: ignore
    # after a rescale several subtasks' handles name the same file: duplicated once
    located = SharedFiles(new).duplicate(old.checkpoint_pointer(3), [handle, handle, handle])
    assert located == [new.shared_file_uri(handle.path)] and len(calls) == 1
