"""Buffer debloating against the rest of the output side: the overdraft bound and the
per-channel cap with variable buffer sizes, sources asked for what fits, and producers that
start small until their consumer measured."""

from __future__ import annotations

import random
from typing import Any

import pytest

from undertow.connectors.source import InputStatus, JobBoundReader
from undertow.datastream.connectors.collection import CollectionSplit
from undertow.graph.partitioners import ForwardPartitioner, RebalancePartitioner
from undertow.runtime.network.buffer import BatchDeserializer, Buffer
from undertow.runtime.network.buffer_debloater import INITIAL_MAX_RECORDS
from undertow.runtime.network.credit import SenderChannel
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.output_budget import OutputBudget
from undertow.testing.source_reader import CollectingOutput, StandaloneReaderContext


def partition(channels: int = 1, per_channel_cap: int = 1000) -> ResultPartition:
    """No transport: buffers leave only when the test says the consumer took them."""
    return ResultPartition("out", list(range(channels)), buffers_per_channel=2,
                           floating_buffers=8, max_buffers_per_channel=per_channel_cap)  # fmt: skip


def announce(p: ResultPartition, records: int) -> None:
    for sp in p.subpartitions:
        sp.new_buffer_size(32 * 1024, records)


@pytest.mark.parametrize("rescale", [True, False])
def test_overdraft_bound_holds_when_the_consumer_shrinks_the_buffers(rescale: bool) -> None:
    p = partition()
    writer = RecordWriter(p, ForwardPartitioner(), 32 * 1024)
    budget = OutputBudget([writer], overdraft=5)
    if not rescale:  # the feature switched off: the budget is not told
        writer.on_buffers_shrunk = None
    announce(p, 1000)
    limits = iter([1000] * 20 + [10] * 40 + [300] * 20 + [2] * 40)
    next_value = 0
    for limit in limits:
        if limit != writer._limits[0]:
            announce(p, limit)
        if not p.is_available():
            p.on_data_sent(p.queued)  # the consumer took everything
            continue
        fit = budget.begin()
        k = max(1, min(5000, int(fit)))
        writer.emit(list(range(next_value, next_value + k)), None)  # one chunk's output
        next_value += k
        budget.end(k)
        if rescale:
            assert p.in_use <= p.pool_size + 5, (limit, k, p.in_use)
    if rescale:
        assert budget.exceeded == 0
        assert p.max_overdraft_seen <= 5
    else:
        assert budget.exceeded > 0


@pytest.mark.parametrize("hold", [True, False])
def test_thresholds_hold_within_a_unit_of_work(hold: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records of 16-256 bytes at a 256-byte announcement: one or two records per buffer,
    depending on the size estimate, which moves after every batch. Thresholds that followed
    it within a unit drew buffers the unit was not sized for."""
    if not hold:  # the feature switched off: the writer follows its estimate at once

        def follow_at_once(self: RecordWriter, report: Any) -> None:
            self.on_buffers_shrunk = report

        monkeypatch.setattr(RecordWriter, "follow_units", follow_at_once)
    excesses = []
    for seed in range(5):
        rnd = random.Random(seed)
        p = ResultPartition("out", [0, 1], buffers_per_channel=1, floating_buffers=1,
                            max_buffers_per_channel=1000)  # fmt: skip
        writer = RecordWriter(p, RebalancePartitioner(), 4096)
        budget = OutputBudget([writer], overdraft=5)
        for sp in p.subpartitions:
            sp.new_buffer_size(256, 1000)
        for _ in range(400):
            if p.is_available():
                k = max(1, min(500, int(budget.begin())))
                writer.emit(["x" * rnd.randint(16, 256) for _ in range(k)], None)
                budget.end(k)
                if hold:
                    assert p.in_use <= p.pool_size + 5, (seed, k, p.in_use)
            p.on_data_sent(min(rnd.randint(0, 4), p.queued))
        excesses.append(budget.exceeded)
    if hold:
        assert excesses == [0] * 5
    else:
        assert sum(excesses) > 0, excesses


def test_per_channel_cap_counts_buffers_whatever_their_size() -> None:
    p = partition(channels=2, per_channel_cap=3)
    writer = RecordWriter(p, RebalancePartitioner(), 32 * 1024)
    announce(p, 4)
    writer.emit(list(range(40)), None)  # 20 records per channel: five buffers of four each
    writer.flush_all()
    assert [sp.sender.queued_data_buffers for sp in p.subpartitions] == [5, 5]
    assert not p.is_available()
    assert p.queued == 10


def test_producers_start_small_until_their_consumer_announces() -> None:
    p = partition()
    writer = RecordWriter(p, ForwardPartitioner(), 32 * 1024)
    assert writer.records_that_fit() is None  # not debloated: no limit for sources
    writer.start_debloated(INITIAL_MAX_RECORDS)
    assert writer.records_that_fit() == p.pool_size * INITIAL_MAX_RECORDS
    writer.emit(list(range(100)), None)
    writer.flush_all()
    assert p.subpartitions[0].sender.queued_data_buffers == -(-100 // INITIAL_MAX_RECORDS)
    announce(p, 5000)  # a fast consumer lifts the limit with its first measurement
    assert writer._thresholds[0] > 1000


class Queued:
    """Stands in for a subpartition: keeps the buffers the writer queues."""

    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self.sender = SenderChannel(name="out#0")
        self.in_process = False  # its consumer is elsewhere: batches are serialized

    def add_buffers(self, buffers: list[Buffer]) -> None:
        self.buffers.extend(buffers)

    def records_per_batch(self) -> list[int]:
        reader = BatchDeserializer()
        return [len(batch[0]) for b in self.buffers if (batch := reader.add(b)) is not None]


def queued_writer(limit: int | None) -> tuple[ResultPartition, RecordWriter, Queued]:
    p = partition()
    queued = Queued()
    p.subpartitions[0] = queued  # type: ignore[call-overload]
    writer = RecordWriter(p, ForwardPartitioner(), 32 * 1024)
    if limit is not None:
        writer._limits = [limit]
        writer._update_thresholds()
    return p, writer, queued


def emit_chunks(writer: RecordWriter, chunks: int, size: int) -> None:
    for i in range(chunks):
        writer.emit([(j % 1000, 1) for j in range(i * size, (i + 1) * size)], None)


def test_a_binding_limit_cuts_full_buffers_and_keeps_the_remainder_pending() -> None:
    """Chunks of 512 records at a limit of 1,000: every buffer holds 1,000 records; before,
    each emit also cut its remainder (1,000 + 24, ...), so buffers were half full."""
    p, writer, queued = queued_writer(1000)
    emit_chunks(writer, 100, 512)
    assert set(queued.records_per_batch()) == {1000}
    assert p.in_progress == 1 and len(writer._values[0]) == 51_200 % 1000
    assert writer.buffers_drawn() == pytest.approx(writer.buffers_requested - 1 + 0.2)
    writer.flush_all()  # a forced flush sends the remainder
    assert queued.records_per_batch()[-1] == 200 and p.in_progress == 0
    assert sum(queued.records_per_batch()) == 51_200


def test_a_limit_that_does_not_bind_costs_nothing() -> None:
    """A record limit above what a segment holds: the same buffers as without debloating."""
    _, off, off_queued = queued_writer(None)
    _, on, on_queued = queued_writer(32 * 1024)
    for writer in (off, on):
        emit_chunks(writer, 100, 512)
        writer.flush_all()
    assert [len(b) for b in on_queued.buffers] == [len(b) for b in off_queued.buffers]
    assert len(on_queued.buffers) < 15


def test_a_shrink_sends_the_buffer_in_progress_whole() -> None:
    """900 records pending under a limit of 1,000, then the consumer announces 10: they go
    as the one buffer they were filling, and the next records are cut at 10."""
    p, writer, queued = queued_writer(1000)
    emit_chunks(writer, 1, 900)
    assert not queued.buffers and p.in_progress == 1
    queued.sender.new_buffer_size(32 * 1024, 10)
    writer._on_new_buffer_size(0)
    assert queued.records_per_batch() == [900] and p.in_progress == 0
    emit_chunks(writer, 1, 25)
    assert queued.records_per_batch() == [900, 10, 10]


@pytest.mark.parametrize(("wanted", "expected"), [(None, 4096), (37, 37), (0, 1)])
def test_iterator_reader_honours_records_wanted(wanted: int | None, expected: int) -> None:
    reader = JobBoundReader(StandaloneReaderContext(), list(range(10_000)), batch_size=4096)
    reader.add_splits([CollectionSplit()])
    output = CollectingOutput(wanted)
    assert reader.poll_next(output) is InputStatus.MORE_AVAILABLE
    assert output.batches[0] == expected
