"""The data plane's frame bodies (``undertow.runtime.network.data_frames``): what is encoded
decodes to the same frame, and every malformed body is refused naming the peer, the frame
type and the problem. The same errors reached through a TCP connection are fuzzed in
``tests/security/test_data_port_fuzz.py``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.errors import NetworkError
from undertow.runtime.network.data_frames import (
    BLOCKS,
    EVENT,
    HEAD_SIZE,
    PARTIAL,
    PRIORITY,
    BufferFrame,
    CreditFrame,
    ResumeFrame,
    SizeFrame,
    buffer_head,
    decode_frame,
    encode_credit,
    encode_resume,
    encode_size,
)

u32 = st.integers(0, 0xFFFFFFFF)
flags = st.sets(st.sampled_from([EVENT, PARTIAL, PRIORITY, BLOCKS])).map(sum)


def _decode(body: bytes, peer: str) -> object:
    """``body`` cut where the frame reader cuts it: its head, then the payload."""
    return decode_frame(body[:HEAD_SIZE], body[HEAD_SIZE:], peer)


@given(channel=u32, seq=u32, backlog=u32, bits=flags, payload=st.binary(max_size=64))
def test_a_buffer_frame_round_trips(
    channel: int, seq: int, backlog: int, bits: int, payload: bytes
) -> None:
    body = buffer_head(channel, seq, backlog, bits) + payload
    assert _decode(body, "worker 3") == BufferFrame(channel, seq, backlog, bits, payload)


@given(channel=u32, credit=u32, size=u32, records=u32)
def test_fixed_frames_round_trip(channel: int, credit: int, size: int, records: int) -> None:
    assert _decode(encode_credit(channel, credit), "p") == CreditFrame(channel, credit)
    assert _decode(encode_resume(channel), "p") == ResumeFrame(channel)
    assert _decode(encode_size(channel, size, records), "p") == SizeFrame(channel, size, records)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", r"empty frame from worker 3 \(no frame type\)"),
        (b"X\x00\x01", r"unknown frame type b'X' from worker 3 \(3 bytes\)"),
        (b"B\x00\x00", "malformed BUFFER frame from worker 3: 3 bytes, shorter than its 14-byte"),
        (encode_credit(1, 2) + b"!", "malformed CREDIT frame from worker 3: 10 bytes, expected 9"),
        (encode_credit(1, 2) + b"!" * 6, "malformed CREDIT frame from worker 3: 15 bytes"),
        (encode_resume(1)[:-1], "malformed RESUME frame from worker 3: 4 bytes, expected 5"),
        (encode_size(1, 2, 3)[:7], "malformed SIZE frame from worker 3: 7 bytes, expected 13"),
        (buffer_head(7, 0, 0, 0x21), "for channel 7: flags 0x21 set undefined bits 0x20"),
    ],
)
def test_malformed_bodies_are_refused_naming_what_is_wrong(body: bytes, error: str) -> None:
    with pytest.raises(NetworkError, match=error):
        _decode(body, "worker 3")
