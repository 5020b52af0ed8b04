"""Producer side: result partition, subpartitions and the record writer.

A :class:`ResultPartition` belongs to one producing subtask and one job edge; it has one
:class:`ResultSubpartition` per connected consumer channel. A subpartition queues buffers and
events in a credit-based :class:`~undertow.runtime.network.credit.SenderChannel` and pushes
whatever the credit protocol allows to its :class:`ProducerLink` (the transport) at once.

Availability (ARCHITECTURE §2): the partition is *available* when it can take at least one more
buffer for every target: fewer than ``pool_size`` data buffers queued in all its subpartitions
and fewer than ``max_buffers_per_channel`` in each. The task checks it before taking input;
once inside one input, emitting never blocks: buffers beyond the pool are *overdraft* buffers,
counted in :attr:`ResultPartition.max_overdraft_seen` so that the limit
(``max-overdraft-buffers-per-gate``) can be observed.

Priority events (unaligned barriers) overtake queued buffers:
:meth:`ResultSubpartition.overtake_with_priority_event` inserts one and returns, in the same
step, the buffers it overtook; :meth:`ResultSubpartition.prioritize_event` turns a queued event
into a priority one the same way. ``event_listener`` (optional) sees every event when it is
sent, so the owner can tell whether an event already left.

Threading: one worker loop thread; the task and the transport call in from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from undertow.graph.partitioners import StreamPartitioner
from undertow.runtime.network.buffer import Buffer, serialize_batch, split_into_buffers
from undertow.runtime.network.credit import Send, SenderChannel


class ProducerLink(Protocol):
    """The transport end a subpartition pushes to."""

    def deliver(self, send: Send) -> None: ...


class ResultSubpartition:
    __slots__ = ("_pumping", "_repump", "channel_id", "event_listener", "link", "name",
                 "partition", "sender")  # fmt: skip

    def __init__(self, partition: ResultPartition, channel_id: int, name: str) -> None:
        self.partition = partition
        self.channel_id = channel_id
        self.name = name
        self.sender = SenderChannel(0, name=name)
        self.link: ProducerLink | None = None
        self._pumping = False
        self._repump = False
        #: Called with the payload of every event this subpartition sends, when it is sent.
        self.event_listener: Callable[[object], None] | None = None

    def add_buffers(self, buffers: list[Buffer]) -> None:
        sender = self.sender
        for b in buffers:
            sender.add_data(b)
        self.partition.queued += len(buffers)
        self.pump()

    def add_event(self, event: Any, priority: bool = False, blocks_upstream: bool = False) -> None:
        self.sender.add_event(event, priority, blocks_upstream)
        self.pump()

    def overtake_with_priority_event(self, event: Any) -> list[Buffer]:
        """Queue ``event`` ahead of all data; return the data buffers it overtook (they stay
        queued, behind it), head to tail."""
        overtaken = self.sender.overtake_with_priority_event(event)
        self.pump()
        return overtaken  # type: ignore[return-value]

    def prioritize_event(self, event: Any, replacement: Any) -> list[Buffer] | None:
        """If ``event`` (by identity) is still queued, replace it by ``replacement`` as a
        priority event and return the data buffers that were ahead of it; else ``None``."""
        overtaken = self.sender.prioritize_event(lambda p: p is event, replacement)
        if overtaken is not None:
            self.pump()
        return overtaken  # type: ignore[return-value]

    def add_credit(self, credit: int) -> None:
        self.sender.add_credit(credit)
        self.pump()

    def resume(self) -> None:
        self.sender.resume()
        self.pump()

    def pump(self) -> None:
        """Send everything the protocol allows now. Re-entrant calls only request another pass."""
        if self.link is None:
            return
        if self._pumping:
            self._repump = True
            return
        self._pumping = True
        try:
            sender, deliver, partition = self.sender, self.link.deliver, self.partition
            sent_data = 0
            while True:
                send = sender.poll()
                if send is None:
                    if not self._repump:
                        break
                    self._repump = False
                    continue
                if not send.is_event:
                    sent_data += 1
                deliver(send)
                if send.is_event and self.event_listener is not None:
                    self.event_listener(send.payload)
            if sent_data:
                partition.on_data_sent(sent_data)
        finally:
            self._pumping = False


class ResultPartition:
    """The output of one subtask on one job edge (see the module docstring)."""

    def __init__(
        self,
        name: str,
        channel_ids: list[int],
        *,
        buffers_per_channel: int,
        floating_buffers: int,
        max_buffers_per_channel: int,
    ) -> None:
        self.name = name
        self.subpartitions = [
            ResultSubpartition(self, cid, f"{name}#{i}") for i, cid in enumerate(channel_ids)
        ]
        self.pool_size = len(channel_ids) * buffers_per_channel + floating_buffers
        self.max_buffers_per_channel = max_buffers_per_channel
        self.queued = 0
        self.max_overdraft_seen = 0
        self._listener: Callable[[], None] | None = None

    def is_available(self) -> bool:
        if self.queued >= self.pool_size:
            return False
        cap = self.max_buffers_per_channel
        return all(sp.sender.queued_data_buffers < cap for sp in self.subpartitions)

    def notify_when_available(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, the next time buffers leave this partition."""
        self._listener = listener

    def on_data_sent(self, count: int) -> None:
        self.queued -= count
        listener, self._listener = self._listener, None
        if listener is not None:
            listener()

    def note_emitted(self) -> None:
        over = self.queued - self.pool_size
        if over > self.max_overdraft_seen:
            self.max_overdraft_seen = over

    def broadcast_event(self, event: Any, priority: bool = False, blocks: bool = False) -> None:
        for sp in self.subpartitions:
            sp.add_event(event, priority, blocks)


class RecordWriter:
    """Routes batches to channels, collects them per channel and cuts them into buffers.

    A channel's pending records are serialized when they are expected to fill ~90% of a segment
    (the bytes-per-record estimate adapts after every serialization), on :meth:`flush_all`
    (buffer timeout, before an event, at the end).
    """

    def __init__(
        self, partition: ResultPartition, partitioner: StreamPartitioner, segment_size: int
    ) -> None:
        self.partition = partition
        self.partitioner = partitioner
        partitioner.setup(len(partition.subpartitions))
        self.segment_size = segment_size
        n = len(partition.subpartitions)
        self._values: list[list[Any]] = [[] for _ in range(n)]
        self._stamps: list[list[Any] | None] = [None] * n
        self._bytes_per_record = 64.0
        self._threshold = max(1, int(segment_size * 0.9 / self._bytes_per_record))
        self.records_out = 0
        self.buffers_out = 0
        self.bytes_out = 0

    @property
    def has_pending(self) -> bool:
        return any(self._values)

    def emit(self, values: list[Any], timestamps: list[Any] | None) -> None:
        self.records_out += len(values)
        pending_v, pending_t, threshold = self._values, self._stamps, self._threshold
        for ch, (vals, stamps) in self.partitioner.route(values, timestamps).items():
            pv = pending_v[ch]
            pt = pending_t[ch]
            if stamps is not None or pt is not None:
                if pt is None:
                    pt = pending_t[ch] = [None] * len(pv)
                pt.extend(stamps if stamps is not None else [None] * len(vals))
            pv.extend(vals)
            if len(pv) >= threshold:
                self._flush_channel(ch)

    def _flush_channel(self, ch: int) -> None:
        values = self._values[ch]
        if not values:
            return
        data = serialize_batch(values, self._stamps[ch])
        self._values[ch] = []
        self._stamps[ch] = None
        est = len(data) / len(values)
        self._bytes_per_record = 0.5 * self._bytes_per_record + 0.5 * est
        self._threshold = max(1, int(self.segment_size * 0.9 / self._bytes_per_record))
        buffers = split_into_buffers(data, self.segment_size)
        self.buffers_out += len(buffers)
        self.bytes_out += len(data)
        self.partition.subpartitions[ch].add_buffers(buffers)
        self.partition.note_emitted()

    def flush_all(self) -> None:
        for ch in range(len(self._values)):
            if self._values[ch]:
                self._flush_channel(ch)

    def broadcast_event(self, event: Any, priority: bool = False, blocks: bool = False) -> None:
        """Flush pending records, then send ``event`` on every channel (in order)."""
        self.flush_all()
        self.partition.broadcast_event(event, priority, blocks)
