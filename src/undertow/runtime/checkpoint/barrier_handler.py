"""Task-side barrier handling for exactly-once checkpoints, sans I/O (reference §1.3-1.8).

Invariants: ``blocked_channels`` are channels whose aligned barrier of the pending checkpoint was
processed (empty when nothing is pending, never all open channels); each is resumed exactly once,
by the action list that completes or aborts the checkpoint; ``last_completed_or_cancelled <=
current_checkpoint_id``, so a completed or aborted id never starts again; a checkpoint is
triggered at most once; ``capturing_channels`` is empty unless an unaligned checkpoint is
collecting its barriers.

The module re-exports the actions, states and :class:`BarrierTracker` (at-least-once) so that
callers import everything barrier-related from here.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

from undertow.runtime.checkpoint.alternating_states import (
    AlternatingCollectingBarriers,
    AlternatingCollectingBarriersUnaligned,
    AlternatingWaitingForFirstBarrier,
    AlternatingWaitingForFirstBarrierUnaligned,
)
from undertow.runtime.checkpoint.barrier import CancelCheckpointMarker, CheckpointBarrier
from undertow.runtime.checkpoint.barrier_actions import (
    AbortCheckpoint,
    Action,
    BarrierProtocolViolation,
    ChannelBarrierReceived,
    ConvertToPriority,
    FinishInputsCheckpoint,
    InitInputsCheckpoint,
    InputChannels,
    ResumeChannels,
    ScheduleAlignmentTimer,
    TriggerCheckpoint,
)
from undertow.runtime.checkpoint.barrier_states import (
    AbstractAlignedBarrierHandlerState,
    AlignmentChannels,
    BarrierHandlerState,
    CollectingBarriers,
    Controller,
    WaitingForFirstBarrier,
)
from undertow.runtime.checkpoint.barrier_tracker import MAX_CHECKPOINTS_TO_TRACK, BarrierTracker
from undertow.runtime.checkpoint.failure import CheckpointFailureReason

__all__ = [
    "MAX_CHECKPOINTS_TO_TRACK",
    "AbortCheckpoint",
    "AbstractAlignedBarrierHandlerState",
    "Action",
    "AlignmentChannels",
    "AlternatingCollectingBarriers",
    "AlternatingCollectingBarriersUnaligned",
    "AlternatingWaitingForFirstBarrier",
    "AlternatingWaitingForFirstBarrierUnaligned",
    "BarrierHandler",
    "BarrierHandlerState",
    "BarrierProtocolViolation",
    "BarrierTracker",
    "ChannelBarrierReceived",
    "CollectingBarriers",
    "Controller",
    "ConvertToPriority",
    "FinishInputsCheckpoint",
    "InitInputsCheckpoint",
    "ResumeChannels",
    "ScheduleAlignmentTimer",
    "TriggerCheckpoint",
    "WaitingForFirstBarrier",
]

_SUBSUMED = CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
_ON_CANCELLATION = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER


class _Step:
    """The :class:`Controller` a state sees during one event; collects the actions it decides."""

    __slots__ = ("_handler", "_now_ms", "actions")

    def __init__(self, handler: BarrierHandler, now_ms: int | None) -> None:
        self._handler = handler
        self._now_ms = now_ms
        self.actions: list[Action] = []

    @property
    def pending_checkpoint_barrier(self) -> CheckpointBarrier | None:
        return self._handler.pending_checkpoint_barrier

    def all_barriers_received(self) -> bool:
        handler = self._handler
        return (
            handler.pending_checkpoint_id is not None
            and len(handler.aligned_channels) == handler.target_channel_count
        )

    def trigger_global_checkpoint(self, barrier: CheckpointBarrier) -> None:
        self.actions.append(TriggerCheckpoint(barrier))

    def resume_consumption(self, channels: Iterable[int]) -> None:
        ordered = tuple(sorted(channels))
        if ordered:
            self.actions.append(ResumeChannels(ordered))

    def init_inputs_checkpoint(self, barrier: CheckpointBarrier) -> None:
        handler = self._handler
        channels = handler._channels.open_channels if barrier.options.is_unaligned else ()
        handler._inputs_checkpoint = barrier.checkpoint_id
        handler._capturing = set(channels)
        self.actions.append(InitInputsCheckpoint(barrier, channels))

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        for channel in sorted(self._handler.aligned_channels):
            self.channel_barrier_received(channel)

    def channel_barrier_received(self, channel: int) -> None:
        handler = self._handler
        if channel in handler._capturing:
            handler._capturing.remove(channel)
            self.actions.append(ChannelBarrierReceived(channel, handler.current_checkpoint_id))

    def convert_to_priority(self, channel: int, sequence_number: int) -> None:
        self.actions.append(ConvertToPriority(channel, sequence_number))

    def is_timed_out(self, barrier: CheckpointBarrier) -> bool:
        options = barrier.options
        return (
            self._now_ms is not None
            and options.is_timeoutable
            and barrier.checkpoint_id <= self._handler.current_checkpoint_id
            and options.aligned_checkpoint_timeout < self._now_ms - barrier.timestamp
        )

    def schedule_alignment_timer(self, barrier: CheckpointBarrier) -> None:
        timeout = barrier.options.aligned_checkpoint_timeout
        elapsed = 0 if self._now_ms is None else self._now_ms - barrier.timestamp
        self.actions.append(
            ScheduleAlignmentTimer(barrier.checkpoint_id, max(timeout - elapsed, 0))
        )


class BarrierHandler:
    """Exactly-once barrier handling for one subtask (Flink's ``SingleCheckpointBarrierHandler``).

    ``num_channels`` counts the channels of all input gates of the task, indexed from 0. The
    constructor builds the aligned-only handler unless given another ``initial_state``;
    ``alternating`` makes the handler schedule alignment timers for timeoutable barriers.
    """

    def __init__(
        self,
        num_channels: int,
        task_name: str,
        initial_state: BarrierHandlerState | None = None,
        *,
        alternating: bool = False,
    ) -> None:
        self._channels = InputChannels(num_channels, task_name)
        self._state: BarrierHandlerState = initial_state or WaitingForFirstBarrier()
        self._alternating = alternating
        self._current_checkpoint_id = -1
        self._last_completed_or_cancelled = -1
        self._pending_barrier: CheckpointBarrier | None = None
        self._aligned: set[int] = set()
        self._target_channel_count = 0
        #: Checkpoint whose InitInputsCheckpoint was emitted, until it finishes or aborts.
        self._inputs_checkpoint: int | None = None
        #: Channels still capturing input for it (unaligned only).
        self._capturing: set[int] = set()

    @classmethod
    def aligned(cls, num_channels: int, task_name: str) -> BarrierHandler:
        """Aligned checkpoints only (unaligned checkpoints disabled)."""
        return cls(num_channels, task_name)

    @classmethod
    def alternating(cls, num_channels: int, task_name: str) -> BarrierHandler:
        """Unaligned checkpoints enabled: aligned barriers align (switching to unaligned when
        their timeout passes), unaligned barriers trigger at once."""
        return cls(num_channels, task_name, AlternatingWaitingForFirstBarrier(), alternating=True)

    @classmethod
    def unaligned(cls, num_channels: int, task_name: str) -> BarrierHandler:
        """Every checkpoint unaligned, even one whose barriers are aligned (for tests)."""
        return cls(num_channels, task_name, AlternatingWaitingForFirstBarrierUnaligned(False))

    # -- events ----------------------------------------------------------------------------------

    def on_barrier(
        self,
        channel: int,
        barrier: CheckpointBarrier,
        *,
        mark_blocked: bool = True,
        now_ms: int | None = None,
    ) -> list[Action]:
        """A barrier was taken from ``channel`` (in order, or as a priority event).

        ``mark_blocked``: the barrier came through the network, so an aligned one left its
        upstream blocked (False for source inputs triggered by RPC). ``now_ms``: wall-clock
        milliseconds, for the late-barrier timeout check and the alignment timer's delay.
        """
        checkpoint_id = barrier.checkpoint_id
        self._channels.check(channel, f"barrier {checkpoint_id}", self.blocked_channels)
        step = _Step(self, now_ms)
        if self._is_obsolete(checkpoint_id):
            if barrier.blocks_upstream and mark_blocked:  # its upstream blocked itself all the same
                step.resume_consumption((channel,))
            return step.actions
        if checkpoint_id > self._current_checkpoint_id:
            self._start_checkpoint(step, barrier)
        elif channel in self._aligned:
            self._channels.violation(f"second barrier {checkpoint_id} on channel {channel}")
        self._mark_aligned_and_transform(
            step,
            channel,
            lambda state: state.barrier_received(step, channel, barrier, mark_blocked),
        )
        return step.actions

    def on_announcement(
        self,
        channel: int,
        barrier: CheckpointBarrier,
        sequence_number: int,
        *,
        now_ms: int | None = None,
    ) -> list[Action]:
        """The network queued ``barrier`` (timeoutable, aligned) on ``channel`` with
        ``sequence_number`` and announced it as a priority event (reference §1.8)."""
        checkpoint_id = barrier.checkpoint_id
        event = f"announcement of barrier {checkpoint_id}"
        self._channels.check(channel, event, self.blocked_channels)
        if not barrier.options.needs_alignment:
            self._channels.violation(f"{event} on channel {channel}, which is not aligned")
        step = _Step(self, now_ms)
        if checkpoint_id > self._current_checkpoint_id:
            self._start_checkpoint(step, barrier)
        elif self._is_obsolete(checkpoint_id):
            return step.actions
        elif channel in self._aligned:
            self._channels.violation(f"{event} on channel {channel} after the barrier itself")
        self._state = self._state.announcement_received(step, channel, sequence_number)
        return step.actions

    def on_alignment_timeout(self, checkpoint_id: int, now_ms: int | None = None) -> list[Action]:
        """A timer of :class:`ScheduleAlignmentTimer` fired (the timer is the clock here;
        ``now_ms`` is accepted for uniform call sites)."""
        step = _Step(self, now_ms)
        barrier = self._pending_barrier
        if checkpoint_id != self.pending_checkpoint_id or barrier is None:
            return step.actions  # completed, aborted or subsumed in the meantime
        if not barrier.options.is_timeoutable:
            self._channels.violation(
                f"alignment timeout of checkpoint {checkpoint_id} without timer"
            )
        self._state = self._state.aligned_checkpoint_timeout(step, barrier)
        return step.actions

    def on_cancel_marker(self, channel: int, marker: CancelCheckpointMarker) -> list[Action]:
        """An upstream declined ``marker.checkpoint_id``."""
        cancelled = marker.checkpoint_id
        # A marker older than the current checkpoint may still be queued on a blocked channel:
        # the channel's barrier was converted to priority and overtook it (reference §1.8).
        old = cancelled < self._current_checkpoint_id
        blocked = frozenset() if old else self.blocked_channels
        self._channels.check(channel, f"cancel marker {cancelled}", blocked)
        step = _Step(self, None)
        pending = self.pending_checkpoint_id
        if cancelled > self._current_checkpoint_id:
            if pending is not None:
                self._abort(step, pending, _SUBSUMED)
            self._abort(step, cancelled, _ON_CANCELLATION)
        elif cancelled == pending:
            self._abort(step, cancelled, _ON_CANCELLATION)
        return step.actions

    def on_end_of_partition(self, channel: int, *, now_ms: int | None = None) -> list[Action]:
        """``channel`` finished: it counts as its barrier of the pending checkpoint."""
        self._channels.check(channel, "end of partition", self.blocked_channels)
        self._channels.finished.add(channel)
        step = _Step(self, now_ms)
        self._mark_aligned_and_transform(
            step, channel, lambda state: state.end_of_partition_received(step, channel)
        )
        return step.actions

    # -- bookkeeping -----------------------------------------------------------------------------

    def _is_obsolete(self, checkpoint_id: int) -> bool:
        current = self._current_checkpoint_id
        return checkpoint_id < current or (
            checkpoint_id == current and self.pending_checkpoint_id is None
        )

    def _start_checkpoint(self, step: _Step, barrier: CheckpointBarrier) -> None:
        pending = self.pending_checkpoint_id
        if pending is not None:
            self._abort(step, pending, _SUBSUMED)
        self._current_checkpoint_id = barrier.checkpoint_id
        self._pending_barrier = barrier
        self._aligned.clear()
        self._target_channel_count = self._channels.num_open
        if self._alternating and barrier.options.is_timeoutable:
            step.schedule_alignment_timer(barrier)

    def _mark_aligned_and_transform(
        self,
        step: _Step,
        channel: int,
        transition: Callable[[BarrierHandlerState], BarrierHandlerState],
    ) -> None:
        pending = self.pending_checkpoint_id is not None
        if pending:
            self._aligned.add(channel)
        self._state = transition(self._state)
        if pending and len(self._aligned) == self._target_channel_count:
            self._aligned.clear()
            self._last_completed_or_cancelled = self._current_checkpoint_id
            self._pending_barrier = None
            if self._inputs_checkpoint == self._current_checkpoint_id:
                assert not self._capturing, f"{self!r}: still capturing {self._capturing}"
                step.actions.append(FinishInputsCheckpoint(self._current_checkpoint_id))
                self._inputs_checkpoint = None

    def _abort(self, step: _Step, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self._current_checkpoint_id = max(checkpoint_id, self._current_checkpoint_id)
        self._last_completed_or_cancelled = max(checkpoint_id, self._last_completed_or_cancelled)
        self._pending_barrier = None
        self._aligned.clear()
        self._target_channel_count = 0
        self._state = self._state.abort(step, checkpoint_id)
        if self._inputs_checkpoint is not None and self._inputs_checkpoint <= checkpoint_id:
            self._inputs_checkpoint = None
            self._capturing.clear()
        step.actions.append(AbortCheckpoint(checkpoint_id, reason))

    # -- observers -------------------------------------------------------------------------------

    @property
    def state(self) -> BarrierHandlerState:
        return self._state

    @property
    def is_alternating(self) -> bool:
        return self._alternating

    @property
    def current_checkpoint_id(self) -> int:
        """The newest id seen in a barrier, announcement or cancellation marker, -1 before."""
        return self._current_checkpoint_id

    @property
    def last_completed_or_cancelled(self) -> int:
        return self._last_completed_or_cancelled

    @property
    def pending_checkpoint_id(self) -> int | None:
        """The id being aligned (or collected, if unaligned), or None."""
        current = self._current_checkpoint_id
        return current if current != self._last_completed_or_cancelled else None

    @property
    def pending_checkpoint_barrier(self) -> CheckpointBarrier | None:
        return self._pending_barrier

    @property
    def aligned_channels(self) -> frozenset[int]:
        """Channels that delivered the pending checkpoint's barrier or their end of partition."""
        return frozenset(self._aligned)

    @property
    def target_channel_count(self) -> int:
        """Channels open when the pending checkpoint started."""
        return self._target_channel_count

    @property
    def blocked_channels(self) -> frozenset[int]:
        return self._state.channel_state.blocked

    @property
    def capturing_channels(self) -> frozenset[int]:
        """Channels whose input the task persists for the unaligned pending checkpoint."""
        return frozenset(self._capturing)

    @property
    def num_open_channels(self) -> int:
        return self._channels.num_open

    def __repr__(self) -> str:
        return (
            f"BarrierHandler({self._channels.task_name!r}, {type(self._state).__name__}, "
            f"pending={self.pending_checkpoint_id}, aligned={sorted(self._aligned)}"
            f"/{self._target_channel_count}, open={self.num_open_channels})"
        )


def __getattr__(name: str) -> object:
    """``ChannelState``, the name before it was renamed to keep class names unique: still
    importable from here, with a :class:`DeprecationWarning`."""
    if name == "ChannelState":
        warnings.warn(
            f"{__name__}.ChannelState is now AlignmentChannels", DeprecationWarning, stacklevel=2
        )
        return AlignmentChannels
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
