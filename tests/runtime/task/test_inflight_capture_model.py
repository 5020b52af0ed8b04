"""No overlap, no gap: randomized schedules of an upstream subpartition (with a priority
barrier that overtakes its queue), a wire with data in flight, and a downstream task that takes
records one at a time, for two channels whose barriers arrive at different times.

For each channel, what the downstream processed before its snapshot, then its input channel
state, then the upstream's output channel state, decoded by one deserializer, must be exactly
the records the upstream emitted before its barrier, in order (reference §3.1)."""

from __future__ import annotations

import asyncio
import pickle
import random
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions, SnapshotType
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk, encode_chunk
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.buffer import (
    BatchDeserializer,
    Buffer,
    serialize_batch,
    split_into_buffers,
)
from undertow.runtime.network.credit import Send
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition, ResultSubpartition
from undertow.runtime.task.checkpoint_io import CheckpointIO, CheckpointListeners
from undertow.runtime.task.checkpointing import SubtaskCheckpointer
from undertow.runtime.task.settings import TaskSettings
from undertow.testing.channel_state import InMemoryChannelStateWriter

UNALIGNED = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 0)
CID = 1


class InlineExecutor(Executor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


class Wire:
    """One channel's connection: sends in flight, delivered in order when the schedule says."""

    def __init__(self, channel: InputChannel) -> None:
        self.channel = channel
        self.in_flight: deque[Send] = deque()
        self.subpartition: ResultSubpartition | None = None

    def deliver(self, send: Send) -> None:  # ProducerLink
        self.in_flight.append(send)

    def add_credit(self, credit: int) -> None:  # ConsumerLink
        if self.subpartition is not None:
            self.subpartition.add_credit(credit)

    def resume(self) -> None: ...

    def arrive(self) -> None:
        self.channel.on_send(self.in_flight.popleft())


class Upstream:
    """Emits batches of consecutive numbers for one channel, then its priority barrier."""

    def __init__(self, wire: Wire, first: int, rng: random.Random) -> None:
        partition = ResultPartition("up", [0], buffers_per_channel=2, floating_buffers=0,
                                    max_buffers_per_channel=100)  # fmt: skip
        self.sp = partition.subpartitions[0]
        self.sp.link = wire
        wire.subpartition = self.sp
        self.next, self.rng = first, rng
        self.emitted: list[int] = []
        self.output_state: list[bytes] | None = None

    def emit(self) -> None:
        values = list(range(self.next, self.next + self.rng.randint(1, 12)))
        self.next += len(values)
        self.emitted += values
        segment = self.rng.choice([12, 40, 4096])
        self.sp.add_buffers(split_into_buffers(serialize_batch(values, None), segment))

    def barrier(self) -> None:
        overtaken = self.sp.overtake_with_priority_event(CheckpointBarrier(CID, 0, UNALIGNED))
        self.output_state = [encode_chunk(b) for b in overtaken]
        self.emitted_before_barrier = list(self.emitted)


class Downstream:
    """The task: takes priority events first, else one record of the current batch."""

    def __init__(self, gate: InputGate) -> None:
        self.gate = gate
        self.current: tuple[InputChannel, list[int], int] | None = None
        self.processed: dict[int, list[int]] = {0: [], 1: []}
        self.before_snapshot: dict[int, list[int]] | None = None
        self.mails: list[Callable[[], None]] = []

    def post(self, mail: Callable[[], None]) -> None:
        self.mails.append(mail)

    def unprocessed_chunks(self, channel: InputChannel) -> list[bytes]:
        if self.current is None or self.current[0] is not channel:
            return []
        _, values, pos = self.current
        return [encode_chunk(Buffer(serialize_batch(values[pos:], None)))]

    def restored_rest(self, channel: InputChannel) -> list[Any]:
        return []  # no restored input in these tests

    def step(self, checkpointer: SubtaskCheckpointer) -> bool:
        polled = self.gate.poll_priority()
        if polled is not None:
            checkpointer.on_barrier(*polled)
            return True
        if self.current is None:
            item = self.gate.poll()
            if item is None:
                return False
            channel, payload = item
            if isinstance(payload, CheckpointBarrier):
                checkpointer.on_barrier(channel, payload)
                return True
            self.current = (channel, payload[0], 0)
        channel, values, pos = self.current
        self.processed[channel.index].append(values[pos])
        if pos + 1 == len(values):
            self.current = None
            self.gate.release(channel)
        else:
            self.current = (channel, values, pos + 1)
        return True


class Chain:
    vertex = SimpleNamespace(outputs=())  # no output edges: unaligned barriers everywhere
    subtask_index, parallelism = 0, 1
    takes_native_snapshots = False

    def __init__(self, task: Downstream) -> None:
        self.task = task

    def prepare_snapshot_pre_barrier(self, cid: int) -> None:
        self.task.before_snapshot = {ch: list(v) for ch, v in self.task.processed.items()}

    def snapshot_state(self, cid: int) -> SubtaskSnapshot:
        return SubtaskSnapshot()


class Responder:
    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None: ...

    def decline(self, checkpoint_id: int, reason: Any, detail: str) -> None:
        raise AssertionError(f"declined {checkpoint_id}: {reason} {detail}")


def decode(chunks: list[bytes]) -> list[int]:
    deserializer, values = BatchDeserializer(), []
    for chunk in chunks:
        batch = deserializer.add(decode_chunk(chunk))
        if batch is not None:
            values += batch[0]
    assert not deserializer.has_leftover, "channel state ends inside a batch"
    return values


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), credit=st.integers(1, 3))
def test_channel_state_is_exactly_the_in_flight_records(seed: int, credit: int) -> None:
    rng = random.Random(seed)
    gate = InputGate("down", 1, floating_buffers=1)
    task = Downstream(gate)
    wires, ups = [], []
    for i in range(2):
        channel = gate.add_channel(i, f"down/{i}", credit)
        wire = Wire(channel)
        wires.append(wire)
        ups.append(Upstream(wire, 1000 * i, rng))
        channel.connect(wire)
    state: list[ChannelState] = []

    def write_file(cid: int, name: str, data: bytes) -> str:
        snapshot = pickle.loads(data)
        state.append(snapshot.channel_state or ChannelState(cid, 0, 1, (2,), ()))
        return name

    checkpointer = SubtaskCheckpointer(
        task_name="down (1/1)", file_name="f", chain=Chain(task),  # type: ignore[arg-type]
        gates=[gate], writers=[], task=task,
        io=CheckpointIO(responder=Responder(), state_writer=write_file, executor=InlineExecutor(),
                        channel_state_writer=InMemoryChannelStateWriter.of([gate], [])),
        exactly_once=True,
        settings=TaskSettings(unaligned=True),
        listeners=CheckpointListeners(current_watermark=lambda: 0),
    )  # fmt: skip

    async def run() -> None:
        for _ in range(600):
            actions = []
            for up, wire in zip(ups, wires, strict=True):
                if up.output_state is None:
                    actions.append(up.emit)
                    if len(up.emitted) > 5:
                        actions.append(up.barrier)
                if wire.in_flight:
                    actions.append(wire.arrive)
            actions.append(lambda: task.step(checkpointer))
            rng.choice(actions)()
            if state and all(w.in_flight == deque() for w in wires):
                break
        for _ in range(2000):  # drain: everything arrives and is processed
            if not any(w.in_flight for w in wires) and not task.step(checkpointer):
                break
            for wire in wires:
                if wire.in_flight:
                    wire.arrive()

    asyncio.run(run())
    if not state:  # some upstream never sent its barrier in this schedule
        return
    [result] = state
    assert task.before_snapshot is not None
    for i, up in enumerate(ups):
        assert up.output_state is not None
        inputs = list(result.inputs.get((0, i), ()))
        seen = task.before_snapshot[i] + decode(inputs + up.output_state)
        assert seen == up.emitted_before_barrier, (i, seed)
