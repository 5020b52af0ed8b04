"""The version 2 ``_metadata`` body (:mod:`undertow.runtime.checkpoint.metadata_msgpack`):
a file table shared by every handle, and errors that name the field."""

from __future__ import annotations

import hashlib

import msgpack
import pytest

from undertow.runtime.checkpoint.metadata_model import CheckpointMetadata, VertexMetadata
from undertow.runtime.checkpoint.metadata_msgpack import metadata_from_bytes, metadata_to_bytes
from undertow.storage import FileHandle


def handle(path: str, size: int = 5) -> FileHandle:
    return FileHandle(path, size, hashlib.sha256(path.encode()).hexdigest())


SHARED = handle("shared/a.sst")
META = CheckpointMetadata(
    job_id="j" * 32,
    checkpoint_id=7,
    trigger_timestamp=10,
    completion_timestamp=20,
    is_savepoint=False,
    vertices=(
        VertexMetadata(1, "source", ("src",), 2, 128, subtasks={0: handle("v1-0"), 1: SHARED}),
        VertexMetadata(2, "sink", ("sink",), 1, 128, finished=True),
    ),
    coordinators={1: handle("coord-1"), 2: None},
    properties={"checkpoint_type": "CHECKPOINT"},
    shared_files=(SHARED,),
)


def test_a_body_reads_back_as_it_was_written() -> None:
    assert metadata_from_bytes(metadata_to_bytes(META)) == META


def test_a_file_named_twice_is_stored_once() -> None:
    document = msgpack.unpackb(metadata_to_bytes(META), strict_map_key=False)
    paths = [entry[0] for entry in document["files"]]
    assert sorted(paths) == ["coord-1", "shared/a.sst", "v1-0"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(id="7"), "id must be an integer"),
        (lambda d: d.update(savepoint=1), "savepoint must be a boolean"),
        (lambda d: d.update(shared=[99]), "file #99 is not in the file table of 3"),
        (lambda d: d.pop("job"), "metadata fields must be"),
    ],
)
def test_a_malformed_body_names_the_field(change: object, message: str) -> None:
    document = msgpack.unpackb(metadata_to_bytes(META), strict_map_key=False)
    change(document)  # type: ignore[operator]
    with pytest.raises((TypeError, ValueError), match=message):
        metadata_from_bytes(msgpack.packb(document))


def test_bytes_that_are_no_msgpack_are_refused() -> None:
    with pytest.raises(ValueError, match="not a msgpack document"):
        metadata_from_bytes(b"\xc1")
