"""A source reader's output goes into the chain in slices, and what is pending is checkpointed.

A reader call of ``NumberSequenceSource`` yields 4,096 records; chained to a map that spins
0.2 ms per record, emitting a call at once would keep the task from its mailbox for 0.8 s.
Bounds are counted in records: a mail posted while the task runs waits for at most a few
records of the chained map, never for the rest of a reader call. A record batch (one record,
as a Kafka fetch of a batch deserializer) is handed over in row ranges the same way.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from tests.runtime.task.mail_probe import post_mails_from_another_thread
from tests.runtime.task.task_fakes import NullServices

from undertow.common import Configuration, WatermarkStrategy
from undertow.connectors.source import SourceSplit
from undertow.datastream import MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors.number_seq import NumberSequenceSource, NumberSequenceSplit
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
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


class SpinRows:
    """``map_batches``: spins ``SPIN_ROW_S`` per row and counts the rows it processed."""

    def __init__(self) -> None:
        self.count = 0

    def map_batches(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self.count += batch.num_rows
        until = time.perf_counter() + SPIN_ROW_S * batch.num_rows
        while time.perf_counter() < until:
            pass
        return batch


SPIN_ROW_S = 0.000002
BATCH_ROWS = 200_000


def source_vertex() -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_source(NumberSequenceSource(0, 10**9),
                              WatermarkStrategy.no_watermarks(), "numbers")  # fmt: skip
    numbers.map(Spin()).name("spin").rebalance().print()
    [vertex] = [v for v in env._job_graph("slicing").vertices if not v.inputs]
    return vertex


def batch_source_vertex() -> JobVertex:
    """Record batches of 200,000 rows (0.4 s of the chained map's spinning each)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    source = NumberSequenceBatchSource(0, 10**9, batch_rows=BATCH_ROWS)
    batches = env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers").as_batches()
    batches.map_batches(SpinRows()).name("spin").rebalance().print()
    [vertex] = [v for v in env._job_graph("slicing").vertices if not v.inputs]
    return vertex


def units_between_post_and_run(
    vertex: JobVertex, split: Any, mails: int, counter: Callable[[Any], int]
) -> tuple[list[int], int]:
    """Post ``mails`` mails from another thread, one every 5 ms, to a running source task
    reading ``split`` (:func:`post_mails_from_another_thread`); for each, how many records (or
    rows: ``counter`` of the chained function) the chain processed between posting it and its
    running; and how many it processed from the first posting to the last mail's running."""
    partition = ResultPartition("out", [1], buffers_per_channel=1000, floating_buffers=0,
                                max_buffers_per_channel=1000)  # fmt: skip
    writer = RecordWriter(partition, vertex.outputs[0].new_partitioner(), 1 << 16)

    async def scenario() -> tuple[list[int], int]:
        deployment = TaskDeployment(vertex=vertex, subtask_index=0, attempt=1,
                                    config=Configuration(),
                                    writers={vertex.outputs[0].id: writer})  # fmt: skip
        task = StreamTask(deployment=deployment, services=NullServices(),
                          loop=asyncio.get_running_loop())  # fmt: skip
        [spin] = [op.function for op in task.chain.operators if hasattr(op, "function")]
        running = asyncio.ensure_future(task.run())
        await asyncio.sleep(0.05)
        task.head.add_splits([split])
        task.source_available()
        probe = await asyncio.to_thread(
            post_mails_from_another_thread, task, mails, lambda: counter(spin)
        )
        task.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return probe

    return asyncio.run(scenario())


def records_between_post_and_run(mails: int) -> tuple[list[int], int]:
    split = NumberSequenceSplit("0", 0, 10**9)
    return units_between_post_and_run(source_vertex(), split, mails, lambda spin: spin.count)


def test_a_mail_waits_for_a_few_records_not_for_a_whole_reader_call() -> None:
    waits, processed = records_between_post_and_run(40)
    assert len(waits) == 40 and processed > 0, (waits, processed)  # the map ran meanwhile
    # a 2 ms slice holds ~10 records of 0.2 ms; the first chunk (64) before adapting
    assert max(waits[5:]) <= 64, waits
    assert max(waits[5:]) < 4096 // 10


def test_a_mail_waits_for_a_row_range_not_for_a_whole_record_batch() -> None:
    """One reader call hands out a record batch of 200,000 rows (0.4 s of the chained map): a
    mail waits for a row range of it (at least 64 rows and a 32nd of the batch, 6,250), not
    for the rest of the batch."""
    vertex = batch_source_vertex()
    split = NumberSequenceBatchSource(0, 10**9, batch_rows=BATCH_ROWS).make_split("0", 0, 10**9)
    waits, processed = units_between_post_and_run(vertex, split, 40, lambda spin: spin.count)
    assert len(waits) == 40 and processed > 0, (waits, processed)  # the map ran meanwhile
    # the first cut is 6,250 rows (a 32nd of the batch); then about a slice's worth
    assert max(waits[5:]) <= 2 * (BATCH_ROWS // 32), waits


def test_a_pending_record_batch_cut_by_rows_is_snapshotted_as_its_rest() -> None:
    op, out = operator()
    op.reader = Reader(["split-a"])  # type: ignore[assignment]
    batch = pa.RecordBatch.from_pydict({"v": list(range(10))})
    op.collect_batch([batch, "after"])
    assert op.pending_batch() == (0, 10)
    op.emit_pending_rows(3)
    op.emit_pending_rows(4)
    assert op.pending_batch() == (7, 10)
    blob = op.snapshot_custom_state(1)
    op.emit_pending_rows(5)  # at most the batch's rest
    assert op.pending_batch() is None and op.emit_pending(10) == 1
    assert [v if isinstance(v, str) else v.column(0).to_pylist() for v in out.values] == [
        [0, 1, 2], [3, 4, 5, 6], [7, 8, 9], "after"]  # fmt: skip

    restored, restored_out = operator()
    restored.restore_custom_state([blob], rescaled=False)
    while restored.has_pending():
        restored.emit_pending(10)
    first, after = restored_out.values
    assert first.column(0).to_pylist() == [7, 8, 9] and after == "after"


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
