"""Consumer side: input channels and gates, fed by hand or by subpartitions over LocalLink."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from undertow.graph.partitioners import BroadcastPartitioner, ForwardPartitioner
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk, encode_chunk
from undertow.runtime.network.buffer import (
    BatchDeserializer,
    Buffer,
    serialize_batch,
    split_into_buffers,
)
from undertow.runtime.network.credit import ProtocolViolation, Send
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.network.transport import LocalLink


@dataclass
class RecordingLink:
    """A ConsumerLink that records what the channel tells its producer."""

    credits: list[int] = field(default_factory=list)
    resumes: int = 0

    def add_credit(self, credit: int) -> None:
        self.credits.append(credit)

    def resume(self) -> None:
        self.resumes += 1


class Feeder:
    """Plays the producer of one channel: numbers sends and reports a backlog."""

    def __init__(self, channel: InputChannel) -> None:
        self.channel = channel
        self.seq = 0

    def data(self, values: list[Any], backlog: int = 0, partial: bool = False) -> None:
        buffer = Buffer(serialize_batch(values, None), partial)
        self._send(Send(buffer, False, self.seq, backlog))

    def buffer(self, buffer: Buffer, backlog: int = 0) -> None:
        self._send(Send(buffer, False, self.seq, backlog))

    def event(self, event: Any, priority: bool = False, blocks: bool = False) -> None:
        self._send(Send(event, True, self.seq, 0, priority, blocks))

    def _send(self, send: Send) -> None:
        self.channel.on_send(send)
        self.seq += 1


def _gate(channels: int = 1, floating: int = 8, credit: int = 2) -> tuple[InputGate, list[Any]]:
    gate = InputGate("G", 2, floating)
    links = []
    for i in range(channels):
        channel = gate.add_channel(100 + i, f"G/{i}", credit)
        link = RecordingLink()
        channel.connect(link)
        links.append(link)
    return gate, links


def test_connect_announces_the_initial_credit() -> None:
    gate, links = _gate(2, credit=3)
    assert [link.credits for link in links] == [[3], [3]]
    assert [c.index for c in gate.channels] == [0, 1]
    assert [c.channel_id for c in gate.channels] == [100, 101]
    assert gate.input_index == 2
    assert not gate.has_input() and gate.poll() is None


def test_poll_returns_batches_and_events_in_channel_order() -> None:
    gate, _ = _gate()
    feeder = Feeder(gate.channels[0])
    feeder.data([1, 2])
    feeder.event("tick")
    feeder.data([3])
    items = []
    while (item := gate.poll()) is not None:
        channel, payload = item
        assert channel is gate.channels[0]
        items.append(payload)
        if isinstance(payload, tuple):
            gate.release(channel)
    assert items == [([1, 2], None), "tick", ([3], None)]


def test_poll_is_round_robin_over_channels_with_data() -> None:
    gate, _ = _gate(3, credit=5)
    feeders = [Feeder(c) for c in gate.channels]
    for round_ in range(3):
        for index in (2, 0):  # channel 1 stays empty
            feeders[index].data([(index, round_)])
    order = []
    while (item := gate.poll()) is not None:
        order.append(item[1][0][0])
        gate.release(item[0])
    assert order == [(2, 0), (0, 0), (2, 1), (0, 1), (2, 2), (0, 2)]


def test_listener_runs_when_data_arrives() -> None:
    gate, _ = _gate(2)
    wakeups: list[bool] = []
    gate.set_listener(lambda: wakeups.append(gate.has_input()))
    Feeder(gate.channels[1]).event("e")
    assert wakeups == [True]
    assert gate.has_input()


def test_release_returns_credit_to_the_producer() -> None:
    gate, (link,) = _gate(floating=0)
    feeder = Feeder(gate.channels[0])
    feeder.data([1])
    feeder.data([2])
    assert link.credits == [2]
    item = gate.poll()
    assert item is not None
    assert link.credits == [2], "the buffer is owned until released"
    gate.release(item[0])
    assert link.credits == [2, 1]


def test_backlog_asks_for_floating_buffers() -> None:
    gate, (link,) = _gate(floating=8, credit=2)
    Feeder(gate.channels[0]).data([1], backlog=5)
    # one exclusive buffer is taken; to have backlog + 2 = 7 free it needs 6 floating ones
    assert link.credits == [2, 6]
    assert gate.receiver_gate.floating_in_use == 6


def test_data_without_credit_is_a_protocol_violation() -> None:
    gate, _ = _gate(floating=0, credit=1)
    feeder = Feeder(gate.channels[0])
    feeder.data([1])
    with pytest.raises(ProtocolViolation, match="without credit"):
        feeder.data([2])


def test_out_of_order_sequence_number_is_a_protocol_violation() -> None:
    gate, _ = _gate()
    channel = gate.channels[0]
    with pytest.raises(ProtocolViolation, match="out of order"):
        channel.on_send(Send("e", True, 1, 0))


def test_priority_event_overtakes_queued_data_at_the_receiver() -> None:
    gate, _ = _gate(credit=4, floating=0)
    feeder = Feeder(gate.channels[0])
    feeder.data([1])
    feeder.data([2])
    feeder.event("barrier-1", priority=True)
    feeder.event("normal")
    feeder.event("barrier-2", priority=True)
    items = []
    while (item := gate.poll()) is not None:
        items.append(item[1])
        if isinstance(item[1], tuple):
            gate.release(item[0])
    assert items == ["barrier-1", "barrier-2", ([1], None), ([2], None), "normal"]


def test_priority_event_wakes_a_channel_already_in_the_round() -> None:
    gate, _ = _gate(2, credit=3)
    Feeder(gate.channels[0]).data([0])
    second = Feeder(gate.channels[1])
    second.data([1])
    second.event("urgent", priority=True)
    items = []
    while (item := gate.poll()) is not None:
        items.append(item[1])
        if isinstance(item[1], tuple):
            gate.release(item[0])
    assert items == [([0], None), "urgent", ([1], None)]


def test_partial_buffers_are_recycled_as_they_are_copied() -> None:
    gate, (link,) = _gate(credit=2, floating=0)
    feeder = Feeder(gate.channels[0])
    data = serialize_batch(["z" * 2000], [5])
    parts = split_into_buffers(data, 256)
    assert len(parts) > 4
    feeder.buffer(parts[0], backlog=len(parts) - 1)
    feeder.buffer(parts[1], backlog=len(parts) - 2)
    assert gate.poll() is None, "two partial buffers, no batch yet"
    assert link.credits == [2, 1, 1], "each copied partial buffer is returned at once"
    assert gate.channels[0].deserializer.has_leftover
    for i, part in enumerate(parts[2:-1], start=2):
        feeder.buffer(part, backlog=len(parts) - 1 - i)
        assert gate.poll() is None
    assert sum(link.credits) == 2 + len(parts) - 1, "every copied partial buffer came back"
    feeder.buffer(parts[-1])
    item = gate.poll()
    assert item is not None
    assert item[1] == (["z" * 2000], [5])
    assert gate.channels[0].receiver.queued_data_buffers == 1
    gate.release(item[0])
    assert gate.channels[0].receiver.queued_data_buffers == 0


def test_batch_larger_than_all_receiver_buffers_arrives_over_local_link() -> None:
    partition = ResultPartition(
        "P", [0], buffers_per_channel=1, floating_buffers=0, max_buffers_per_channel=10
    )
    gate = InputGate("G", 1, 1)  # the receiver owns 1 exclusive + 1 floating buffer
    channel = gate.add_channel(0, "G/0", 1)
    link = LocalLink(partition.subpartitions[0], channel)
    partition.subpartitions[0].link = link
    channel.connect(link)
    writer = RecordWriter(partition, ForwardPartitioner(), 128)
    big = [f"{i:04}" * 30 for i in range(40)]
    writer.emit(big, list(range(40)))
    writer.flush_all()
    assert writer.buffers_out > 20
    assert partition.queued > 0, "most of the batch waits for credit"
    item = gate.poll()
    assert item is not None
    assert item[1] == (big, list(range(40)))
    gate.release(item[0])
    assert partition.queued == 0


def test_blocking_event_blocks_the_channel_until_resume() -> None:
    gate, (link,) = _gate()
    channel = gate.channels[0]
    feeder = Feeder(channel)
    feeder.event("aligned", blocks=True)
    assert channel.receiver.is_blocked
    with pytest.raises(ProtocolViolation, match="blocking event"):
        feeder.data([1])
    channel.resume_consumption()
    assert link.resumes == 1
    assert not channel.receiver.is_blocked


def test_finished_channels() -> None:
    gate, _ = _gate(2)
    assert not gate.is_finished
    gate.mark_finished(gate.channels[0])
    gate.mark_finished(gate.channels[0])
    assert gate.num_finished == 1 and not gate.is_finished
    gate.mark_finished(gate.channels[1])
    assert gate.is_finished


def _local_pair(
    partitioner: Any, channels: int = 1, in_process: bool = True, segment_size: int = 1 << 15
) -> tuple[RecordWriter, InputGate]:
    """A writer whose channels are wired to one gate's channels over LocalLink, as the
    worker's network environment wires two subtasks of one worker (``in_process``)."""
    partition = ResultPartition(
        "P", list(range(channels)), buffers_per_channel=2, floating_buffers=4,
        max_buffers_per_channel=10,
    )  # fmt: skip
    gate = InputGate("G", 1, 4)
    for i, sp in enumerate(partition.subpartitions):
        channel = gate.add_channel(i, f"G/{i}", 2)
        link = LocalLink(sp, channel)
        sp.link = link
        sp.in_process = in_process
        channel.connect(link)
    return RecordWriter(partition, partitioner, segment_size), gate


def test_records_cross_a_local_channel_without_pickling() -> None:
    writer, gate = _local_pair(ForwardPartitioner())
    records = [[i] for i in range(100)]  # mutable records: identity shows no copy was made
    writer.emit(records, None)
    writer.flush_all()
    item = gate.poll()
    assert item is not None
    values, stamps = item[1]
    assert values == records and stamps is None
    assert all(a is b for a, b in zip(values, records, strict=True))
    assert values is not records, "the writer's own list went over, not the caller's"
    assert gate.bytes_consumed > 0, "the estimate is counted as the buffer's bytes"


def test_records_to_another_process_and_broadcast_ones_are_copies() -> None:
    for writer, gate in (
        _local_pair(ForwardPartitioner(), in_process=False),
        _local_pair(BroadcastPartitioner(), channels=2),
    ):
        records = [[i] for i in range(10)]
        writer.emit(records, None)
        writer.flush_all()
        item = gate.poll()
        assert item is not None
        assert item[1][0] == records and item[1][0][0] is not records[0]


def test_a_captured_local_buffer_holds_the_records_it_carries() -> None:
    writer, gate = _local_pair(ForwardPartitioner())
    records = [(i, "x" * i) for i in range(50)]
    writer.emit(records, list(range(50)))
    writer.flush_all()
    (queued,) = gate.channels[0].queued_normal()
    chunk = encode_chunk(queued)  # an unaligned checkpoint captures the queued buffer
    restored = BatchDeserializer().add(decode_chunk(chunk))
    assert restored == ([(i, "x" * i) for i in range(50)], list(range(50)))
    item = gate.poll()
    assert item is not None and item[1] == restored


def test_record_batches_within_a_segment_cross_a_local_channel_as_they_are() -> None:
    """Record batches are immutable: the consumer takes the very batches (no IPC encoding
    and decoding), counted at their IPC message's size; one above a segment is serialized
    and cut, as a large record is; a captured one restores equal."""
    writer, gate = _local_pair(ForwardPartitioner(), segment_size=4096)
    small = pa.RecordBatch.from_pydict({"x": list(range(100))})
    writer.emit([small], [7])
    writer.flush_all()
    (queued,) = gate.channels[0].queued_normal()
    assert len(queued) == pa.ipc.get_record_batch_size(small)
    restored = BatchDeserializer().add(decode_chunk(encode_chunk(queued)))
    assert restored is not None and restored[0][0].equals(small) and restored[1] == [7]
    item = gate.poll()
    assert item is not None and item[1][0][0] is small and item[1][1] == [7]
    large = pa.RecordBatch.from_pydict({"x": list(range(1000))})  # 8 KB: above a segment
    writer.emit([large], None)
    writer.flush_all()
    assert writer.buffers_out - 1 > 1, "the large batch was cut into buffers of a segment"
    item = gate.poll()
    assert item is not None and item[1][0][0].equals(large) and item[1][0][0] is not large


def test_batches_above_a_segment_are_handed_over_in_parts_on_a_local_channel() -> None:
    """An emit of more records than a segment takes goes over in several buffers of at most a
    segment's worth each (credits and debloating count a buffer as one), the records as they
    are: a batch from a source or a keyed exchange at full speed is that long, and serializing
    it cost the in-worker half of a shuffle its pickling and unpickling (15% of p=1's CPU)."""
    writer, gate = _local_pair(ForwardPartitioner())
    big = ["y" * 1000 + str(i) for i in range(100)]  # estimated at ~100 KB: three segments
    writer.emit(big, None)
    writer.flush_all()
    queued = list(gate.channels[0].queued_normal())
    assert len(queued) > 3 and all(0 < len(buffer) <= 1 << 15 for buffer in queued)
    got: list[str] = []
    while (item := gate.poll()) is not None:
        got.extend(item[1][0])
    assert got == big and all(a is b for a, b in zip(got, big, strict=True)), "not copied"


def test_a_record_above_a_segment_is_serialized_on_a_local_channel() -> None:
    """One record larger than a segment cannot go in a buffer of a segment's worth: it is
    serialized and cut into segments, as between workers."""
    writer, gate = _local_pair(ForwardPartitioner())
    huge = "z" * 100_000
    writer.emit([huge], None)
    writer.flush_all()
    assert writer.buffers_out > 3, "cut into segments"
    item = gate.poll()
    assert item is not None and item[1][0] == [huge] and item[1][0][0] is not huge


def test_a_writer_handing_over_learns_that_its_records_grew() -> None:
    """Every channel stays in this process, so no batch is serialized: the writer still learns
    from samples that its records grew 30-fold, and its buffers come back to about a
    segment (else each would hold the first estimate's count of records, ~27 segments)."""
    segment = 4096
    writer, gate = _local_pair(ForwardPartitioner(), segment_size=segment)
    writer.emit([(i, "s") for i in range(16)], None)  # small records: the first estimate
    for i in range(8000):  # the gate takes none: the buffers stay queued, in order
        writer.emit([(i, "x" * 200)], None)
    sender = writer.partition.subpartitions[0].sender
    queued = [
        *gate.channels[0].queued_normal(),
        *(e.payload for e in sender._queue.normal_elements() if not e.is_event),
    ]
    assert len(queued) > 20 and all(isinstance(b, Buffer) for b in queued)
    assert all(b.batch is not None for b in queued[-5:]), "still handed over"
    late = [(len(buffer), len(buffer.data)) for buffer in queued[-5:]]  # (counted, actual)
    assert all(actual <= 2 * segment for _, actual in late), late
    assert all(actual <= 2 * counted for counted, actual in late), late
