"""What the task-side barrier handlers decide, and how the task executes it.

The handlers (:class:`~undertow.runtime.checkpoint.barrier_handler.BarrierHandler`,
:class:`~undertow.runtime.checkpoint.barrier_tracker.BarrierTracker`) are pure: each event returns
a list of the actions of this module, which the task executes on its mailbox thread, **in list
order**, before it takes the next input. Only the alternating handler (unaligned checkpoints,
aligned ones with a timeout) emits ``ScheduleAlignmentTimer``, ``InitInputsCheckpoint``,
``ChannelBarrierReceived``, ``ConvertToPriority`` and ``FinishInputsCheckpoint``.

Per checkpoint the alternating handler emits ``InitInputsCheckpoint`` at most once, always before
its ``TriggerCheckpoint``, and then exactly one ``FinishInputsCheckpoint`` or ``AbortCheckpoint``;
every channel of ``InitInputsCheckpoint.channels`` gets exactly one ``ChannelBarrierReceived``
before ``FinishInputsCheckpoint``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn, Protocol, TypeAlias

from undertow.core.errors import UndertowError
from undertow.runtime.checkpoint.barrier import CancelCheckpointMarker, CheckpointBarrier
from undertow.runtime.checkpoint.failure import CheckpointFailureReason


class BarrierProtocolViolation(UndertowError, RuntimeError):
    """An input delivered an event the network contract rules out (a bug, not a decline)."""


@dataclass(frozen=True, slots=True)
class ResumeChannels:
    """Send ResumeConsumption upstream for these channels (ascending)."""

    channels: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TriggerCheckpoint:
    """Snapshot the task and forward ``barrier`` (unaligned: as a priority event)."""

    barrier: CheckpointBarrier


@dataclass(frozen=True, slots=True)
class AbortCheckpoint:
    """Decline ``checkpoint_id`` to the coordinator and broadcast its CancelCheckpointMarker."""

    checkpoint_id: int
    reason: CheckpointFailureReason


@dataclass(frozen=True, slots=True)
class ScheduleAlignmentTimer:
    """Call ``on_alignment_timeout(checkpoint_id, now_ms)`` after ``delay_ms`` milliseconds."""

    checkpoint_id: int
    delay_ms: int


@dataclass(frozen=True, slots=True)
class InitInputsCheckpoint:
    """Start the channel state of ``barrier``'s checkpoint; capture the input of ``channels``."""

    barrier: CheckpointBarrier
    #: Open channels whose in-flight input is captured (ascending); empty unless unaligned.
    channels: tuple[int, ...]

    @property
    def checkpoint_id(self) -> int:
        return self.barrier.checkpoint_id


@dataclass(frozen=True, slots=True)
class ChannelBarrierReceived:
    """``channel``'s input for ``checkpoint_id`` is complete: stop persisting it."""

    channel: int
    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class ConvertToPriority:
    """Move the barrier announced with ``sequence_number`` to the head of ``channel``'s queue."""

    channel: int
    sequence_number: int


@dataclass(frozen=True, slots=True)
class FinishInputsCheckpoint:
    """All barriers of ``checkpoint_id`` are in: its input channel state is complete."""

    checkpoint_id: int


Action: TypeAlias = (
    ResumeChannels
    | TriggerCheckpoint
    | AbortCheckpoint
    | ScheduleAlignmentTimer
    | InitInputsCheckpoint
    | ChannelBarrierReceived
    | ConvertToPriority
    | FinishInputsCheckpoint
)


class BarrierHandling(Protocol):
    """What a subtask's checkpointer calls, whatever the checkpointing mode: the exactly-once
    handler and the at-least-once tracker both implement it, so the executor never asks which
    one it holds. Channels are numbered over all input gates, from 0. ``now_ms`` is wall-clock
    milliseconds (late-barrier checks, timer delays); an implementation that needs no clock
    ignores it. Every call returns the actions to execute, in order. Task thread only."""

    def on_barrier(
        self, channel: int, barrier: CheckpointBarrier, *, mark_blocked: bool = True,
        now_ms: int | None = None,
    ) -> list[Action]:  # fmt: skip
        """A barrier was taken from ``channel`` (in order, or as a priority event)."""
        ...

    def on_announcement(
        self, channel: int, barrier: CheckpointBarrier, sequence_number: int, *,
        now_ms: int | None = None,
    ) -> list[Action]:  # fmt: skip
        """The network queued the timeoutable ``barrier`` on ``channel`` and announced it."""
        ...

    def on_alignment_timeout(self, checkpoint_id: int, now_ms: int | None = None) -> list[Action]:
        """The timer of a :class:`ScheduleAlignmentTimer` fired."""
        ...

    def on_cancel_marker(self, channel: int, marker: CancelCheckpointMarker) -> list[Action]:
        """An upstream declined ``marker.checkpoint_id``."""
        ...

    def on_end_of_partition(self, channel: int, *, now_ms: int | None = None) -> list[Action]:
        """``channel`` finished: it counts as its barrier of every pending checkpoint."""
        ...


class InputChannels:
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

    @property
    def open_channels(self) -> tuple[int, ...]:
        return tuple(c for c in range(self.num_channels) if c not in self.finished)

    def check(self, channel: int, event: str, blocked: frozenset[int] = frozenset()) -> None:
        if not 0 <= channel < self.num_channels:
            problem = f"does not exist (the task has {self.num_channels} channels)"
        elif channel in self.finished:
            problem = "already delivered its end of partition"
        elif channel in blocked:
            problem = "is blocked after its aligned barrier and was not resumed"
        else:
            return
        self.violation(f"{event} on channel {channel}, which {problem}")

    def violation(self, detail: str) -> NoReturn:
        raise BarrierProtocolViolation(f"{self.task_name}: {detail}")
