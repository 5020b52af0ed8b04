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

Threading: the task's thread (a step of its mailbox loop). The drop touches no user code;
its cost is one release per queued buffer.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.task.events import WatermarkEvent, WatermarkStatusEvent


class DroppingTask(Protocol):
    """The parts of :class:`~undertow.runtime.task.stream_task.StreamTask` the drop uses (its
    input loop's own fields: this module is an extension of that loop)."""

    chain: Any
    dropping_input: bool
    records_dropped: int
    _current: list[Any] | None
    _restored_input: deque[tuple[InputGate, InputChannel, list[Any], Any]]
    _end_of_input: bool

    def _poll(self) -> tuple[InputGate, InputChannel, Any] | None: ...

    def _on_event(self, gate: InputGate, channel: InputChannel, event: Any) -> None: ...


#: Events dropped with the records (they belong to the in-flight data in the savepoint).
_DROPPED_EVENTS = (WatermarkEvent, WatermarkStatusEvent)


def start_dropping(task: DroppingTask) -> None:
    """The task took an unaligned stop's savepoint: from now on its input is dropped, and no
    processing-time timer fires (its timers are in the savepoint's keyed state)."""
    task.chain.quiesce_processing_time()
    task.dropping_input = True


def drop_input(task: DroppingTask) -> int:
    """Drop what the task holds and what is queued at its inputs (records, watermarks), handing
    every other event to the task; stop when its input just ended. Returns the records
    dropped."""
    dropped = 0
    current, task._current = task._current, None
    if current is not None:
        gate, channel, values, _, pos, restored = current
        dropped += len(values) - pos
        if not restored:
            gate.release(channel)
    while task._restored_input:
        dropped += len(task._restored_input.popleft()[2])
    ended = task._end_of_input  # after it, end-of-partition events still come this way
    while (polled := task._poll()) is not None:
        gate, channel, payload = polled
        if type(payload) is tuple:
            dropped += len(payload[0])
            gate.release(channel)
        elif not isinstance(payload, _DROPPED_EVENTS):
            task._on_event(gate, channel, payload)
            if task._end_of_input and not ended:
                break  # the task's loop ends its data now
    task.records_dropped += dropped
    return dropped
