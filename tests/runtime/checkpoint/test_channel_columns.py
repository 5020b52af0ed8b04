"""The compact form of packed channel arrays in ``_metadata`` (format version 2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint import channel_columns
from undertow.runtime.checkpoint.channel_state_handles import pack_channels

u32 = st.integers(min_value=0, max_value=0xFFFFFFFF)
chunk_lengths = st.lists(st.integers(min_value=1, max_value=0xFFFFFFFF), min_size=1, max_size=3)


@st.composite
def packed_arrays(draw: st.DrawFn) -> bytes:
    channels = sorted(draw(st.sets(st.tuples(u32, u32), min_size=1, max_size=40)))
    return pack_channels([(channel, draw(chunk_lengths)) for channel in channels])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(packed=packed_arrays())
def test_any_packed_array_round_trips(packed: bytes) -> None:
    assert channel_columns.unpack(channel_columns.pack(packed)) == packed


def test_one_gate_all_channels_one_chunk_costs_two_bytes_per_channel() -> None:
    lengths = [1 + (7919 * c) % 32768 for c in range(4800)]
    packed = pack_channels([((0, c), [length]) for c, length in enumerate(lengths)])
    form = channel_columns.pack(packed)
    assert form[:4] == [4800, [0, 0], [1, 0], [0, 1]]  # one gate, channels 0.., 1 chunk each
    assert form[4][0] == 3 and len(form[4][1]) == 2 * 4800  # uint16 lengths
    assert channel_columns.unpack(form) == packed


def test_several_chunks_on_a_channel_cost_two_bytes_per_chunk() -> None:
    packed = pack_channels([((0, c), [9000, 5, 300]) for c in range(1000)])
    form = channel_columns.pack(packed)
    assert form[:4] == [1000, [0, 0], [1, 0], [0, 3]]
    assert form[4][0] == 3 and len(form[4][1]) == 2 * 3000
    assert channel_columns.unpack(form) == packed


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ([2], "packed channels must be"),
        ([0, [0, 0], [0, 0], [0, 1], [0, 1]], "channel count must be"),
        ([1 << 40, [0, 0], [0, 0], [0, 1], [0, 1]], "channel count must be"),
        ([2, [0, 0], [1, 0xFFFFFFFF], [0, 1], [0, 1]], "exceeds uint32"),
        ([2, [9, b""], [0, 0], [0, 1], [0, 1]], "unknown kind"),
        ([2, [0, -1], [0, 0], [0, 1], [0, 1]], "non-negative"),
        ([2, [0, 0], [1, 0], [0, 2], [3, b"\x01\x00"]], "lengths: 2 bytes for 4 values"),
        ([2, [0, 0], [1, 0], [0, 1 << 30], [0, 1]], "chunk count must be at most"),
        ("text", "packed channels must be"),
    ],
)
def test_malformed_forms_are_named(form: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        channel_columns.unpack(form)
