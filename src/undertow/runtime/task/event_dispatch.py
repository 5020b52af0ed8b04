"""Event dispatch of a subtask: what each event from an input channel does.

Watermarks and watermark status go through one watermark valve per logical input (two for
a two-input head) and on to the head; checkpoint barriers, announcements and cancel markers
go to the checkpointer; ``EndOfData`` and ``EndOfPartitionEvent`` end a channel's data (the
task's data ends once every channel's did); ``EndOfChannelStateEvent`` ends a channel's
re-emitted in-flight data after a rescale.

Threading: the task's loop thread only (called by its input processor). Lifecycle: built
with its task; the counts of channels are fixed at construction.
Invariant: after a stop without drain (``EndOfData(drain=False)``) no watermark moves, so no
timer fires after the savepoint's state was taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from undertow.core.errors import StateError
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.checkpoint.barrier import (
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
)
from undertow.runtime.checkpoint.channel_recovery import UpstreamRecoveryTracker
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.task.checkpointing import SubtaskCheckpointer
from undertow.runtime.task.events import (
    EndOfChannelStateEvent,
    EndOfData,
    EndOfPartitionEvent,
    WatermarkEvent,
    WatermarkStatusEvent,
)
from undertow.runtime.task.watermark_valve import StatusWatermarkValve


class LifecycleEvents(Protocol):
    """What input events tell the task's lifecycle (implemented by ``StreamTask``)."""

    def drains(self) -> bool:
        """Whether the data ends with drain (not after ``EndOfData(drain=False)``)."""

    def input_ended_without_drain(self) -> None:
        """An input channel sent ``EndOfData(drain=False)``."""

    def inputs_finished(self) -> None:
        """Every input partition ended (each channel delivered ``EndOfPartitionEvent``)."""


class EventDispatcher:
    """Dispatches the events of one subtask's input channels (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        operator_name: str,
        gates: Sequence[InputGate],
        head: Any,
        two_input: bool,
        checkpointer: SubtaskCheckpointer | None,
        lifecycle: LifecycleEvents,
        recovery: UpstreamRecoveryTracker | None = None,
    ) -> None:
        self.name = name
        self.operator_name = operator_name
        self.gates = list(gates)
        self.head = head
        self.two_input = two_input
        self.checkpointer = checkpointer
        self.lifecycle = lifecycle
        self._valves: dict[int, StatusWatermarkValve] = {}
        self._channel_offset: dict[int, int] = {}
        counts: dict[int, int] = {}
        for gate in gates:
            key = gate.input_index if two_input else 1
            self._channel_offset[id(gate)] = counts.get(key, 0)
            counts[key] = counts.get(key, 0) + len(gate.channels)
        for key, count in counts.items():
            self._valves[key] = StatusWatermarkValve(count)
        self._input_watermarks = {key: MIN_TIMESTAMP for key in counts}
        #: The last watermark passed on to the head.
        self.last_watermark = MIN_TIMESTAMP
        self._idle = False
        self._num_channels = sum(len(g.channels) for g in gates)
        #: (id(gate), channel index) of channels that delivered EndOfData or end of partition.
        self.data_ended: set[tuple[int, int]] = set()
        #: Every channel ended its data (never true for a task without inputs).
        self.all_data_ended = False
        #: Rescaled restore: the gates that receive re-emitted data, and what happens once
        #: every one of them ended it (the JobMaster triggers no checkpoint before: the input
        #: processor drains it into its restored input meanwhile, and a checkpoint then
        #: persists what is unprocessed as recovered input, ahead of all live data).
        self.recovery = recovery if recovery is not None else UpstreamRecoveryTracker()

    def on_event(self, gate: InputGate, channel: InputChannel, event: Any) -> None:
        key = gate.input_index if self.two_input else 1
        valve = self._valves[key]
        index = self._channel_offset[id(gate)] + channel.index
        if type(event) is WatermarkEvent:
            self._on_valve_watermark(key, valve.input_watermark(event.timestamp, index))
        elif type(event) is WatermarkStatusEvent:
            self._on_valve_status(key, *valve.input_idle(index, event.idle))
        elif type(event) is CheckpointBarrier:
            if self.checkpointer is None:
                raise RuntimeError(f"{self.name}: checkpoint barrier without a checkpointer")
            self.checkpointer.on_barrier(channel, event)
        elif type(event) is BarrierAnnouncement:
            if self.checkpointer is not None:
                self.checkpointer.on_announcement(channel, event)
        elif type(event) is CancelCheckpointMarker:
            if self.checkpointer is not None:
                self.checkpointer.on_cancel_marker(channel, event)
        elif type(event) is EndOfData:
            if not event.drain:
                self.lifecycle.input_ended_without_drain()
            self._on_channel_data_ended(gate, channel, key, valve, index)
        elif type(event) is EndOfChannelStateEvent:
            self.on_end_of_channel_state(gate, channel)
        elif type(event) is EndOfPartitionEvent:
            gate.mark_finished(channel)
            if self.checkpointer is not None:
                self.checkpointer.on_end_of_partition(channel)
            self._on_channel_data_ended(gate, channel, key, valve, index)
            if all(g.is_finished for g in self.gates):
                self.lifecycle.inputs_finished()
        else:
            raise TypeError(f"{self.name}: unexpected event {event!r} on {channel.name}")

    def on_end_of_channel_state(self, gate: InputGate, channel: InputChannel) -> None:
        """A producer finished re-emitting on ``channel`` (which is now blocked); once every
        channel of the gate did, resume them all: live data may flow."""
        self.recovery.end_of_channel_state(self.gates.index(gate), gate, channel)

    def records_after_end_of_data(self, channel: InputChannel) -> None:
        """Records arrived on a channel that ended its data: a producer's bug."""
        raise StateError(
            f"{self.name}: operator '{self.operator_name}' received records on {channel.name} "
            "after EndOfData (its producer sent records after finishing)"
        )

    def _on_channel_data_ended(
        self, gate: InputGate, channel: InputChannel, key: int, valve: StatusWatermarkValve,
        index: int,
    ) -> None:  # fmt: skip
        """No more records on ``channel``: its watermark goes to MAX; when every channel
        ended, the task's data ended. After a stop without drain no watermark moves (timers
        must not fire after the savepoint's state)."""
        ended = (id(gate), channel.index)
        if ended in self.data_ended:
            return  # EndOfData, then its end of partition
        self.data_ended.add(ended)
        if self.lifecycle.drains():
            self._on_valve_status(key, *valve.end_of_input(index))
        if len(self.data_ended) == self._num_channels:
            self.all_data_ended = True

    def _on_valve_watermark(self, key: int, watermark: int | None) -> None:
        if watermark is None:
            return
        self._input_watermarks[key] = watermark
        combined = min(self._input_watermarks.values())
        if combined > self.last_watermark:
            self.last_watermark = combined
            self.head.process_watermark(combined)

    def _on_valve_status(self, key: int, watermark: int | None, idle: bool | None) -> None:
        """Becoming active: status first, then the watermark; becoming idle: the reverse."""
        if idle is False:
            self._on_valve_idle(idle)
        self._on_valve_watermark(key, watermark)
        if idle is True:
            self._on_valve_idle(idle)

    def _on_valve_idle(self, idle: bool | None) -> None:
        if idle is None or idle == self._idle:
            return
        self._idle = idle
        self.head.output.emit_watermark_status(idle)
