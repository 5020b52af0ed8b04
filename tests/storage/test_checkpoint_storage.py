"""Conformance suite of CheckpointStorage: every backend in conftest.BACKENDS must pass it."""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import pytest

from undertow.core.errors import UndertowError
from undertow.storage import (
    CheckpointDirectory,
    CheckpointNotFoundError,
    CheckpointStorage,
    CorruptCheckpointError,
    FileHandle,
    durable_write,
)

from .conftest import Backend


class Crash(BaseException):
    """Stands for the process dying at the patched call."""


# -- write / read / verify -------------------------------------------------------------------


def test_write_returns_handle_relative_to_job_dir(backend: Backend) -> None:
    storage = backend.storage()
    data = b"state of subtask 0" * 100
    handle = storage.write_file(7, "map-0.state", data)
    assert handle == FileHandle("chk-7/map-0.state", len(data), hashlib.sha256(data).hexdigest())
    assert backend.read("job-1/chk-7/map-0.state") == data
    assert storage.read_file(handle, 7) == data


def test_empty_file_round_trips(backend: Backend) -> None:
    storage = backend.storage()
    handle = storage.write_file(1, "empty", b"")
    assert handle.size == 0
    assert storage.read_file(handle, 1) == b""


def test_rewrite_replaces_content(backend: Backend) -> None:
    storage = backend.storage()
    storage.write_file(1, "a", b"first")
    handle = storage.write_file(1, "a", b"second")
    assert storage.read_file(handle, 1) == b"second"


@pytest.mark.parametrize("name", ["", "_metadata", "_x", ".hidden", "a/b", "..", "a\\b"])
def test_write_rejects_reserved_or_nested_names(backend: Backend, name: str) -> None:
    with pytest.raises(ValueError):
        backend.storage().write_file(1, name, b"x")


@pytest.mark.parametrize("checkpoint_id", [-1, True, "1", 1.0])
def test_rejects_bad_checkpoint_ids(backend: Backend, checkpoint_id: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        backend.storage().write_file(checkpoint_id, "a", b"x")  # type: ignore[arg-type]


def test_read_detects_flipped_bit(backend: Backend) -> None:
    storage = backend.storage()
    handle = storage.write_file(3, "s", b"\x00" * 64)
    backend.write("job-1/chk-3/s", b"\x00" * 10 + b"\x01" + b"\x00" * 53)
    with pytest.raises(CorruptCheckpointError) as info:
        storage.read_file(handle, 3)
    message = str(info.value)
    actual = hashlib.sha256(b"\x00" * 10 + b"\x01" + b"\x00" * 53).hexdigest()
    assert "checkpoint 3" in message and "chk-3/s" in message
    assert handle.sha256 in message and actual in message
    assert info.value.expected == handle.sha256 and info.value.actual == actual
    assert info.value.checkpoint == 3


def test_read_detects_truncation_and_growth(backend: Backend) -> None:
    storage = backend.storage()
    handle = storage.write_file(3, "s", b"0123456789")
    backend.write("job-1/chk-3/s", b"01234")
    with pytest.raises(CorruptCheckpointError, match=r"size 5 bytes, expected 10 bytes"):
        storage.read_file(handle, 3)
    backend.write("job-1/chk-3/s", b"0123456789" * 3)
    with pytest.raises(CorruptCheckpointError, match=r"size 30 bytes, expected 10 bytes"):
        storage.read_file(handle, 3)


def test_read_detects_missing_file(backend: Backend) -> None:
    storage = backend.storage()
    handle = storage.write_file(3, "s", b"data")
    backend.delete("job-1/chk-3/s")
    with pytest.raises(CorruptCheckpointError, match=r"chk-3/s is missing") as info:
        storage.read_file(handle, 3)
    assert isinstance(info.value, UndertowError)


def test_read_resolves_shared_files(backend: Backend) -> None:
    storage = backend.storage()
    backend.write("job-1/shared/sst-1", b"shared bytes")
    handle = FileHandle.of("shared/sst-1", b"shared bytes")
    assert storage.read_file(handle, 4) == b"shared bytes"


def test_read_range_reads_only_the_range(backend: Backend) -> None:
    storage = backend.storage()
    data = bytes(range(256)) * 40
    handle = storage.write_file(3, "channel-state-x", data)
    assert storage.read_range(handle.path, 1000, 300) == data[1000:1300]
    assert storage.read_range(handle.path, 0, 0) == b""
    assert storage.read_range(handle.path, len(data) - 5, 5) == data[-5:]


def test_read_range_rejects_short_missing_and_unsafe(backend: Backend) -> None:
    storage = backend.storage()
    handle = storage.write_file(3, "small", b"0123456789")
    with pytest.raises(CorruptCheckpointError, match="ends early: read 4 of 6 bytes") as info:
        storage.read_range(handle.path, 6, 6)
    assert info.value.path is not None and "chk-3/small" in info.value.path
    with pytest.raises(CorruptCheckpointError, match="missing"):
        storage.read_range("chk-3/nothing", 0, 1)
    with pytest.raises(ValueError):
        storage.read_range("../other-job/chk-3/small", 0, 1)
    with pytest.raises(ValueError):
        storage.read_range(handle.path, -1, 1)


# -- commit / completed ids / read_metadata --------------------------------------------------


def test_commit_makes_checkpoint_complete(backend: Backend) -> None:
    storage = backend.storage()
    storage.write_file(1, "a", b"x")
    storage.write_file(2, "a", b"x")
    storage.write_file(3, "a", b"x")
    assert storage.completed_checkpoint_ids() == []
    pointer = storage.commit_metadata(3, b"meta-3")
    storage.commit_metadata(1, b"meta-1")
    assert storage.completed_checkpoint_ids() == [1, 3]
    assert pointer == storage.checkpoint_pointer(3)
    assert pointer.rstrip("/").endswith("job-1/chk-3")
    assert storage.read_metadata(3) == b"meta-3"
    assert storage.read_metadata(pointer) == b"meta-3"
    assert storage.read_metadata(pointer + "/_metadata") == b"meta-3"
    with pytest.raises(CheckpointNotFoundError):
        storage.read_metadata(2)


def test_completed_ids_of_unknown_job_is_empty(backend: Backend) -> None:
    assert backend.storage("never-ran").completed_checkpoint_ids() == []


def test_completed_ids_ignore_foreign_directories(backend: Backend) -> None:
    storage = backend.storage()
    storage.commit_metadata(10, b"m")
    backend.write("job-1/chk-007/_metadata", b"m")
    backend.write("job-1/chk-x/_metadata", b"m")
    backend.write("job-1/shared/_metadata", b"m")
    assert storage.completed_checkpoint_ids() == [10]


def test_commit_again_replaces_metadata(backend: Backend) -> None:
    storage = backend.storage()
    storage.commit_metadata(1, b"old")
    storage.commit_metadata(1, b"new")
    assert storage.read_metadata(1) == b"new"


def test_crash_during_commit_leaves_no_metadata(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = backend.storage()
    storage.write_file(5, "a", b"state")
    if backend.kind == "local":
        # Between the fsynced temporary file and the rename.
        def crash(src: str, dst: str) -> None:
            raise Crash

        monkeypatch.setattr(durable_write.os, "replace", crash)
    else:
        real_pipe = storage._fs.pipe_file

        def crash_on_metadata(path: str, data: bytes, **kw: object) -> None:
            if path.endswith("_metadata"):
                raise Crash
            real_pipe(path, data, **kw)

        monkeypatch.setattr(storage._fs, "pipe_file", crash_on_metadata)
    with pytest.raises(Crash):
        storage.commit_metadata(5, b"metadata")
    monkeypatch.undo()
    assert not backend.exists("job-1/chk-5/_metadata")
    assert storage.completed_checkpoint_ids() == []
    with pytest.raises(CheckpointNotFoundError):
        storage.read_metadata(5)
    # The coordinator may retry the commit.
    storage.commit_metadata(5, b"metadata")
    assert storage.completed_checkpoint_ids() == [5]


def test_leftover_temporary_metadata_is_not_a_checkpoint(backend: Backend) -> None:
    """What a crash after the temporary write but before the rename leaves on disk."""
    storage = backend.storage()
    storage.write_file(6, "a", b"state")
    backend.write("job-1/chk-6/_metadata.inprogress.deadbeef", b"half a meta")
    assert storage.completed_checkpoint_ids() == []
    with pytest.raises(CheckpointNotFoundError):
        storage.resolve(storage.checkpoint_pointer(6))
    storage.discard(6)
    assert not backend.exists("job-1/chk-6/_metadata.inprogress.deadbeef")


def test_local_commit_order_is_fsync_rename_fsync_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = CheckpointStorage(str(tmp_path), "job")
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        events.append(("replace", f"{os.path.basename(src)}->{os.path.basename(dst)}"))
        real_replace(src, dst)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name file descriptors")
    monkeypatch.setattr(durable_write.os, "fsync", fsync)
    monkeypatch.setattr(durable_write.os, "replace", replace)
    storage.commit_metadata(2, b"meta")
    chk = str(tmp_path / "job" / "chk-2")
    assert [kind for kind, _ in events] == ["fsync", "replace", "fsync", "fsync", "fsync"]
    assert os.path.basename(events[0][1]).startswith("_metadata.inprogress.")
    assert events[1][1].endswith("->_metadata")
    assert [path for _, path in events[2:]] == [chk, str(tmp_path / "job"), str(tmp_path)]
    assert sorted(os.listdir(chk)) == ["_metadata"]


# -- discard ---------------------------------------------------------------------------------


def test_discard_removes_checkpoint_only(backend: Backend) -> None:
    storage = backend.storage()
    for checkpoint_id in (1, 2):
        storage.write_file(checkpoint_id, "a", b"x")
        storage.commit_metadata(checkpoint_id, b"m")
    backend.write("job-1/shared/sst", b"shared")
    storage.discard(1)
    assert storage.completed_checkpoint_ids() == [2]
    assert not backend.exists("job-1/chk-1/a")
    assert backend.exists("job-1/chk-2/a") and backend.exists("job-1/shared/sst")


def test_discard_of_missing_or_uncommitted_checkpoint_is_fine(backend: Backend) -> None:
    storage = backend.storage()
    storage.discard(99)
    storage.write_file(4, "a", b"x")
    storage.discard(4)
    storage.discard(4)
    assert not backend.exists("job-1/chk-4/a")


# -- checkpoint directories and the orphan sweep's delete ----------------------------------


def test_checkpoint_directories_lists_only_this_jobs_chk_dirs(backend: Backend) -> None:
    storage = backend.storage()
    assert storage.checkpoint_directories() == []
    storage.write_file(2, "a", b"x")
    storage.commit_metadata(2, b"m")
    storage.write_file(10, "late", b"x")  # an uncommitted (orphaned) directory
    backend.write("job-1/shared/sst", b"shared")
    backend.write("job-1/taskowned/t", b"task")
    backend.write("job-1/chk-x/a", b"not a checkpoint name")
    backend.write("job-1/chk-07/a", b"not a checkpoint name")
    backend.storage("job-2").write_file(3, "a", b"other job")
    assert storage.checkpoint_directories() == [
        CheckpointDirectory(2, True),
        CheckpointDirectory(10, False),
    ]


def test_discard_uncommitted_deletes_an_orphan_and_never_a_checkpoint(backend: Backend) -> None:
    storage = backend.storage()
    storage.write_file(1, "a", b"x")
    storage.commit_metadata(1, b"m")
    storage.write_file(2, "state", b"x")
    storage.write_file(2, "channel-state", b"y")
    backend.write("job-1/shared/sst", b"shared")
    assert storage.discard_uncommitted(2) is True
    assert not backend.exists("job-1/chk-2/state") and not backend.exists("job-1/chk-2")
    assert storage.discard_uncommitted(1) is False
    assert backend.exists("job-1/chk-1/a") and backend.exists("job-1/chk-1/_metadata")
    assert backend.exists("job-1/shared/sst")
    assert storage.discard_uncommitted(99) is True  # missing: gone already
    assert storage.checkpoint_directories() == [CheckpointDirectory(1, True)]


def test_a_late_file_recreates_a_discarded_directory_and_is_swept(backend: Backend) -> None:
    storage = backend.storage()
    storage.write_file(5, "state", b"x")
    storage.discard(5)
    storage.write_file(5, "late-channel-state", b"late")  # a task's late write
    assert storage.checkpoint_directories() == [CheckpointDirectory(5, False)]
    assert storage.discard_uncommitted(5)
    assert storage.checkpoint_directories() == []


def test_local_discard_uncommitted_raises_when_the_directory_cannot_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = CheckpointStorage(str(tmp_path), "job-1")
    storage.write_file(3, "state", b"x")

    def not_empty(*args: object, **kwargs: object) -> None:
        raise OSError(39, "Directory not empty")

    monkeypatch.setattr(storage._fs, "rm", not_empty)
    with pytest.raises(OSError, match="not empty"):
        storage.discard_uncommitted(3)


# -- resolve ---------------------------------------------------------------------------------


def test_resolve_accepts_directory_and_metadata_file(backend: Backend) -> None:
    storage = backend.storage()
    storage.write_file(8, "a", b"x")
    pointer = storage.commit_metadata(8, b"m")
    for path in (pointer, pointer + "/", pointer + "/_metadata"):
        location = storage.resolve(path)
        assert location.checkpoint_id == 8
        assert location.job_id == "job-1"
        assert location.pointer == pointer
        assert location.root_uri == storage.root_uri
        assert location.metadata_uri == pointer + "/_metadata"


def test_resolve_rejects_non_checkpoints(backend: Backend) -> None:
    storage = backend.storage()
    storage.write_file(8, "a", b"x")
    with pytest.raises(CheckpointNotFoundError, match="not a completed checkpoint"):
        storage.resolve(storage.checkpoint_pointer(8))
    with pytest.raises(CheckpointNotFoundError, match="not a checkpoint"):
        storage.resolve(storage.job_uri)
    with pytest.raises(CheckpointNotFoundError):
        storage.read_metadata(storage.job_uri + "/chk-8")


def test_location_opens_the_writing_job(backend: Backend) -> None:
    """A restore from another job's checkpoint reads through a storage on that job."""
    old = backend.storage("old-job")
    handle = old.write_file(3, "a", b"old state")
    pointer = old.commit_metadata(3, b"m")
    new = backend.storage("new-job")
    location = new.resolve(pointer)
    assert new.read_metadata(pointer) == b"m"
    reader = CheckpointStorage(location.root_uri, location.job_id, storage_options=backend.options)
    assert reader.read_file(handle, location.checkpoint_id) == b"old state"


def test_local_resolve_accepts_file_urls(tmp_path: Path) -> None:
    storage = CheckpointStorage(f"file://{tmp_path}", "job")
    assert storage.root_uri == str(tmp_path)
    pointer = storage.commit_metadata(1, b"m")
    assert pointer == str(tmp_path / "job" / "chk-1")
    assert storage.resolve(f"file://{pointer}/_metadata").checkpoint_id == 1


# -- the in-memory implementation, handles, errors -------------------------------------------


def test_in_memory_storages_are_isolated() -> None:
    first, second = CheckpointStorage.in_memory(), CheckpointStorage.in_memory()
    first.commit_metadata(1, b"m")
    assert first.completed_checkpoint_ids() == [1]
    assert second.completed_checkpoint_ids() == []
    first.discard(1)


@pytest.mark.parametrize(
    ("path", "size", "sha"),
    [
        ("../escape", 1, "0" * 64),
        ("/abs", 1, "0" * 64),
        ("a//b", 1, "0" * 64),
        ("s3://x", 1, "0" * 64),
        ("ok", -1, "0" * 64),
        ("ok", True, "0" * 64),
        ("ok", 1, "0" * 63),
        ("ok", 1, "A" * 64),
    ],
)
def test_file_handle_validates(path: str, size: int, sha: str) -> None:
    with pytest.raises(ValueError):
        FileHandle(path, size, sha)


def test_corrupt_checkpoint_error_pickles() -> None:
    error = CorruptCheckpointError("bad", checkpoint=3, path="p", expected="e", actual="a")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.checkpoint, copy.path, copy.expected, copy.actual) == (
        "bad",
        3,
        "p",
        "e",
        "a",
    )
