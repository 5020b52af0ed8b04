"""An unaligned stop's drop: what the task holds and what is queued is dropped, events pass."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from undertow.runtime.task.events import EndOfPartitionEvent, WatermarkEvent
from undertow.runtime.task.unaligned_stop import drop_input


@dataclass
class Gate:
    released: list[str] = field(default_factory=list)

    def release(self, channel: str) -> None:
        self.released.append(channel)


@dataclass
class Batch:
    gate: Gate
    channel: str
    values: list[Any]
    position: int
    restored: bool


@dataclass
class Events:
    seen: list[Any] = field(default_factory=list)

    def on_event(self, gate: Gate, channel: str, event: Any) -> None:
        self.seen.append(event)


@dataclass
class Inputs:
    """A processor holding a batch (2 of 5 records processed), 3 restored records pending,
    and a queue with a batch, a watermark and the end of partition."""

    gate: Gate = field(default_factory=Gate)
    events: Events = field(default_factory=Events)
    dropping_input: bool = True
    records_dropped: int = 0
    end_of_input: bool = False
    queue: deque[Any] = field(default_factory=deque)
    held: Batch | None = None
    restored: list[list[int]] = field(default_factory=lambda: [[1, 2], [3]])

    def take_unprocessed(self) -> tuple[Any, int]:
        held, self.held = self.held, None
        restored, self.restored = sum(len(v) for v in self.restored), []
        return held, restored

    def poll(self) -> tuple[Gate, str, Any] | None:
        return (self.gate, "c1", self.queue.popleft()) if self.queue else None


def test_the_held_batch_restored_input_and_queued_records_are_dropped_events_pass() -> None:
    inputs = Inputs()
    inputs.held = Batch(inputs.gate, "c0", [1, 2, 3, 4, 5], 2, restored=False)
    inputs.queue.extend([([7, 8], None), WatermarkEvent(9), EndOfPartitionEvent()])
    assert drop_input(inputs) == 3 + 3 + 2  # held rest, restored, queued batch
    assert inputs.records_dropped == 8
    assert inputs.held is None and inputs.restored == []
    assert inputs.gate.released == ["c0", "c1"]  # live buffers go back to their pools
    assert inputs.events.seen == [EndOfPartitionEvent()]  # the watermark is dropped


def test_a_restored_batch_in_hand_has_no_buffer_to_release() -> None:
    inputs = Inputs(restored=[])
    inputs.held = Batch(inputs.gate, "c0", [1, 2], 0, restored=True)
    assert drop_input(inputs) == 2
    assert inputs.gate.released == []
