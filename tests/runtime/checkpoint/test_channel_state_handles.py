from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.channel_state_handles import (
    JSON_VERSION,
    ChannelStateDirection,
    ChannelStateEntry,
    ChannelStateHandles,
    ChannelStateReference,
    MergedChannelStateHandle,
    build_handle,
    handle_from_json,
    handle_to_json,
    handles_from_json,
    handles_to_json,
    pack_channels,
)
from undertow.storage import FileHandle

INPUT = ChannelStateDirection.INPUT
OUTPUT = ChannelStateDirection.OUTPUT

channel_ids = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
chunk_maps = st.dictionaries(
    channel_ids, st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=4), min_size=1
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_handle(size: int) -> FileHandle:
    return FileHandle("chk-3/channel-state-abc", size, "0" * 64)


def flat(chunks: dict[tuple[int, int], list[bytes]]) -> bytes:
    return b"".join(c for channel in sorted(chunks) for c in chunks[channel])


@settings(max_examples=150, deadline=None)
@given(chunks=chunk_maps, start=st.integers(0, 1000), inline=st.booleans())
def test_entries_tile_the_region_in_channel_then_write_order(
    chunks: dict[tuple[int, int], list[bytes]], start: int, inline: bool
) -> None:
    data = flat(chunks)
    if inline:
        handle = build_handle("map (1/2)", 3, INPUT, chunks, 0, sha(data), inline_data=data)
        start = 0
    else:
        file = file_handle(start + len(data) + 7)
        handle = build_handle("map (1/2)", 3, INPUT, chunks, start, sha(data), file=file)
    entries = list(handle.entries())
    expected = [(ch, len(c)) for ch in sorted(chunks) for c in chunks[ch]]
    assert [(e.channel, e.length) for e in entries] == expected
    offset = start
    for entry in entries:  # no gap, no overlap
        assert entry.offset == offset
        offset += entry.length
    assert offset == start + handle.range_length == start + len(data)
    assert handle.channels() == sorted(chunks)
    # JSON round trip, through text
    text = json.dumps(handle_to_json(handle))
    assert handle_from_json(json.loads(text)) == handle


def test_packed_array_is_little_endian_uint32() -> None:
    packed = pack_channels([((0, 1), [5, 6]), ((1, 0), [7])])
    assert packed == struct.pack("<9I", 0, 1, 2, 5, 6, 1, 0, 1, 7)


def test_handles_pair_round_trips_and_counts_bytes() -> None:
    data_in, data_out = b"abc", b"defgh"
    file = file_handle(100)
    pair = ChannelStateHandles(
        build_handle("s", 1, INPUT, {(0, 0): [data_in]}, 10, sha(data_in), file=file),
        build_handle("s", 1, OUTPUT, {(0, 3): [data_out]}, 0, sha(data_out), inline_data=data_out),
    )
    assert pair.persisted_bytes == 8
    assert pair.inline_bytes == 5
    assert pair.files() == [file]
    assert handles_from_json(json.loads(json.dumps(handles_to_json(pair)))) == pair
    assert handles_from_json({"input": None, "output": None}) == ChannelStateHandles()


def valid_json() -> dict[str, object]:
    data = b"0123456789"
    handle = build_handle(
        "map (1/2)", 7, INPUT, {(0, 1): [data[:4], data[4:]]}, 6, sha(data), file=file_handle(16)
    )
    return handle_to_json(handle)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(v=JSON_VERSION + 1), "unknown version"),
        (lambda d: d.update(extra=1), "unknown fields ['extra']"),
        (lambda d: d.pop("sha256"), "missing field 'sha256'"),
        (lambda d: d.update(start="6"), "field 'start' must be an integer"),
        (lambda d: d.update(length=True), "field 'length' must be an integer"),
        (lambda d: d.update(direction="sideways"), "direction must be 'input' or 'output'"),
        (lambda d: d.update(channels="***"), "field 'channels' is not valid base64"),
        (lambda d: d.update(inline="AAAA"), "exactly one of 'file' and 'inline'"),
        (lambda d: d.update(length=9), "chunk lengths add up to 10, range_length is 9"),
        (lambda d: d.update(start=7), "exceeds file chk-3/channel-state-abc of 16 bytes"),
        (lambda d: d.update(sha256="X" * 64), "range_sha256 must be 64 lowercase hex"),
        (lambda d: d["file"].update(path="../x"), "field 'file'"),
        (
            lambda d: d.update(channels=base64.b64encode(b"\x01\x00\x00").decode()),
            "whole number of uint32 words",
        ),
        (
            lambda d: d.update(
                channels=base64.b64encode(struct.pack("<8I", 1, 0, 1, 5, 0, 9, 1, 5)).decode()
            ),
            "channel (0, 9) does not follow (1, 0)",
        ),
        (
            lambda d: d.update(
                channels=base64.b64encode(struct.pack("<5I", 0, 1, 2, 10, 0)).decode()
            ),
            "empty chunk",
        ),
        (
            lambda d: d.update(channels=base64.b64encode(struct.pack("<4I", 0, 1, 3, 10)).decode()),
            "bad chunk count 3",
        ),
    ],
)
def test_decode_rejects_malformed_handles_naming_subtask_and_checkpoint(
    change: object, message: str
) -> None:
    document = valid_json()
    change(document)  # type: ignore[operator]
    with pytest.raises(ValueError) as info:
        handle_from_json(document)
    assert message in str(info.value)
    assert "subtask 'map (1/2)'" in str(info.value)
    assert "checkpoint 7" in str(info.value)


def test_handles_from_json_rejects_side_mismatch() -> None:
    with pytest.raises(ValueError, match="input handle stored as output"):
        handles_from_json({"input": None, "output": valid_json()})
    with pytest.raises(ValueError, match="'input' and 'output'"):
        handles_from_json({"input": None})


def test_construction_rejects_empty_region_and_inline_mismatch() -> None:
    with pytest.raises(ValueError, match="range_length must be >= 1"):
        MergedChannelStateHandle("s", 1, INPUT, None, b"", 0, 0, sha(b""), b"")
    with pytest.raises(ValueError, match="does not match range"):
        MergedChannelStateHandle(
            "s", 1, INPUT, None, b"abc", 0, 2, sha(b"ab"), pack_channels([((0, 0), [2])])
        )


def test_construction_rejects_a_bad_direction_and_negative_counts_naming_the_value() -> None:
    data = pack_channels([((0, 0), [2])])
    named = r"checkpoint 1, in: direction must be a ChannelStateDirection, got 'in'"
    with pytest.raises(ValueError, match=named):
        MergedChannelStateHandle("s", 1, "in", None, b"ab", 0, 2, sha(b"ab"), data)  # type: ignore[arg-type]
    for index, name in ((1, "checkpoint_id"), (5, "range_start"), (6, "range_length")):
        fields: list[Any] = ["s", 1, INPUT, None, b"ab", 0, 2, sha(b"ab"), data]
        fields[index] = -1
        with pytest.raises(ValueError, match=rf"{INPUT.value}: {name} must be a non-neg.*got -1"):
            MergedChannelStateHandle(*fields)


def test_entry_is_a_value() -> None:
    assert ChannelStateEntry((0, 1), 6, 4) == ChannelStateEntry((0, 1), 6, 4)


def test_references_round_trip_through_json_and_are_checked() -> None:
    old = FileHandle("chk-1/channel-state-a", 100, "ab" * 32)
    ref = ChannelStateReference((0, 1), 0, old, 2, 90, "cd" * 32, 40, (25, 25))
    handle = build_handle("map (1/1)", 2, ChannelStateDirection.INPUT, {}, 0, "",
                          references=[ref])  # fmt: skip
    assert handle.range_length == 0 and handle.referenced_bytes == 50
    assert handle.channels() == [(0, 1)]
    assert handle_from_json(json.loads(json.dumps(handle_to_json(handle)))) == handle
    assert ref.tail(1) == ChannelStateReference((0, 1), 0, old, 2, 90, "cd" * 32, 65, (25,))
    assert ref.tail(2) is None
    with pytest.raises(ValueError, match=r"run \[80, 100\) is not inside region \[2, 92\)"):
        ChannelStateReference((0, 1), 0, old, 2, 90, "cd" * 32, 80, (20,))
    with pytest.raises(ValueError, match="empty state has no handle"):
        build_handle("map (1/1)", 2, ChannelStateDirection.INPUT, {}, 0, "")
