"""Fuzzed bytes at a worker's data port (:class:`NetworkEnvironment`), before and after the
HMAC handshake.

Unauthenticated: whatever a peer sends instead of a valid handshake, no frame is read and
nothing is unpickled (a recording decoder replaces ``pickle.loads`` and the ``FrameReader``
in the transport), the worker reports no failure (a stranger cannot fail the job) and still
accepts its real peer afterwards. Authenticated but malformed: every problem ends in the
worker's ``on_failure`` callback as an :class:`Exception` (the worker then fails its tasks),
the connection stops reading and nothing escapes to the event loop; each kind of malformed
frame (bad type, bad length, undefined flags, truncated, oversized, an event payload that does
not unpickle, an unknown channel) fails the connection with an error naming the peer and what
was wrong."""

from __future__ import annotations

import asyncio
import pickle
import re
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import NetworkError
from undertow.runtime.network import transport
from undertow.runtime.network.frame_reader import FrameReader
from undertow.runtime.network.framing import client_handshake, frame
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.transport import NetworkEnvironment

from .conftest import FUZZ_CASES, FUZZ_KINDS, FUZZ_SETTINGS, Recorder, fuzz_seed

T = TypeVar("T")
SECRET = b"data-port-secret"
HOST = "127.0.0.1"


#: Shorter than, around and longer than the 52 bytes a client's handshake answer takes.
JUNK = st.binary(max_size=60) | st.binary(min_size=52, max_size=300)


def run(main: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(main(), 10)

    return asyncio.run(bounded())


def server(failures: list[BaseException]) -> NetworkEnvironment:
    """Worker 1 (it awaits worker 0's connection) with one input and one output channel, id 0
    each."""
    env = NetworkEnvironment(
        1, SECRET, bind_host=HOST, max_frame_size=1 << 16, on_failure=failures.append
    )
    gate = InputGate("G@1", 1, 4)
    env.input_channels[0] = gate.add_channel(0, "G/0", 2)
    partition = ResultPartition(
        "P@1", [0], buffers_per_channel=2, floating_buffers=4, max_buffers_per_channel=10
    )
    env.subpartitions[0] = partition.subpartitions[0]
    return env


@pytest.fixture
def decoder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Records every frame read and every unpickling in the transport."""
    recorder = Recorder()

    class RecordingReader(FrameReader):
        __slots__ = ()

        def buffer_updated(self, nbytes: int) -> list[tuple[bytes, bytes | bytearray]]:
            frames = super().buffer_updated(nbytes)
            recorder.calls += [("read_frame", head + payload) for head, payload in frames]
            return frames

    def loads(data: bytes, *args: Any, **kwargs: Any) -> Any:
        recorder.calls.append(("pickle.loads", data))
        return pickle.loads(data, *args, **kwargs)

    monkeypatch.setattr(transport, "FrameReader", RecordingReader)
    monkeypatch.setattr(transport, "pickle", SimpleNamespace(loads=loads, dumps=pickle.dumps))
    return recorder


@fuzz_seed
@settings(FUZZ_SETTINGS, max_examples=200)
@given(junk=JUNK, wait_for_nonce=st.booleans())
def test_unauthenticated_bytes_are_never_decoded(
    decoder: Recorder, junk: bytes, wait_for_nonce: bool
) -> None:
    FUZZ_CASES["data port, unauthenticated"] += 1
    decoder.calls.clear()
    failures: list[BaseException] = []

    async def main() -> None:
        env = server(failures)
        port = await env.start_server()
        accepting = asyncio.ensure_future(env.connect_peers({}, {0}))
        reader, writer = await asyncio.open_connection(HOST, port)
        if wait_for_nonce:
            await reader.readexactly(16)
        writer.write(junk)
        await writer.drain()
        writer.close()
        await asyncio.sleep(0.005)
        assert not accepting.done(), "a peer without the secret was accepted"
        accepted = [peer for peer, f in env._accepted.items() if f.done()]
        assert accepted == [], f"a peer without the secret was accepted as worker {accepted}"
        # The real peer still gets in, over a new connection.
        reader, writer = await asyncio.open_connection(HOST, port)
        await client_handshake(reader, writer, SECRET, 0)
        await asyncio.wait_for(accepting, 5)
        writer.close()
        env.close()
        await asyncio.sleep(0.005)

    run(main)
    assert decoder.calls == [], "bytes of an unauthenticated peer were decoded"
    assert failures == [], "an unauthenticated peer caused a worker failure"


MAX_FRAME = 1 << 16
u32 = st.integers(0, 0xFFFFFFFF)


@dataclass(frozen=True)
class Malformed:
    """One malformed frame as an authenticated peer sends it, and the error it must cause."""

    kind: str
    data: bytes
    error: str  # a regex the reported failure must match
    closes: bool = False  # the peer then closes the connection (a truncated frame)


def _buffer(cid: int, flags: int, payload: bytes) -> bytes:
    return frame(struct.pack(">cIIIB", b"B", cid, 0, 0, flags) + payload)


def _not_a_pickle(data: bytes) -> bool:
    try:
        pickle.loads(data)
    except Exception:
        return True
    return False


#: Fixed-size frames by type byte: (name, body size).
FIXED = {b"C": ("CREDIT", 9), b"R": ("RESUME", 5), b"S": ("SIZE", 13)}
PEER = "worker 0"

malformed_frames = st.one_of(
    st.builds(
        lambda kind, rest: Malformed(
            "bad type",
            frame(kind + rest),
            rf"unknown frame type {re.escape(repr(kind))} from {PEER}",
        ),
        st.binary(min_size=1, max_size=1).filter(lambda k: k not in b"BCRS"),
        st.binary(max_size=40),
    ),
    st.just(Malformed("empty", frame(b""), f"empty frame from {PEER}")),
    st.builds(
        lambda rest: Malformed(
            "short buffer",
            frame(b"B" + rest),
            rf"malformed BUFFER frame from {PEER}: {len(rest) + 1} bytes, "
            "shorter than its 14-byte header",
        ),
        st.binary(max_size=12),
    ),
    st.builds(
        lambda kind, size, fill: Malformed(
            "bad length",
            frame((kind + fill * size)[:size]),
            rf"malformed {FIXED[kind][0]} frame from {PEER}: {size} bytes, "
            rf"expected {FIXED[kind][1]}",
        ),
        st.sampled_from(sorted(FIXED)),
        st.integers(1, 40).filter(lambda n: n not in (5, 9, 13)),
        st.binary(min_size=1, max_size=1),
    ),
    st.builds(
        lambda flags, payload: Malformed(
            "bad flags",
            _buffer(0, flags, payload),
            rf"malformed BUFFER frame from {PEER} for channel 0: flags {flags:#04x} set "
            rf"undefined bits {flags & ~15:#04x}",
        ),
        st.integers(16, 255),
        st.binary(max_size=40),
    ),
    st.builds(
        lambda payload: Malformed(
            "bad payload",
            _buffer(0, 1, payload),
            rf"BUFFER frame from {PEER} for channel 0: its event payload \({len(payload)} "
            r"bytes\) does not unpickle",
        ),
        st.binary(max_size=60).filter(_not_a_pickle),
    ),
    st.builds(
        lambda length, cut: Malformed(
            "truncated",
            struct.pack(">I", length) + bytes(cut % length),
            rf"connection to {PEER} closed inside a frame \({cut % length} of {length} bytes\)",
            closes=True,
        ),
        st.integers(1, MAX_FRAME),
        u32,
    ),
    st.builds(
        lambda head: Malformed(
            "truncated header",
            head,
            f"connection to {PEER} closed inside a frame header",
            closes=True,
        ),
        st.binary(min_size=1, max_size=3),
    ),
    st.builds(
        lambda length, rest: Malformed(
            "oversized",
            struct.pack(">I", length) + rest,
            rf"frame of {length} bytes from {PEER} exceeds undertow.network.max-frame-size "
            rf"\({MAX_FRAME} bytes\)",
        ),
        st.integers(MAX_FRAME + 1, 0xFFFFFFFF),
        st.binary(max_size=20),
    ),
    st.builds(
        lambda kind, cid: Malformed(
            "unknown channel",
            frame(
                {
                    b"C": struct.pack(">cII", b"C", cid, 1),
                    b"R": struct.pack(">cI", b"R", cid),
                    b"S": struct.pack(">cIII", b"S", cid, 512, 4),
                    b"B": struct.pack(">cIIIB", b"B", cid, 0, 0, 0),
                }[kind]
            ),
            rf"{PEER} addressed unknown (input|output) channel {cid}",
        ),
        st.sampled_from([b"B", b"C", b"R", b"S"]),
        st.integers(1, 0xFFFFFFFF),
    ),
)


@fuzz_seed
@settings(FUZZ_SETTINGS, max_examples=300)
@given(bad=malformed_frames)
def test_authenticated_malformed_frames_fail_with_a_clear_error(
    decoder: Recorder, bad: Malformed
) -> None:
    """Each malformed frame reaches the frame decoder (the connection stays open: nothing but
    the frame can fail it, except a truncated frame, which needs the end of the stream) and
    fails the connection with an error that names the peer and what is wrong."""
    FUZZ_CASES["data port, authenticated"] += 1
    FUZZ_KINDS["data port, authenticated", bad.kind] += 1
    decoder.calls.clear()
    failures: list[BaseException] = []
    unhandled: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unhandled.append(ctx))
        env = server(failures)
        port = await env.start_server()
        accepting = asyncio.ensure_future(env.connect_peers({}, {0}))
        reader, writer = await asyncio.open_connection(HOST, port)
        await client_handshake(reader, writer, SECRET, 0)
        await asyncio.wait_for(accepting, 5)
        writer.write(bad.data)
        await writer.drain()
        if bad.closes:
            writer.close()
        deadline = asyncio.get_running_loop().time() + 5
        while not failures:
            assert asyncio.get_running_loop().time() < deadline, f"no failure for {bad}"
            await asyncio.sleep(0.002)
        assert not env.connections[0].reading  # the connection stopped reading, cleanly
        writer.close()
        env.close()
        await asyncio.sleep(0.005)

    run(main)
    assert len(failures) == 1 and isinstance(failures[0], NetworkError), failures
    assert re.search(bad.error, str(failures[0])), (bad, str(failures[0]))
    assert unhandled == [], unhandled
    if bad.kind not in ("oversized", "truncated", "truncated header"):  # no whole body read
        assert decoder.calls and decoder.calls[0][0] == "read_frame", decoder.calls


def test_a_frame_over_the_limit_is_refused_before_it_is_read(decoder: Recorder) -> None:
    failures: list[BaseException] = []

    async def main() -> None:
        env = server(failures)
        port = await env.start_server()
        accepting = asyncio.ensure_future(env.connect_peers({}, {0}))
        reader, writer = await asyncio.open_connection(HOST, port)
        await client_handshake(reader, writer, SECRET, 0)
        await asyncio.wait_for(accepting, 5)
        writer.write(struct.pack(">I", (1 << 16) + 1) + b"B")
        await writer.drain()
        while not failures:
            await asyncio.sleep(0.002)
        writer.close()
        env.close()
        await asyncio.sleep(0.005)

    run(main)
    assert "exceeds undertow.network.max-frame-size" in str(failures[0])
    assert decoder.calls == []


def test_the_fuzz_strategy_reaches_the_decoder(decoder: Recorder) -> None:
    """The authenticated fuzz is not vacuous: a well-formed event frame is unpickled."""
    failures: list[BaseException] = []
    event = frame(struct.pack(">cIIIB", b"B", 0, 0, 0, 1) + pickle.dumps("an event"))

    async def main() -> None:
        env = server(failures)
        port = await env.start_server()
        accepting = asyncio.ensure_future(env.connect_peers({}, {0}))
        reader, writer = await asyncio.open_connection(HOST, port)
        await client_handshake(reader, writer, SECRET, 0)
        await asyncio.wait_for(accepting, 5)
        writer.write(event)
        await writer.drain()
        writer.close()
        while not failures:
            await asyncio.sleep(0.002)
        env.close()
        await asyncio.sleep(0.005)

    run(main)
    assert ("pickle.loads", pickle.dumps("an event")) in decoder.calls
