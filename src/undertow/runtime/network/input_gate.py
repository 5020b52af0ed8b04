"""Consumer side: input channels and the input gate the task reads from.

An :class:`InputChannel` checks what arrives against the credit protocol, queues it in a
prioritized deque and reassembles batches; an :class:`InputGate` hands the task the next batch
or event of its channels, round robin, and priority events ahead of any data
(:meth:`InputGate.poll_priority`). Invariant: a batch's buffers stay owned by the channel (no
credit returned) until the task calls :meth:`InputGate.release` after processing all of it, so
backpressure reaches the producer exactly when the task falls behind.

Threading: one worker loop thread.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from undertow.runtime.network.buffer import BatchDeserializer, Buffer
from undertow.runtime.network.credit import ReceiverChannel, ReceiverGate, Send
from undertow.runtime.network.inflight_view import InflightDataSink
from undertow.runtime.network.prioritized_deque import PrioritizedDeque


class ConsumerLink(Protocol):
    """The transport end an input channel sends credit and resume messages to."""

    def add_credit(self, credit: int) -> None: ...

    def resume(self) -> None: ...

    def new_buffer_size(self, size: int, max_records: int) -> None: ...


class InputChannel:
    __slots__ = (
        "_arrival_sink",
        "_in_available",
        "channel_id",
        "deserializer",
        "finished",
        "gate",
        "index",
        "last_priority_mark",
        "link",
        "name",
        "priority_marks",
        "queue",
        "receiver",
    )  # fmt: skip

    def __init__(
        self, gate: InputGate, index: int, channel_id: int, name: str, initial_credit: int
    ) -> None:
        self.gate = gate
        self.index = index
        self.channel_id = channel_id
        self.name = name
        self.receiver = ReceiverChannel(gate.receiver_gate, initial_credit, name=name)
        self.queue: PrioritizedDeque[Any] = PrioritizedDeque()
        self.deserializer = BatchDeserializer()
        self.link: ConsumerLink | None = None
        self.finished = False
        self._in_available = False
        #: Per queued priority element (in order): normal entries queued ahead of it on arrival.
        self.priority_marks: deque[int] = deque()
        #: The mark of the entry :meth:`poll` returned last if it was a priority one, else None.
        self.last_priority_mark: int | None = None
        #: Called with every arriving payload before it is queued (see subscribe_arrivals).
        self._arrival_sink: InflightDataSink | None = None

    def connect(self, link: ConsumerLink) -> None:
        """Attach the transport and announce the initial credit (the partition request)."""
        self.link = link
        link.add_credit(self.receiver.initial_credit)

    def on_send(self, send: Send) -> None:
        """A buffer or event arrived from the producer (transport callback)."""
        self.receiver.on_buffer(
            send.sequence_number, send.backlog, send.is_event, blocks_upstream=send.blocks_upstream
        )
        sink = self._arrival_sink
        if sink is not None:
            sink(send.payload)
        if send.priority:
            self.priority_marks.append(self.num_normal)
        self.queue.add(send.payload, send.priority)
        self.gate.announce_credits()
        self.gate._notify(self, send.priority)

    @property
    def num_normal(self) -> int:
        """Entries queued outside the priority region."""
        return len(self.queue) - self.queue.num_priority_elements

    def poll(self) -> Any:
        """Remove and return the head entry (priority first), or ``None``."""
        queue = self.queue
        if queue.num_priority_elements:
            self.last_priority_mark = self.priority_marks.popleft()
        else:
            self.last_priority_mark = None
        return queue.poll()

    def subscribe_arrivals(self, sink: InflightDataSink) -> None:
        """Call ``sink`` with every arriving payload, before it is queued. One sink per
        channel: a second subscription is a wiring error and raises."""
        if self._arrival_sink is not None:
            raise RuntimeError(f"{self.name}: arrivals already have a subscriber")
        self._arrival_sink = sink

    def queued_normal(self) -> Iterator[Any]:
        """The queued entries outside the priority region, head to tail."""
        return self.queue.normal_elements()

    def partial_record(self) -> bytes:
        """The bytes of the batch the deserializer is still assembling, or ``b""``."""
        return self.deserializer.leftover()

    @property
    def is_blocked(self) -> bool:
        """A blocking event (aligned barrier) arrived and consumption was not resumed."""
        return self.receiver.is_blocked

    def queued_priority(self) -> list[tuple[object, int]]:
        """The queued priority entries, head first, each with its mark (see the module doc)."""
        return list(zip(self.queue.priority_elements(), self.priority_marks, strict=True))

    def add_priority_event(self, event: object) -> None:
        """Queue a locally created priority event (e.g. a barrier announcement)."""
        self.priority_marks.append(self.num_normal)
        self.queue.add(event, priority=True)
        self.gate._notify(self, True)

    def prioritize(self, payload: object) -> bool:
        """Move the queued normal entry ``payload`` (by identity) to the end of the priority
        region; False, changing nothing, if it is not queued as a normal entry."""
        for index, entry in enumerate(self.queue.normal_elements()):
            if entry is payload:
                self.queue.prioritize(payload)
                self.priority_marks.append(index)
                self.gate._notify(self, True)
                return True
        return False

    def resume_consumption(self) -> None:
        """Release a channel blocked by a blocking event (aligned barrier)."""
        self.receiver.resume()
        assert self.link is not None
        self.link.resume()


class InputGate:
    """Channels of one logical input of a subtask (see the module docstring)."""

    def __init__(self, name: str, input_index: int, floating_buffers: int) -> None:
        self.name = name
        #: 1 or 2: which input of a two-input operator this gate feeds.
        self.input_index = input_index
        self.receiver_gate = ReceiverGate(floating_buffers, name=name)
        self.channels: list[InputChannel] = []
        self._available: deque[InputChannel] = deque()
        self._listener: Callable[[], None] | None = None
        self._priority: deque[InputChannel] = deque()
        self.num_finished = 0
        #: Bytes and number of data buffers the task has taken from this gate's channels
        #: (what producers sent: with debloating, cut at the sizes this gate announced).
        self.bytes_consumed = 0
        self.buffers_consumed = 0
        #: Records (and their bytes, prorated from their batch) the task has processed from
        #: this gate's channels, as it reports them (:meth:`note_processed`).
        self.records_processed = 0
        self.bytes_processed = 0.0
        self._bytes_per_record = 0.0
        self._batch_start = 0  # bytes_consumed when the batch being reassembled began

    def add_channel(self, channel_id: int, name: str, initial_credit: int) -> InputChannel:
        channel = InputChannel(self, len(self.channels), channel_id, name, initial_credit)
        self.channels.append(channel)
        return channel

    @property
    def is_finished(self) -> bool:
        return self.num_finished == len(self.channels)

    def has_input(self) -> bool:
        return bool(self._available)

    def set_listener(self, listener: Callable[[], None]) -> None:
        """``listener`` runs whenever a channel becomes non-empty (it wakes the task)."""
        self._listener = listener

    def has_priority_event(self) -> bool:
        """Some channel may hold a priority event (cheap; :meth:`poll_priority` is exact)."""
        return bool(self._priority)

    def poll_priority(self) -> tuple[InputChannel, Any] | None:
        """The next queued priority event of any channel, ahead of all data, or ``None``."""
        pending = self._priority
        while pending:
            channel = pending.popleft()
            if channel.queue.num_priority_elements:
                return channel, channel.poll()
        return None

    def _notify(self, channel: InputChannel, priority: bool) -> None:
        if priority:
            self._priority.append(channel)
        if not channel._in_available:
            channel._in_available = True
            self._available.append(channel)
        if self._listener is not None:
            self._listener()

    def poll(self) -> tuple[InputChannel, Any] | None:
        """Next item: ``(channel, (values, timestamps))`` or ``(channel, event)``; ``None`` when no
        channel has a complete item. Events are never tuples.

        Partial buffers are fed to the channel's deserializer and do not surface. The last
        buffer of a returned batch stays owned until :meth:`release`.
        """
        available = self._available
        while available:
            channel = available.popleft()
            queue = channel.queue
            item = channel.poll()
            if queue:
                available.append(channel)
            else:
                channel._in_available = False
            if item is None:
                continue
            if isinstance(item, Buffer):
                self.bytes_consumed += len(item)  # estimated if handed over
                self.buffers_consumed += 1
                batch = channel.deserializer.add(item)
                if batch is None:
                    # The deserializer copied the partial buffer: recycle it now, so that a
                    # batch larger than the channel's buffers can still arrive.
                    channel.receiver.on_data_consumed()
                    self.announce_credits()
                    continue
                if batch[0]:  # all its buffers' bytes (a batch may span buffers)
                    self._bytes_per_record = (self.bytes_consumed - self._batch_start) / len(
                        batch[0]
                    )
                self._batch_start = self.bytes_consumed
                return channel, batch
            return channel, item
        return None

    def release(self, channel: InputChannel) -> None:
        """The task processed the batch ``poll`` returned: return its buffer, announce credit."""
        channel.receiver.on_data_consumed()
        self.announce_credits()

    def announce_credits(self) -> None:
        for channel in self.channels:
            credit = channel.receiver.take_unannounced_credit()
            if credit and channel.link is not None:
                channel.link.add_credit(credit)

    def note_processed(self, records: int) -> None:
        """The task processed ``records`` more records of the batch :meth:`poll` returned last
        (a chunk of it): the throughput buffer debloating measures. Cost: two additions."""
        self.records_processed += records
        self.bytes_processed += records * self._bytes_per_record

    def buffers_in_use(self) -> int:
        """Data buffers in flight towards the task across the whole edge: queued at the
        channels (the one being processed included), queued at their senders (the backlog the
        last buffer reported), and the buffer each open channel's sender is filling (a barrier
        waits behind its records too). Cost: O(channels)."""
        return sum(
            c.receiver.queued_data_buffers + c.receiver.sender_backlog + (not c.finished)
            for c in self.channels
        )

    def has_blocked_channel(self) -> bool:
        """Some channel waits for consumption to be resumed (an aligned barrier arrived on
        it). Cost: O(channels)."""
        return any(c.receiver.is_blocked for c in self.channels)

    def announce_buffer_size(self, size: int, max_records: int) -> None:
        """Send NewBufferSize to the producer of every channel that has not finished."""
        for channel in self.channels:
            if channel.link is not None and not channel.finished:
                channel.link.new_buffer_size(size, max_records)

    def mark_finished(self, channel: InputChannel) -> None:
        if not channel.finished:
            channel.finished = True
            self.num_finished += 1
