"""KafkaSourceReader under the task's SourceOperator, with a scripted fetcher (no broker).

A checkpoint may fall anywhere: between a fetch and its emission (records fetched but not
polled), between the reader's call and the task emitting the records it produced (pending in
the source operator, partly emitted), and after a partition's end was seen while its last
records are still pending. At every such point a snapshot is taken, the run goes on to the
end, and a new operator and reader restored from the snapshot run to the end too: what the
first emitted before the snapshot plus what the restored one emits must be every offset
exactly once, in order per partition.
"""

from __future__ import annotations

import itertools
import pickle
import random
from collections import deque
from typing import Any

import pyarrow as pa
import pytest

from undertow.common.serialization import DeserializationSchema
from undertow.connectors.kafka import reader as reader_module
from undertow.connectors.kafka.batch_deserializer import RowBatchDeserializationSchema
from undertow.connectors.kafka.fetcher import FetchedRecords, PartitionEnd
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.kafka.reader import KafkaSourceReader, ReaderSettings
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.connectors.source import POLL_AGAIN_AFTER_S, InputStatus
from undertow.runtime.task.source_operator import SourceOperator
from undertow.testing.source_reader import StandaloneReaderContext

P0, P1 = KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)
STOP = 23  # offsets 0..22 in each partition


class ScriptedFetcher:
    """Hands out each added split's records from its offset in batches of ``batch``, then its
    end; :meth:`deliver` moves one fetched item into the queue the reader polls (what the
    fetcher thread does), so a test decides what is fetched and not yet polled."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.to_fetch: deque[Any] = deque()
        self.fetched: deque[Any] = deque()
        self.commits: list[dict[KafkaTopicPartition, int]] = []

    def add_splits(self, splits: list[KafkaPartitionSplit]) -> None:
        for split in splits:
            assert split.stopping_offset is not None
            offsets = range(split.starting_offset, split.stopping_offset)
            for start in range(0, len(offsets), self.batch):
                chunk = list(offsets[start : start + self.batch])
                values = [f"{split.topic_partition.partition}:{o}".encode() for o in chunk]
                self.to_fetch.append(
                    FetchedRecords(split.topic_partition, chunk, values, [None] * len(chunk))
                )
            self.to_fetch.append(PartitionEnd(split.topic_partition))

    def deliver(self) -> bool:
        if not self.to_fetch:
            return False
        self.fetched.append(self.to_fetch.popleft())
        return True

    def poll(self) -> Any:
        return self.fetched.popleft() if self.fetched else None

    def commit(self, offsets: dict[KafkaTopicPartition, int]) -> None:
        self.commits.append(dict(offsets))

    def close(self) -> None:
        pass


class Deserializer:
    def deserialize(self, raw: bytes) -> str:
        return raw.decode()


class Decoded(DeserializationSchema):
    def deserialize(self, message: bytes) -> tuple[str]:
        return (message.decode(),)


#: A fetch at a time, as one record batch of a column ``v``.
BATCHES = RowBatchDeserializationSchema(Decoded(), pa.schema([("v", pa.string())]))


class Emitter:
    def on_batch(self, values: list[Any], timestamps: Any, split_id: Any = None) -> Any:
        return timestamps

    def register_split(self, split_id: str) -> None:
        pass

    def release_split(self, split_id: str) -> None:
        pass


class Output:
    def __init__(self) -> None:
        self.values: list[str] = []

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        for value in values:  # a record batch's rows are its values, in order
            rows = value.column("v").to_pylist() if isinstance(value, pa.RecordBatch) else [value]
            self.values += rows


def source(
    batch: int, commit_offsets: bool = False, deserializer: Any = None, wanted: int | None = None
) -> tuple[SourceOperator, KafkaSourceReader, ScriptedFetcher, Output]:
    """A source operator whose reader fetches through a :class:`ScriptedFetcher`. Its byte
    bound knows the records are small (a call takes a whole fetch, as after a job's first
    call); ``wanted``: a call takes at most that many records (the output's room)."""
    op = SourceOperator(None, None)
    op.bound.observe(["0:0"])
    op.records_fit = wanted

    class Setup:
        subtask_index, parallelism, output = 0, 1, Output()

    op.ctx, op.output = Setup(), Setup.output  # type: ignore[assignment]
    op.emitter = Emitter()  # type: ignore[assignment]
    settings = ReaderSettings({}, deserializer or Deserializer(), -1, commit_offsets, None,
                              "t at test")  # fmt: skip
    reader = KafkaSourceReader(StandaloneReaderContext(), settings)
    fetcher = ScriptedFetcher(batch)
    reader._fetcher = fetcher  # type: ignore[assignment]
    op.reader = reader
    return op, reader, fetcher, Setup.output


def step(op: SourceOperator, fetcher: ScriptedFetcher, kind: str, chunk: int) -> bool:
    """One action of the task or the fetcher thread; False when there is nothing to do."""
    if kind == "fetch":
        return fetcher.deliver()
    if op.has_pending():
        op.emit_pending(chunk)
        return True
    assert op.reader is not None
    return op.emit_next() is not InputStatus.NOTHING_AVAILABLE or bool(fetcher.fetched)


def run_to_end(op: SourceOperator, fetcher: ScriptedFetcher, chunk: int) -> None:
    assert op.reader is not None
    for _ in range(10_000):
        if op.has_pending():
            op.emit_pending(chunk)
        elif not fetcher.deliver() and not fetcher.fetched:
            if op.emit_next() is InputStatus.END_OF_INPUT:
                return
        else:
            op.emit_next()
    raise AssertionError("the source did not end")


def expected() -> list[str]:
    return [f"{p}:{o}" for p in (0, 1) for o in range(STOP)]


def per_partition(values: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for value in values:
        partition, offset = value.split(":")
        out.setdefault(partition, []).append(int(offset))
    return out


@pytest.mark.parametrize(("batch", "chunk"), [(5, 2), (23, 4), (2, 3)])
@pytest.mark.parametrize(
    ("seed", "batches", "wanted"),
    [(0, False, None), (1, False, None), (2, False, None), (0, True, None), (3, False, 3),
     (4, True, 3)],
    ids=["records-0", "records-1", "records-2", "record-batches-0", "records-wanted-3",
         "record-batches-wanted-3"],
)  # fmt: skip
def test_a_snapshot_anywhere_loses_and_repeats_nothing(
    batch: int, chunk: int, seed: int, batches: bool, wanted: int | None
) -> None:
    """Interleavings of fetching and emitting (seeded), a snapshot after each action; with a
    batch deserializer each fetch is one record batch, and its rows count as emitted
    records; with ``wanted`` a call emits at most that many records of a fetch and holds
    the rest for the next call (a record batch is one record: not cut)."""
    deserializer = BATCHES if batches else None
    schedule = random.Random(seed).choices(["fetch", "task"], k=400)
    splits = [KafkaPartitionSplit(P0, 0, STOP), KafkaPartitionSplit(P1, 0, STOP)]
    cut = 0
    while True:
        op, reader, fetcher, out = source(batch, deserializer=deserializer, wanted=wanted)
        reader.add_splits(list(splits))
        reader.notify_no_more_splits()
        actions = itertools.islice(schedule, cut)
        for kind in actions:
            step(op, fetcher, kind, chunk)
        before = list(out.values)
        blob = op.snapshot_custom_state(1)
        run_to_end(op, fetcher, chunk)
        assert out.values[: len(before)] == before
        if len(before) == len(expected()):
            break

        restored, restored_reader, restored_fetcher, restored_out = source(
            batch, deserializer=deserializer, wanted=wanted
        )
        restored.reader = None
        restored.restore_custom_state([blob], rescaled=False)
        restored.reader = restored_reader
        restored_reader.add_splits(restored._restored_splits)
        restored_reader.notify_no_more_splits()
        run_to_end(restored, restored_fetcher, chunk)

        got = per_partition(before + restored_out.values)
        assert got == per_partition(expected()), (batch, chunk, seed, cut, got)
        cut += 1


def test_a_finished_partition_is_committed_at_its_end_once() -> None:
    """A partition read to its end leaves the reader's splits, but the next completed
    checkpoint still commits its final offset (as Flink's reader does), and only until one
    did: the consumer group shows it read through (a partition finished after a snapshot
    is committed by the next one)."""
    op, reader, fetcher, _ = source(batch=10, commit_offsets=True)
    reader.add_splits([KafkaPartitionSplit(P0, 0, STOP), KafkaPartitionSplit(P1, 0, STOP)])
    fetcher.deliver()  # P0's offsets 0..9
    op.emit_next()
    op.snapshot_custom_state(1)  # P0 at 10
    while fetcher.deliver():  # P0's offsets 10..22 and its end; P1 is fetched next
        if isinstance(fetcher.fetched[-1], PartitionEnd):
            break
    while fetcher.fetched:
        op.emit_next()  # P0 leaves the reader's splits
    reader.notify_checkpoint_complete(1)
    for checkpoint in (2, 3):
        op.snapshot_custom_state(checkpoint)
        reader.notify_checkpoint_complete(checkpoint)
    assert fetcher.commits == [{P0: 10, P1: 0}, {P0: STOP, P1: 0}, {P1: 0}]


def test_a_snapshot_inside_a_fetched_batch_resumes_at_the_next_record_not_emitted() -> None:
    """The reader hands a whole fetched batch over at once and moves its position past it;
    the records the task has not emitted yet stay pending in the source operator, so a
    snapshot taken between two records of that batch resumes exactly at the first record
    not emitted: no gap (a position per batch without its pending records would skip
    offsets 4..9) and no repeat (nothing before offset 4 comes again)."""
    op, reader, fetcher, out = source(batch=10)
    reader.add_splits([KafkaPartitionSplit(P0, 0, STOP)])
    reader.notify_no_more_splits()
    fetcher.deliver()  # offsets 0..9, one consumer fetch
    op.emit_next()
    op.emit_pending(4)
    assert out.values == ["0:0", "0:1", "0:2", "0:3"]
    blob = op.snapshot_custom_state(1)

    restored, restored_reader, restored_fetcher, restored_out = source(batch=10)
    restored.reader = None
    restored.restore_custom_state([blob], rescaled=False)
    restored.reader = restored_reader
    restored_reader.add_splits(restored._restored_splits)
    restored_reader.notify_no_more_splits()
    run_to_end(restored, restored_fetcher, chunk=3)
    assert restored_out.values == [f"0:{o}" for o in range(4, STOP)]


def test_large_records_are_handed_over_one_a_call_and_only_they_are_checkpointed() -> None:
    """Records over the source's byte bound (``pending_bytes``): a call emits one record of a
    fetch and holds the rest, which no snapshot contains (the position is before it); a
    restore from a snapshot between two calls fetches the rest again, nothing lost or twice.
    (A call used to emit the whole fetch: up to 500 records pending, all in the snapshot.)"""
    op, reader, fetcher, out = source(batch=5)
    op.bound.observe([b"x" * (2 << 20)])  # 2 MiB records: over the 1 MiB bound
    reader.add_splits([KafkaPartitionSplit(P0, 0, STOP)])
    reader.notify_no_more_splits()
    fetcher.deliver()  # offsets 0..4, one fetch
    for _ in range(2):
        assert op.emit_next() is InputStatus.MORE_AVAILABLE
        assert len(op._pending) == 1 and len(op._pending[0].values) == 1
        op.emit_pending(1)
    assert out.values == ["0:0", "0:1"]
    assert op.emit_next() is InputStatus.MORE_AVAILABLE  # offset 2: pending at the snapshot
    blob = op.snapshot_custom_state(1)
    state = pickle.loads(blob)
    assert state["splits"] == [KafkaPartitionSplit(P0, 3, STOP)]
    assert [values for values, _, _ in state["pending"]] == [["0:2"]]

    restored, restored_reader, restored_fetcher, restored_out = source(batch=5)
    restored.reader = None
    restored.restore_custom_state([blob], rescaled=False)
    restored.reader = restored_reader
    restored_reader.add_splits(restored._restored_splits)
    restored_reader.notify_no_more_splits()
    run_to_end(restored, restored_fetcher, chunk=3)
    assert restored_out.values == [f"0:{o}" for o in range(2, STOP)]


def test_the_reader_is_not_polled_for_nothing_but_discovery_is_not_delayed() -> None:
    # the fetcher wakes the task on every fetch: the task's fallback poll can be rare, but no
    # rarer than the partition discovery that poll_next runs on a clock
    op, _, _, _ = source(10)
    assert op.poll_again_after_s() == reader_module.POLL_AGAIN_AFTER_S
    assert reader_module.POLL_AGAIN_AFTER_S > POLL_AGAIN_AFTER_S  # the default for any reader
    settings = ReaderSettings({}, Deserializer(), 30, False, None, "t at test")
    assert KafkaSourceReader(StandaloneReaderContext(), settings).poll_again_after_s() == 0.03


def test_a_reader_call_takes_at_most_the_records_the_output_wants() -> None:
    """The output wants 3 records a call (its ``records_wanted``): a fetch of 10 comes out
    3, 3, 3 and 1 over four reader calls, the rest held by the reader (its position before
    it), not pending in the operator."""
    op, reader, fetcher, out = source(batch=10, wanted=3)
    reader.add_splits([KafkaPartitionSplit(P0, 0, STOP)])
    fetcher.deliver()
    per_call = []
    for _ in range(4):
        op.emit_next()
        taken = 0
        while op.has_pending():
            taken += op.emit_pending(100)
        per_call.append(taken)
    assert per_call == [3, 3, 3, 1]
    assert out.values == [f"0:{o}" for o in range(10)]


class SkipsEveryFifth(DeserializationSchema):
    """``None`` (no record, as a JSON schema with ignore_parse_errors gives for a message it
    cannot parse) for every offset divisible by 5."""

    def deserialize(self, message: bytes) -> str | None:
        text = message.decode()
        return None if int(text.split(":")[1]) % 5 == 0 else text


class SkipsOneByOne(SkipsEveryFifth):
    def deserialize_batch(self, messages: list[bytes]) -> list[Any]:
        raise ValueError("no batch form: the reader goes one message at a time")


@pytest.mark.parametrize("schema", [SkipsEveryFifth(), SkipsOneByOne()],
                         ids=["batch", "one-by-one"])  # fmt: skip
def test_a_message_the_deserializer_makes_none_of_is_no_record(schema: Any) -> None:
    """Flink's DeserializationSchema drops a null result (its collecting form); PyFlink's
    JsonRowDeserializationSchema.ignore_parse_errors() relies on it. A None emitted instead
    failed the next operator (print() of a row type: 'NoneType' object is not iterable)."""
    op, reader, fetcher, output = source(batch=7, deserializer=schema)
    reader.add_splits([KafkaPartitionSplit(P0, 0, STOP), KafkaPartitionSplit(P1, 0, STOP)])
    reader.notify_no_more_splits()
    run_to_end(op, fetcher, chunk=3)
    assert output.values == [v for v in expected() if int(v.split(":")[1]) % 5 != 0]
