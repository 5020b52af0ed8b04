"""Snapshot ownership on restore (FLIP-193, reference §7): the pure decision per claim mode.

In both modes the checkpoint id counter goes on at the snapshot's id + 1, so the job's own
checkpoints and the claimed one never share an id (``chk-<n>`` of the new job is a different
directory anyway: it has another job id).

(``LEGACY``, deprecated in Flink 1.19 and removed in 2.0, is refused: it allowed reusing the
snapshot's files without owning them.)

Pure: facts in, a :class:`ClaimDecision` out; the coordinator executes it on the JobMaster's
loop.

The longer story: docs/design.md, "Module notes", under this module's name.
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
    #: The first checkpoint must reference no file of the snapshot (NO_CLAIM whose shared
    #: files were not duplicated into the job's own ``shared/``).
    force_full_snapshot: bool


def decide_claim(
    mode: RecoveryClaimMode,
    snapshot: RestoredSnapshot,
    next_checkpoint_id: int,
    duplicated: bool = False,
) -> ClaimDecision:
    """The decision for a job started from ``snapshot`` in ``mode`` (see the module doc);
    ``next_checkpoint_id`` is the coordinator's counter before the restore; ``duplicated``:
    the snapshot's shared files were duplicated into the job's own ``shared/`` (FLIP-193),
    so under NO_CLAIM the first checkpoint may reuse them as its own."""
    following = max(next_checkpoint_id, snapshot.checkpoint_id + 1)
    if mode is RecoveryClaimMode.NO_CLAIM:
        return ClaimDecision(following, None, force_full_snapshot=not duplicated)
    claimed = CompletedCheckpoint(
        checkpoint_id=snapshot.checkpoint_id,
        trigger_timestamp=snapshot.trigger_timestamp,
        completion_timestamp=snapshot.completion_timestamp,
        is_savepoint=False,  # claimed: the job's own checkpoint, deleted once subsumed
        external_path=snapshot.pointer,
        metadata_size=snapshot.metadata_size,
    )
    return ClaimDecision(following, claimed, force_full_snapshot=False)
