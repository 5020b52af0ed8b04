"""A source reader's output goes into the chain in slices, and what is pending is checkpointed.

A reader call of ``NumberSequenceSource`` yields 4,096 records; chained to a map that spins
0.2 ms per record, emitting a call at once would keep the task from its mailbox for 0.8 s.
Bounds are counted in records: a mail posted while the task runs waits for at most a few
records of the chained map, never for the rest of a reader call.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from dataclasses import dataclass
from typing import Any

from undertow.common import Configuration, WatermarkStrategy
from undertow.connectors.source import SourceSplit
from undertow.datastream import MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors.number_seq import NumberSequenceSource, NumberSequenceSplit
from undertow.graph.job_graph import JobVertex
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.source_operator import SourceOperator
from undertow.runtime.task.stream_task import StreamTask

SPIN_S = 0.0002


class Spin(MapFunction):
    """Spins ``SPIN_S`` per record and counts the records it processed."""

    def __init__(self) -> None:
        self.count = 0

    def map(self, value: int) -> int:
        self.count += 1
        until = time.perf_counter() + SPIN_S
        while time.perf_counter() < until:
            pass
        return value


class Services:
    def print_lines(self, lines: list[str]) -> None: ...

    def collect(self, sink_id: str, values: list[Any]) -> None: ...

    def send_split_request(self) -> None: ...

    def wake(self) -> None: ...


def source_vertex() -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_source(NumberSequenceSource(0, 10**9),
                              WatermarkStrategy.no_watermarks(), "numbers")  # fmt: skip
    numbers.map(Spin()).name("spin").rebalance().print()
    [vertex] = [v for v in env._job_graph("slicing").vertices if not v.inputs]
    return vertex


def records_between_post_and_run(mails: int) -> list[int]:
    """Post ``mails`` mails from another thread, one every 5 ms, to a running source task; for
    each, how many records the chained map processed between posting it and its running."""
    vertex = source_vertex()
    partition = ResultPartition("out", [1], buffers_per_channel=1000, floating_buffers=0,
                                max_buffers_per_channel=1000)  # fmt: skip
    writer = RecordWriter(partition, vertex.outputs[0].new_partitioner(), 1 << 16)

    async def scenario() -> list[int]:
        deployment = TaskDeployment(vertex=vertex, subtask_index=0, attempt=1,
                                    config=Configuration(),
                                    writers={vertex.outputs[0].id: writer})  # fmt: skip
        task = StreamTask(deployment=deployment, services=Services(),
                          loop=asyncio.get_running_loop())  # fmt: skip
        [spin] = [op.function for op in task.chain.operators if hasattr(op, "function")]
        running = asyncio.ensure_future(task.run())
        await asyncio.sleep(0.05)
        task.head.add_splits([NumberSequenceSplit("0", 0, 10**9)])
        task.source_available()
        waits: list[int] = []

        def post_from_another_thread() -> None:  # as a trigger arriving on a socket
            for _ in range(mails):
                time.sleep(0.005)
                posted = spin.count

                def mail(posted: int = posted) -> None:
                    waits.append(spin.count - posted)

                task.post_threadsafe(mail)

        await asyncio.to_thread(post_from_another_thread)
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return waits

    return asyncio.run(scenario())


def test_a_mail_waits_for_a_few_records_not_for_a_whole_reader_call() -> None:
    waits = records_between_post_and_run(40)
    assert len(waits) == 40 and sum(waits) > 0, waits  # the map did run meanwhile
    # a 2 ms slice holds ~10 records of 0.2 ms; the first chunk (64) before adapting
    assert max(waits[5:]) <= 64, waits
    assert max(waits[5:]) < 4096 // 10


class Output:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        self.values += values


def operator(subtask: int = 0, parallelism: int = 1) -> tuple[SourceOperator, Output]:
    op = SourceOperator(NumberSequenceSource(0, 99), None)

    class Setup:
        subtask_index, output = subtask, Output()

    setup: Any = Setup()
    setup.parallelism = parallelism
    setup.processing_time_service = None
    op.ctx, op.output = setup, setup.output

    class Emitter:
        def on_batch(self, values: list[Any], timestamps: Any, split_id: Any = None) -> Any:
            return timestamps

    op.emitter = Emitter()  # type: ignore[assignment]
    return op, setup.output


class Reader:
    def __init__(self, splits: list[Any]) -> None:
        self.splits = splits

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        return list(self.splits)


def test_pending_records_are_snapshotted_and_emitted_first_after_restore() -> None:
    op, out = operator()
    op.reader = Reader(["split-a"])  # type: ignore[assignment]
    op.collect_batch([1, 2, 3, 4, 5])
    op.collect_batch([6, 7])
    assert op.emit_pending(2) == 2 and out.values == [1, 2]
    blob = op.snapshot_custom_state(1)

    restored, restored_out = operator()
    restored.restore_custom_state([blob], rescaled=False)
    assert restored._restored_splits == ["split-a"]
    while restored.has_pending():
        restored.emit_pending(10)
    assert restored_out.values == [3, 4, 5, 6, 7]


def test_on_rescale_pending_records_follow_their_subtasks_first_split() -> None:
    blobs = []
    for splits, pending in ((["a0", "a1"], [1, 2]), (["b0"], [3]), ([], [4])):
        op, _ = operator()
        op.reader = Reader(splits)  # type: ignore[assignment]
        op.collect_batch(pending)
        blobs.append(op.snapshot_custom_state(1))
    got = {}
    for index in range(2):
        op, out = operator(index, 2)
        op.restore_custom_state(blobs, rescaled=True)
        while op.has_pending():
            op.emit_pending(10)
        got[index] = (op._restored_splits, out.values)
    # splits a0, a1, b0 are numbered 0, 1, 2; pending goes with a0 (0 -> 0) and b0 (2 -> 0);
    # the third old subtask had no split: its pending goes to 2 mod 2 = 0
    assert got == {0: (["a0", "b0"], [1, 2, 3, 4]), 1: (["a1"], [])}


def test_snapshots_written_before_pending_records_still_restore() -> None:
    op, _ = operator()
    op.restore_custom_state([pickle.dumps(["old-split"])], rescaled=False)
    assert op._restored_splits == ["old-split"] and not op.has_pending()


@dataclass(frozen=True)
class NamedSplit(SourceSplit):
    name: str

    def split_id(self) -> str:
        return self.name


def test_on_rescale_a_pending_batch_follows_the_split_it_was_read_from() -> None:
    """An old reader of two partitions had batches of both pending: each batch goes to the
    new subtask that reads its partition on, so that subtask emits it before reading further
    (given to the subtask of the first split, the second partition's pending records raced
    with its later records read by another subtask: out of order per key)."""
    op, _ = operator()
    op.reader = Reader([NamedSplit("p0"), NamedSplit("p1")])  # type: ignore[assignment]
    op.collect_split_batch("p1", [10, 11])
    op.collect_split_batch("p0", [20])
    op.collect_batch([30])  # no split id: with the first split
    blob = op.snapshot_custom_state(1)
    got = {}
    for index in range(2):
        new, out = operator(index, 2)
        new.restore_custom_state([blob], rescaled=True)
        while new.has_pending():
            new.emit_pending(10)
        got[index] = ([s.name for s in new._restored_splits], out.values)
    assert got == {0: (["p0"], [20, 30]), 1: (["p1"], [10, 11])}
