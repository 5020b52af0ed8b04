"""Producer side: result partition, subpartitions and record writer, wired to input gates through
LocalLink by hand (no tasks, no loop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from undertow.graph.partitioners import (
    BroadcastPartitioner,
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
)
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.network.transport import LocalLink
from undertow.state.key_groups import assign_to_key_group, subtask_for_key_group

SEGMENT = 256


@dataclass(frozen=True)
class Marker:
    """A plain event object."""

    name: str


@dataclass
class Wiring:
    partition: ResultPartition
    gates: list[InputGate]
    channels: list[InputChannel]  # channels[i] is fed by subpartition i


def _wire(
    consumers: int = 1,
    *,
    buffers_per_channel: int = 2,
    floating: int = 8,
    max_buffers_per_channel: int = 10,
    receiver_floating: int | None = None,
) -> Wiring:
    """One producer partition with a subpartition per consumer gate (one channel per gate)."""
    partition = ResultPartition(
        "P",
        list(range(consumers)),
        buffers_per_channel=buffers_per_channel,
        floating_buffers=floating,
        max_buffers_per_channel=max_buffers_per_channel,
    )
    gates, channels = [], []
    for i, sp in enumerate(partition.subpartitions):
        gate = InputGate(f"G{i}", 1, floating if receiver_floating is None else receiver_floating)
        channel = gate.add_channel(sp.channel_id, f"G{i}/0", buffers_per_channel)
        link = LocalLink(sp, channel)
        sp.link = link
        channel.connect(link)
        gates.append(gate)
        channels.append(channel)
    return Wiring(partition, gates, channels)


def _drain(gate: InputGate, release: bool = True) -> list[Any]:
    """Everything the gate has now: record values, events as-is."""
    out: list[Any] = []
    while (item := gate.poll()) is not None:
        channel, payload = item
        if isinstance(payload, tuple):
            out.extend(payload[0])
            if release:
                gate.release(channel)
        else:
            out.append(payload)
    return out


def _emit_buffers(writer: RecordWriter, count: int, start: int = 0) -> None:
    """``count`` one-buffer batches (one record each, flushed at once)."""
    for i in range(start, start + count):
        writer.emit([i], None)
        writer.flush_all()


# -- record writer --------------------------------------------------------------------------------


def test_record_writer_delivers_in_order_per_channel() -> None:
    w = _wire(3)
    writer = RecordWriter(w.partition, RebalancePartitioner(), SEGMENT)
    records = list(range(500))
    for start in range(0, 500, 7):
        writer.emit(records[start : start + 7], [r * 2 for r in records[start : start + 7]])
    writer.flush_all()
    assert not writer.has_pending
    assert writer.records_out == 500
    assert writer.buffers_out > 3
    got = [_drain(g) for g in w.gates]
    assert sorted(r for per in got for r in per) == records
    for per in got:
        assert per == sorted(per), "each channel sees its records in emission order"
        assert per, "rebalance uses every channel"


def test_record_writer_keeps_timestamps_with_values_and_pads_missing_ones() -> None:
    w = _wire(1)
    writer = RecordWriter(w.partition, ForwardPartitioner(), 32 * 1024)
    writer.emit(["a", "b"], None)
    writer.emit(["c"], [30])
    writer.emit(["d"], None)
    writer.flush_all()
    item = w.gates[0].poll()
    assert item is not None
    assert item[1] == (["a", "b", "c", "d"], [None, None, 30, None])


def test_record_writer_flushes_full_buffers_on_its_own() -> None:
    w = _wire(1, floating=100)
    writer = RecordWriter(w.partition, ForwardPartitioner(), 1024)
    for i in range(2000):
        writer.emit([f"record-{i:05}"], None)
    assert writer.buffers_out > 10, "full buffers left without a flush"
    assert writer.records_out == 2000
    writer.flush_all()
    assert _drain(w.gates[0]) == [f"record-{i:05}" for i in range(2000)]
    assert writer.bytes_out > 2000 * 10


def test_key_groups_reach_their_owning_gate() -> None:
    w = _wire(3)
    writer = RecordWriter(w.partition, KeyGroupStreamPartitioner(lambda v: v % 50, 128), SEGMENT)
    writer.emit(list(range(300)), None)
    writer.flush_all()
    for index, gate in enumerate(w.gates):
        for value in _drain(gate):
            assert subtask_for_key_group(128, 3, assign_to_key_group(value % 50, 128)) == index


def test_broadcast_writer_reaches_every_gate() -> None:
    w = _wire(3)
    writer = RecordWriter(w.partition, BroadcastPartitioner(), SEGMENT)
    writer.emit([1, 2, 3], None)
    writer.flush_all()
    assert [_drain(g) for g in w.gates] == [[1, 2, 3]] * 3


def test_broadcast_event_flushes_pending_records_first() -> None:
    w = _wire(2)
    writer = RecordWriter(w.partition, RebalancePartitioner(), SEGMENT)
    writer.emit([1, 2, 3, 4], None)
    assert writer.has_pending
    writer.broadcast_event(Marker("eos"))
    assert not writer.has_pending
    for gate in w.gates:
        items = _drain(gate)
        assert items[-1] == Marker("eos")
        assert len(items) == 3


# -- credit-based backpressure --------------------------------------------------------------------


def test_backpressure_makes_the_partition_unavailable_and_recovers() -> None:
    w = _wire(1, buffers_per_channel=2, floating=3, max_buffers_per_channel=10)
    partition, gate, channel = w.partition, w.gates[0], w.channels[0]
    writer = RecordWriter(partition, ForwardPartitioner(), SEGMENT)
    assert partition.pool_size == 1 * 2 + 3
    assert partition.is_available()
    receiver_capacity = 2 + 3  # exclusive + floating buffers of the consumer
    emitted = 0
    while partition.is_available():
        _emit_buffers(writer, 1, emitted)
        emitted += 1
        assert emitted < 100, "never became unavailable"
    # the consumer holds everything it has buffers for; the producer queues its pool
    assert channel.receiver.queued_data_buffers == receiver_capacity
    assert partition.subpartitions[0].sender.credit == 0
    assert partition.queued == partition.pool_size
    assert emitted == receiver_capacity + partition.pool_size

    woken: list[int] = []
    partition.notify_when_available(lambda: woken.append(partition.queued))
    # take items without releasing them: no buffer goes back, nothing moves
    held = []
    for _ in range(3):
        item = gate.poll()
        assert item is not None
        held.append(item[0])
    assert woken == [] and not partition.is_available()
    # releasing one buffer returns one credit: one queued buffer leaves, the listener fires once
    gate.release(held[0])
    assert woken == [partition.pool_size - 1]
    assert partition.is_available()
    gate.release(held[1])
    assert len(woken) == 1, "the listener is called once"
    gate.release(held[2])
    rest = _drain(gate)
    assert [*range(3), *rest] == list(range(emitted))
    assert partition.queued == 0


def test_per_channel_cap_makes_the_partition_unavailable() -> None:
    w = _wire(2, buffers_per_channel=1, floating=50, max_buffers_per_channel=3, receiver_floating=0)
    partition = w.partition
    for _ in range(1 + 3):  # one in flight at the receiver, three queued
        partition.subpartitions[0].add_buffers([Buffer(serialize_batch([0], None))])
    assert partition.queued == 3 < partition.pool_size
    assert not partition.is_available()
    assert _drain(w.gates[0]) == [0, 0, 0, 0]
    assert partition.is_available()


def test_overdraft_is_recorded_when_one_input_emits_past_the_pool() -> None:
    w = _wire(1, buffers_per_channel=1, floating=1, receiver_floating=0)
    writer = RecordWriter(w.partition, ForwardPartitioner(), 64)
    writer.emit([bytes([i]) * 50 for i in range(8)], None)  # one input, many buffers
    writer.flush_all()
    assert w.partition.queued > w.partition.pool_size
    assert w.partition.max_overdraft_seen == w.partition.queued - w.partition.pool_size


def test_record_writer_counts_buffers_in_progress_against_the_pool() -> None:
    p = ResultPartition("out", [0, 1], buffers_per_channel=1, floating_buffers=2,
                        max_buffers_per_channel=10)  # fmt: skip
    writer = RecordWriter(p, RebalancePartitioner(), 1000)
    writer.emit([1, 2], None)  # one small record per channel: two buffers start filling
    assert (p.queued, p.in_progress, p.in_use, writer.buffers_requested) == (0, 2, 2, 2)
    writer.flush_all()  # serializing uses the buffers in progress: nothing new is drawn
    assert (p.queued, p.in_progress, writer.buffers_requested) == (2, 0, 2)
    writer.emit([b"y" * (2 * 1000)], None)
    writer.flush_all()  # one record over three segments: three buffers
    assert (p.queued, writer.buffers_requested) == (5, 5)
    assert p.max_overdraft_seen == 1 and not p.is_available()


def test_pool_keeps_one_buffer_beyond_a_buffer_in_progress_per_channel() -> None:
    p = ResultPartition("out", [0, 1, 2], buffers_per_channel=1, floating_buffers=0,
                        max_buffers_per_channel=10)  # fmt: skip
    assert p.pool_size == 4  # Flink's n + 1: every channel filling a buffer is still available
    writer = RecordWriter(p, RebalancePartitioner(), 1000)
    writer.emit([1, 2, 3], None)
    assert p.in_progress == 3 and p.is_available()


def test_first_batch_sets_the_size_estimate_so_a_buffer_in_progress_fits_a_segment() -> None:
    p = ResultPartition("out", [0], buffers_per_channel=2, floating_buffers=8,
                        max_buffers_per_channel=10)  # fmt: skip
    writer = RecordWriter(p, ForwardPartitioner(), 1000)
    writer.emit([f"{i}".ljust(100, "x") for i in range(12)], None)  # ~1.2 segments
    assert not writer.has_pending and p.in_progress == 0 and p.queued == 2


def test_events_need_no_credit() -> None:
    w = _wire(1, buffers_per_channel=1, floating=0, receiver_floating=0)
    writer = RecordWriter(w.partition, ForwardPartitioner(), SEGMENT)
    _emit_buffers(writer, 1)
    sender = w.partition.subpartitions[0].sender
    assert sender.credit == 0 and sender.queued_data_buffers == 0
    w.partition.broadcast_event(Marker("a"))
    w.partition.broadcast_event({"plain": "dict"})
    assert len(w.channels[0].queue) == 3
    assert _drain(w.gates[0], release=False) == [0, Marker("a"), {"plain": "dict"}]


def test_events_queue_behind_data_without_credit() -> None:
    w = _wire(1, buffers_per_channel=1, floating=0, receiver_floating=0)
    writer = RecordWriter(w.partition, ForwardPartitioner(), SEGMENT)
    _emit_buffers(writer, 2)  # the second one waits for credit
    writer.broadcast_event(Marker("after"))
    gate = w.gates[0]
    assert _drain(gate) == [0, 1, Marker("after")]


def test_priority_event_overtakes_data_queued_at_both_ends() -> None:
    w = _wire(1, buffers_per_channel=1, floating=0, receiver_floating=0)
    writer = RecordWriter(w.partition, ForwardPartitioner(), SEGMENT)
    _emit_buffers(writer, 3)  # one delivered, two waiting for credit at the producer
    assert w.partition.subpartitions[0].sender.queued_data_buffers == 2
    w.partition.broadcast_event(Marker("barrier"), priority=True)
    assert w.partition.subpartitions[0].sender.queued_data_buffers == 2
    assert _drain(w.gates[0]) == [Marker("barrier"), 0, 1, 2]


def test_blocking_event_stops_the_subpartition_until_resume() -> None:
    w = _wire(1)
    writer = RecordWriter(w.partition, ForwardPartitioner(), SEGMENT)
    writer.broadcast_event(Marker("aligned"), blocks=True)
    _emit_buffers(writer, 2)
    gate, channel = w.gates[0], w.channels[0]
    assert _drain(gate) == [Marker("aligned")]
    assert w.partition.subpartitions[0].sender.is_blocked
    assert channel.receiver.is_blocked
    channel.resume_consumption()
    assert _drain(gate) == [0, 1]


def test_subpartition_without_link_queues_until_pumped() -> None:
    partition = ResultPartition(
        "P", [7], buffers_per_channel=2, floating_buffers=0, max_buffers_per_channel=10
    )
    sp = partition.subpartitions[0]
    assert sp.channel_id == 7 and sp.name == "P#0"
    sp.add_buffers([Buffer(serialize_batch(["early"], None))])
    sp.add_event(Marker("early event"))
    gate = InputGate("G", 1, 0)
    channel = gate.add_channel(7, "G/0", 2)
    link = LocalLink(sp, channel)
    sp.link = link
    channel.connect(link)  # the initial credit pumps what was queued
    assert _drain(gate) == ["early", Marker("early event")]


@pytest.mark.parametrize("consumers", [1, 4])
def test_pool_size_counts_exclusive_and_floating(consumers: int) -> None:
    w = _wire(consumers, buffers_per_channel=3, floating=5)
    assert w.partition.pool_size == consumers * 3 + 5
