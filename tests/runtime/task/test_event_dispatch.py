"""The event dispatch of a subtask: each input event does what its kind says.

Gates and channels are the network's own (fed no data: the dispatcher only reads their
indices and marks them finished); the head, the checkpointer and the task's lifecycle are
recording fakes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from undertow.core.errors import StateError
from undertow.core.types import MAX_WATERMARK
from undertow.runtime.checkpoint.barrier import (
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.task.event_dispatch import EventDispatcher
from undertow.runtime.task.events import (
    EndOfData,
    EndOfPartitionEvent,
    WatermarkEvent,
    WatermarkStatusEvent,
)


@dataclass
class Output:
    statuses: list[bool] = field(default_factory=list)

    def emit_watermark_status(self, idle: bool) -> None:
        self.statuses.append(idle)


@dataclass
class Head:
    watermarks: list[int] = field(default_factory=list)
    output: Output = field(default_factory=Output)

    def process_watermark(self, watermark: int) -> None:
        self.watermarks.append(watermark)


@dataclass
class Checkpointer:
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def on_barrier(self, channel: Any, barrier: CheckpointBarrier) -> None:
        self.calls.append(("barrier", channel.name, barrier.checkpoint_id))

    def on_announcement(self, channel: Any, announcement: BarrierAnnouncement) -> None:
        self.calls.append(("announcement", channel.name, announcement.sequence_number))

    def on_cancel_marker(self, channel: Any, marker: CancelCheckpointMarker) -> None:
        self.calls.append(("cancel", channel.name, marker.checkpoint_id))

    def on_end_of_partition(self, channel: Any) -> None:
        self.calls.append(("end_of_partition", channel.name, None))


@dataclass
class Lifecycle:
    drain: bool = True
    ended_without_drain: int = 0
    finished: int = 0

    def drains(self) -> bool:
        return self.drain

    def input_ended_without_drain(self) -> None:
        self.ended_without_drain += 1
        self.drain = False

    def inputs_finished(self) -> None:
        self.finished += 1


def gate(name: str, channels: int, input_index: int = 1, credit: int = 2) -> InputGate:
    g = InputGate(name, input_index, 4)
    for i in range(channels):
        g.add_channel(i, f"{name}/{i}", credit)
    return g


def dispatcher(
    gates: list[InputGate],
    two_input: bool = False,
    checkpointer: Checkpointer | None = None,
    head: Head | None = None,
) -> tuple[EventDispatcher, Head, Lifecycle]:
    head, lifecycle = head if head is not None else Head(), Lifecycle()
    events = EventDispatcher(
        name="Map (1/2)", operator_name="Map", gates=gates, head=head, two_input=two_input,
        checkpointer=checkpointer,  # type: ignore[arg-type]
        lifecycle=lifecycle,
    )  # fmt: skip
    return events, head, lifecycle


def barrier(checkpoint_id: int) -> CheckpointBarrier:
    options = CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0, 0)
    return CheckpointBarrier(checkpoint_id, 0, options)


def test_the_head_gets_the_minimum_watermark_of_all_channels_once_it_advances() -> None:
    g = gate("G", 2)
    events, head, _ = dispatcher([g])
    events.on_event(g, g.channels[0], WatermarkEvent(10))
    assert head.watermarks == []  # channel 1 holds the minimum back
    events.on_event(g, g.channels[1], WatermarkEvent(5))
    events.on_event(g, g.channels[1], WatermarkEvent(20))
    assert head.watermarks == [5, 10]
    assert events.last_watermark == 10


def test_channels_of_several_gates_of_one_input_share_one_valve() -> None:
    a, b = gate("A", 1), gate("B", 1)
    events, head, _ = dispatcher([a, b])
    events.on_event(a, a.channels[0], WatermarkEvent(7))
    assert head.watermarks == []  # B's channel is the valve's second channel
    events.on_event(b, b.channels[0], WatermarkEvent(9))
    assert head.watermarks == [7]


def test_a_two_input_head_gets_the_minimum_over_both_inputs() -> None:
    left, right = gate("L", 1, input_index=1), gate("R", 1, input_index=2)
    events, head, _ = dispatcher([left, right], two_input=True)
    events.on_event(left, left.channels[0], WatermarkEvent(30))
    assert head.watermarks == []  # the other input is still at the minimum
    events.on_event(right, right.channels[0], WatermarkEvent(12))
    events.on_event(right, right.channels[0], WatermarkEvent(40))
    assert head.watermarks == [12, 30]


def test_idleness_of_every_channel_makes_the_head_idle_and_back() -> None:
    g = gate("G", 2)
    events, head, _ = dispatcher([g])
    events.on_event(g, g.channels[0], WatermarkStatusEvent(idle=True))
    assert head.output.statuses == []
    events.on_event(g, g.channels[1], WatermarkStatusEvent(idle=True))
    events.on_event(g, g.channels[0], WatermarkStatusEvent(idle=False))
    assert head.output.statuses == [True, False]


def test_checkpoint_events_go_to_the_checkpointer_with_their_channel() -> None:
    g = gate("G", 2)
    checkpointer = Checkpointer()
    events, _, _ = dispatcher([g], checkpointer=checkpointer)
    events.on_event(g, g.channels[1], barrier(3))
    events.on_event(g, g.channels[0], BarrierAnnouncement(barrier(4), 17))
    events.on_event(g, g.channels[0], CancelCheckpointMarker(4))
    assert checkpointer.calls == [
        ("barrier", "G/1", 3), ("announcement", "G/0", 17), ("cancel", "G/0", 4),
    ]  # fmt: skip


def test_a_barrier_without_a_checkpointer_is_an_error_naming_the_task() -> None:
    g = gate("G", 1)
    events, _, _ = dispatcher([g])
    with pytest.raises(RuntimeError, match=r"Map \(1/2\): checkpoint barrier"):
        events.on_event(g, g.channels[0], barrier(1))
    # announcements and cancel markers are dropped without one
    events.on_event(g, g.channels[0], BarrierAnnouncement(barrier(1), 0))
    events.on_event(g, g.channels[0], CancelCheckpointMarker(1))


def test_end_of_data_with_drain_ends_the_channels_watermark_at_the_maximum() -> None:
    g = gate("G", 2)
    events, head, lifecycle = dispatcher([g])
    events.on_event(g, g.channels[0], WatermarkEvent(5))
    events.on_event(g, g.channels[1], EndOfData(drain=True))
    assert head.watermarks == [5]  # channel 1 no longer holds the minimum back
    assert not events.all_data_ended
    events.on_event(g, g.channels[0], EndOfData(drain=True))
    assert head.watermarks == [5, MAX_WATERMARK]
    assert events.all_data_ended and lifecycle.ended_without_drain == 0


def test_end_of_data_without_drain_moves_no_watermark() -> None:
    g = gate("G", 2)
    events, head, lifecycle = dispatcher([g])
    events.on_event(g, g.channels[0], WatermarkEvent(5))
    events.on_event(g, g.channels[1], EndOfData(drain=False))
    events.on_event(g, g.channels[0], EndOfData(drain=False))
    assert lifecycle.ended_without_drain == 2
    assert head.watermarks == []  # no timer may fire after the savepoint's state was taken
    assert events.all_data_ended


def test_end_of_partition_after_end_of_data_counts_the_channel_once() -> None:
    a, b = gate("A", 1), gate("B", 1)
    checkpointer = Checkpointer()
    events, _, lifecycle = dispatcher([a, b], checkpointer=checkpointer)
    events.on_event(a, a.channels[0], EndOfData())
    events.on_event(a, a.channels[0], EndOfPartitionEvent())
    assert a.is_finished and not b.is_finished
    assert events.data_ended == {(id(a), 0)} and not events.all_data_ended
    assert lifecycle.finished == 0
    events.on_event(b, b.channels[0], EndOfPartitionEvent())
    assert events.all_data_ended and lifecycle.finished == 1
    assert [c[:2] for c in checkpointer.calls] == [
        ("end_of_partition", "A/0"), ("end_of_partition", "B/0"),
    ]  # fmt: skip


def test_unexpected_events_and_late_records_are_errors_naming_the_channel() -> None:
    g = gate("G", 1)
    events, _, _ = dispatcher([g])
    with pytest.raises(TypeError, match=r"Map \(1/2\): unexpected event 'what\?' on G/0"):
        events.on_event(g, g.channels[0], "what?")
    with pytest.raises(StateError, match="operator 'Map' received records on G/0 after EndOfData"):
        events.records_after_end_of_data(g.channels[0])
