"""SubtaskCheckpointer executing the barrier handler's actions (barrier_actions.py) on real
input gates and result partitions, with a fake chain, task and responder."""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from undertow.core.config import Configuration, Options
from undertow.graph.partitioners import RebalancePartitioner
from undertow.runtime.checkpoint.barrier import (
    AlignmentType,
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.barrier_handler import BarrierHandler, BarrierTracker
from undertow.runtime.checkpoint.channel_state_files import (
    ChannelStateFileWriter,
    read_channel_state,
)
from undertow.runtime.checkpoint.channel_state_writer import (
    ChannelStateWriter,
    decode_chunk,
    encode_chunk,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.snapshot import (
    OperatorSnapshot,
    SubtaskSnapshot,
    SubtaskStateHandle,
)
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.checkpoint_io import CheckpointIO, CheckpointListeners
from undertow.runtime.task.checkpointing import SubtaskCheckpointer
from undertow.runtime.task.settings import TaskSettings
from undertow.storage import FileHandle
from undertow.testing.channel_state import InMemoryChannelStateWriter

UNALIGNED = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 0)
TIMEOUTABLE = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 50)


async def settle() -> None:
    """Let the write futures' done callbacks (the acknowledgements) run."""
    for _ in range(5):
        await asyncio.sleep(0)


def run(coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(coro())


class InlineExecutor(Executor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@dataclass
class Responder:
    acks: dict[int, dict[str, Any]] = field(default_factory=dict)
    declines: list[tuple[int, Any]] = field(default_factory=list)

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None:
        self.acks[checkpoint_id] = metrics

    def decline(self, checkpoint_id: int, reason: Any, detail: str) -> None:
        self.declines.append((checkpoint_id, reason))


class Chain:
    def __init__(self, supports_unaligned: list[bool]) -> None:
        outputs = tuple(SimpleNamespace(supports_unaligned=s) for s in supports_unaligned)
        self.vertex = SimpleNamespace(outputs=outputs, name="op")
        self.subtask_index, self.parallelism = 0, 1
        self.pre: list[int] = []
        self.takes_native_snapshots = False

    def prepare_snapshot_pre_barrier(self, cid: int) -> None:
        self.pre.append(cid)

    def snapshot_state(self, cid: int) -> SubtaskSnapshot:
        return SubtaskSnapshot({"op": OperatorSnapshot(operator=b"state")})

    def notify_checkpoint_complete(self, cid: int) -> None: ...

    def notify_checkpoint_aborted(self, cid: int) -> None: ...


class Task:
    def __init__(self) -> None:
        self.mails: list[Callable[[], None]] = []
        self.unprocessed: dict[int, list[bytes]] = {}

    def post(self, mail: Callable[[], None]) -> None:
        self.mails.append(mail)

    def unprocessed_chunks(self, channel: InputChannel) -> list[bytes]:
        return self.unprocessed.get(id(channel), [])

    def restored_rest(self, channel: InputChannel) -> list[Any]:
        return []  # no restored input in these tests

    def run_mails(self) -> None:
        mails, self.mails = self.mails, []
        for mail in mails:
            mail()


class Link:
    def __init__(self) -> None:
        self.sent: list[Send] = []
        self.credits: list[int] = []

    def deliver(self, send: Send) -> None:
        self.sent.append(send)

    def add_credit(self, credit: int) -> None:
        self.credits.append(credit)

    def resume(self) -> None: ...


class Feeder:
    def __init__(self, channel: InputChannel) -> None:
        self.channel, self.seq = channel, 0

    def send(self, payload: Any, priority: bool = False, blocks: bool = False) -> None:
        is_event = not isinstance(payload, Buffer)
        self.channel.on_send(Send(payload, is_event, self.seq, 0, priority, blocks))
        self.seq += 1


class Harness:
    def __init__(
        self,
        config: dict[str, str] | None = None,
        channels: int = 2,
        supports_unaligned: list[bool] | None = None,
        exactly_once: bool = True,
        responder: Responder | None = None,
        channel_state: ChannelStateWriter | None = None,
    ) -> None:
        settings = {"execution.checkpointing.unaligned.enabled": "true"}
        settings.update(config or {})
        self.gate = InputGate("in", 1, 8)
        for i in range(channels):
            self.gate.add_channel(i, f"in/{i}", 4).connect(Link())
        self.feeders = [Feeder(c) for c in self.gate.channels]
        outputs = supports_unaligned if supports_unaligned is not None else [True]
        self.writers = []
        self.links = []
        for i in range(len(outputs)):
            partition = ResultPartition(f"out{i}", [0, 1], buffers_per_channel=2,
                                        floating_buffers=2, max_buffers_per_channel=10)  # fmt: skip
            for sp in partition.subpartitions:
                link = Link()
                sp.link = link
                self.links.append(link)
            self.writers.append(RecordWriter(partition, RebalancePartitioner(), 1 << 20))
        self.chain = Chain(outputs)
        self.responder = responder if responder is not None else Responder()
        self.files: dict[int, bytes] = {}
        self.task = Task()
        unaligned = exactly_once and Configuration(settings).get(Options.UNALIGNED)
        if channel_state is None:
            channel_state = InMemoryChannelStateWriter.of([self.gate], self.writers)
        io = CheckpointIO(responder=self.responder, state_writer=self._write,
                          executor=InlineExecutor(),
                          channel_state_writer=channel_state if unaligned else None)  # fmt: skip
        self.cp = SubtaskCheckpointer(
            task_name="op (1/1)", file_name="f", chain=self.chain,  # type: ignore[arg-type]
            gates=[self.gate], writers=self.writers, task=self.task, io=io,
            exactly_once=exactly_once, settings=TaskSettings.of(Configuration(settings)),
            listeners=CheckpointListeners(current_watermark=lambda: 0),
        )  # fmt: skip

    def _write(self, cid: int, name: str, data: bytes) -> str:
        self.files[cid] = data
        return f"{cid}/{name}"

    def snapshot(self, cid: int) -> SubtaskSnapshot:
        snapshot = pickle.loads(self.files[cid])
        assert isinstance(snapshot, SubtaskSnapshot)
        return snapshot

    def take_priority(self) -> None:
        """What the task does between chunks: hand priority events to the checkpointer."""
        while (polled := self.gate.poll_priority()) is not None:
            channel, event = polled
            if isinstance(event, BarrierAnnouncement):
                self.cp.on_announcement(channel, event)
            else:
                self.cp.on_barrier(channel, event)

    def sender(self, output: int, subpartition: int) -> Any:
        return self.writers[output].partition.subpartitions[subpartition].sender


def buf(tag: str) -> Buffer:
    """A data buffer holding one serialized batch ``[tag]``."""
    return Buffer(serialize_batch([tag], None))


def inputs(snapshot: SubtaskSnapshot, channel: int) -> list[bytes]:
    assert snapshot.channel_state is not None
    return [decode_chunk(c).data for c in snapshot.channel_state.inputs.get((0, channel), ())]


def test_handler_choice_follows_the_configuration() -> None:
    assert isinstance(Harness().cp.handler, BarrierHandler)
    assert Harness().cp.handler.is_alternating  # type: ignore[attr-defined]
    aligned = Harness({"execution.checkpointing.unaligned.enabled": "false"}).cp
    assert isinstance(aligned.handler, BarrierHandler) and not aligned.handler.is_alternating
    assert aligned.channel_state is None
    assert isinstance(Harness(exactly_once=False).cp.handler, BarrierTracker)


def test_unaligned_checkpoints_without_a_channel_state_writer_are_refused() -> None:
    h = Harness()
    with pytest.raises(ValueError, match=r"op \(1/1\): unaligned checkpoints are enabled but no"):
        SubtaskCheckpointer(
            task_name="op (1/1)", file_name="f", chain=h.chain,  # type: ignore[arg-type]
            gates=[InputGate("in", 1, 8)], writers=[], task=h.task,
            io=CheckpointIO(responder=h.responder, state_writer=h._write,
                            executor=InlineExecutor()),
            exactly_once=True,
            settings=TaskSettings(unaligned=True),
        )  # fmt: skip


def test_unaligned_input_state_is_exactly_the_data_before_each_barrier() -> None:
    async def body() -> None:
        h = Harness()
        c0 = h.gate.channels[0]
        f0, f1 = h.feeders
        h.task.unprocessed[id(c0)] = [encode_chunk(buf("rest-of-current"))]
        c0.deserializer.add(Buffer(b"leftover", partial=True))
        f0.send(buf("q0"))
        f1.send(buf("q1"))
        barrier = CheckpointBarrier(1, 0, UNALIGNED)
        f0.send(barrier, priority=True)
        f0.send(buf("after-barrier-0"))  # overtaken upstream: the producer's output state
        h.take_priority()
        assert h.chain.pre == [1] and 1 not in h.responder.acks  # triggered, input pending
        f1.send(buf("arrives-1"))
        f1.send(barrier, priority=True)
        f1.send(buf("after-barrier-1"))
        h.take_priority()
        await settle()
        snapshot = h.snapshot(1)
        assert inputs(snapshot, 0) == [buf("rest-of-current").data, b"leftover", buf("q0").data]
        assert inputs(snapshot, 1) == [buf("q1").data, buf("arrives-1").data]
        await settle()
        metrics = h.responder.acks[1]
        assert metrics["unaligned"] and metrics["persisted_data"] > 0
        assert snapshot.operators["op"].operator == b"state"

    run(body)


def test_unaligned_barrier_overtakes_output_and_persists_it() -> None:
    async def body() -> None:
        h = Harness(channels=0)
        h.writers[0].emit(["r1", "r2", "r3"], None)  # pending in the record writer
        h.cp.trigger_checkpoint(CheckpointBarrier(2, 0, UNALIGNED))
        for j, link in enumerate(h.links):
            barrier = link.sent[-1].payload
            assert link.sent[-1].priority and isinstance(barrier, CheckpointBarrier)
            assert barrier.checkpoint_id == 2
            assert h.sender(0, j).queued_data_buffers == 1  # still queued, behind the barrier
        await settle()
        state = h.snapshot(2).channel_state
        assert state is not None and not state.inputs
        values = sorted(
            v for chunks in state.outputs.values() for c in chunks
            for v in pickle.loads(decode_chunk(c).data)[0]
        )  # fmt: skip
        assert values == ["r1", "r2", "r3"]

    run(body)


def test_forced_aligned_outputs_get_aligned_barriers_unless_forced() -> None:
    async def body() -> None:
        h = Harness(channels=0, supports_unaligned=[False, True])
        h.cp.trigger_checkpoint(CheckpointBarrier(1, 0, UNALIGNED))
        forced, unaligned = h.links[0].sent[-1], h.links[2].sent[-1]
        assert not forced.priority and forced.blocks_upstream
        assert forced.payload.options.alignment is AlignmentType.FORCED_ALIGNED
        assert unaligned.priority and unaligned.payload.options.is_unaligned
        h2 = Harness({"execution.checkpointing.unaligned.forced": "true"}, channels=0,
                     supports_unaligned=[False])  # fmt: skip
        h2.cp.trigger_checkpoint(CheckpointBarrier(1, 0, UNALIGNED))
        assert h2.links[0].sent[-1].priority

    run(body)


def test_forced_aligned_input_aligns_and_outputs_turn_unaligned_again() -> None:
    async def body() -> None:
        h = Harness()
        barrier = CheckpointBarrier(3, 0, UNALIGNED.with_unaligned_unsupported())
        f0, f1 = h.feeders
        f0.send(barrier, blocks=True)
        h.cp.on_barrier(*h.gate.poll())  # type: ignore[misc]
        assert h.chain.pre == []  # aligning
        f1.send(barrier, blocks=True)
        h.cp.on_barrier(*h.gate.poll())  # type: ignore[misc]
        assert h.chain.pre == [3]
        assert h.links[0].sent[-1].priority  # own output: unaligned again
        await settle()
        assert 3 in h.responder.acks

    run(body)


def test_output_timer_turns_a_queued_aligned_barrier_into_a_priority_one() -> None:
    async def body() -> None:
        h = Harness(channels=0)
        h.writers[0].emit(["a", "b"], None)
        h.writers[0].flush_all()  # no credit: the data stays queued
        h.cp.trigger_checkpoint(CheckpointBarrier(4, 0, TIMEOUTABLE))  # timed out long ago
        assert all(not s.is_event for link in h.links for s in link.sent)
        assert 4 not in h.responder.acks
        await asyncio.sleep(0.01)
        h.task.run_mails()
        for link in h.links:
            [send] = link.sent
            assert send.priority and send.payload.options.is_unaligned
        await settle()
        state = h.snapshot(4).channel_state
        assert state is not None and state.output_bytes > 0
        await settle()
        assert h.responder.acks[4]["unaligned"]

    run(body)


def test_timeoutable_barrier_that_leaves_in_time_needs_no_channel_state() -> None:
    async def body() -> None:
        h = Harness(channels=0)
        now = asyncio.get_running_loop().time()  # any timestamp: the barrier leaves at once
        del now
        import time

        h.cp.trigger_checkpoint(CheckpointBarrier(5, time.time_ns() // 1_000_000, TIMEOUTABLE))
        assert all(link.sent[-1].blocks_upstream for link in h.links)
        await settle()
        assert h.responder.acks[5]["persisted_data"] == 0
        await settle()
        assert h.snapshot(5).channel_state is None
        await settle()
        assert not h.responder.acks[5]["unaligned"]

    run(body)


def test_alignment_timeout_switches_the_input_to_unaligned() -> None:
    async def body() -> None:
        import time

        h = Harness()
        barrier = CheckpointBarrier(6, time.time_ns() // 1_000_000, TIMEOUTABLE)
        f0, f1 = h.feeders
        f0.send(barrier, blocks=True)
        h.take_priority()  # the announcement of channel 0's barrier
        h.cp.on_barrier(*h.gate.poll())  # type: ignore[misc]  # channel 0, in order
        f1.send(buf("d1"))  # queued when the timeout fires
        assert h.chain.pre == [] and h.task.mails == []
        await asyncio.sleep(0.08)
        h.task.run_mails()  # the alignment timer fires: unaligned from now on
        assert h.chain.pre == [6]
        f1.send(buf("d2"))
        f1.send(barrier, blocks=True)
        h.take_priority()
        assert h.gate.channels[1].queue.num_priority_elements == 0
        polled = []
        while (item := h.gate.poll()) is not None:
            polled.append(item)
            if isinstance(item[1], CheckpointBarrier):
                h.cp.on_barrier(*item)  # type: ignore[misc]
        await settle()
        assert inputs(h.snapshot(6), 1) == [buf("d1").data, buf("d2").data]
        await settle()
        assert h.responder.acks[6]["unaligned"]

    run(body)


def test_announced_barrier_is_converted_to_priority_on_timeout() -> None:
    async def body() -> None:
        import time

        h = Harness()
        barrier = CheckpointBarrier(7, time.time_ns() // 1_000_000, TIMEOUTABLE)
        f0, f1 = h.feeders
        f0.send(barrier, blocks=True)
        h.take_priority()  # its announcement first
        h.cp.on_barrier(*h.gate.poll())  # type: ignore[misc]  # channel 0's barrier
        f1.send(buf("x1"))
        f1.send(barrier, blocks=True)  # queued behind x1, announced
        h.take_priority()
        await asyncio.sleep(0.08)
        h.task.run_mails()  # timeout: convert channel 1's barrier, trigger unaligned
        assert h.chain.pre == [7]
        h.take_priority()  # the converted barrier, ahead of x1
        await settle()
        assert inputs(h.snapshot(7), 1) == [buf("x1").data]
        assert h.gate.channels[1].queue.peek() is not barrier

    run(body)


def test_cancel_marker_aborts_capture_and_declines() -> None:
    async def body() -> None:
        h = Harness()
        barrier = CheckpointBarrier(8, 0, UNALIGNED)
        h.feeders[0].send(barrier, priority=True)
        h.take_priority()
        h.feeders[1].send(CancelCheckpointMarker(8), priority=True)
        channel, marker = h.gate.poll_priority()  # type: ignore[misc]
        h.cp.on_cancel_marker(channel, marker)
        assert [d[0] for d in h.responder.declines] == [8]
        assert h.cp.channel_state is not None and not h.cp.channel_state.is_started(8)
        h.feeders[1].send(buf("late"))  # not recorded any more
        assert 8 not in h.responder.acks and 8 not in h.files
        assert any(isinstance(s.payload, CancelCheckpointMarker) for s in h.links[0].sent)

    run(body)


@pytest.mark.parametrize("unaligned", [False, True])
def test_aligned_checkpoint_has_no_channel_state(unaligned: bool) -> None:
    async def body() -> None:
        h = Harness({"execution.checkpointing.unaligned.enabled": str(unaligned).lower()})
        aligned = CheckpointOptions.for_config(SnapshotType.SAVEPOINT, True, True, 0)
        barrier = CheckpointBarrier(9, 0, aligned)
        for feeder in h.feeders:
            feeder.send(buf("d"))
            feeder.send(barrier, blocks=True)
        while (item := h.gate.poll()) is not None:
            if isinstance(item[1], CheckpointBarrier):
                h.cp.on_barrier(*item)  # type: ignore[misc]
        await settle()
        assert h.snapshot(9).channel_state is None
        assert not h.links[0].sent[-1].priority and h.links[0].sent[-1].blocks_upstream

    run(body)


# -- channel state through the workers' shared channel-state files ---------------------------
# The acknowledgement carries merged handles, the state file no channel state, aligned
# checkpoints do not hold up the group, and write failures decline.

ALIGNED = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0)


class Files:
    def __init__(self, fail: bool = False) -> None:
        self.data: dict[str, bytes] = {}
        self.fail = fail

    def write(self, checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        if self.fail:
            raise OSError("disk full")
        path = f"chk-{checkpoint_id}/{name}"
        self.data[path] = data
        return FileHandle.of(path, data)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self.data[path][start : start + length]


class AckingResponder:
    def __init__(self) -> None:
        self.handles: dict[int, Any] = {}
        self.metrics: dict[int, dict[str, Any]] = {}
        self.declines: list[tuple[int, Any, str]] = []

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None:
        self.handles[checkpoint_id] = handle
        self.metrics[checkpoint_id] = metrics

    def decline(self, checkpoint_id: int, reason: Any, detail: str) -> None:
        self.declines.append((checkpoint_id, reason, detail))


def harness(files: ChannelStateFileWriter, name: str, **kwargs: Any) -> Harness:
    return Harness(channels=0, responder=AckingResponder(), channel_state=files.register(name),
                   **kwargs)  # fmt: skip


async def written() -> None:
    for _ in range(20):
        await settle()
        await asyncio.sleep(0.001)


def test_ack_carries_merged_handles_and_the_state_file_no_channel_state() -> None:
    async def body() -> None:
        files = Files()
        shared = ChannelStateFileWriter(files.write, 5, 0, executor=InlineExecutor())
        a, b = harness(shared, "a"), harness(shared, "b")
        for h, records in ((a, ["a1", "a2"]), (b, ["b1"])):
            h.writers[0].emit(records, None)  # pending: flushed and overtaken by the barrier
            h.cp.trigger_checkpoint(CheckpointBarrier(1, 0, UNALIGNED))
        await written()
        assert len(files.data) == 1  # one file for the group
        for h in (a, b):
            handle = h.responder.handles[1]  # type: ignore[attr-defined]
            assert isinstance(handle, SubtaskStateHandle) and handle.state is not None
            assert handle.channel_state is not None and handle.channel_state.input is None
            output = handle.channel_state.output
            assert output is not None and output.file is not None
            assert h.snapshot(1).channel_state is None
            chunks = list(read_channel_state(output, files.read_range))
            assert chunks and all(decode_chunk(c) for _, c in chunks)
            metrics = h.responder.metrics[1]  # type: ignore[attr-defined]
            assert metrics["unaligned"] and metrics["persisted_data"] == output.range_length
        [a_file] = a.responder.handles[1].channel_state.files()  # type: ignore[attr-defined]
        assert b.responder.handles[1].channel_state.files() == [a_file]  # type: ignore[attr-defined]

    run(body)


def test_aligned_checkpoint_of_one_member_does_not_hold_up_the_group() -> None:
    async def body() -> None:
        files = Files()
        shared = ChannelStateFileWriter(files.write, 5, 0, executor=InlineExecutor())
        unaligned = harness(shared, "unaligned")
        aligned = harness(shared, "aligned", supports_unaligned=[False])  # FORCED_ALIGNED out
        unaligned.writers[0].emit(["r"], None)
        unaligned.cp.trigger_checkpoint(CheckpointBarrier(3, 0, UNALIGNED))
        await written()
        assert 3 not in unaligned.responder.handles  # type: ignore[attr-defined]
        aligned.cp.trigger_checkpoint(CheckpointBarrier(3, 0, UNALIGNED))
        await written()
        assert aligned.responder.handles[3] is not None  # type: ignore[attr-defined]
        assert not isinstance(aligned.responder.handles[3], SubtaskStateHandle)  # type: ignore[attr-defined]
        handle = unaligned.responder.handles[3]  # type: ignore[attr-defined]
        assert isinstance(handle, SubtaskStateHandle) and handle.has_channel_state

    run(body)


def test_savepoint_needs_no_channel_state_and_holds_nobody_up() -> None:
    async def body() -> None:
        files = Files()
        shared = ChannelStateFileWriter(files.write, 5, 0, executor=InlineExecutor())
        one, two = harness(shared, "one"), harness(shared, "two")
        one.cp.trigger_checkpoint(CheckpointBarrier(4, 0, ALIGNED))
        two.writers[0].emit(["r"], None)
        two.cp.trigger_checkpoint(CheckpointBarrier(4, 0, UNALIGNED))
        await written()
        assert 4 in one.responder.handles and 4 in two.responder.handles  # type: ignore[attr-defined]

    run(body)


def test_failed_channel_state_write_declines() -> None:
    async def body() -> None:
        shared = ChannelStateFileWriter(Files(fail=True).write, 5, 0)
        h = harness(shared, "op")
        h.writers[0].emit(["r"], None)
        h.cp.trigger_checkpoint(CheckpointBarrier(5, 0, UNALIGNED))
        await written()
        assert 5 not in h.responder.handles  # type: ignore[attr-defined]
        [(cid, reason, detail)] = h.responder.declines  # type: ignore[attr-defined]
        assert cid == 5 and reason is CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
        assert "disk full" in detail

    run(body)


def test_subtask_state_handle_normalizes_acknowledged_handles() -> None:
    file = FileHandle.of("chk-1/f", b"x")
    assert SubtaskStateHandle.of(None).is_empty
    assert SubtaskStateHandle.of(file) == SubtaskStateHandle(file, None)
    both = SubtaskStateHandle(file, None)
    assert SubtaskStateHandle.of(both) is both and both.files() == [file]


ALIGNED_CONFIG = {"execution.checkpointing.unaligned.enabled": "false"}


@pytest.mark.parametrize(
    ("snapshot_type", "told"),
    [(SnapshotType.SYNC_SAVEPOINT, [3]), (SnapshotType.SAVEPOINT, []),
     (SnapshotType.CHECKPOINT, [])],
)  # fmt: skip
def test_the_task_learns_when_it_takes_a_stops_savepoint(
    snapshot_type: SnapshotType, told: list[int]
) -> None:
    async def body() -> None:
        h = Harness(ALIGNED_CONFIG, channels=0)
        taken: list[int] = []
        unaligned: list[bool] = []

        def listener(cid: int, is_unaligned: bool) -> None:
            taken.append(cid)
            unaligned.append(is_unaligned)

        h.cp.synchronous_savepoint_listener = listener
        h.cp.trigger_checkpoint(CheckpointBarrier(3, 0, CheckpointOptions(snapshot_type)))
        await settle()
        assert taken == told and 3 in h.responder.acks
        assert unaligned == [False] * len(told)

    run(body)


def test_wait_for_pending_returns_after_the_acknowledgement() -> None:
    """A finishing task awaits its state writes: the ack goes out before TaskFinished."""

    async def body() -> None:
        h = Harness(ALIGNED_CONFIG, channels=0)
        release = threading.Event()

        def slow_write(cid: int, name: str, data: bytes) -> str:
            release.wait(5)
            return f"{cid}/{name}"

        with ThreadPoolExecutor(1) as pool:
            h.cp.snapshots.state_writer, h.cp.snapshots.executor = slow_write, pool
            h.cp.trigger_checkpoint(CheckpointBarrier(4, 0, CheckpointOptions()))
            await settle()
            assert 4 not in h.responder.acks
            waiting = asyncio.ensure_future(h.cp.wait_for_pending())
            await settle()
            assert not waiting.done()
            release.set()
            await asyncio.wait_for(waiting, 5)
            assert 4 in h.responder.acks

    run(body)
