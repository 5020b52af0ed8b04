"""The version 2 ``_metadata`` body (:mod:`undertow.runtime.checkpoint.metadata_msgpack`):
a file table shared by every handle, and errors that name the field."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import msgpack
import pytest

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    ChannelStateReference,
    build_handle,
)
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


def test_a_handle_referring_to_older_files_reads_back_and_older_bodies_still_read() -> None:
    """A checkpoint taken during recovery refers to runs of an older checkpoint's file (a 9th
    handle field); a handle without references keeps the 8 fields of before."""
    old = handle("chk-1/channel-state-a", 100)
    written = handle("chk-2/channel-state-b", 10)
    ref = ChannelStateReference((0, 1), 1, old, 2, 90, "ab" * 32, 40, (25, 25))
    data_sha = "cd" * 32
    referring = build_handle("map (1/1)", 2, ChannelStateDirection.INPUT, {(0, 1): [b"x" * 8]},
                             2, data_sha, file=written, references=[ref])  # fmt: skip
    only_refs = build_handle("map (2/2)", 2, ChannelStateDirection.INPUT, {}, 0, "",
                             references=[ref.at(0)])  # fmt: skip
    vertex = VertexMetadata(1, "map", ("m",), 2, 128, False, {},
                            {0: ChannelStateHandles(input=referring),
                             1: ChannelStateHandles(input=only_refs)})  # fmt: skip
    meta = CheckpointMetadata("job", 2, 1, 2, False, (vertex,))
    back = metadata_from_bytes(metadata_to_bytes(meta))
    assert back == meta
    assert back.vertices[0].channel_state[1].input is not None
    assert back.vertices[0].channel_state[1].input.referenced_bytes == 50
    body = msgpack.unpackb(metadata_to_bytes(meta), strict_map_key=False)
    assert [len(sides[0]) for sides in body["vertices"][0][7].values()] == [9, 9]
    plain = CheckpointMetadata("job", 2, 1, 2, False, (replace(vertex, channel_state={
        0: ChannelStateHandles(input=replace(referring, references=()))}),))  # fmt: skip
    body = msgpack.unpackb(metadata_to_bytes(plain), strict_map_key=False)
    assert [len(sides[0]) for sides in body["vertices"][0][7].values()] == [8]
