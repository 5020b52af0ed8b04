"""A checkpoint that was triggered and waits for its acknowledgements (Flink's PendingCheckpoint).

Lifecycle, one way only::

    PENDING --abort(reason)-------------> DISCARDED   (returns the acknowledged states to discard)
    PENDING --finalize_checkpoint()-----> COMPLETED   (only when fully acknowledged)

Invariants: ``acknowledged_states`` and ``not_yet_acknowledged`` partition ``tasks_to_ack``
while pending; each subtask's state is recorded at most once; after either transition nothing
is recorded any more, and an aborted checkpoint holds no state.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Generic, TypeAlias, TypeVar

from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason

#: (job vertex id, subtask index): a subtask that must acknowledge.
SubtaskKey: TypeAlias = tuple[int, int]

#: Per-subtask metrics of an acknowledgement, in milliseconds or bytes. Keys the runtime uses:
#: ``alignment_duration_ms``, ``start_delay_ms``, ``sync_duration_ms``, ``async_duration_ms``,
#: ``state_size``, ``unaligned`` (0 or 1). Missing keys mean "not measured".
CheckpointMetrics: TypeAlias = Mapping[str, float]

H = TypeVar("H")
P = TypeVar("P")


class AckResult(enum.Enum):
    """Flink's ``TaskAcknowledgeResult``."""

    SUCCESS = "success"
    DUPLICATE = "duplicate"
    UNKNOWN = "unknown"
    DISCARDED = "discarded"


class PendingCheckpointStatus(enum.Enum):
    PENDING = "pending"
    COMPLETED = "completed"
    DISCARDED = "discarded"


class PendingCheckpoint(Generic[H, P]):
    """One triggered checkpoint and the acknowledgements it still waits for.

    ``trigger_timestamp`` is the wall-clock millisecond the coordinator stamped into the
    barrier; ``tasks_to_ack`` may be empty (then it is fully acknowledged at once).
    """

    __slots__ = (
        "_failure_reason",
        "_metrics",
        "_not_yet_acknowledged",
        "_states",
        "_status",
        "checkpoint_id",
        "props",
        "tasks_to_ack",
        "trigger_timestamp",
    )

    def __init__(
        self,
        checkpoint_id: int,
        trigger_timestamp: int,
        tasks_to_ack: Iterable[SubtaskKey],
        props: P,
    ) -> None:
        self.checkpoint_id = checkpoint_id
        self.trigger_timestamp = trigger_timestamp
        self.tasks_to_ack: frozenset[SubtaskKey] = frozenset(tasks_to_ack)
        self.props = props
        self._not_yet_acknowledged: set[SubtaskKey] = set(self.tasks_to_ack)
        self._states: dict[SubtaskKey, H] = {}
        self._metrics: dict[SubtaskKey, CheckpointMetrics] = {}
        self._status = PendingCheckpointStatus.PENDING
        self._failure_reason: CheckpointFailureReason | None = None

    # -- events ----------------------------------------------------------------------------------

    def acknowledge(
        self, task: SubtaskKey, state_handle: H, metrics: CheckpointMetrics | None = None
    ) -> AckResult:
        """Record ``task``'s acknowledgement with the state it wrote."""
        if self._status is not PendingCheckpointStatus.PENDING:
            return AckResult.DISCARDED
        if task in self._not_yet_acknowledged:
            self._not_yet_acknowledged.remove(task)
            self._states[task] = state_handle
            self._metrics[task] = metrics if metrics is not None else {}
            return AckResult.SUCCESS
        return AckResult.DUPLICATE if task in self._states else AckResult.UNKNOWN

    def abort(self, reason: CheckpointFailureReason) -> tuple[H, ...]:
        """Discard the checkpoint; return the acknowledged states, which the caller deletes.

        Idempotent: a second abort, or an abort after finalization, returns nothing.
        """
        if self._status is not PendingCheckpointStatus.PENDING:
            return ()
        self._status = PendingCheckpointStatus.DISCARDED
        self._failure_reason = reason
        states = tuple(self._states.values())
        self._states.clear()
        self._metrics.clear()
        return states

    def finalize_checkpoint(self) -> Mapping[SubtaskKey, H]:
        """Mark the fully acknowledged checkpoint completed; return its states for the metadata.

        Raises :class:`CheckpointException` (FINALIZE_CHECKPOINT_FAILURE) if acknowledgements
        are missing or the checkpoint was aborted or already finalized.
        """
        if self._status is not PendingCheckpointStatus.PENDING:
            raise CheckpointException(
                CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE,
                f"checkpoint {self.checkpoint_id} is already {self._status.value}",
            )
        if self._not_yet_acknowledged:
            raise CheckpointException(
                CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE,
                f"checkpoint {self.checkpoint_id} has {self.num_acknowledged} of "
                f"{len(self.tasks_to_ack)} acknowledgements; missing "
                f"{sorted(self._not_yet_acknowledged)[:5]}",
            )
        self._status = PendingCheckpointStatus.COMPLETED
        return self.acknowledged_states

    # -- observers -------------------------------------------------------------------------------

    @property
    def status(self) -> PendingCheckpointStatus:
        return self._status

    @property
    def is_fully_acknowledged(self) -> bool:
        return self._status is PendingCheckpointStatus.PENDING and not self._not_yet_acknowledged

    @property
    def is_discarded(self) -> bool:
        return self._status is PendingCheckpointStatus.DISCARDED

    @property
    def is_disposed(self) -> bool:
        """Aborted or finalized: acknowledgements are refused from now on."""
        return self._status is not PendingCheckpointStatus.PENDING

    @property
    def failure_reason(self) -> CheckpointFailureReason | None:
        return self._failure_reason

    @property
    def num_acknowledged(self) -> int:
        return len(self._states)

    @property
    def num_tasks(self) -> int:
        return len(self.tasks_to_ack)

    @property
    def not_yet_acknowledged(self) -> frozenset[SubtaskKey]:
        return frozenset(self._not_yet_acknowledged)

    @property
    def acknowledged_states(self) -> Mapping[SubtaskKey, H]:
        """Read-only view of the states acknowledged so far (empty after an abort)."""
        return MappingProxyType(self._states)

    @property
    def acknowledged_metrics(self) -> Mapping[SubtaskKey, CheckpointMetrics]:
        return MappingProxyType(self._metrics)

    def duration(self, now_ms: int) -> int:
        """Milliseconds since the trigger, never negative (clocks of hosts may disagree)."""
        return max(0, now_ms - self.trigger_timestamp)

    def __repr__(self) -> str:
        return (
            f"PendingCheckpoint({self.checkpoint_id}, {self._status.value}, "
            f"acknowledged {self.num_acknowledged}/{self.num_tasks})"
        )
