"""``CheckpointStorage.adopt_shared_file``: a claimed job's shared file becomes this job's too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from undertow.storage import CheckpointStorage


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
