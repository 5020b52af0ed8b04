"""What the checkpoint layer may see of in-flight data: narrow views of channels.

The capture of unaligned channel state (:mod:`undertow.runtime.checkpoint.inflight_capture`)
reads input channels and result subpartitions only through these Protocols, and learns of
arrivals and sent events through a typed subscription instead of attributes set from outside
(STYLE.md's ``InflightDataSink``: the network hands in-flight data up, the upper layer decides
what it means). :class:`~undertow.runtime.network.input_gate.InputChannel` and
:class:`~undertow.runtime.network.partition.ResultSubpartition` implement them; to the network
a payload stays an opaque object.

Threading: the worker loop thread only, like the channels. A sink runs synchronously inside
the network call that saw the payload (an arrival before it is queued; an event right after
the transport took it), so it must not block. Each channel has at most one sink.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol


class InflightDataSink(Protocol):
    """Receives every payload a channel observed (implemented by the checkpoint layer)."""

    def __call__(self, payload: object) -> None: ...


class InflightInputView(Protocol):
    """One input channel as the capture of its in-flight data sees it."""

    @property
    def last_priority_mark(self) -> int | None:
        """If the entry polled last was a priority one: the number of normal entries that
        were queued ahead of it when it arrived (they preceded it on the wire); else None."""
        ...

    def queued_normal(self) -> Iterator[Any]:
        """The queued entries outside the priority region, head to tail (buffers and events
        in arrival order); they have not been handed to the task."""
        ...

    def queued_priority(self) -> list[tuple[object, int]]:
        """The queued priority entries, head first, each with its mark (see above)."""
        ...

    def partial_record(self) -> bytes:
        """The bytes of a record the deserializer holds but cannot decode yet (the first
        buffers of a batch whose last buffer has not arrived), or ``b""``."""
        ...

    def subscribe_arrivals(self, sink: InflightDataSink) -> None:
        """Call ``sink`` with every payload that arrives, before it is queued."""
        ...


class InflightOutputView(Protocol):
    """One result subpartition as the capture of its in-flight data sees it."""

    def overtake_with_priority_event(self, event: Any) -> list[Any]:
        """Queue ``event`` ahead of all data; return the data it overtook: buffers, and while
        restored output is queued lazily, what is left of it (chunks and runs)."""
        ...

    def prioritize_event(self, event: Any, replacement: Any) -> list[Any] | None:
        """Replace the queued ``event`` by the priority event ``replacement``; return the data
        that was ahead of it (as above), or ``None`` if ``event`` already left."""
        ...

    def subscribe_events_sent(self, sink: InflightDataSink) -> None:
        """Call ``sink`` with every event this subpartition sends, when it is sent."""
        ...


class PriorityInputView(Protocol):
    """One input channel as the checkpointer steers it: priority events and blocking.

    To the network an event stays opaque: the checkpointer queues a barrier announcement
    ahead of the data, moves an announced barrier into the priority region when it turns
    unaligned, and releases a channel an aligned barrier blocked.
    """

    @property
    def is_blocked(self) -> bool:
        """A blocking event (aligned barrier) arrived and consumption was not resumed."""
        ...

    def add_priority_event(self, event: object) -> None:
        """Queue a locally created priority event ahead of the channel's normal entries."""
        ...

    def prioritize(self, payload: object) -> bool:
        """Move the queued normal entry ``payload`` (by identity) into the priority region;
        ``False``, changing nothing, if it is not queued as a normal entry."""
        ...

    def resume_consumption(self) -> None:
        """Release a channel blocked by a blocking event."""
        ...


class CheckpointedInputView(InflightInputView, PriorityInputView, Protocol):
    """All the checkpoint side sees of one input channel: its in-flight data and its
    priority events (implemented by :class:`~undertow.runtime.network.input_gate.InputChannel`)."""


class CheckpointedGateView(Protocol):
    """One input gate as the checkpointer sees it: its channels, in channel-index order, and
    what it has consumed (implemented by
    :class:`~undertow.runtime.network.input_gate.InputGate`)."""

    @property
    def channels(self) -> Sequence[CheckpointedInputView]:
        """The gate's channels; a channel's position is its index in the gate."""
        ...

    @property
    def is_finished(self) -> bool:
        """Every channel of the gate saw its end of partition."""
        ...

    @property
    def bytes_consumed(self) -> int:
        """Bytes of data buffers the task took from the gate so far."""
        ...
