"""Consumer side: input channels and the input gate the task reads from.

An :class:`InputChannel` receives buffers and events from its transport, checks them against
the credit protocol (:class:`~undertow.runtime.network.credit.ReceiverChannel`), queues them in
a prioritized deque (priority events at the head) and reassembles batches. An
:class:`InputGate` groups the channels of one job edge (or a union of edges) of one consuming
subtask and hands the task the next batch or event, round robin over channels with data.

Buffer ownership: the buffers of a batch stay owned by the channel (no credit returned) until
the task calls :meth:`InputGate.release` after it processed the whole batch; only then does the
credit flow back upstream. So backpressure reaches the producer exactly when the task falls
behind.

Threading: one worker loop thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from undertow.runtime.network.buffer import BatchDeserializer, Buffer
from undertow.runtime.network.credit import ReceiverChannel, ReceiverGate, Send
from undertow.runtime.network.prioritized_deque import PrioritizedDeque


class ConsumerLink(Protocol):
    """The transport end an input channel sends credit and resume messages to."""

    def add_credit(self, credit: int) -> None: ...

    def resume(self) -> None: ...


class InputChannel:
    __slots__ = (
        "_in_available",
        "channel_id",
        "deserializer",
        "finished",
        "gate",
        "index",
        "link",
        "name",
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

    def connect(self, link: ConsumerLink) -> None:
        """Attach the transport and announce the initial credit (the partition request)."""
        self.link = link
        link.add_credit(self.receiver.initial_credit)

    def on_send(self, send: Send) -> None:
        """A buffer or event arrived from the producer (transport callback)."""
        self.receiver.on_buffer(
            send.sequence_number, send.backlog, send.is_event, blocks_upstream=send.blocks_upstream
        )
        self.queue.add(send.payload, send.priority)
        self.gate.announce_credits()
        self.gate._notify(self, send.priority)

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
        self._priority_listener: Callable[[], None] | None = None
        self.num_finished = 0

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

    def _notify(self, channel: InputChannel, priority: bool) -> None:
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
            item = queue.poll()
            if queue:
                available.append(channel)
            else:
                channel._in_available = False
            if item is None:
                continue
            if isinstance(item, Buffer):
                batch = channel.deserializer.add(item)
                if batch is None:
                    # The deserializer copied the partial buffer: recycle it now, so that a
                    # batch larger than the channel's buffers can still arrive.
                    channel.receiver.on_data_consumed()
                    self.announce_credits()
                    continue
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

    def mark_finished(self, channel: InputChannel) -> None:
        if not channel.finished:
            channel.finished = True
            self.num_finished += 1
