"""Snapshot ownership on restore (FLIP-193, reference §7): the pure decision per claim mode.

``execution.state-recovery.claim-mode`` (deprecated key ``execution.savepoint-restore-mode``),
values as Flink's ``RecoveryClaimMode``:

* ``NO_CLAIM`` (the default): the restored checkpoint or savepoint stays the user's. The job
  never deletes or modifies it and never adds it to its completed-checkpoint store; a failover
  before the job's first checkpoint restores from it again. The first checkpoint after the
  restore is a ``FULL_CHECKPOINT`` (Flink's ``forceFullSnapshot``): it must not reference any
  file of the restored snapshot. Today every undertow checkpoint is self-contained anyway — the
  heap backend writes full snapshots, each file a checkpoint writes lives in its own
  ``<job>/chk-<n>/`` (channel-state files too, shared only by the subtasks of one checkpoint),
  nothing is written to ``shared/``, and a new job writes under its own job id — so the flag
  only states the contract for incremental backends to come.
* ``CLAIM``: the job takes the snapshot over. It enters the completed-checkpoint store as the
  newest retained *checkpoint* (a restored savepoint too: it takes the job's normal checkpoint
  properties, as in Flink), so a failover restores from it, it is deleted (its whole
  directory) once newer checkpoints subsume it, and the job's end treats it like the job's
  own checkpoints (``execution.checkpointing.externalized-checkpoint-retention``).

In both modes the checkpoint id counter goes on at the snapshot's id + 1, so the job's own
checkpoints and the claimed one never share an id (``chk-<n>`` of the new job is a different
directory anyway: it has another job id).

(``LEGACY``, deprecated in Flink 1.19 and removed in 2.0, is refused: it allowed reusing the
snapshot's files without owning them.)

Pure: facts in, a :class:`ClaimDecision` out; the coordinator executes it on the JobMaster's
loop.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from undertow.core.config import Configuration, Options
from undertow.runtime.checkpoint.completed_store import CompletedCheckpoint


class RecoveryClaimMode(enum.Enum):
    """Who owns a snapshot a job is started from (Flink's ``RecoveryClaimMode``)."""

    CLAIM = "CLAIM"
    NO_CLAIM = "NO_CLAIM"

    @classmethod
    def of(cls, config: Configuration) -> RecoveryClaimMode:
        """The configured mode (the option parses and checks the value, case-insensitive)."""
        return cls(config.get(Options.RECOVERY_CLAIM_MODE))


@dataclass(frozen=True, slots=True)
class RestoredSnapshot:
    """What the job was started from: ``pointer`` is its directory (``.../<job>/chk-<n>`` or
    ``.../savepoint-<jobid6>-<n>``); timestamps are those its ``_metadata`` records."""

    checkpoint_id: int
    is_savepoint: bool
    pointer: str
    trigger_timestamp: int
    completion_timestamp: int
    metadata_size: int


@dataclass(frozen=True, slots=True)
class ClaimDecision:
    """What the coordinator does after a restore from ``execution.state-recovery.path``."""

    #: The id of the job's next checkpoint (never at or below the snapshot's).
    next_checkpoint_id: int
    #: Add this to the completed-checkpoint store (CLAIM), or nothing (NO_CLAIM).
    retain: CompletedCheckpoint | None
    #: The first checkpoint must reference no file of the snapshot (NO_CLAIM).
    force_full_snapshot: bool


def decide_claim(
    mode: RecoveryClaimMode, snapshot: RestoredSnapshot, next_checkpoint_id: int
) -> ClaimDecision:
    """The decision for a job started from ``snapshot`` in ``mode`` (see the module doc);
    ``next_checkpoint_id`` is the coordinator's counter before the restore."""
    following = max(next_checkpoint_id, snapshot.checkpoint_id + 1)
    if mode is RecoveryClaimMode.NO_CLAIM:
        return ClaimDecision(following, None, force_full_snapshot=True)
    claimed = CompletedCheckpoint(
        checkpoint_id=snapshot.checkpoint_id,
        trigger_timestamp=snapshot.trigger_timestamp,
        completion_timestamp=snapshot.completion_timestamp,
        is_savepoint=False,  # claimed: the job's own checkpoint, deleted once subsumed
        external_path=snapshot.pointer,
        metadata_size=snapshot.metadata_size,
    )
    return ClaimDecision(following, claimed, force_full_snapshot=False)
