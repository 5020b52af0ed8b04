"""Transports: LocalLink and two NetworkEnvironments talking over loopback TCP in one loop."""

from __future__ import annotations

import asyncio
import logging
import select
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from undertow.core.errors import AuthenticationError, NetworkError
from undertow.graph.partitioners import ForwardPartitioner, RebalancePartitioner
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.credit import Send
from undertow.runtime.network.framing import frame_header
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.network.transport import LocalLink, NetworkEnvironment

T = TypeVar("T")
SECRET = b"s3cret"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Marker:
    name: str


def _run(main: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(main(), 10)

    return asyncio.run(bounded())


@dataclass
class Worker:
    env: NetworkEnvironment
    failures: list[BaseException] = field(default_factory=list)


def _worker(index: int, secret: bytes = SECRET, max_frame_size: int = 1 << 20) -> Worker:
    failures: list[BaseException] = []
    env = NetworkEnvironment(
        index, secret, bind_host=HOST, max_frame_size=max_frame_size, on_failure=failures.append
    )
    return Worker(env, failures)


def _partition(
    env: NetworkEnvironment, channel_ids: list[int], *, floating: int = 8, per_channel: int = 2
) -> ResultPartition:
    partition = ResultPartition(
        f"P@{env.worker_index}",
        channel_ids,
        buffers_per_channel=per_channel,
        floating_buffers=floating,
        max_buffers_per_channel=10,
    )
    for cid, sp in zip(channel_ids, partition.subpartitions):
        env.subpartitions[cid] = sp
    return partition


def _gate(
    env: NetworkEnvironment, channel_ids: list[int], *, floating: int = 8, credit: int = 2
) -> InputGate:
    gate = InputGate(f"G@{env.worker_index}", 1, floating)
    for cid in channel_ids:
        env.input_channels[cid] = gate.add_channel(cid, f"G/{cid}", credit)
    return gate


async def _connect(a: Worker, b: Worker) -> None:
    ports = {0: await a.env.start_server(), 1: await b.env.start_server()}
    peers = {i: (HOST, port) for i, port in ports.items()}
    await asyncio.gather(a.env.connect_peers(peers, {1}), b.env.connect_peers(peers, {0}))


def _wire(workers: list[Worker], channel_id: int, producer: int, consumer: int) -> None:
    for w in workers:
        w.env.wire(channel_id, producer, consumer)


async def _take(gate: InputGate, count: int, release: bool = True) -> list[Any]:
    """Wait until ``count`` items (records or events) came out of ``gate``."""
    out: list[Any] = []
    arrived = asyncio.Event()
    gate.set_listener(arrived.set)
    while len(out) < count:
        item = gate.poll()
        if item is None:
            arrived.clear()
            if not gate.has_input():
                await arrived.wait()
            continue
        channel, payload = item
        if isinstance(payload, tuple):
            out.extend(payload[0])
            if release:
                gate.release(channel)
        else:
            out.append(payload)
    return out


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait (polling the loop) until ``condition()`` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.002)


async def _first_failure(worker: Worker) -> BaseException:
    await _until(lambda: bool(worker.failures))
    return worker.failures[0]


async def _settle(rounds: int = 20) -> None:
    """Let frames in flight on loopback arrive."""
    for _ in range(rounds):
        await asyncio.sleep(0.005)


async def _close(*workers: Worker) -> None:
    for w in workers:
        w.env.close()
    await asyncio.sleep(0.01)  # let the transports finish closing inside the loop


# -- LocalLink ------------------------------------------------------------------------------------


def test_wire_in_one_worker_uses_a_local_link() -> None:
    async def main() -> list[Any]:
        w = _worker(0)
        partition = _partition(w.env, [5])
        gate = _gate(w.env, [5])
        w.env.wire(5, 0, 0)
        link = partition.subpartitions[0].link
        assert isinstance(link, LocalLink)
        assert link.consumer is gate.channels[0] and link.producer is partition.subpartitions[0]
        writer = RecordWriter(partition, ForwardPartitioner(), 256)
        writer.emit([1, 2, 3], None)
        writer.broadcast_event(Marker("end"))
        return await _take(gate, 4)

    assert _run(main) == [1, 2, 3, Marker("end")]


# -- TCP ------------------------------------------------------------------------------------------


def test_buffers_credits_and_events_cross_a_tcp_connection() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        # a produces channels 0 and 1 (to b); b produces channel 2 (to a): one shared connection
        out_a = _partition(a.env, [0, 1])
        in_b = _gate(b.env, [0, 1])
        out_b = _partition(b.env, [2])
        in_a = _gate(a.env, [2])
        await _connect(a, b)
        assert set(a.env.connections) == {1} and set(b.env.connections) == {0}
        for cid, producer, consumer in ((0, 0, 1), (1, 0, 1), (2, 1, 0)):
            _wire([a, b], cid, producer, consumer)
        a.env.start_pumping()
        b.env.start_pumping()

        writer_a = RecordWriter(out_a, RebalancePartitioner(), 512)
        records = [f"rec-{i:04}" for i in range(2000)]  # many buffers, far beyond the credit
        for start in range(0, 2000, 50):
            writer_a.emit(records[start : start + 50], list(range(start, start + 50)))
        writer_a.broadcast_event(Marker("eos"))
        writer_b = RecordWriter(out_b, ForwardPartitioner(), 512)
        big = "".join(f"{i:05}" for i in range(2000))  # 10 KB: 20 buffers > a's 2 + 8 buffers
        writer_b.emit([big], [1])
        writer_b.flush_all()

        got_b = await _take(in_b, 2000 + 2)
        got_a = await _take(in_a, 1)
        assert got_a == [big]
        assert got_b.count(Marker("eos")) == 2
        values = [v for v in got_b if not isinstance(v, Marker)]
        assert sorted(values) == records
        assert a.env.connections[1].bytes_sent > 2000 * 8
        assert out_a.queued == 0
        assert a.failures == [] and b.failures == []
        await _close(a, b)

    _run(main)


def test_order_is_kept_per_channel_over_tcp() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        out = _partition(a.env, [0, 1])
        gates = [_gate(b.env, [0]), _gate(b.env, [1])]
        await _connect(a, b)
        _wire([a, b], 0, 0, 1)
        _wire([a, b], 1, 0, 1)
        writer = RecordWriter(out, RebalancePartitioner(), 200)
        writer.emit(list(range(600)), None)
        writer.flush_all()
        first, second = await _take(gates[0], 300), await _take(gates[1], 300)
        assert first == sorted(first) and second == sorted(second)
        assert sorted(first + second) == list(range(600))
        await _close(a, b)

    _run(main)


def test_backpressure_and_resume_across_tcp() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        out = _partition(a.env, [0], floating=2, per_channel=2)
        gate = _gate(b.env, [0], floating=2, credit=2)
        await _connect(a, b)
        _wire([a, b], 0, 0, 1)
        writer = RecordWriter(out, ForwardPartitioner(), 256)
        receiver = gate.channels[0].receiver
        emitted = 0
        while True:  # emit while the partition takes more, until the consumer is full too
            while out.is_available():
                writer.emit([emitted], None)
                writer.flush_all()
                emitted += 1
                assert emitted < 100
            await _until(lambda: receiver.queued_data_buffers == 2 + 2 or out.is_available())
            if not out.is_available():
                break
        await _settle()
        assert not out.is_available()
        assert out.subpartitions[0].sender.credit == 0
        assert receiver.queued_data_buffers == 2 + 2
        assert emitted == (2 + 2) + out.pool_size

        available = asyncio.Event()
        out.notify_when_available(available.set)
        got = await _take(gate, emitted)  # releasing sends AddCredit frames back
        await asyncio.wait_for(available.wait(), 5)
        assert got == list(range(emitted))
        assert out.queued == 0 and out.is_available()

        # an aligned barrier blocks the subpartition until ResumeConsumption crosses back
        writer.broadcast_event(Marker("barrier"), blocks=True)
        writer.emit(["after"], None)
        writer.flush_all()
        assert await _take(gate, 1) == [Marker("barrier")]
        await _settle()
        assert gate.poll() is None
        assert out.subpartitions[0].sender.is_blocked
        gate.channels[0].resume_consumption()
        assert await _take(gate, 1) == ["after"]
        assert a.failures == [] and b.failures == []
        await _close(a, b)

    _run(main)


def test_priority_event_overtakes_over_tcp() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        out = _partition(a.env, [0], floating=0, per_channel=1)
        gate = _gate(b.env, [0], floating=0, credit=1)
        await _connect(a, b)
        _wire([a, b], 0, 0, 1)
        writer = RecordWriter(out, ForwardPartitioner(), 256)
        for i in range(3):
            writer.emit([i], None)
            writer.flush_all()
        await _settle()
        out.broadcast_event(Marker("unaligned"), priority=True)
        await _settle()
        assert await _take(gate, 4) == [Marker("unaligned"), 0, 1, 2]
        await _close(a, b)

    _run(main)


def test_wrong_secret_is_rejected_before_any_frame(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        a, b = _worker(0, secret=b"intruder"), _worker(1)
        _gate(b.env, [0])
        port = await b.env.start_server()
        with pytest.raises(AuthenticationError):
            await a.env.connect_peers({1: (HOST, port)}, {1})
        await _settle()
        assert 0 not in b.env.connections
        assert not any(f.done() for f in b.env._accepted.values())
        assert b.failures == []
        await _close(a, b)

    with caplog.at_level(logging.WARNING, logger="undertow.runtime.network.transport"):
        _run(main)
    assert any("dropped a data connection" in r.getMessage() for r in caplog.records)


def test_server_drops_an_unauthenticated_connection_without_reading_frames() -> None:
    async def main() -> None:
        b = _worker(1)
        _gate(b.env, [0])
        port = await b.env.start_server()
        reader, writer = await asyncio.open_connection(HOST, port)
        await reader.readexactly(16)
        # a wrong MAC followed by a well-formed BUFFER frame for a channel that exists
        writer.write(b"\x01" * (16 + 4 + 32) + b"\x00\x00\x00\x0eB" + b"\x00" * 13)
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b""
        assert b.env.input_channels[0].receiver.queued_data_buffers == 0
        assert len(b.env.input_channels[0].queue) == 0
        assert b.failures == []
        writer.close()
        await _close(b)

    _run(main)


def test_oversized_frame_fails_the_connection_naming_the_limit() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1, max_frame_size=1024)
        out = _partition(a.env, [0])
        _gate(b.env, [0])
        await _connect(a, b)
        _wire([a, b], 0, 0, 1)
        writer = RecordWriter(out, ForwardPartitioner(), 4096)  # buffers above b's frame limit
        writer.emit([b"x" * 3000], None)
        writer.flush_all()
        failure = await _first_failure(b)
        assert b.failures == [failure]
        assert isinstance(failure, NetworkError)
        assert "undertow.network.max-frame-size (1024 bytes)" in str(failure)
        assert "worker 0" in str(failure)
        await _close(a, b)

    _run(main)


def test_unknown_channel_is_reported_and_stops_the_connection() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        await _connect(a, b)
        a.env.connections[1].send_credit(77, 1)  # b has no subpartition 77
        failure = await _first_failure(b)
        assert isinstance(failure, NetworkError)
        assert "worker 0 addressed unknown output channel 77" in str(failure)
        await _close(a, b)

    _run(main)


def test_peer_closing_unexpectedly_is_reported_but_not_while_closing() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        await _connect(a, b)
        await _close(a)  # a is closing: its own reader does not report the end
        failure = await _first_failure(b)
        assert "worker 0 closed its data connection unexpectedly" in str(failure)
        assert a.failures == []
        await _close(b)

    _run(main)


def test_local_and_remote_channels_in_one_environment() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        out = _partition(a.env, [0, 1])  # channel 0 stays in worker 0, channel 1 goes to 1
        local_gate = _gate(a.env, [0])
        remote_gate = _gate(b.env, [1])
        await _connect(a, b)
        _wire([a, b], 0, 0, 0)
        _wire([a, b], 1, 0, 1)
        assert isinstance(out.subpartitions[0].link, LocalLink)
        assert not isinstance(out.subpartitions[1].link, LocalLink)
        # only the channel within the worker takes batches unserialized
        assert [sp.in_process for sp in out.subpartitions] == [True, False]
        writer = RecordWriter(out, RebalancePartitioner(), 256)
        writer.emit(list(range(10)), None)
        writer.broadcast_event(Marker("eos"))
        local, remote = await _take(local_gate, 6), await _take(remote_gate, 6)
        assert local[-1] == remote[-1] == Marker("eos")
        assert sorted(local[:-1] + remote[:-1]) == list(range(10))
        await _close(a, b)

    _run(main)


def test_data_sockets_are_the_connections_to_peer_workers() -> None:
    """What the task pace watches while a checkpoint passes: a socket per peer, which the
    peer's bytes make readable."""

    async def main() -> None:
        a, b = _worker(0), _worker(1)
        assert a.env.data_sockets() == []
        await _connect(a, b)
        try:
            (fd,) = a.env.data_sockets()
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            b.env.connections[0].send_credit(7, 1)
            await asyncio.sleep(0)  # a control frame leaves when the loop step ends
            for _ in range(100):
                if poller.poll(10):
                    break
            else:
                raise AssertionError("the peer's bytes never made the data socket readable")
        finally:
            a.env.close()
            b.env.close()

    _run(main)


def test_the_control_frames_of_one_loop_step_leave_in_one_write_in_order() -> None:
    """Credits, a resume and a buffer size queued in one step: one write when the step
    ends, and the producer sees each, in order."""

    async def main() -> None:
        a, b = _worker(0), _worker(1)
        out = _partition(b.env, [0])
        _gate(a.env, [0])
        await _connect(a, b)
        _wire([a, b], 0, 1, 0)
        await _settle()  # the channel's initial credit arrives
        conn = a.env.connections[1]
        writes: list[list[bytes]] = []
        write = conn.writer.writelines

        def counted(frames: Any) -> None:
            writes.append(list(frames))
            write(frames)

        conn.writer.writelines = counted  # type: ignore[method-assign]
        seen: list[str] = []
        sub = out.subpartitions[0]
        initial = sub.sender.credit

        class Recording:  # the producer's subpartition as the connection's reader finds it
            def add_credit(self, credit: int) -> None:
                seen.append("add_credit")
                sub.add_credit(credit)

            def resume(self) -> None:
                seen.append("resume")

            def new_buffer_size(self, size: int, max_records: int) -> None:
                seen.append("new_buffer_size")

        b.env.subpartitions[0] = Recording()  # type: ignore[assignment]
        for _ in range(3):
            conn.send_credit(0, 2)
        conn.send_resume(0)
        conn.send_buffer_size(0, 4096, 100)
        assert writes == []  # nothing left during the step
        await asyncio.sleep(0)
        assert len(writes) == 1 and len(writes[0]) == 10  # five frames, header and body each
        await _until(lambda: len(seen) == 5)
        assert seen == ["add_credit"] * 3 + ["resume", "new_buffer_size"]
        assert sub.sender.credit == initial + 3 * 2
        await _close(a, b)

    _run(main)


class _Recording:
    """An input channel and a subpartition of worker b, as the connection's reader finds
    them: what it delivers, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def on_send(self, send: Send) -> None:
        assert isinstance(send.payload, Buffer)
        self.seen.append(("buffer", len(send.payload.data)))

    def add_credit(self, credit: int) -> None:
        self.seen.append(("credit", credit))


def test_frames_sent_before_the_reader_starts_come_first_and_whole() -> None:
    """Worker a sends a credit, a 1 MiB buffer and a credit before b starts reading: b's stream
    reader holds the first bytes from its handshake on; they go before the socket's rest."""

    async def main() -> None:
        a, b = _worker(0, max_frame_size=2 << 20), _worker(1, max_frame_size=2 << 20)
        recording = _Recording()
        b.env.input_channels[0] = recording  # type: ignore[assignment]
        b.env.subpartitions[1] = recording  # type: ignore[assignment]
        peers = {0: (HOST, await a.env.start_server()), 1: (HOST, await b.env.start_server())}
        await a.env.connect_peers(peers, {1})  # a dials b: b accepted, not reading yet
        conn = a.env.connections[1]
        conn.send_credit(1, 3)
        await asyncio.sleep(0)  # the credit leaves at the end of the step
        conn.send_buffer(0, Send(Buffer(bytes(range(256)) * 4096), False, 0, 0))
        conn.send_credit(1, 4)
        await _settle()
        await b.env.connect_peers(peers, {0})
        await _until(lambda: len(recording.seen) == 3)
        assert recording.seen == [("credit", 3), ("buffer", 1 << 20), ("credit", 4)]
        assert b.failures == []
        await _close(a, b)

    _run(main)


def test_a_peer_closing_inside_a_frame_is_reported_with_how_much_came() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        await _connect(a, b)
        a.env.connections[1].writer.write(frame_header(100_000) + b"B" + b"\x00" * 13 + b"x" * 99)
        await _close(a)
        failure = await _first_failure(b)
        assert isinstance(failure, NetworkError)
        assert "worker 0 closed inside a frame (113 of 100000 bytes)" in str(failure)
        assert b.failures == [failure]
        await _close(b)

    _run(main)


def test_a_peer_gone_before_the_reader_starts_is_reported() -> None:
    async def main() -> None:
        a, b = _worker(0), _worker(1)
        peers = {0: (HOST, await a.env.start_server()), 1: (HOST, await b.env.start_server())}
        await a.env.connect_peers(peers, {1})
        await _close(a)  # its end reaches b's stream reader, before b reads frames
        await _settle()
        await b.env.connect_peers(peers, {0})
        failure = await _first_failure(b)
        assert "worker 0 closed its data connection unexpectedly" in str(failure)
        await _close(b)

    _run(main)
