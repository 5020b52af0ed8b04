"""What a task does after it took an *unaligned* stop-with-savepoint: it drops its input.

A stop with savepoint ends the sources' data before their savepoint barrier. Taken unaligned,
the barrier overtakes the backlog, and every record still in flight is then in the savepoint:
in this task's input channel state (queued before the barrier on its channel, or the rest of
the batch being processed), or in its producer's output channel state (what follows the
barrier on the channel). Processing those records after the snapshot would be work the
resumed job does again (and, with a non-transactional sink, output twice), and it is the
wait a stop under backpressure must not have. So, from its snapshot on, the task drops
records and watermarks (event-time timers must not fire either), quiesces processing-time
timers, and still handles ``EndOfData``, ``EndOfPartitionEvent`` and the other events, so it
ends as soon as its inputs did.

Threading: the task's thread (a step of its input processor's slice). The drop touches no user code;
its cost is one release per queued buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.task.events import WatermarkEvent, WatermarkStatusEvent

if TYPE_CHECKING:
    from undertow.runtime.task.event_dispatch import EventDispatcher


class HeldBatch(Protocol):
    """The batch an input processor is in the middle of."""

    gate: InputGate
    channel: InputChannel
    values: list[Any]
    position: int
    restored: bool


class DroppingInput(Protocol):
    """The parts of :class:`~undertow.runtime.task.input_processor.StreamInputProcessor` the
    drop uses (this module is an extension of that processor's loop)."""

    dropping_input: bool
    records_dropped: int
    events: EventDispatcher

    @property
    def end_of_input(self) -> bool: ...

    def take_unprocessed(self) -> tuple[Any, int]:
        """The batch in hand (a :class:`HeldBatch` or None; Any: the processor's own batch
        class is invariant here), taken, and the restored records pending, discarded."""
        ...

    def poll(self) -> tuple[InputGate, InputChannel, Any] | None: ...


#: Events dropped with the records (they belong to the in-flight data in the savepoint).
_DROPPED_EVENTS = (WatermarkEvent, WatermarkStatusEvent)


def start_dropping(chain: Any, inputs: DroppingInput) -> None:
    """The task took an unaligned stop's savepoint: from now on its input is dropped, and no
    processing-time timer fires (its timers are in the savepoint's keyed state)."""
    chain.quiesce_processing_time()
    inputs.dropping_input = True


def drop_input(inputs: DroppingInput) -> int:
    """Drop what the task holds and what is queued at its inputs (records, watermarks), handing
    every other event to the task; stop when its input just ended. Returns the records
    dropped."""
    dropped = 0
    current: HeldBatch | None
    current, dropped = inputs.take_unprocessed()
    if current is not None:
        dropped += len(current.values) - current.position
        if not current.restored:
            current.gate.release(current.channel)
    ended = inputs.end_of_input  # after it, end-of-partition events still come this way
    while (polled := inputs.poll()) is not None:
        gate, channel, payload = polled
        if type(payload) is tuple:
            dropped += len(payload[0])
            gate.release(channel)
        elif not isinstance(payload, _DROPPED_EVENTS):
            inputs.events.on_event(gate, channel, payload)
            if inputs.end_of_input and not ended:
                break  # the task's loop ends its data now
    inputs.records_dropped += dropped
    return dropped
