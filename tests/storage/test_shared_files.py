"""The ``shared/`` files (:mod:`undertow.storage.shared_files`): written, named, listed and
deleted by ``SharedFiles`` (the part of ``CheckpointStorage`` they are); a claimed job's shared
file becomes this job's too (``adopt_shared_file``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from undertow.storage import CheckpointStorage
from undertow.storage.shared_files import SharedFiles


def test_shared_files_are_written_listed_and_deleted_by_name_alone(tmp_path: Path) -> None:
    shared = SharedFiles(str(tmp_path), "job")
    assert shared.shared_file_uris() == []
    handle = shared.write_shared_file("op-1-000001.sst", b"sst")
    assert handle.path == "shared/op-1-000001.sst"
    uri = shared.shared_file_uri(handle.path)
    assert uri == str(tmp_path / "job" / "shared" / "op-1-000001.sst")
    assert shared.shared_file_uris() == [uri]
    shared.discard_shared_file(uri)
    shared.discard_shared_file(uri)  # a missing file is fine
    assert shared.shared_file_uris() == []


@pytest.mark.parametrize("path", ["chk-1/a", "shared/x/y", "shared", "../shared/a"])
def test_only_a_file_directly_in_shared_has_a_shared_uri(tmp_path: Path, path: str) -> None:
    with pytest.raises(ValueError):
        SharedFiles(str(tmp_path), "job").shared_file_uri(path)


def test_a_file_outside_a_shared_directory_is_never_deleted(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path), "job")
    storage.write_file(1, "state", b"x")
    with pytest.raises(ValueError, match="not a file in a job's shared/ directory"):
        storage.discard_shared_file(str(tmp_path / "job" / "chk-1" / "state"))
    assert (tmp_path / "job" / "chk-1" / "state").exists()


def test_a_local_file_is_hard_linked_under_its_name(tmp_path: Path) -> None:
    old = CheckpointStorage(str(tmp_path), "old")
    handle = old.write_shared_file("op-abc-3-000009.sst", b"sst bytes")
    source = old.shared_file_uri(handle.path)
    new = CheckpointStorage(str(tmp_path), "new")

    adopted = new.adopt_shared_file(source)

    assert adopted == new.shared_file_uri(handle.path)
    assert os.path.samefile(source, adopted), "a hard link, not a copy"
    assert new.read_file(handle, 4) == b"sst bytes", "the old handle resolves in the new job"
    assert new.adopt_shared_file(source) == adopted, "adopting again keeps the file"
    os.unlink(source)  # the claimed job's name goes once its checkpoint is subsumed
    assert new.read_file(handle, 5) == b"sst bytes"


def test_an_in_memory_file_is_copied(tmp_path: Path) -> None:
    old = CheckpointStorage.in_memory("old")
    handle = old.write_shared_file("x.sst", b"data")
    new = CheckpointStorage(old.root_uri, "new")
    new.adopt_shared_file(old.shared_file_uri(handle.path))
    assert new.read_file(handle, 1) == b"data"


def test_only_files_of_a_shared_directory_are_adopted(tmp_path: Path) -> None:
    old = CheckpointStorage(str(tmp_path), "old")
    state = old.write_file(2, "v0-s0.state", b"state")
    new = CheckpointStorage(str(tmp_path), "new")
    with pytest.raises(ValueError, match=r"chk-2/v0-s0.state' is not a file in a job's shared/"):
        new.adopt_shared_file(f"{old.job_uri}/{state.path}")
