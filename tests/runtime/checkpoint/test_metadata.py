from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import struct
from typing import Any

import msgpack  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint import metadata as codec
from undertow.runtime.checkpoint.metadata import (
    JSON_FORMAT_VERSION,
    MAGIC,
    CheckpointMetadata,
    MetadataTooLargeError,
    VertexMetadata,
    decode_metadata,
    encode_metadata,
    referenced_files,
    total_state_size,
)
from undertow.storage import CorruptCheckpointError, FileHandle

KEY = b"k" * 32
WHERE = "/ckpts/job-1/chk-4"


def handle(path: str, size: int) -> FileHandle:
    return FileHandle(path, size, hashlib.sha256(path.encode()).hexdigest())


def sample() -> CheckpointMetadata:
    return CheckpointMetadata(
        job_id="job-1",
        checkpoint_id=4,
        trigger_timestamp=1_700_000_000_000,
        completion_timestamp=1_700_000_000_250,
        is_savepoint=False,
        vertices=(
            VertexMetadata(
                vertex_id=1,
                name="Source: numbers -> Map",
                uids=("source", "map"),
                parallelism=2,
                max_parallelism=128,
                subtasks={0: handle("chk-4/v1-0", 100), 1: handle("chk-4/v1-1", 120)},
            ),
            VertexMetadata(
                vertex_id=2,
                name="Sink: print",
                uids=("sink",),
                parallelism=1,
                max_parallelism=128,
                finished=True,
            ),
        ),
        coordinators={1: handle("chk-4/coordinator-1", 30), 2: None},
        properties={"type": "CHECKPOINT", "ünïcode": "✓"},
    )


def test_round_trip() -> None:
    meta = sample()
    assert decode_metadata(encode_metadata(meta, KEY), KEY, WHERE) == meta


def test_layout_is_magic_version_length_msgpack_mac() -> None:
    data = encode_metadata(sample(), KEY)
    magic, version, length = struct.unpack_from(">4sHI", data)
    assert (magic, version) == (MAGIC, codec.FORMAT_VERSION) == (b"UTWM", 2)
    assert len(data) == 10 + length + 32
    body = msgpack.unpackb(data[10 : 10 + length], strict_map_key=False)  # no pickle anywhere
    assert body["files"][body["vertices"][0][6][1]][0] == "chk-4/v1-1"
    assert data[-32:] == hmac.new(KEY, data[:-32], hashlib.sha256).digest()


def test_wrong_key_fails_authentication_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    data = encode_metadata(sample(), KEY)

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("body parsed before authentication")

    monkeypatch.setattr(codec.metadata_msgpack, "metadata_from_bytes", no_parsing)
    monkeypatch.setattr(codec.metadata_json, "metadata_from_bytes", no_parsing)
    with pytest.raises(CorruptCheckpointError, match="authentication failed") as info:
        decode_metadata(data, b"another key", WHERE)
    legacy = encode_metadata(sample(), KEY, version=JSON_FORMAT_VERSION)
    with pytest.raises(CorruptCheckpointError, match="authentication failed"):
        decode_metadata(legacy, b"another key", WHERE)
    assert f"{WHERE}/_metadata" in str(info.value)
    assert info.value.checkpoint == WHERE


def test_tampered_body_fails_authentication() -> None:
    data = bytearray(encode_metadata(sample(), KEY))
    position = data.index(b"chk-4/v1-1")
    data[position + 4] ^= 0x01
    with pytest.raises(CorruptCheckpointError, match=r"wrong key or tampered.*hmac-key"):
        decode_metadata(bytes(data), KEY, WHERE)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"PKL\x00" + d[4:], r"bad magic b'PKL\\x00'"),
        (lambda d: d[:4] + b"\x00\x03" + d[6:], "unknown format version 3"),
        (lambda d: d[:-1], "truncated"),
        (lambda d: d[:7], "shorter than the 10-byte header"),
        (lambda d: d[:2], "truncated: 2 bytes"),
        (lambda d: b"", "truncated: 0 bytes"),
        (lambda d: d + b"\x00", "1 unexpected trailing bytes"),
    ],
)
def test_header_checks(mutate: object, message: str) -> None:
    data = encode_metadata(sample(), KEY)
    with pytest.raises(CorruptCheckpointError, match=message):
        decode_metadata(mutate(data), KEY, WHERE)  # type: ignore[operator]


def test_checkpoint_id_must_match_its_directory() -> None:
    data = encode_metadata(sample(), KEY)
    assert decode_metadata(data, KEY, WHERE, expected_checkpoint_id=4).checkpoint_id == 4
    with pytest.raises(CorruptCheckpointError, match="describes checkpoint 4, expected 7"):
        decode_metadata(data, KEY, "/ckpts/job-1/chk-7", expected_checkpoint_id=7)


def signed(body: bytes, key: bytes = KEY, version: int = JSON_FORMAT_VERSION) -> bytes:
    head = struct.pack(">4sHI", MAGIC, version, len(body)) + body
    return head + hmac.new(key, head, hashlib.sha256).digest()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2]", "metadata must be a JSON object"),
        (b'{"job_id": "x"}', "missing field"),
        (b"\xff", "malformed"),
        (b'{"a": NaN}', "non-finite"),
    ],
)
def test_authenticated_but_malformed_body(body: bytes, message: str) -> None:
    with pytest.raises(CorruptCheckpointError, match=message):
        decode_metadata(signed(body), KEY, WHERE)


def v1_body(meta: CheckpointMetadata) -> dict[str, Any]:
    """The JSON body earlier undertow wrote (format version 1)."""
    data = encode_metadata(meta, KEY, version=JSON_FORMAT_VERSION)
    assert data[4:6] == b"\x00\x01"
    return dict(json.loads(data[10:-32]))


def test_malformed_handle_in_authenticated_body() -> None:
    document = v1_body(sample())
    document["vertices"][0]["subtasks"]["0"]["path"] = "../../etc/passwd"
    body = json.dumps(document).encode()
    with pytest.raises(CorruptCheckpointError, match=r"'\.\.' segment"):
        decode_metadata(signed(body), KEY, WHERE)
    document["vertices"][0]["subtasks"] = {"01": document["vertices"][1]["subtasks"]}
    with pytest.raises(CorruptCheckpointError, match="decimal integer"):
        decode_metadata(signed(json.dumps(document).encode()), KEY, WHERE)


def test_empty_key_is_refused() -> None:
    with pytest.raises(ValueError):
        encode_metadata(sample(), b"")


def test_total_state_size_counts_each_file_once() -> None:
    meta = sample()
    assert total_state_size(meta) == 100 + 120 + 30
    shared = handle("shared/sst", 1000)
    vertex = VertexMetadata(3, "x", (), 2, 128, subtasks={0: shared, 1: shared})
    doubled = CheckpointMetadata("j", 1, 0, 0, False, (vertex,), {3: shared})
    assert total_state_size(doubled) == 1000
    assert referenced_files(doubled) == [shared]


# -- Hypothesis round trip -------------------------------------------------------------------

ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
segments = st.text(
    st.characters(exclude_characters="/\\\x00:", exclude_categories=["Cs"]), min_size=1
).filter(lambda s: s not in (".", ".."))
handles = st.builds(
    FileHandle,
    path=st.lists(segments, min_size=1, max_size=3).map("/".join),
    size=st.integers(min_value=0, max_value=2**40),
    sha256=st.binary(min_size=32, max_size=32).map(bytes.hex),
)
vertices = st.builds(
    VertexMetadata,
    vertex_id=ints,
    name=st.text(),
    uids=st.lists(st.text(), max_size=4).map(tuple),
    parallelism=st.integers(min_value=1, max_value=1024),
    max_parallelism=st.integers(min_value=1, max_value=32768),
    finished=st.booleans(),
    subtasks=st.dictionaries(st.integers(min_value=0, max_value=1024), handles, max_size=5),
)
metadata = st.builds(
    CheckpointMetadata,
    job_id=st.text(),
    checkpoint_id=st.integers(min_value=0, max_value=2**63 - 1),
    trigger_timestamp=ints,
    completion_timestamp=ints,
    is_savepoint=st.booleans(),
    vertices=st.lists(vertices, max_size=4).map(tuple),
    coordinators=st.dictionaries(ints, st.none() | handles, max_size=3),
    properties=st.dictionaries(st.text(), st.text(), max_size=4),
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(meta=metadata, key=st.binary(min_size=1, max_size=64))
def test_hypothesis_round_trip(meta: CheckpointMetadata, key: bytes) -> None:
    data = encode_metadata(meta, key)
    assert data[4:6] == b"\x00\x02"
    assert decode_metadata(data, key, WHERE) == meta
    legacy = encode_metadata(meta, key, version=JSON_FORMAT_VERSION)
    assert legacy[10:-32].isascii()
    assert decode_metadata(legacy, key, WHERE) == meta


# -- channel state ---------------------------------------------------------------------------


def channel_state_sample() -> CheckpointMetadata:
    from undertow.runtime.checkpoint.channel_state_handles import (
        ChannelStateDirection,
        ChannelStateHandles,
        build_handle,
    )

    def sha(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    shared = handle("chk-4/channel-state-0a1b", 4000)
    data = b"q" * 100
    inline = b"inline bytes"
    subtask_0 = ChannelStateHandles(
        build_handle("map (1/2)", 4, ChannelStateDirection.INPUT,
                     {(0, 0): [data[:40]], (0, 1): [data[40:]]}, 6, sha(data), file=shared),
        build_handle("map (1/2)", 4, ChannelStateDirection.OUTPUT,
                     {(0, 1): [data]}, 106, sha(data), file=shared),
    )  # fmt: skip
    subtask_1 = ChannelStateHandles(
        build_handle("map (2/2)", 4, ChannelStateDirection.INPUT,
                     {(1, 0): [data]}, 206, sha(data), file=shared),
        None,
    )  # fmt: skip
    sink = ChannelStateHandles(
        build_handle("sink (1/1)", 4, ChannelStateDirection.INPUT,
                     {(0, 0): [inline]}, 0, sha(inline), inline_data=inline),
    )  # fmt: skip
    base = sample()
    first = base.vertices[0]
    vertices = (
        dataclasses.replace(first, channel_state={0: subtask_0, 1: subtask_1}),
        VertexMetadata(3, "Sink: s", ("s",), 1, 128, channel_state={0: sink}),
    )
    return dataclasses.replace(base, vertices=vertices)


def test_channel_state_round_trips_and_counts_shared_file_once() -> None:
    meta = channel_state_sample()
    decoded = decode_metadata(encode_metadata(meta, KEY), KEY, WHERE)
    assert decoded == meta
    paths = [h.path for h in referenced_files(decoded)]
    assert paths.count("chk-4/channel-state-0a1b") == 1
    assert "chk-4/channel-state-0a1b" in paths
    # 100 + 120 state files, 30 coordinator, 4000 shared channel state, 12 inline
    assert total_state_size(decoded) == 100 + 120 + 30 + 4000 + 12


def test_v1_metadata_without_channel_state_has_no_such_field_and_decodes() -> None:
    data = encode_metadata(sample(), KEY, version=JSON_FORMAT_VERSION)
    body = json.loads(data[10:-32])
    assert all("channel_state" not in vertex for vertex in body["vertices"])
    assert decode_metadata(data, KEY, WHERE).vertices[0].channel_state == {}


def test_malformed_channel_state_is_corrupt_naming_the_subtask() -> None:
    meta = channel_state_sample()
    body = v1_body(meta)
    body["vertices"][0]["channel_state"]["1"]["input"]["length"] = 99
    payload = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    with pytest.raises(CorruptCheckpointError, match="subtask 'map \\(2/2\\)', checkpoint 4"):
        decode_metadata(signed(payload), KEY, WHERE)
    body["vertices"][0]["channel_state"] = {"x": None}
    payload = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    with pytest.raises(CorruptCheckpointError, match="channel-state subtask index"):
        decode_metadata(signed(payload), KEY, WHERE)


# -- format version 2 (msgpack, path dictionary) ---------------------------------------------


def v2_body(meta: CheckpointMetadata) -> dict[str, Any]:
    data = encode_metadata(meta, KEY)
    return dict(msgpack.unpackb(data[10:-32], strict_map_key=False))


def resign_v2(document: dict[str, Any]) -> bytes:
    return signed(msgpack.packb(document, use_bin_type=True), version=codec.FORMAT_VERSION)


def test_v2_stores_each_shared_file_path_once() -> None:
    meta = channel_state_sample()
    data = encode_metadata(meta, KEY)
    assert data[10:-32].count(b"chk-4/channel-state-0a1b") == 1  # 3 handles share the file
    assert [f[0] for f in v2_body(meta)["files"]].count("chk-4/channel-state-0a1b") == 1
    legacy = encode_metadata(meta, KEY, version=JSON_FORMAT_VERSION)
    assert legacy.count(b"chk-4/channel-state-0a1b") == 3
    assert len(data) < len(legacy) / 2


def test_v1_metadata_of_earlier_undertow_is_still_read() -> None:
    meta = channel_state_sample()
    legacy = encode_metadata(meta, KEY, version=JSON_FORMAT_VERSION)
    assert legacy[4:6] == b"\x00\x01"
    assert decode_metadata(legacy, KEY, WHERE) == meta


def test_size_limit_fails_at_write_time_naming_checkpoint_size_limit_and_option() -> None:
    meta = channel_state_sample()
    size = len(encode_metadata(meta, KEY))
    assert len(encode_metadata(meta, KEY, max_bytes=size)) == size
    with pytest.raises(MetadataTooLargeError) as info:
        encode_metadata(meta, KEY, max_bytes=size - 1)
    message = str(info.value)
    assert "checkpoint 4 of job 'job-1'" in message
    assert f"would be {size} bytes" in message and f"limit of {size - 1} bytes" in message
    assert "undertow.checkpointing.metadata.max-size" in message


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(files=[["../x", 1, b"\x00" * 32]]), r"'\.\.' segment"),
        (lambda d: d.update(files=[]), "is not in the file table of 0"),
        (lambda d: d.pop("job"), "metadata fields must be"),
        (lambda d: d["files"][0].__setitem__(2, b"short"), "sha256 must be 32 bytes"),
        (lambda d: d["vertices"][0][7][1][0].__setitem__(5, 99), r"subtask 'map \(2/2\)'"),
        (lambda d: d["vertices"][0][7][1][0].__setitem__(7, [9, [0, 0], [1, 0], [0, 1], [0, 1]]),
         r"subtask 'map \(2/2\)'"),
        (lambda d: d["vertices"][0][7][1][0].__setitem__(7, [2, [3, b"x"], [0, 0], [0, 1], [0, 1]]),
         "column a: 1 bytes for 2 values"),
        (lambda d: d["vertices"][0][7][1][0].__setitem__(7, [7]), "packed channels must be"),
        (lambda d: d["vertices"][0].__setitem__(0, "1"), "vertex_id must be an integer"),
    ],
)  # fmt: skip
def test_v2_authenticated_but_malformed_body(mutate: Any, message: str) -> None:
    document = v2_body(channel_state_sample())
    mutate(document)
    with pytest.raises(CorruptCheckpointError, match=message):
        decode_metadata(resign_v2(document), KEY, WHERE)


@pytest.mark.parametrize("body", [b"", b"\xc1", b"\x92\x01", b"\x81\xa1a\x01", b"\xdd\xff"])
def test_v2_garbage_bodies_are_corrupt(body: bytes) -> None:
    with pytest.raises(CorruptCheckpointError, match="authenticated but malformed"):
        decode_metadata(signed(body, version=codec.FORMAT_VERSION), KEY, WHERE)


def test_shared_files_of_an_incremental_checkpoint_round_trip_and_count() -> None:
    sst = handle("shared/op-1a2b-3-000011.sst", 5000)
    meta = dataclasses.replace(sample(), shared_files=(sst, handle("shared/op-1a2b-4-12.sst", 7)))
    decoded = decode_metadata(encode_metadata(meta, KEY), KEY, WHERE, expected_checkpoint_id=4)
    assert decoded == meta
    assert decoded.shared_files[0] == sst
    assert total_state_size(decoded) == 100 + 120 + 30 + 5000 + 7
    assert sst in referenced_files(decoded)
    # a checkpoint without shared files writes no "shared" key (older readers read it)
    plain = decode_metadata(encode_metadata(sample(), KEY), KEY, WHERE, expected_checkpoint_id=4)
    assert plain.shared_files == ()
