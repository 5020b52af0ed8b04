"""Checkpoint barriers and their options (reference §1.1), and the cancellation marker.

Barriers travel as events through the network layer, which only sees two flags: ``priority``
(unaligned barriers overtake data) and ``blocks_upstream`` (an aligned barrier stops its
subpartition once sent, until the consumer resumes it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from undertow.core.modes import SavepointFormatType


class SnapshotType(enum.Enum):
    """What a barrier snapshots. ``SYNC_SAVEPOINT`` is the savepoint of a stop with savepoint
    (Flink's synchronous ``SavepointType``): it follows ``EndOfData`` on every channel, is
    notified when complete, and every task that takes it waits for that notification before
    it closes, whether or not periodic checkpoints are on."""

    CHECKPOINT = 0
    FULL_CHECKPOINT = 1
    SAVEPOINT = 2
    SYNC_SAVEPOINT = 3

    @property
    def is_savepoint(self) -> bool:
        return self in (SnapshotType.SAVEPOINT, SnapshotType.SYNC_SAVEPOINT)

    @property
    def is_synchronous(self) -> bool:
        return self is SnapshotType.SYNC_SAVEPOINT


class AlignmentType(enum.Enum):
    """Flink's ordinals: AT_LEAST_ONCE=0, ALIGNED=1, UNALIGNED=2, FORCED_ALIGNED=3."""

    AT_LEAST_ONCE = 0
    ALIGNED = 1
    UNALIGNED = 2
    FORCED_ALIGNED = 3


NO_TIMEOUT = 2**63 - 1


@dataclass(frozen=True, slots=True)
class CheckpointOptions:
    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT
    alignment: AlignmentType = AlignmentType.ALIGNED
    #: Milliseconds after the trigger timestamp when an aligned checkpoint turns unaligned.
    aligned_checkpoint_timeout: int = NO_TIMEOUT
    #: A savepoint's format (Flink's barrier carries it with the savepoint type).
    savepoint_format: SavepointFormatType = SavepointFormatType.CANONICAL
    #: An aligned checkpoint with a timeout also turns unaligned as soon as more than this
    #: many bytes are queued ahead of its barrier (0: never by size; see
    #: :mod:`.inflight_switch`, ``execution.checkpointing.unaligned.max-inflight-data``).
    max_inflight_bytes: int = 0

    @staticmethod
    def for_config(
        snapshot_type: SnapshotType,
        exactly_once: bool,
        unaligned_enabled: bool,
        aligned_checkpoint_timeout_ms: int,
        max_inflight_bytes: int = 0,
    ) -> CheckpointOptions:
        """Flink's ``CheckpointOptions.forConfig`` decision (reference §1.1); an aligned
        checkpoint with a timeout also carries ``max_inflight_bytes`` (beyond Flink)."""
        if not exactly_once:
            return CheckpointOptions(snapshot_type, AlignmentType.AT_LEAST_ONCE)
        if snapshot_type.is_savepoint or not unaligned_enabled:
            return CheckpointOptions(snapshot_type, AlignmentType.ALIGNED)
        if aligned_checkpoint_timeout_ms in (0, NO_TIMEOUT):
            return CheckpointOptions(snapshot_type, AlignmentType.UNALIGNED)
        return CheckpointOptions(
            snapshot_type, AlignmentType.ALIGNED, aligned_checkpoint_timeout_ms,
            max_inflight_bytes=max_inflight_bytes,
        )  # fmt: skip

    @property
    def is_exactly_once(self) -> bool:
        return self.alignment is not AlignmentType.AT_LEAST_ONCE

    @property
    def is_unaligned(self) -> bool:
        return self.alignment is AlignmentType.UNALIGNED

    @property
    def is_timeoutable(self) -> bool:
        return (
            self.alignment is AlignmentType.ALIGNED
            and 0 < self.aligned_checkpoint_timeout < NO_TIMEOUT
        )

    @property
    def needs_alignment(self) -> bool:
        return self.alignment in (AlignmentType.ALIGNED, AlignmentType.FORCED_ALIGNED)

    @property
    def needs_channel_state(self) -> bool:
        """Unaligned, or aligned with a timeout (its output may still turn unaligned)."""
        return self.is_unaligned or self.is_timeoutable

    def as_unaligned(self) -> CheckpointOptions:
        return replace(self, alignment=AlignmentType.UNALIGNED)

    def with_unaligned_unsupported(self) -> CheckpointOptions:
        """For an edge that cannot carry channel state: FORCED_ALIGNED (keeping the timeout)
        if this checkpoint would need channel state, else unchanged (reference §1.1)."""
        if self.needs_channel_state:
            return replace(self, alignment=AlignmentType.FORCED_ALIGNED)
        return self

    def with_unaligned_supported(self) -> CheckpointOptions:
        """Undo :meth:`with_unaligned_unsupported`: FORCED_ALIGNED becomes UNALIGNED, or
        ALIGNED with its timeout if it had one."""
        if self.alignment is not AlignmentType.FORCED_ALIGNED:
            return self
        if self.aligned_checkpoint_timeout in (0, NO_TIMEOUT):
            return replace(self, alignment=AlignmentType.UNALIGNED)
        return replace(self, alignment=AlignmentType.ALIGNED)


@dataclass(frozen=True, slots=True)
class CheckpointBarrier:
    checkpoint_id: int
    #: Wall-clock milliseconds when the coordinator triggered the checkpoint.
    timestamp: int
    options: CheckpointOptions

    @property
    def blocks_upstream(self) -> bool:
        """Aligned barriers stop their subpartition once sent, until ResumeConsumption."""
        return self.options.needs_alignment

    @property
    def priority(self) -> bool:
        return self.options.is_unaligned

    def as_unaligned(self) -> CheckpointBarrier:
        return replace(self, options=self.options.as_unaligned())

    def with_options(self, options: CheckpointOptions) -> CheckpointBarrier:
        return self if options == self.options else replace(self, options=options)


@dataclass(frozen=True, slots=True)
class CancelCheckpointMarker:
    """Sent downstream when a task declines a checkpoint, so nobody waits for its barrier."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class BarrierAnnouncement:
    """A priority event announcing that ``barrier`` (aligned, timeoutable) was queued on a
    channel; ``sequence_number`` names it there for a later conversion to priority (§1.8)."""

    barrier: CheckpointBarrier
    sequence_number: int
