"""Which queued checkpoint request runs next, and when (Flink's CheckpointRequestDecider).

Every checkpoint starts as a :class:`CheckpointTriggerRequest`: the periodic timer makes periodic
ones, users make savepoints and manual checkpoints. The coordinator keeps the queue that
:func:`enqueue` returns, and whenever something changes (a request arrived, a trigger finished, a
checkpoint completed or was aborted, a :class:`WaitUntil` time came) it calls :func:`decide` with
the facts and executes the decision:

  * :class:`TriggerNow`: remove ``request`` from the queue and start triggering it;
  * :class:`WaitUntil`: nothing may start before ``time_ms`` (the minimum pause after the last
    completion); keep the queue and decide again at that time;
  * :class:`Skip`: nothing can start now; decide again on the next change.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from undertow.runtime.checkpoint.failure import CheckpointFailureReason

#: Flink's ``DEFAULT_MAX_QUEUED_REQUESTS``.
MAX_QUEUED_REQUESTS = 1000


@dataclass(frozen=True, slots=True)
class CheckpointTriggerRequest:
    """A wish for a checkpoint. ``request_id`` is unique per coordinator and breaks ties;
    ``timestamp`` is the wall-clock millisecond of the request."""

    request_id: int
    timestamp: int
    is_savepoint: bool = False
    is_periodic: bool = False
    is_forced: bool = False

    def __post_init__(self) -> None:
        if self.is_savepoint and self.is_periodic:
            raise ValueError(f"request {self.request_id}: a savepoint is never periodic")

    @staticmethod
    def periodic(request_id: int, timestamp: int) -> CheckpointTriggerRequest:
        return CheckpointTriggerRequest(request_id, timestamp, is_periodic=True)

    @staticmethod
    def savepoint(request_id: int, timestamp: int, forced: bool = True) -> CheckpointTriggerRequest:
        return CheckpointTriggerRequest(request_id, timestamp, is_savepoint=True, is_forced=forced)

    @staticmethod
    def manual(request_id: int, timestamp: int, forced: bool = False) -> CheckpointTriggerRequest:
        """A checkpoint a user asked for (REST or CLI)."""
        return CheckpointTriggerRequest(request_id, timestamp, is_forced=forced)

    @property
    def priority(self) -> tuple[bool, bool, bool, int, int]:
        """Sort key: smaller runs first (Flink's ``checkpointTriggerRequestsComparator``)."""
        return (
            not self.is_savepoint,
            not self.is_forced,
            self.is_periodic,
            self.timestamp,
            self.request_id,
        )


@dataclass(frozen=True, slots=True)
class TriggerState:
    """The facts :func:`decide` needs, as the coordinator sees them at one instant."""

    min_pause_ms: int
    max_concurrent: int
    num_pending: int
    #: Wall-clock millisecond of the last completed checkpoint; None before the first one.
    last_completion_ms: int | None
    is_triggering: bool
    queue: Sequence[CheckpointTriggerRequest]
    #: Checkpoints whose files are still being deleted.
    num_cleaning: int = 0


@dataclass(frozen=True, slots=True)
class TriggerNow:
    request: CheckpointTriggerRequest


@dataclass(frozen=True, slots=True)
class WaitUntil:
    time_ms: int
    reason: CheckpointFailureReason


class SkipReason(enum.Enum):
    NO_QUEUED_REQUEST = "no request is queued"
    TRIGGER_IN_PROGRESS = "another checkpoint is being triggered"
    TOO_MANY_CLEANING_CHECKPOINTS = "more checkpoints are being cleaned up than may run at once"
    TOO_MANY_CONCURRENT_CHECKPOINTS = "the maximum number of concurrent checkpoints is pending"


@dataclass(frozen=True, slots=True)
class Skip:
    reason: SkipReason


TriggerDecision: TypeAlias = TriggerNow | WaitUntil | Skip


def decide(now_ms: int, state: TriggerState) -> TriggerDecision:
    """Which request, if any, starts now (see the module doc for the rules)."""
    if state.is_triggering:
        return Skip(SkipReason.TRIGGER_IN_PROGRESS)
    if not state.queue:
        return Skip(SkipReason.NO_QUEUED_REQUEST)
    if state.num_cleaning > state.max_concurrent:
        return Skip(SkipReason.TOO_MANY_CLEANING_CHECKPOINTS)
    head = min(state.queue, key=lambda request: request.priority)
    if state.num_pending >= state.max_concurrent:
        return (
            TriggerNow(head) if head.is_forced else Skip(SkipReason.TOO_MANY_CONCURRENT_CHECKPOINTS)
        )
    if head.is_periodic and not head.is_forced and state.last_completion_ms is not None:
        earliest = state.last_completion_ms + state.min_pause_ms
        if now_ms < earliest:
            return WaitUntil(earliest, CheckpointFailureReason.MINIMUM_TIME_BETWEEN_CHECKPOINTS)
    return TriggerNow(head)


@dataclass(frozen=True, slots=True)
class Enqueued:
    """The queue after :func:`enqueue`, in priority order.

    ``rejected``: fail these with TOO_MANY_CHECKPOINT_REQUESTS. ``coalesced``: the new request
    was periodic and a periodic request was already queued, so it was dropped (not a failure).
    """

    queue: tuple[CheckpointTriggerRequest, ...]
    rejected: tuple[CheckpointTriggerRequest, ...] = ()
    coalesced: bool = False


def enqueue(
    queue: Sequence[CheckpointTriggerRequest],
    request: CheckpointTriggerRequest,
    max_queued: int = MAX_QUEUED_REQUESTS,
) -> Enqueued:
    """Add ``request`` to ``queue`` under the queue limits (see the module doc)."""
    if max_queued < 1:
        raise ValueError(f"max_queued must be >= 1, got {max_queued}")
    ordered = sorted(queue, key=lambda r: r.priority)
    if request.is_periodic and any(r.is_periodic for r in ordered):
        return Enqueued(tuple(ordered), coalesced=True)
    if len(ordered) >= max_queued and not ordered[-1].is_periodic:
        return Enqueued(tuple(ordered), rejected=(request,))
    ordered.append(request)
    ordered.sort(key=lambda r: r.priority)
    rejected = tuple(ordered[max_queued:])
    return Enqueued(tuple(ordered[:max_queued]), rejected=rejected)


def remove(
    queue: Sequence[CheckpointTriggerRequest], request: CheckpointTriggerRequest
) -> tuple[CheckpointTriggerRequest, ...]:
    """The queue without ``request`` (after a :class:`TriggerNow`)."""
    return tuple(r for r in queue if r != request)
