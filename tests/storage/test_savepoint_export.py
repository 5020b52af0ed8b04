"""Savepoints in storage: export a checkpoint's files into a self-contained savepoint
directory, resolve it, read it back verified; on every backend of the conformance suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests import read_only_fs

from undertow.storage import CheckpointNotFoundError, CheckpointStorage, CheckpointStorageError

from .conftest import Backend

JOB = "a1b2c3d4e5f6"


def test_exported_savepoint_is_self_contained_and_resolves(backend: Backend) -> None:
    storage = backend.storage(JOB)
    handle = storage.write_file(4, "map-0.state", b"state" * 50)
    storage.write_file(4, "enumerator-v1.state", b"splits")

    pointer = storage.export_savepoint(4, f"{backend.root_uri}/savepoints", b"metadata")
    storage.discard(4)  # the job's own copy goes; the savepoint must not need it

    assert pointer.rstrip("/").endswith("savepoints/savepoint-a1b2c3-4")
    assert backend.read("savepoints/savepoint-a1b2c3-4/_metadata") == b"metadata"
    location = storage.resolve(pointer)
    assert (location.job_id, location.checkpoint_id) == ("savepoint-a1b2c3-4", 4)
    assert storage.resolve(pointer + "/_metadata") == location
    assert storage.read_metadata(location.pointer) == b"metadata"
    reader = type(storage)(location.root_uri, location.job_id, storage_options=backend.options)
    assert reader.read_file(handle, 4) == b"state" * 50
    assert backend.exists("savepoints/savepoint-a1b2c3-4/chk-4/enumerator-v1.state")


def test_a_savepoint_is_never_overwritten(backend: Backend) -> None:
    storage = backend.storage(JOB)
    storage.write_file(2, "map-0.state", b"x")
    storage.export_savepoint(2, f"{backend.root_uri}/sp", b"first")
    with pytest.raises(CheckpointStorageError, match="savepoint 2 of job 'a1b2c3d4e5f6'"):
        storage.export_savepoint(2, f"{backend.root_uri}/sp", b"second")
    assert backend.read("sp/savepoint-a1b2c3-2/_metadata") == b"first"


def test_an_unfinished_savepoint_does_not_resolve(backend: Backend) -> None:
    backend.write("sp/savepoint-a1b2c3-9/chk-9/map-0.state", b"x")
    with pytest.raises(CheckpointNotFoundError, match="not a completed savepoint"):
        backend.storage(JOB).resolve(f"{backend.root_uri}/sp/savepoint-a1b2c3-9")


def test_discard_location_deletes_a_claimed_checkpoint_or_savepoint_of_another_job(
    backend: Backend,
) -> None:
    """A job that claimed a restored snapshot deletes it through its own storage once it is
    subsumed: the snapshot's directory goes, the other job's directory and files stay."""
    other = backend.storage("0ldj0b99")
    other.write_file(3, "map-0.state", b"x")
    other.write_file(5, "map-0.state", b"y")
    checkpoint = other.commit_metadata(5, b"meta-5")
    other.commit_metadata(3, b"meta-3")
    savepoint = other.export_savepoint(3, f"{backend.root_uri}/sp", b"sp-meta")
    mine = backend.storage(JOB)

    mine.discard_location(checkpoint)
    mine.discard_location(savepoint)
    mine.discard_location(savepoint)  # already gone: fine

    assert other.completed_checkpoint_ids() == [3]
    assert not backend.exists("0ldj0b99/chk-5/map-0.state")
    assert not backend.exists("sp/savepoint-0ldj0b-3/_metadata")
    assert not backend.exists("sp/savepoint-0ldj0b-3/chk-3/map-0.state")


def test_discard_location_refuses_a_directory_that_is_no_snapshot(backend: Backend) -> None:
    backend.write("data/precious.txt", b"keep me")
    with pytest.raises(ValueError, match="not a checkpoint or savepoint directory"):
        backend.storage(JOB).discard_location(f"{backend.root_uri}/data")
    assert backend.read("data/precious.txt") == b"keep me"


# -- probing the target before a savepoint is taken ---------------------------------------------


def test_probing_a_writable_target_makes_it_and_leaves_no_file(backend: Backend) -> None:
    storage = backend.storage(JOB)
    storage.probe_savepoint_target(f"{backend.root_uri}/sp/new")

    fs = backend.fs
    fs.invalidate_cache()
    leftovers = [p for p in fs.find(backend.path("sp")) if "undertow-probe" in p]
    assert leftovers == []
    if backend.kind == "local":
        assert fs.isdir(backend.path("sp/new"))
    storage.write_file(1, "map-0.state", b"x")
    assert storage.export_savepoint(1, f"{backend.root_uri}/sp/new", b"meta")


@pytest.mark.parametrize("in_the_way", ["target", "parent"])
def test_probing_refuses_a_file_in_the_way_naming_path_and_os_error(
    tmp_path: Path, in_the_way: str
) -> None:
    (tmp_path / "blocker").write_bytes(b"not a directory")
    target = tmp_path / "blocker" if in_the_way == "target" else tmp_path / "blocker" / "sp"
    storage = CheckpointStorage(str(tmp_path / "checkpoints"), JOB)

    with pytest.raises(CheckpointStorageError) as caught:
        storage.probe_savepoint_target(str(target))

    message = str(caught.value)
    assert f"savepoint directory {target}: cannot create it" in message, message
    assert ("FileExistsError" if in_the_way == "target" else "NotADirectoryError") in message
    assert isinstance(caught.value.__cause__, OSError)
    assert (tmp_path / "blocker").read_bytes() == b"not a directory"


def test_probing_refuses_a_target_it_may_not_write_naming_path_and_os_error() -> None:
    storage = CheckpointStorage.in_memory(JOB)

    with pytest.raises(CheckpointStorageError) as caught:
        storage.probe_savepoint_target(f"{read_only_fs.PROTOCOL}://savepoints")

    message = str(caught.value)
    where = f"savepoint directory {read_only_fs.PROTOCOL}://savepoints"
    assert f"{where}: cannot write a file into it" in message, message
    assert "PermissionError: [Errno 13] Permission denied" in message, message
