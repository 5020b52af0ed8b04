"""The frame reader (``undertow.runtime.network.frame_reader``): whatever way the socket cuts the
stream, the same frames come out, whole and in order; large bodies are read into their own
buffer; a cut stream and an oversized frame are errors naming the peer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import NetworkError
from undertow.runtime.network import frame_reader
from undertow.runtime.network.frame_reader import LARGE, SCRATCH, FrameReader
from undertow.runtime.network.framing import frame, frame_header

HEAD = 14


def _split(body: bytes) -> tuple[bytes, bytes]:
    return body[:HEAD], body[HEAD:]


def _feed(reader: FrameReader, data: bytes, reads: list[int]) -> list[tuple[bytes, bytes]]:
    """``data`` written into the reader as a socket would, at most ``reads[i]`` bytes by the
    i-th read (cycling), never more than ``get_buffer`` offers; the frames in order."""
    out: list[tuple[bytes, bytes]] = []
    pos, i = 0, 0
    while pos < len(data):
        into = reader.get_buffer()
        assert len(into) > 0, "get_buffer never offers an empty buffer"
        n = min(len(into), reads[i % len(reads)], len(data) - pos)
        into[:n] = data[pos : pos + n]
        pos += n
        i += 1
        out += [(bytes(head), bytes(rest)) for head, rest in reader.buffer_updated(n)]
    return out


def _stream(bodies: list[bytes]) -> bytes:
    return b"".join(frame(body) for body in bodies)


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scratch of 512 bytes, bodies past 64 + HEAD bytes large: every path in short data."""
    monkeypatch.setattr(frame_reader, "SCRATCH", 512)
    monkeypatch.setattr(frame_reader, "LARGE", 64)


@pytest.mark.usefixtures("small")
def test_frames_split_at_every_byte_boundary_come_out_whole() -> None:
    bodies = [b"", b"C" * 9, b"B" + bytes(range(60)), b"x" * 600, b"R" * 5, bytes(range(90))]
    data = _stream(bodies)
    for cut in range(len(data) + 1):  # two reads, cut at every byte
        reader = FrameReader(1 << 20, "worker 1", HEAD)
        out = _feed(reader, data[:cut], [len(data)]) + _feed(reader, data[cut:], [len(data)])
        assert out == [_split(body) for body in bodies], cut
        reader.check_end()


@pytest.mark.usefixtures("small")
def test_one_byte_reads_give_the_same_frames() -> None:
    bodies = [b"R" * 5, b"B" * 40, b"y" * 1000, b"S" * 13]
    reader = FrameReader(1 << 20, "worker 1", HEAD)
    assert _feed(reader, _stream(bodies), [1]) == [_split(body) for body in bodies]


def test_several_frames_in_one_read() -> None:
    bodies = [b"C%08d" % i for i in range(1000)]  # 13 bytes each, all in one read
    reader = FrameReader(1 << 20, "worker 1", HEAD)
    into = reader.get_buffer()
    data = _stream(bodies)
    into[: len(data)] = data
    frames = reader.buffer_updated(len(data))
    assert [head + rest for head, rest in frames] == bodies


def test_a_frame_larger_than_the_scratch_is_read_into_its_own_buffer() -> None:
    body = bytes(range(256)) * (2 * SCRATCH // 256) + b"tail"
    reader = FrameReader(4 * SCRATCH, "worker 1", HEAD)
    data = frame(b"C" * 9) + frame(body) + frame(b"R" * 5)
    reads: list[int] = []
    out: list[tuple[bytes, bytes | bytearray]] = []
    pos = 0
    while pos < len(data):
        into = reader.get_buffer()
        assert len(into) > 0
        n = min(len(into), len(data) - pos)
        into[:n] = data[pos : pos + n]
        pos += n
        reads.append(n)
        out += reader.buffer_updated(n)
    assert [head + bytes(rest) for head, rest in out] == [b"C" * 9, body, b"R" * 5]
    assert type(out[1][1]) is bytearray, "the large body is the buffer the socket filled"
    assert reads[1] == len(body) - (reads[0] - 4 - 9 - 4), "the body's rest came in one read"


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3 * LARGE), min_size=1, max_size=8),
    reads=st.lists(st.integers(1, 3 * SCRATCH), min_size=1, max_size=6),
)
def test_any_cutting_of_any_frames_gives_them_back(sizes: list[int], reads: list[int]) -> None:
    bodies = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
    reader = FrameReader(1 << 20, "worker 1", HEAD)
    assert _feed(reader, _stream(bodies), reads) == [_split(body) for body in bodies]
    reader.check_end()


def test_oversized_frame_raises_naming_the_limit() -> None:
    reader = FrameReader(4096, "worker 3", HEAD)
    with pytest.raises(NetworkError) as info:
        _feed(reader, frame_header(5000) + b"x" * 10, [100])
    message = str(info.value)
    assert "5000 bytes from worker 3" in message
    assert "undertow.network.max-frame-size (4096 bytes)" in message


def test_an_oversized_frame_fails_the_read_that_holds_it_even_after_whole_frames() -> None:
    """Whole frames ahead of the oversized one in the same read are not handed out: the
    error fails the worker, whose tasks would only get them while being cancelled."""
    reader = FrameReader(4096, "worker 3", HEAD)
    data = frame(b"C" * 20) + frame(b"R" * 5) + frame_header(5000) + b"x" * 10
    into = reader.get_buffer()
    into[: len(data)] = data
    with pytest.raises(NetworkError, match="5000 bytes from worker 3"):
        reader.buffer_updated(len(data))


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    reader = FrameReader(64, "peer", HEAD)
    assert _feed(reader, frame(b"z" * 64), [7]) == [_split(b"z" * 64)]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"\x00\x00", "worker 2 closed inside a frame header"),
        (frame_header(10) + b"abc", r"worker 2 closed inside a frame \(3 of 10 bytes\)"),
        (frame(b"ok") + frame_header(LARGE + 100) + b"h" * (HEAD + 5),
         rf"inside a frame \({HEAD + 5} of {LARGE + 100} bytes\)"),
    ],
)  # fmt: skip
def test_a_stream_cut_inside_a_frame_raises_at_its_end(data: bytes, match: str) -> None:
    reader = FrameReader(1 << 20, "worker 2", HEAD)
    _feed(reader, data, [len(data)])
    with pytest.raises(NetworkError, match=match):
        reader.check_end()


@pytest.mark.usefixtures("small")
def test_the_scratch_keeps_room_for_a_whole_small_frame() -> None:
    """Reads that leave a small frame's start at the scratch's end: the start moves to the
    front and the frame still comes out whole."""
    bodies = [b"a" * 70, b"b" * 60, b"c" * 77, b"d" * 40] * 5  # frames of 74, 64, 81, 44
    reader = FrameReader(1 << 20, "worker 1", HEAD)
    # whole views: the first read ends inside the eighth frame, at the scratch's last byte
    assert _feed(reader, _stream(bodies), [1000, 13]) == [_split(body) for body in bodies]
