"""At-least-once barrier counting (Flink's ``CheckpointBarrierTracker``, reference §1.3).

The tracker counts barriers per checkpoint id and never blocks a channel: a checkpoint triggers
once every channel that was open at its first barrier delivered its barrier or end of partition.
It emits only :class:`TriggerCheckpoint` and :class:`AbortCheckpoint`.

Deviation from Flink: the tracker declines the checkpoints it stops tracking (older than a
completed one, or beyond :data:`MAX_CHECKPOINTS_TO_TRACK`) instead of forgetting them silently.

Threading: the task's mailbox thread calls everything. Cost: O(tracked ids) <= 50 per event.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from undertow.runtime.checkpoint.barrier import CancelCheckpointMarker, CheckpointBarrier
from undertow.runtime.checkpoint.barrier_actions import (
    AbortCheckpoint,
    Action,
    InputChannels,
    TriggerCheckpoint,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason

#: How many checkpoints with some but not all barriers the tracker remembers (Flink's value).
MAX_CHECKPOINTS_TO_TRACK = 50


@dataclass(slots=True)
class _CheckpointBarrierCount:
    checkpoint_id: int
    barrier: CheckpointBarrier | None  # None if a cancellation marker came first
    target_channel_count: int
    aligned_channels: set[int] = field(default_factory=set)
    aborted: bool = False

    @property
    def is_complete(self) -> bool:
        return len(self.aligned_channels) >= self.target_channel_count


class BarrierTracker:
    """At-least-once barrier counting for one subtask (Flink's ``CheckpointBarrierTracker``).

    Tracks the checkpoints that have some but not all barriers, oldest first, at most
    :data:`MAX_CHECKPOINTS_TO_TRACK`. A checkpoint triggers once every channel that was open at
    its first barrier delivered its barrier or end of partition; older tracked ones are then
    aborted as subsumed. Barriers of ids at or below the newest tracked id that are no longer
    tracked are ignored, so an aborted or completed id never triggers.
    """

    def __init__(self, num_channels: int, task_name: str = "") -> None:
        self._channels = InputChannels(num_channels, task_name)
        self._pending: deque[_CheckpointBarrierCount] = deque()
        self._latest_pending_checkpoint_id = -1

    def on_barrier(
        self,
        channel: int,
        barrier: CheckpointBarrier,
        *,
        mark_blocked: bool = True,
        now_ms: int | None = None,
    ) -> list[Action]:
        """Count ``barrier``; ``mark_blocked`` and ``now_ms`` are accepted for the handler's
        signature and ignored (at-least-once barriers never block, nothing times out)."""
        self._channels.check(channel, f"barrier {barrier.checkpoint_id}")
        actions: list[Action] = []
        barrier_id = barrier.checkpoint_id
        count = next((c for c in self._pending if c.checkpoint_id == barrier_id), None)
        if count is None:
            if barrier_id <= self._latest_pending_checkpoint_id:
                return actions  # no checkpoint of that id can succeed any more
            self._latest_pending_checkpoint_id = barrier_id
            count = _CheckpointBarrierCount(barrier_id, barrier, self._channels.num_open)
            self._pending.append(count)
            if len(self._pending) > MAX_CHECKPOINTS_TO_TRACK:
                self._drop(self._pending.popleft(), actions, _SUBSUMED)
        count.aligned_channels.add(channel)
        if count.is_complete:
            self._complete(count, actions)
        return actions

    def on_announcement(
        self, channel: int, barrier: CheckpointBarrier, sequence_number: int, *,
        now_ms: int | None = None,
    ) -> list[Action]:  # fmt: skip
        """Ignored, as by Flink's tracker: an at-least-once barrier is counted when it is
        taken, and only exactly-once barriers with a timeout are announced at all."""
        self._channels.check(channel, f"announcement of barrier {barrier.checkpoint_id}")
        return []

    def on_alignment_timeout(self, checkpoint_id: int, now_ms: int | None = None) -> list[Action]:
        """Nothing to do: the tracker never aligns, so it never schedules an alignment timer."""
        return []

    def on_cancel_marker(self, channel: int, marker: CancelCheckpointMarker) -> list[Action]:
        self._channels.check(channel, f"cancel marker {marker.checkpoint_id}")
        actions: list[Action] = []
        cancelled = marker.checkpoint_id
        while self._pending and self._pending[0].checkpoint_id < cancelled:
            self._drop(self._pending.popleft(), actions, _ON_CANCELLATION)
        if self._pending and self._pending[0].checkpoint_id == cancelled:
            count = self._pending[0]
        elif cancelled > self._latest_pending_checkpoint_id:
            self._latest_pending_checkpoint_id = cancelled
            count = _CheckpointBarrierCount(cancelled, None, self._channels.num_open)
            self._pending.appendleft(count)
        else:
            return actions  # a trailing marker of a checkpoint that is already gone
        if not count.aborted:
            count.aborted = True
            actions.append(AbortCheckpoint(cancelled, _ON_CANCELLATION))
        count.aligned_channels.add(channel)
        if count.is_complete:
            self._pending.popleft()  # every channel has spoken; forget it
        return actions

    def on_end_of_partition(self, channel: int, *, now_ms: int | None = None) -> list[Action]:
        self._channels.check(channel, "end of partition")
        self._channels.finished.add(channel)
        actions: list[Action] = []
        for count in self._pending:
            count.aligned_channels.add(channel)
        newest_complete = next((c for c in reversed(self._pending) if c.is_complete), None)
        if newest_complete is not None:
            self._complete(newest_complete, actions)
        return actions

    def _complete(self, count: _CheckpointBarrierCount, actions: list[Action]) -> None:
        while (oldest := self._pending.popleft()) is not count:
            self._drop(oldest, actions, _SUBSUMED)
        if not count.aborted:
            assert count.barrier is not None, "a checkpoint started by a cancel marker is aborted"
            actions.append(TriggerCheckpoint(count.barrier))

    @staticmethod
    def _drop(
        count: _CheckpointBarrierCount, actions: list[Action], reason: CheckpointFailureReason
    ) -> None:
        if not count.aborted:
            count.aborted = True
            actions.append(AbortCheckpoint(count.checkpoint_id, reason))

    @property
    def pending_checkpoint_ids(self) -> tuple[int, ...]:
        """Tracked checkpoints, oldest first (aborted ones stay until all channels spoke)."""
        return tuple(c.checkpoint_id for c in self._pending)

    @property
    def latest_pending_checkpoint_id(self) -> int:
        return self._latest_pending_checkpoint_id

    @property
    def num_open_channels(self) -> int:
        return self._channels.num_open


_SUBSUMED = CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
_ON_CANCELLATION = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER
