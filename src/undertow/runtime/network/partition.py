"""Producer side: result partition, subpartitions and the record writer.

A :class:`ResultPartition` (one producing subtask, one job edge) has one
:class:`ResultSubpartition` per consumer channel, each pushing what the credit protocol allows
to its transport at once. Invariants: ``in_use = queued + in_progress`` never drops below zero
and only rises in :class:`RecordWriter` (and for restored output); the partition is available
while ``in_use < pool_size`` and every subpartition holds fewer than
``max_buffers_per_channel`` data buffers; emitting never blocks (beyond the pool: overdraft).

Threading: one worker loop thread; the task and the transport call in from it. Cost: O(1) per
buffer; ``is_available`` is O(subpartitions).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.credit import Send, SenderChannel
from undertow.runtime.network.inflight_view import InflightDataSink


class ProducerLink(Protocol):
    """The transport end a subpartition pushes to."""

    def deliver(self, send: Send) -> None: ...


class RestoredOutput(Protocol):
    """A subpartition's restored output buffers (unaligned channel state), read lazily: channel
    recovery's stream (``channel_recovery.stream.RestoredInputStream``)."""

    def next_chunk(self) -> bytes | None:
        """The next encoded buffer (``None`` once exhausted); may block on a ranged read."""
        ...

    def rest(self) -> list[Any]:
        """What is left, in order (chunks, and runs of files a checkpoint may refer to)."""
        ...


class ResultSubpartition:
    __slots__ = ("_decode", "_event_sink", "_held_back", "_pumping", "_repump", "_restored",
                 "_window", "channel_id", "in_process", "link", "name", "partition",
                 "sender")  # fmt: skip

    def __init__(self, partition: ResultPartition, channel_id: int, name: str) -> None:
        self.partition = partition
        self.channel_id = channel_id
        self.name = name
        self.sender = SenderChannel(0, name=name)
        self.link: ProducerLink | None = None
        #: The consumer lives in this process (a local link): the record writer may hand
        #: batches over unserialized (``Buffer.handed_over``). Set when the channel is wired.
        self.in_process = False
        self._pumping = False
        self._repump = False
        #: Called with the payload of every event this subpartition sends, when it is sent.
        self._event_sink: InflightDataSink | None = None
        #: Restored output not yet queued (:meth:`restore_output`), how to decode its chunks,
        #: how many of its buffers wait in the sender at most, and what the task added
        #: meanwhile: (payload, is data, priority, blocks upstream), in order.
        self._restored: RestoredOutput | None = None
        self._decode: Callable[[bytes], Buffer] = Buffer
        self._window = 1
        self._held_back: list[tuple[Any, bool, bool, bool]] = []

    def subscribe_events_sent(self, sink: InflightDataSink) -> None:
        """Call ``sink`` with every event this subpartition sends, right after the transport
        took it. One sink per subpartition: a second subscription raises."""
        if self._event_sink is not None:
            raise RuntimeError(f"{self.name}: sent events already have a subscriber")
        self._event_sink = sink

    def restore_output(
        self, restored: RestoredOutput, decode: Callable[[bytes], Buffer], window: int
    ) -> None:
        """Queue the restored output buffers of this subpartition lazily, before anything else:
        at most ``window`` of them wait in the sender at a time, refilled as they are sent
        (each refill may block on a ranged read, on this loop thread). Until the last was
        queued, what the task adds (data, and events but priority ones) is held back behind
        them, counted as queued: all restored output precedes all new output. Once only."""
        if self._restored is not None:
            raise RuntimeError(f"{self.name}: restored output was already given")
        self._restored, self._decode, self._window = restored, decode, max(1, window)
        self._refill()
        self.pump()

    @property
    def is_restoring(self) -> bool:
        """Restored output is still to be queued (:meth:`restore_output`)."""
        return self._restored is not None

    def _refill(self) -> bool:
        """Queue restored buffers up to the window; once the restored output ended, what was
        held back. Whether anything was queued."""
        restored = self._restored
        if restored is None:
            return False
        sender, added = self.sender, 0
        while sender.queued_data_buffers < self._window:
            chunk = restored.next_chunk()
            if chunk is None:
                self._restored = None
                for payload, is_data, priority, blocks in self._held_back:
                    if is_data:
                        sender.add_data(payload)
                    else:
                        sender.add_event(payload, priority, blocks)
                added += len(self._held_back)
                self._held_back = []
                break
            sender.add_data(self._decode(chunk))
            self.partition.queued += 1
            added += 1
        return added > 0

    def add_buffers(self, buffers: list[Buffer]) -> None:
        if self._restored is not None:
            self._held_back.extend((b, True, False, False) for b in buffers)
            self.partition.queued += len(buffers)
            return
        sender = self.sender
        for b in buffers:
            sender.add_data(b)
        self.partition.queued += len(buffers)
        self.pump()

    def add_event(self, event: Any, priority: bool = False, blocks_upstream: bool = False) -> None:
        if self._restored is not None and not priority:
            self._held_back.append((event, False, priority, blocks_upstream))
            return
        self.sender.add_event(event, priority, blocks_upstream)
        self.pump()

    def overtake_with_priority_event(self, event: Any) -> list[Any]:
        """Queue ``event`` ahead of all data; return, head to tail, the data buffers it
        overtook (they stay queued, behind it): while restoring, the restored ones queued, the
        rest of the restored output (:meth:`RestoredOutput.rest`) and the held-back buffers."""
        overtaken = self.sender.overtake_with_priority_event(event) + self._restored_rest()
        self.pump()
        return overtaken

    def prioritize_event(self, event: Any, replacement: Any) -> list[Any] | None:
        """If ``event`` (by identity) is still queued, replace it by ``replacement`` as a
        priority event and return the data that was ahead of it (as in
        :meth:`overtake_with_priority_event`); else ``None``."""
        held = self._held_back
        at = next((i for i, h in enumerate(held) if h[0] is event), None)
        if self._restored is not None and at is not None:
            ahead = [payload for payload, is_data, _, _ in held[:at] if is_data]
            del held[at]
            overtaken = self.sender.overtake_with_priority_event(replacement)
            overtaken += self._restored_rest(ahead)
            self.pump()
            return overtaken
        found = self.sender.prioritize_event(lambda p: p is event, replacement)
        if found is not None:
            self.pump()
        return found

    def _restored_rest(self, held: list[Any] | None = None) -> list[Any]:
        restored = self._restored
        if restored is None:
            return []
        if held is None:
            held = [payload for payload, is_data, _, _ in self._held_back if is_data]
        return restored.rest() + held

    @property
    def queued_data_bytes(self) -> int:
        """Bytes of the data buffers queued here (not yet sent), the held-back ones included
        (not the restored output not yet read). Cost: O(queued entries)."""
        held = sum(len(p) for p, is_data, _, _ in self._held_back if is_data)
        return self.sender.queued_data_bytes() + held

    def add_credit(self, credit: int) -> None:
        self.sender.add_credit(credit)
        self.pump()

    def new_buffer_size(self, size: int, max_records: int) -> None:
        """The consumer announced a buffer size and record limit (buffer debloating)."""
        self.sender.new_buffer_size(size, max_records)
        listener = self.partition.buffer_size_listener
        if listener is not None:
            listener(self.partition.subpartitions.index(self))

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
                    if self._restored is not None and self._refill():
                        continue
                    if not self._repump:
                        break
                    self._repump = False
                    continue
                if not send.is_event:
                    sent_data += 1
                deliver(send)
                if send.is_event and self._event_sink is not None:
                    self._event_sink(send.payload)
            if sent_data:
                partition.on_data_sent(sent_data)
        finally:
            self._pumping = False


class ResultPartition:
    """The output of one subtask on one job edge (see the module docstring).

    Invariants: ``queued`` is the number of data buffers in the subpartitions, ``in_progress``
    the number of channels whose record writer holds pending records; ``max_overdraft_seen``
    is the largest ``in_use - pool_size`` observed after a writer queued buffers or the task
    finished a unit of work.
    """

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
        n = len(channel_ids)
        self.pool_size = max(n * buffers_per_channel + floating_buffers, n + 1)
        self.max_buffers_per_channel = max_buffers_per_channel
        self.queued = 0
        self.in_progress = 0
        self.max_overdraft_seen = 0
        self._listener: Callable[[], None] | None = None
        #: Called with a subpartition's index when its consumer announced a new buffer size.
        self.buffer_size_listener: Callable[[int], None] | None = None

    @property
    def in_use(self) -> int:
        """Buffers taken from the pool: queued, or being filled by the record writer."""
        return self.queued + self.in_progress

    def is_available(self) -> bool:
        if self.queued + self.in_progress >= self.pool_size:
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
        """Record the overdraft in use now (if it is the largest so far)."""
        over = self.queued + self.in_progress - self.pool_size
        if over > self.max_overdraft_seen:
            self.max_overdraft_seen = over

    def broadcast_event(self, event: Any, priority: bool = False, blocks: bool = False) -> None:
        for sp in self.subpartitions:
            sp.add_event(event, priority, blocks)
