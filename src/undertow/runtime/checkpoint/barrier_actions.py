"""What the task-side barrier handlers decide, and how the task executes it.

The handlers (:class:`~undertow.runtime.checkpoint.barrier_handler.BarrierHandler`,
:class:`~undertow.runtime.checkpoint.barrier_tracker.BarrierTracker`) are pure: each event returns
a list of the actions below, which the task executes on its mailbox thread, **in list order**,
before it takes the next input. Only the alternating handler (unaligned checkpoints, aligned ones
with a timeout) emits the last five.

* :class:`ResumeChannels`: send ResumeConsumption upstream for each channel. A producer blocks its
  subpartition once it has sent an aligned barrier (reference §1.2).
* :class:`TriggerCheckpoint`: the atomic step of reference §1.6 — prepare the snapshot, broadcast
  ``barrier`` (as a priority event if ``barrier.priority``, i.e. for an unaligned checkpoint;
  blocking downstream if ``barrier.blocks_upstream``), snapshot operator state synchronously
  together with the channel-state write result of the checkpoint, then write and acknowledge.
* :class:`AbortCheckpoint`: decline to the coordinator with ``reason``, abort the channel-state
  writer for the id (this ends any input capture of it), broadcast ``CancelCheckpointMarker``.
* :class:`ScheduleAlignmentTimer`: register a processing-time timer (a mail) that calls
  ``handler.on_alignment_timeout(checkpoint_id, now_ms)`` after ``delay_ms``. Timers are never
  cancelled: the handler ignores one that fires for a checkpoint no longer pending.
* :class:`InitInputsCheckpoint`: start the channel state of the checkpoint (reference §1.6, §3.1).
  If ``barrier.options.is_unaligned``: ``channel_state_writer.start(id)``; then for every channel in
  ``channels`` write the deserializer's leftover bytes and every queued data buffer that comes
  *before* that channel's barrier (by sequence number if the barrier is already queued, else all
  of them), and from now on persist each data buffer arriving on the channel, until the channel
  gets its :class:`ChannelBarrierReceived`. If only ``barrier.options.is_timeoutable``: just
  ``start(id)`` (the output side may still need it, §1.9); otherwise nothing. ``channels`` is
  empty unless the checkpoint is unaligned.
* :class:`ChannelBarrierReceived`: the channel delivered its barrier (or its end of partition):
  stop persisting its input for the checkpoint. Emitted right after :class:`InitInputsCheckpoint`
  for channels whose barrier was already processed, which thus contribute only their queue.
* :class:`ConvertToPriority`: take the barrier with ``sequence_number`` out of the middle of the
  channel's queue and put it at the head, as a priority event (reference §1.8); the task then
  feeds it to ``on_barrier`` like any priority event (still aligned; the handler converts it).
* :class:`FinishInputsCheckpoint`: every channel delivered its barrier or end of partition:
  ``channel_state_writer.finish_input(id)`` if :class:`InitInputsCheckpoint` started the writer.

Per checkpoint the alternating handler emits ``InitInputsCheckpoint`` at most once, always before
its ``TriggerCheckpoint``, and then exactly one ``FinishInputsCheckpoint`` or ``AbortCheckpoint``;
every channel of ``InitInputsCheckpoint.channels`` gets exactly one ``ChannelBarrierReceived``
before ``FinishInputsCheckpoint``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn, TypeAlias

from undertow.core.errors import UndertowError
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
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
