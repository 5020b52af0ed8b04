"""A StreamTask restoring channel state: restored output first, then restored input (a
partial batch completed by live data), then live input; and a wrong shape fails clearly."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import pytest
from tests.runtime.task.task_fakes import NullServices, settled

from undertow.common import Configuration
from undertow.core.errors import StateError
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions, SnapshotType
from undertow.runtime.checkpoint.channel_recovery import (
    EndOfChannelStateEvent,
    ReemittedChannel,
    SubtaskChannelRecovery,
)
from undertow.runtime.checkpoint.channel_recovery.stream import RestoredInputStream
from undertow.runtime.checkpoint.channel_state_writer import encode_chunk, is_recovered_chunk
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.stream_task import StreamTask
from undertow.testing.channel_state import InMemoryChannelStateWriter


class LiveProducer:
    """The upstream after recovery: sends ``buffers`` as soon as it gets credit."""

    def __init__(self, channel: InputChannel, buffers: list[Buffer]) -> None:
        self.channel, self.buffers, self.sequence = channel, list(buffers), 0

    def add_credit(self, credit: int) -> None:
        for _ in range(min(credit, len(self.buffers))):
            send = Send(self.buffers.pop(0), False, self.sequence, backlog=len(self.buffers))
            self.sequence += 1
            asyncio.get_running_loop().call_soon(self.channel.on_send, send)

    def resume(self) -> None: ...

    def new_buffer_size(self, size: int, max_records: int) -> None:
        """Buffer debloating's announcement (on by default): these buffers are fixed."""


def plus_one() -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    [vertex] = [v for v in env._job_graph("restore").vertices if v.name == "plus"]
    return vertex


def build(
    state: ChannelState | None,
    live: list[Buffer],
    *,
    config: Configuration | None = None,
    checkpoint_io: CheckpointIO | None = None,
    reemit: tuple[ReemittedChannel, ...] = (),
    recovery_outputs: frozenset[int] = frozenset(),
    recovering_gates: frozenset[int] = frozenset(),
    on_channel_state_recovered: Callable[[], None] | None = None,
    reports_restored_input: bool = False,
) -> tuple[StreamTask, ResultPartition]:
    """The ``plus`` subtask restoring ``state`` (None: nothing restored), fed ``live``."""
    vertex = plus_one()
    gate = InputGate("plus input", vertex.inputs[0].target_input, floating_buffers=8)
    channel = gate.add_channel(0, "plus input 0", initial_credit=2)
    channel.connect(LiveProducer(channel, live))
    partition = ResultPartition("plus out", [1], buffers_per_channel=2, floating_buffers=2,
                                max_buffers_per_channel=100)  # fmt: skip
    writer = RecordWriter(partition, vertex.outputs[0].new_partitioner(), 1 << 16)
    deployment = TaskDeployment(
        vertex=vertex, subtask_index=0, attempt=1, config=config or Configuration(),
        gates=(gate,), writers={vertex.outputs[0].id: writer},
        restored=() if state is None else (SubtaskSnapshot(channel_state=state),),
        channel_recovery=SubtaskChannelRecovery(
            reemit, recovery_outputs, recovering_gates, reports_restored_input
        ),
    )  # fmt: skip
    if checkpoint_io is not None and checkpoint_io.channel_state_writer is None:
        channel_state = InMemoryChannelStateWriter.of([gate], [writer])
        checkpoint_io = dataclasses.replace(checkpoint_io, channel_state_writer=channel_state)
    task = StreamTask(deployment=deployment, services=NullServices(),
                      loop=asyncio.get_running_loop(), checkpoint_io=checkpoint_io,
                      on_channel_state_recovered=on_channel_state_recovered)  # fmt: skip
    return task, partition


async def run_briefly(task: StreamTask) -> None:
    """Run ``task`` until it sits idle with nothing left to read (the loop's other callbacks,
    its producer's sends, run meanwhile), cancel it, and flush its writers: what it emitted
    is then queued at its partition."""
    running = asyncio.ensure_future(task.run())
    link = task.gates[0].channels[0].link
    while True:
        await settled(task, backpressured=False)
        if not isinstance(link, LiveProducer) or not link.buffers:
            break
    task.cancel()
    await asyncio.gather(running, return_exceptions=True)
    for writer in task.writers:
        writer.flush_all()


def queued_values(partition: ResultPartition) -> list[Any]:
    values: list[Any] = []
    for entry in partition.subpartitions[0].sender._queue:
        if not entry.is_event:
            values += pickle.loads(entry.payload.data)[0]
    return values


def test_restored_output_then_restored_input_then_live_input() -> None:
    spanning = serialize_batch([10, 11], None)
    head, tail = spanning[:7], spanning[7:]
    state = ChannelState(
        3, 0, 1, (1,), (1,),
        inputs={(0, 0): (encode_chunk(Buffer(serialize_batch([1, 2, 3], None))),
                         encode_chunk(Buffer(head, partial=True)))},
        outputs={(0, 0): (encode_chunk(Buffer(serialize_batch([100], None))),)},
    )  # fmt: skip

    async def scenario() -> list[Any]:
        task, partition = build(state, [Buffer(tail), Buffer(serialize_batch([20], None))])
        await run_briefly(task)
        return queued_values(partition)

    assert asyncio.run(scenario()) == [100, 2, 3, 4, 11, 12, 21]


@pytest.mark.parametrize("shape", [(0, 2, (1,), (1,)), (0, 1, (2,), (1,)), (1, 1, (1,), (1,))])
def test_channel_state_of_another_shape_fails_naming_checkpoint_and_operator(
    shape: tuple[int, int, tuple[int, ...], tuple[int, ...]],
) -> None:
    state = ChannelState(42, *shape, inputs={(0, 0): (encode_chunk(Buffer(b"x")),)})

    async def scenario() -> None:
        task, _ = build(state, [])
        await task.run()

    with pytest.raises(StateError, match=r"checkpoint 42 holds in-flight data .*'plus'"):
        asyncio.run(scenario())


class Inline(Executor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


class Responder:
    def __init__(self) -> None:
        self.acks: dict[int, dict[str, Any]] = {}

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None:
        self.acks[checkpoint_id] = metrics

    def decline(self, checkpoint_id: int, reason: Any, detail: str) -> None:
        raise AssertionError(f"declined {checkpoint_id}: {detail}")


def test_a_backpressured_task_still_takes_an_unaligned_barrier_at_once() -> None:
    """The output never drains (no consumer), so the task stops taking input; a priority
    barrier must still be taken, the checkpoint taken with the queued data as channel state."""
    unaligned = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, True, 0)
    batch = serialize_batch(list(range(200)), None)

    async def scenario() -> tuple[Responder, dict[int, bytes], bool]:
        live = [Buffer(batch) for _ in range(50)]
        responder, files = Responder(), {}

        def write(cid: int, name: str, data: bytes) -> str:
            files[cid] = data
            return name

        io = CheckpointIO(responder=responder, state_writer=write, executor=Inline())
        config = Configuration({"execution.checkpointing.unaligned.enabled": "true"})
        task, partition = build(None, live, config=config, checkpoint_io=io)
        partition.max_buffers_per_channel = 2
        running = asyncio.ensure_future(task.run())
        await settled(task, backpressured=True)
        backpressured = not partition.is_available()
        channel = task.gates[0].channels[0]
        producer = channel.link
        assert isinstance(producer, LiveProducer)
        barrier = CheckpointBarrier(5, 0, unaligned)
        channel.on_send(Send(barrier, True, producer.sequence, 0, priority=True))
        deadline = asyncio.get_running_loop().time() + 10  # taken at once: far less
        while 5 not in responder.acks and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return responder, files, backpressured

    responder, files, backpressured = asyncio.run(scenario())
    assert backpressured
    assert 5 in responder.acks, "the barrier waited behind backpressure"
    state = pickle.loads(files[5]).channel_state
    assert state is not None and state.input_bytes > 0 and state.output_bytes > 0


def test_rescaled_restore_re_emits_old_channels_before_anything_else_then_blocks() -> None:
    """The old channels a new producer took over are re-emitted through its record writer
    (a batch spanning the old consumer's input chunks and the old producer's output chunks
    comes back whole), before the operators run, and end with a blocking
    EndOfChannelStateEvent; live input is processed after it."""
    spanning = serialize_batch([7, 8], None)
    old_input = (encode_chunk(Buffer(serialize_batch([5], None))),
                 encode_chunk(Buffer(spanning[:5], partial=True)))  # fmt: skip
    old_output = (encode_chunk(Buffer(spanning[5:])),)
    other = (encode_chunk(Buffer(serialize_batch([9], None))),)

    async def scenario() -> list[Any]:
        reemit = (ReemittedChannel(0, (RestoredInputStream(old_input),
                                       RestoredInputStream(old_output)), "old 0 -> 0"),
                  ReemittedChannel(0, (RestoredInputStream(other),), "old 1"))  # fmt: skip
        task, partition = build(None, [Buffer(serialize_batch([20], None))], reemit=reemit,
                                recovery_outputs=frozenset({0}))  # fmt: skip
        await run_briefly(task)
        entries: list[Any] = []
        for entry in partition.subpartitions[0].sender._queue:
            if entry.is_event:
                entries.append((type(entry.payload).__name__, entry.blocks_upstream))
            else:
                entries += pickle.loads(entry.payload.data)[0]
        return entries

    assert asyncio.run(scenario()) == [5, 7, 8, 9, ("EndOfChannelStateEvent", True), 21]


def test_a_gate_resumes_its_channels_once_every_one_ended_its_channel_state() -> None:

    class Link:
        def __init__(self) -> None:
            self.resumed = 0

        def add_credit(self, credit: int) -> None: ...

        def resume(self) -> None:
            self.resumed += 1

    async def scenario() -> list[int]:
        reports: list[str] = []
        task, _ = build(
            None,
            [],
            recovering_gates=frozenset({0}),
            on_channel_state_recovered=lambda: reports.append("recovered"),
        )
        gate = task.gates[0]
        second = gate.add_channel(5, "plus input 1", initial_credit=2)
        links = [Link(), Link()]
        for ch, link in zip(gate.channels, links):
            ch.link = link  # type: ignore[assignment]
            ch.receiver._blocked = True  # as after a blocking event
        task.events.on_end_of_channel_state(gate, gate.channels[0])
        after_first = [link.resumed for link in links] + [len(reports)]
        task.events.on_end_of_channel_state(gate, second)
        return after_first + [link.resumed for link in links] + [len(reports)]

    # the JobMaster hears of it (and may start checkpointing) only once the gate resumed
    assert asyncio.run(scenario()) == [0, 0, 0, 1, 1, 1]


def test_with_during_recovery_off_the_subtask_reports_once_its_restored_input_was_consumed() -> (
    None
):
    """``execution.checkpointing.unaligned.during-recovery.enabled`` false: the subtask tells
    the JobMaster (which triggers no checkpoint before) only after it processed the restored
    input, and exactly once."""
    state = ChannelState(
        3, 0, 1, (1,), (1,),
        inputs={(0, 0): (encode_chunk(Buffer(serialize_batch([1, 2], None))),
                         encode_chunk(Buffer(serialize_batch([3], None))))},
        outputs={},
    )  # fmt: skip

    async def scenario() -> list[int]:
        processed_when_reported: list[int] = []
        tasks: list[StreamTask] = []
        task, _ = build(
            state, [Buffer(serialize_batch([20, 21], None))],
            on_channel_state_recovered=lambda: processed_when_reported.append(
                tasks[0].input.records_in
            ),
            reports_restored_input=True,
        )  # fmt: skip
        tasks.append(task)
        await run_briefly(task)
        return [*processed_when_reported, task.input.records_in]

    # reported once, after the 3 restored records and before the 2 live ones
    assert asyncio.run(scenario()) == [3, 5]


def test_an_aligned_barrier_during_recovery_waits_behind_the_restored_input_and_completes() -> None:
    """FLINK-40518 (a checkpoint triggered mid-recovery on the aligned path hangs until it
    expires) cannot happen here: an aligned barrier arrives on a live channel, queued behind
    the live data, and the task takes it once the restored input before it was processed:
    the checkpoint is acknowledged, after all of it."""
    restored = [encode_chunk(Buffer(serialize_batch([i, i + 1, i + 2], None)))
                for i in range(0, 30, 3)]  # fmt: skip
    state = ChannelState(3, 0, 1, (1,), (1,), inputs={(0, 0): tuple(restored)}, outputs={})
    aligned = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0)

    async def scenario() -> dict[int, int]:
        processed_at_ack: dict[int, int] = {}
        tasks: list[StreamTask] = []

        class Recording(Responder):
            def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None:
                processed_at_ack[checkpoint_id] = tasks[0].input.records_in

        io = CheckpointIO(responder=Recording(), state_writer=lambda c, n, d: n, executor=Inline())
        task, _ = build(state, [], checkpoint_io=io)
        tasks.append(task)
        channel = task.gates[0].channels[0]
        # queued before the task runs: a live batch, then the barrier (in the initial credit)
        channel.on_send(Send(Buffer(serialize_batch([5000, 5001], None)), False, 0, 1))
        channel.on_send(Send(CheckpointBarrier(5, 0, aligned), True, 1, 0))
        await run_briefly(task)
        return processed_at_ack

    processed_at_ack = asyncio.run(scenario())
    assert processed_at_ack == {5: 32}, "not acknowledged, or before the restored input"


@pytest.mark.parametrize("during_recovery", [True, False])
def test_re_emitted_input_is_drained_unprocessed_and_checkpointed_as_recovered_input(
    during_recovery: bool,
) -> None:
    """A gate receiving re-emitted data after a rescale drains it into the restored input up to
    its EndOfChannelStateEvent, without processing it: the subtask reports the gate recovered
    (the JobMaster may trigger checkpoints) before one record was processed, and a checkpoint
    then would persist the drained records as recovered chunks. With
    ``during-recovery.enabled`` false the report waits until they were processed. Either
    way they are processed (the live data behind the end event waits for the gate to
    resume)."""
    re_emitted = [Buffer(serialize_batch([1, 2], None)), Buffer(serialize_batch([3], None))]

    async def scenario() -> tuple[list[Any], list[Any]]:
        at_report: list[Any] = []
        tasks: list[StreamTask] = []

        def recovered() -> None:
            channel = tasks[0].gates[0].channels[0]
            chunks = tasks[0].unprocessed_chunks(channel)
            at_report.extend([tasks[0].input.records_in, len(chunks)])
            at_report.append(all(is_recovered_chunk(c) for c in chunks))

        task, partition = build(
            None, [], recovering_gates=frozenset({0}),
            on_channel_state_recovered=recovered, reports_restored_input=not during_recovery,
        )  # fmt: skip
        tasks.append(task)
        channel = task.gates[0].channels[0]
        for seq, buffer in enumerate(re_emitted):
            channel.on_send(Send(buffer, False, seq, 1 - seq))
        channel.on_send(Send(EndOfChannelStateEvent(), True, 2, 0, blocks_upstream=True))
        await run_briefly(task)
        return at_report, queued_values(partition)

    at_report, out = asyncio.run(scenario())
    assert at_report == ([0, 2, True] if during_recovery else [3, 0, True])
    assert out == [2, 3, 4]
