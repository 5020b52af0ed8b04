"""Fuzzed bytes at a worker's data port (:class:`NetworkEnvironment`), before and after the
HMAC handshake.

Unauthenticated: whatever a peer sends instead of a valid handshake, no frame is read and
nothing is unpickled (a recording decoder replaces ``pickle.loads`` and ``read_frame`` in the
transport), the worker reports no failure (a stranger cannot fail the job) and still accepts
its real peer afterwards. Authenticated but malformed: every problem ends in the worker's
``on_failure`` callback as an :class:`Exception` (the worker then fails its tasks), the read
loop ends cleanly and nothing escapes to the event loop.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undertow.runtime.network import transport
from undertow.runtime.network.framing import client_handshake, frame
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.transport import NetworkEnvironment

from .conftest import FUZZ_CASES, Recorder, frames

T = TypeVar("T")
SECRET = b"data-port-secret"
FUZZ = settings(
    deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
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
    real_read_frame = transport.read_frame

    async def read_frame(*args: Any, **kwargs: Any) -> bytes | None:
        body = await real_read_frame(*args, **kwargs)
        recorder.calls.append(("read_frame", body))
        return body

    def loads(data: bytes, *args: Any, **kwargs: Any) -> Any:
        recorder.calls.append(("pickle.loads", data))
        return pickle.loads(data, *args, **kwargs)

    monkeypatch.setattr(transport, "read_frame", read_frame)
    monkeypatch.setattr(transport, "pickle", SimpleNamespace(loads=loads, dumps=pickle.dumps))
    return recorder


@settings(FUZZ, max_examples=200)
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


@settings(FUZZ, max_examples=300)
@given(stream=frames())
def test_authenticated_malformed_frames_fail_cleanly(decoder: Recorder, stream: bytes) -> None:
    FUZZ_CASES["data port, authenticated"] += 1
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
        writer.write(stream)
        await writer.drain()
        writer.close()  # the end of the stream is itself a failure: the peer vanished
        deadline = asyncio.get_running_loop().time() + 5
        while not failures:
            assert asyncio.get_running_loop().time() < deadline, "no failure was reported"
            await asyncio.sleep(0.002)
        task = env.connections[0]._task
        assert task is not None
        await asyncio.wait_for(asyncio.shield(task), 5)  # the read loop ended, and cleanly
        env.close()
        await asyncio.sleep(0.005)

    run(main)
    assert all(isinstance(f, Exception) for f in failures), failures
    assert unhandled == [], unhandled


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
