"""Savepoints in storage: export a checkpoint's files into a self-contained savepoint
directory, resolve it, read it back verified; on every backend of the conformance suite."""

from __future__ import annotations

import pytest

from undertow.storage import CheckpointNotFoundError, CheckpointStorageError

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
