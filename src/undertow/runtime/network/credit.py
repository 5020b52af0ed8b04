"""Credit-based flow control, sans I/O: the sender and receiver state machines of a channel
(:class:`SenderChannel`, :class:`ReceiverChannel`, :class:`ReceiverGate`); credit counts buffers.

Invariants (exact; ``tests/runtime/test_credit.py`` checks them after every step):
  1. sender.credit + AddCredit in flight + receiver.unannounced_credit + data in flight
     == receiver.free_buffers: announced credit never exceeds the receiver's free buffers.
  2. receiver.queued_data_buffers + free_buffers == initial_credit + floating_buffers.
  3. sum(channel.floating_buffers) == gate.floating_in_use <= gate.floating, and the pool is
     empty while any channel waits for a floating buffer.

Threading: one worker's event-loop thread calls everything here; nothing locks. Cost: O(1) per
call, except ``overtake_with_priority_event`` and ``prioritize_event`` (O(queued entries), once
per checkpoint); handing a returned floating buffer to a waiter is amortized O(1).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from undertow.core.errors import ConfigurationError, NetworkError
from undertow.runtime.network.prioritized_deque import PrioritizedDeque


class ProtocolViolation(NetworkError):
    """A peer (or a caller on its behalf) broke the credit protocol of a channel."""


@dataclass(frozen=True, slots=True)
class Queued:
    """An entry of a sender's queue: a data buffer or an event."""

    payload: object
    is_event: bool
    priority: bool = False
    blocks_upstream: bool = False


@dataclass(frozen=True, slots=True)
class Send:
    """Decision of :meth:`SenderChannel.poll`: put this buffer on the wire (a BufferResponse).

    ``backlog``: data buffers still queued after this one; 0 once the channel is blocked, as in
    Flink, so the receiver reserves no floating buffers for a channel that cannot send.
    """

    payload: object
    is_event: bool
    sequence_number: int
    backlog: int
    priority: bool = False
    blocks_upstream: bool = False


class SenderChannel:
    """Producer side of one channel: the queue of a subpartition and its credit.

    Created on the partition request, with the credit it announced; then ``add_*`` from the
    record writer, ``add_credit``/``resume`` from the transport, ``poll`` while ``is_available``.
    """

    __slots__ = ("_blocked", "_credit", "_data_count", "_next_sequence_number", "_queue",
                 "buffer_size", "max_records", "name")  # fmt: skip

    def __init__(self, initial_credit: int = 0, *, name: str = "subpartition") -> None:
        if initial_credit < 0:
            raise ProtocolViolation(f"{name}: initial credit must be >= 0, got {initial_credit}")
        self.name = name
        self._queue: PrioritizedDeque[Queued] = PrioritizedDeque()
        self._credit = initial_credit
        self._data_count = 0
        self._blocked = False
        self._next_sequence_number = 0
        #: The last announced buffer size in bytes and record limit (``None``: none announced).
        self.buffer_size: int | None = None
        self.max_records: int | None = None

    def new_buffer_size(self, size: int, max_records: int) -> None:
        """The receiver announced a buffer size and record limit (a NewBufferSize message).

        Raises :class:`ProtocolViolation`, changing nothing, unless both are positive.
        """
        if size <= 0 or max_records <= 0:
            raise ProtocolViolation(
                f"{self.name}: NewBufferSize must be positive, got {size} bytes and "
                f"{max_records} records"
            )
        self.buffer_size = size
        self.max_records = max_records

    def add_data(self, payload: object) -> None:
        """Queue a finished data buffer at the tail."""
        self._queue.add(Queued(payload, is_event=False))
        self._data_count += 1

    def add_event(
        self, payload: object, priority: bool = False, blocks_upstream: bool = False
    ) -> None:
        """Queue an event: at the tail, or behind the queued priority events if ``priority``.

        ``blocks_upstream`` (aligned barrier, end of recovery) stops the channel once the event
        is sent, until :meth:`resume`.
        """
        self._queue.add(Queued(payload, True, priority, blocks_upstream), priority)

    def overtake_with_priority_event(self, payload: object) -> list[object]:
        """Queue a priority event ahead of every normal entry; return the data it overtook.

        The payloads of the queued data buffers (events skipped), head to tail: the output
        channel state of an unaligned checkpoint, captured in the same step. They stay queued.
        """
        overtaken = [entry.payload for entry in self._queue.normal_elements() if not entry.is_event]
        self._queue.add(Queued(payload, True, priority=True), priority=True)
        return overtaken

    def prioritize_event(
        self, match: Callable[[object], bool], payload: object
    ) -> list[object] | None:
        """Turn a queued normal event into a priority event (Flink's output-side switch to UC).

        Replaces the first normal event whose payload ``match`` accepts by ``payload`` (its
        unaligned form) as a non-blocking priority event; returns the data payloads that were
        ahead of it, or ``None``, changing nothing, if no queued normal event matches.
        """
        overtaken: list[object] = []
        found: Queued | None = None
        for entry in self._queue.normal_elements():
            if not entry.is_event:
                overtaken.append(entry.payload)
            elif match(entry.payload):
                found = entry
                break
        if found is None:
            return None
        self._queue.remove_if(lambda entry: entry is found)
        self._queue.add(Queued(payload, True, priority=True), priority=True)
        return overtaken

    def add_credit(self, credit: int) -> None:
        """The receiver announced ``credit`` more free buffers (an AddCredit message)."""
        if credit <= 0:
            raise ProtocolViolation(f"{self.name}: AddCredit must be positive, got {credit}")
        self._credit += credit

    def resume(self) -> None:
        """The receiver sent ResumeConsumption: unblock after a blocking event."""
        if not self._blocked:
            raise ProtocolViolation(f"{self.name}: ResumeConsumption while not blocked")
        self._blocked = False

    def poll(self) -> Send | None:
        """The next buffer to send, or ``None`` if nothing may be sent now.

        Nothing while blocked; an event at the head always; a data buffer at the head only if
        credit > 0, consuming one credit.
        """
        if self._blocked:
            return None
        head = self._queue.peek()
        if head is None:
            return None
        if not head.is_event:
            if self._credit <= 0:
                return None
            self._credit -= 1
            self._data_count -= 1
        elif head.blocks_upstream:
            self._blocked = True
        self._queue.poll()
        seq = self._next_sequence_number
        self._next_sequence_number = seq + 1
        return Send(
            head.payload, head.is_event, seq, self.backlog, head.priority, head.blocks_upstream
        )

    def peek(self) -> Queued | None:
        """The entry ``poll`` would consider next, or ``None`` if the queue is empty."""
        return self._queue.peek()

    @property
    def credit(self) -> int:
        """Announced free buffers at the receiver not yet used by a sent data buffer."""
        return self._credit

    @property
    def backlog(self) -> int:
        """Queued data buffers, as reported to the receiver (0 while blocked)."""
        return 0 if self._blocked else self._data_count

    @property
    def queued_data_buffers(self) -> int:
        """Queued data buffers, blocked or not."""
        return self._data_count

    def queued_data_bytes(self) -> int:
        """Bytes (``len``) of the queued data buffers, blocked or not; O(queued entries)."""
        data = (e.payload for e in self._queue.normal_elements() if not e.is_event)
        return sum(len(payload) for payload in data)  # type: ignore[arg-type, misc]

    @property
    def is_blocked(self) -> bool:
        """A blocking event was sent and ResumeConsumption has not arrived."""
        return self._blocked

    @property
    def is_available(self) -> bool:
        """``poll()`` would return a :class:`Send`."""
        if self._blocked:
            return False
        head = self._queue.peek()
        return head is not None and (head.is_event or self._credit > 0)


class ReceiverGate:
    """The floating buffers shared by the channels of one input gate.

    Channels take floating buffers from it and return them once the task consumed their data;
    a returned buffer goes to the longest-waiting channel that still needs one (one that needs
    more goes to the back). ``floating`` is the pool size.
    """

    __slots__ = ("_available", "_num_channels", "_waiting", "floating", "name")

    def __init__(self, floating: int = 8, *, name: str = "gate") -> None:
        if floating < 0:
            raise ConfigurationError(
                f"{name}: taskmanager.network.memory.floating-buffers-per-gate must be >= 0, "
                f"got {floating}"
            )
        self.name = name
        self.floating = floating
        self._available = floating
        self._num_channels = 0
        self._waiting: deque[ReceiverChannel] = deque()

    @property
    def floating_in_use(self) -> int:
        """Floating buffers owned by channels (free there or holding data)."""
        return self.floating - self._available

    def _take(self, wanted: int) -> int:
        granted = min(wanted, self._available)
        self._available -= granted
        return granted

    def _recycle(self) -> None:
        """A floating buffer comes back: hand it to the first waiter that still needs one."""
        while self._waiting:
            channel = self._waiting.popleft()
            if channel._floating_deficit() > 0:
                channel._accept_floating()
                if channel._floating_deficit() > 0:
                    self._waiting.append(channel)
                else:
                    channel._waiting = False
                return
            channel._waiting = False
        self._available += 1


class ReceiverChannel:
    """Consumer side of one channel: buffer ownership, sequence checks and credit to announce.

    Created on its gate; ``initial_credit`` (its exclusive buffers) goes out with the partition
    request; then ``on_buffer`` for every BufferResponse, ``on_data_consumed`` when the task is
    done with a data buffer (in arrival order), ``take_unannounced_credit`` when the transport
    may send AddCredit, ``resume`` when the task releases a channel after a blocking event.
    """

    __slots__ = (
        "_blocked", "_free_exclusive", "_free_floating", "_gate", "_held", "_next_sequence_number",
        "_required", "_unannounced", "_waiting", "initial_credit", "name",
    )  # fmt: skip

    def __init__(
        self, gate: ReceiverGate, initial_credit: int = 2, *, name: str | None = None
    ) -> None:
        self.name = name if name is not None else f"{gate.name}/channel-{gate._num_channels}"
        if initial_credit < 1:
            raise ConfigurationError(
                f"{self.name}: taskmanager.network.memory.buffers-per-channel must be >= 1 "
                f"(there is no BacklogAnnouncement), got {initial_credit}"
            )
        self._gate = gate
        self.initial_credit = initial_credit
        self._free_exclusive = initial_credit
        self._free_floating = 0
        self._held: deque[bool] = deque()  # per queued data buffer: is it a floating buffer?
        self._unannounced = 0
        self._required = initial_credit
        self._waiting = False
        self._blocked = False
        self._next_sequence_number = 0
        gate._num_channels += 1

    def on_buffer(
        self, sequence_number: int, backlog: int, is_event: bool, *, blocks_upstream: bool = False
    ) -> None:
        """A BufferResponse arrived; data occupies a free buffer, floating ones first.

        Raises :class:`ProtocolViolation`, changing nothing, if the sequence number is not the
        next one, the backlog is negative, the channel is blocked, or it is data and no buffer
        is free (data without credit).
        """
        expected = self._next_sequence_number
        if sequence_number != expected:
            kind = "repeated" if sequence_number < expected else "gap"
            raise ProtocolViolation(
                f"{self.name}: buffer out of order ({kind}): expected sequence number "
                f"{expected}, got {sequence_number}"
            )
        if backlog < 0:
            raise ProtocolViolation(f"{self.name}: negative backlog {backlog} in buffer {expected}")
        if self._blocked:
            raise ProtocolViolation(
                f"{self.name}: buffer {expected} arrived after a blocking event, before resume"
            )
        if not is_event:
            if self._free_floating > 0:  # floating first, like Flink's BufferManager
                self._free_floating -= 1
                self._held.append(True)
            elif self._free_exclusive > 0:
                self._free_exclusive -= 1
                self._held.append(False)
            else:
                raise ProtocolViolation(
                    f"{self.name}: data buffer {expected} arrived without credit (no free buffer)"
                )
        elif blocks_upstream:
            self._blocked = True
        self._next_sequence_number = expected + 1
        self._required = backlog + self.initial_credit  # Flink's onSenderBacklog
        self._request_floating()

    def on_data_consumed(self) -> None:
        """The task finished the oldest queued data buffer; release the buffer it occupied.

        A floating buffer goes back to the gate. An exclusive one becomes unannounced credit,
        unless the channel now holds more free buffers than it needs: then it keeps the
        exclusive buffer and returns a free floating one to the gate instead (no new credit).
        """
        if not self._held:
            raise ProtocolViolation(f"{self.name}: on_data_consumed() with no queued data buffer")
        if self._held.popleft():
            self._gate._recycle()
            return
        self._free_exclusive += 1
        if self._free_floating > 0 and self.free_buffers > self._required:
            self._free_floating -= 1
            self._gate._recycle()
        else:
            self._unannounced += 1

    def take_unannounced_credit(self) -> int:
        """Credit to send in an AddCredit message now (send nothing if 0); resets it to 0."""
        credit, self._unannounced = self._unannounced, 0
        return credit

    def resume(self) -> None:
        """The task releases the channel after a blocking event: send ResumeConsumption."""
        if not self._blocked:
            raise ProtocolViolation(f"{self.name}: resume() while not blocked")
        self._blocked = False

    def _floating_deficit(self) -> int:
        return self._required - self._free_exclusive - self._free_floating

    def _accept_floating(self) -> None:
        self._free_floating += 1
        self._unannounced += 1

    def _request_floating(self) -> None:
        deficit = self._floating_deficit()
        if deficit <= 0 or self._waiting:
            return
        granted = self._gate._take(deficit)
        self._free_floating += granted
        self._unannounced += granted
        if granted < deficit:
            self._waiting = True
            self._gate._waiting.append(self)

    @property
    def unannounced_credit(self) -> int:
        """Free buffers obtained since the last AddCredit."""
        return self._unannounced

    @property
    def free_buffers(self) -> int:
        """Exclusive and floating buffers holding no data."""
        return self._free_exclusive + self._free_floating

    @property
    def free_floating_buffers(self) -> int:
        """Floating buffers holding no data (the rest of ``free_buffers`` are exclusive)."""
        return self._free_floating

    @property
    def queued_data_buffers(self) -> int:
        """Data buffers received and not yet consumed by the task."""
        return len(self._held)

    @property
    def floating_buffers(self) -> int:
        """Floating buffers this channel owns, free or holding data."""
        held_exclusive = self.initial_credit - self._free_exclusive
        return self._free_floating + len(self._held) - held_exclusive

    @property
    def sender_backlog(self) -> int:
        """The backlog the last BufferResponse reported (data queued at the sender)."""
        return self._required - self.initial_credit

    @property
    def required_buffers(self) -> int:
        """Free buffers wanted: last reported backlog + ``initial_credit``."""
        return self._required

    @property
    def is_blocked(self) -> bool:
        """A blocking event arrived and :meth:`resume` has not been called."""
        return self._blocked
