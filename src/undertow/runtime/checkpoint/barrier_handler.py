"""Task-side barrier handling, sans I/O: aligned exactly-once checkpoints, at-least-once tracking.

The task's input processor feeds in the checkpoint events it takes from its input gate and
executes the typed actions that come out, in list order:

  * :class:`ResumeChannels`: send ResumeConsumption upstream. A producer blocks its subpartition
    once it has sent an aligned barrier (reference §1.2); nothing more arrives on that channel
    until the consumer resumes it.
  * :class:`TriggerCheckpoint`: every open channel delivered its barrier: take the snapshot and
    forward the barrier (reference §1.6).
  * :class:`AbortCheckpoint`: decline to the coordinator with ``reason``, abort the channel-state
    writer, broadcast ``CancelCheckpointMarker`` downstream.

:class:`BarrierHandler` is Flink's ``SingleCheckpointBarrierHandler`` (reference §1.4): the
controller keeps the bookkeeping (current id, last completed or cancelled id, aligned channels,
target count, open channels) and delegates what happens to the channels to an explicit state
machine of small immutable classes (§1.5): each state event returns the next state and speaks to
the controller only through :class:`Controller`. The aligned states exist so far
(:class:`WaitingForFirstBarrier`, :class:`CollectingBarriers`); the alternating and unaligned
states will subclass :class:`BarrierHandlerState` beside them (adding ``announcement_received``
and ``aligned_checkpoint_timeout``) and come in as ``initial_state``; the bookkeeping stays.
Rules: one checkpoint at a time; a newer barrier aborts the pending checkpoint with
CHECKPOINT_DECLINED_SUBSUMED; an obsolete barrier (older than the current id, or of the current id
once completed or cancelled) is dropped and its channel resumed at once (reference §11.2); a
cancellation marker newer than the current id, or naming the pending one, aborts with
CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER; end of partition counts as the channel's barrier for
the pending checkpoint and lowers the channel count of later ones (FLIP-147).

Invariants: ``blocked_channels`` are the channels whose aligned barrier of the pending checkpoint
was processed (empty when nothing is pending, never all open channels); each is resumed exactly
once, by the action list that triggers or aborts the checkpoint; ``last_completed_or_cancelled
<= current_checkpoint_id``, so a completed or aborted id never starts again.

:class:`BarrierTracker` is Flink's ``CheckpointBarrierTracker`` for AT_LEAST_ONCE (§1.3): it
counts barriers per checkpoint id and never blocks a channel.

Deviations from Flink: a cancellation marker newer than the pending checkpoint also aborts that
one (SUBSUMED; Flink forgets it silently and the coordinator waits for its timeout); likewise the
tracker declines the checkpoints it stops tracking (older than a completed one, or beyond 50);
end of partition never aborts (FLIP-147 is always on); no alignment metrics (no clock here); an
unaligned barrier is a protocol violation until the alternating states exist.

Threading: the task's mailbox thread calls everything; nothing locks, blocks or reads a clock.
Cost: O(channels) per event at worst (a resume), the tracker O(tracked ids) <= 50. An event on a
finished or blocked channel cannot happen under the network's contract and raises
:class:`BarrierProtocolViolation`. The module holds both handlers, hence its length.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeAlias

from undertow.core.errors import UndertowError
from undertow.runtime.checkpoint.barrier import CancelCheckpointMarker, CheckpointBarrier
from undertow.runtime.checkpoint.failure import CheckpointFailureReason

#: How many checkpoints with some but not all barriers the tracker remembers (Flink's value).
MAX_CHECKPOINTS_TO_TRACK = 50


class BarrierProtocolViolation(UndertowError, RuntimeError):
    """An input delivered an event the network contract rules out (a bug, not a decline)."""


# -- actions --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResumeChannels:
    """Send ResumeConsumption upstream for these channels (ascending)."""

    channels: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TriggerCheckpoint:
    """All barriers are in: snapshot the task and forward ``barrier``."""

    barrier: CheckpointBarrier


@dataclass(frozen=True, slots=True)
class AbortCheckpoint:
    """Decline ``checkpoint_id`` to the coordinator and broadcast its CancelCheckpointMarker."""

    checkpoint_id: int
    reason: CheckpointFailureReason


Action: TypeAlias = ResumeChannels | TriggerCheckpoint | AbortCheckpoint


# -- the state machine ----------------------------------------------------------------------------


class Controller(Protocol):
    """What a state may ask of the handler and tell it to do (Flink's ``Controller``)."""

    @property
    def pending_checkpoint_barrier(self) -> CheckpointBarrier | None: ...

    def all_barriers_received(self) -> bool: ...

    def trigger_global_checkpoint(self, barrier: CheckpointBarrier) -> None: ...

    def resume_consumption(self, channels: Iterable[int]) -> None: ...


@dataclass(frozen=True, slots=True)
class ChannelState:
    """The channel bookkeeping carried from state to state (Flink's ``ChannelState``).

    ``blocked``: channels whose aligned barrier was processed; their upstream waits for a resume.
    The alternating states will add the sequence numbers of announced barriers here.
    """

    blocked: frozenset[int] = frozenset()

    def block_channel(self, channel: int) -> ChannelState:
        return replace(self, blocked=self.blocked | {channel})

    def unblock_all_channels(self, controller: Controller) -> ChannelState:
        controller.resume_consumption(self.blocked)
        return replace(self, blocked=frozenset())

    def channel_finished(self, channel: int) -> ChannelState:
        return replace(self, blocked=self.blocked - {channel})


class BarrierHandlerState(ABC):
    """One state of the handler: immutable; every event returns the next state."""

    __slots__ = ()

    #: The channel bookkeeping this state carries (a dataclass field of every concrete state).
    channel_state: ChannelState

    @abstractmethod
    def barrier_received(
        self, controller: Controller, channel: int, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        """A barrier of the pending checkpoint arrived on ``channel`` (already counted)."""

    @abstractmethod
    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        """``channel`` finished; if a checkpoint is pending it counted as its barrier."""

    @abstractmethod
    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        """The pending checkpoint (or a newer one) was aborted."""


class AbstractAlignedBarrierHandlerState(BarrierHandlerState):
    """Shared behaviour of the aligned states: block on each barrier, trigger on the last one."""

    __slots__ = ()

    def barrier_received(
        self, controller: Controller, channel: int, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        if not barrier.options.needs_alignment:
            raise BarrierProtocolViolation(
                f"aligned barrier handler got a {barrier.options.alignment.name} barrier of "
                f"checkpoint {barrier.checkpoint_id} on channel {channel}"
            )
        channels = self.channel_state.block_channel(channel)
        if controller.all_barriers_received():
            return _trigger_global_checkpoint(controller, channels, barrier)
        return CollectingBarriers(channels)

    def end_of_partition_received(
        self, controller: Controller, channel: int
    ) -> BarrierHandlerState:
        channels = self.channel_state.channel_finished(channel)
        if controller.all_barriers_received():
            barrier = controller.pending_checkpoint_barrier
            assert barrier is not None, "all barriers received without a pending barrier"
            return _trigger_global_checkpoint(controller, channels, barrier)
        return self._with_channel_state(channels)

    def abort(self, controller: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return WaitingForFirstBarrier(self.channel_state.unblock_all_channels(controller))

    @abstractmethod
    def _with_channel_state(self, channels: ChannelState) -> BarrierHandlerState: ...


def _trigger_global_checkpoint(
    controller: Controller, channels: ChannelState, barrier: CheckpointBarrier
) -> BarrierHandlerState:
    controller.trigger_global_checkpoint(barrier)
    return WaitingForFirstBarrier(channels.unblock_all_channels(controller))


@dataclass(frozen=True, slots=True)
class WaitingForFirstBarrier(AbstractAlignedBarrierHandlerState):
    """No checkpoint is being aligned; no channel is blocked."""

    channel_state: ChannelState = ChannelState()

    def _with_channel_state(self, channels: ChannelState) -> BarrierHandlerState:
        return WaitingForFirstBarrier(channels)


@dataclass(frozen=True, slots=True)
class CollectingBarriers(AbstractAlignedBarrierHandlerState):
    """Some barriers of the pending checkpoint are in; their channels are blocked."""

    channel_state: ChannelState

    def _with_channel_state(self, channels: ChannelState) -> BarrierHandlerState:
        return CollectingBarriers(channels)


# -- the controller -------------------------------------------------------------------------------


class _Step:
    """The :class:`Controller` a state sees during one event; collects the actions it decides."""

    __slots__ = ("_handler", "actions")

    def __init__(self, handler: BarrierHandler) -> None:
        self._handler = handler
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


class _InputChannels:
    """Which channels exist and which finished; validates where an event came from."""

    __slots__ = ("finished", "num_channels", "task_name")

    def __init__(self, num_channels: int, task_name: str) -> None:
        if num_channels < 0:
            raise ValueError(f"{task_name}: negative number of channels {num_channels}")
        self.num_channels = num_channels
        self.task_name = task_name
        self.finished: set[int] = set()

    @property
    def num_open(self) -> int:
        return self.num_channels - len(self.finished)

    def check(self, channel: int, event: str, blocked: frozenset[int] = frozenset()) -> None:
        if not 0 <= channel < self.num_channels:
            problem = f"does not exist (the task has {self.num_channels} channels)"
        elif channel in self.finished:
            problem = "already delivered its end of partition"
        elif channel in blocked:
            problem = "is blocked after its aligned barrier and was not resumed"
        else:
            return
        raise BarrierProtocolViolation(
            f"{self.task_name}: {event} on channel {channel}, which {problem}"
        )


class BarrierHandler:
    """Exactly-once barrier handling for one subtask (Flink's ``SingleCheckpointBarrierHandler``).

    ``num_channels`` counts the channels of all input gates of the task, indexed from 0.
    """

    def __init__(
        self,
        num_channels: int,
        task_name: str,
        initial_state: BarrierHandlerState | None = None,
    ) -> None:
        self._channels = _InputChannels(num_channels, task_name)
        self._state: BarrierHandlerState = initial_state or WaitingForFirstBarrier()
        self._current_checkpoint_id = -1
        self._last_completed_or_cancelled = -1
        self._pending_barrier: CheckpointBarrier | None = None
        self._aligned: set[int] = set()
        self._target_channel_count = 0

    # -- events ----------------------------------------------------------------------------------

    def on_barrier(self, channel: int, barrier: CheckpointBarrier) -> list[Action]:
        self._channels.check(channel, f"barrier {barrier.checkpoint_id}", self.blocked_channels)
        step = _Step(self)
        barrier_id = barrier.checkpoint_id
        if barrier_id < self._current_checkpoint_id or (
            barrier_id == self._current_checkpoint_id and self.pending_checkpoint_id is None
        ):
            if barrier.blocks_upstream:  # obsolete, but its upstream blocked itself all the same
                step.resume_consumption((channel,))
            return step.actions
        if barrier_id > self._current_checkpoint_id:
            self._start_checkpoint(step, barrier)
        self._mark_aligned_and_transform(
            channel, lambda state: state.barrier_received(step, channel, barrier)
        )
        return step.actions

    def on_cancel_marker(self, channel: int, marker: CancelCheckpointMarker) -> list[Action]:
        self._channels.check(
            channel, f"cancel marker {marker.checkpoint_id}", self.blocked_channels
        )
        step = _Step(self)
        cancelled = marker.checkpoint_id
        pending = self.pending_checkpoint_id
        if cancelled > self._current_checkpoint_id:
            if pending is not None:
                self._abort(step, pending, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED)
            self._abort(step, cancelled, _ON_CANCELLATION)
        elif cancelled == pending:
            self._abort(step, cancelled, _ON_CANCELLATION)
        return step.actions

    def on_end_of_partition(self, channel: int) -> list[Action]:
        self._channels.check(channel, "end of partition", self.blocked_channels)
        self._channels.finished.add(channel)
        step = _Step(self)
        self._mark_aligned_and_transform(
            channel, lambda state: state.end_of_partition_received(step, channel)
        )
        return step.actions

    # -- bookkeeping -----------------------------------------------------------------------------

    def _start_checkpoint(self, step: _Step, barrier: CheckpointBarrier) -> None:
        pending = self.pending_checkpoint_id
        if pending is not None:
            self._abort(step, pending, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED)
        self._current_checkpoint_id = barrier.checkpoint_id
        self._pending_barrier = barrier
        self._aligned.clear()
        self._target_channel_count = self._channels.num_open

    def _mark_aligned_and_transform(
        self, channel: int, transition: Callable[[BarrierHandlerState], BarrierHandlerState]
    ) -> None:
        pending = self.pending_checkpoint_id is not None
        if pending:
            self._aligned.add(channel)
        self._state = transition(self._state)
        if pending and len(self._aligned) == self._target_channel_count:
            self._aligned.clear()
            self._last_completed_or_cancelled = self._current_checkpoint_id
            self._pending_barrier = None

    def _abort(self, step: _Step, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self._current_checkpoint_id = max(checkpoint_id, self._current_checkpoint_id)
        self._last_completed_or_cancelled = max(checkpoint_id, self._last_completed_or_cancelled)
        self._pending_barrier = None
        self._aligned.clear()
        self._target_channel_count = 0
        self._state = self._state.abort(step, checkpoint_id)
        step.actions.append(AbortCheckpoint(checkpoint_id, reason))

    # -- observers -------------------------------------------------------------------------------

    @property
    def state(self) -> BarrierHandlerState:
        return self._state

    @property
    def current_checkpoint_id(self) -> int:
        """The newest id seen in a barrier or cancellation marker, -1 before any."""
        return self._current_checkpoint_id

    @property
    def last_completed_or_cancelled(self) -> int:
        return self._last_completed_or_cancelled

    @property
    def pending_checkpoint_id(self) -> int | None:
        """The id being aligned, or None."""
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
        """Channels open when the pending checkpoint's first barrier arrived."""
        return self._target_channel_count

    @property
    def blocked_channels(self) -> frozenset[int]:
        return self._state.channel_state.blocked

    @property
    def num_open_channels(self) -> int:
        return self._channels.num_open

    def __repr__(self) -> str:
        return (
            f"BarrierHandler({self._channels.task_name!r}, {type(self._state).__name__}, "
            f"pending={self.pending_checkpoint_id}, aligned={sorted(self._aligned)}"
            f"/{self._target_channel_count}, open={self.num_open_channels})"
        )


_ON_CANCELLATION = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER


# -- at least once --------------------------------------------------------------------------------


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
        self._channels = _InputChannels(num_channels, task_name)
        self._pending: deque[_CheckpointBarrierCount] = deque()
        self._latest_pending_checkpoint_id = -1

    def on_barrier(self, channel: int, barrier: CheckpointBarrier) -> list[Action]:
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

    def on_end_of_partition(self, channel: int) -> list[Action]:
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
