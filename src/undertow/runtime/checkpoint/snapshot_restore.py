"""Restoring a job: from a path it is started from (read, verified, claimed), or on failover.

Out of the coordinator shell: :meth:`SnapshotRestore.read` reads and verifies a retained
checkpoint or savepoint of any job (``execution.state-recovery.path``);
:meth:`~SnapshotRestore.claim` applies ``execution.state-recovery.claim-mode`` (decided in
:mod:`.claim_mode`): a claimed snapshot joins :mod:`.retention`'s store; after a NO_CLAIM
restore the snapshot's shared files are duplicated into the job's own ``shared/`` (FLIP-193);
where they could not be (nor adopted, under CLAIM) the first checkpoint must be full
(:attr:`full_snapshot_due`, reference §7). A failover restores from
:meth:`~SnapshotRestore.latest_plan`.

Threading: :meth:`~SnapshotRestore.read` is blocking I/O (the executor); the rest runs on the
JobMaster's loop, before the first attempt (claim) or between attempts (latest plan).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode, RestoredSnapshot, decide_claim
from undertow.runtime.checkpoint.metadata import decode_metadata
from undertow.runtime.checkpoint.restore_plan import (
    RestorePlan,
    check_max_parallelism,
    plan_restore,
)
from undertow.runtime.checkpoint.retention import CheckpointRetention
from undertow.runtime.checkpoint.savepoint import refuse_restore
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.errors import CorruptCheckpointError
from undertow.storage.keys import CheckpointKey, legacy_key_hint


class SnapshotRestore:
    """Reads, verifies and claims what a job restores (see the module docstring)."""

    def __init__(
        self, job_id: str, graph: JobGraph, storage: CheckpointStorage, key: CheckpointKey,
        settings: CheckpointSettings, retention: CheckpointRetention,
    ) -> None:  # fmt: skip
        self.job_id = job_id
        self.graph = graph
        self.storage = storage
        self.key = key
        self.settings = settings
        self.retention = retention
        #: NO_CLAIM restore: the next checkpoint must reference no file of the snapshot;
        #: cleared by the first completed checkpoint (:meth:`checkpoint_completed`).
        self.full_snapshot_due = False

    def checkpoint_completed(self) -> None:
        """A checkpoint of this job completed: later ones may be incremental again."""
        self.full_snapshot_due = False

    async def latest_plan(self) -> RestorePlan | None:
        """Where a failover restores from: the newest retained checkpoint (a claimed snapshot
        included), or None (then the attempt restores what the job started from, if any).
        The checkpoint is chosen on the loop; its plan, which reads and verifies the
        enumerator state files, is made on the executor."""
        latest = self.retention.store.latest()
        if latest is None:
            return None
        claimed = self.retention.claimed
        if claimed is not None and claimed[0] == latest.checkpoint_id:
            return claimed[1]
        meta = self.retention.metadata[latest.checkpoint_id]
        return await asyncio.get_running_loop().run_in_executor(
            None,
            plan_restore,
            self.graph,
            meta,
            self.storage,
            self.settings.ignore_unclaimed_state,
        )

    async def read_and_adopt(self, path: str) -> tuple[RestorePlan, list[str]]:
        """Read and verify ``path`` on the executor; under CLAIM also link its shared files
        into this job's ``shared/``, under NO_CLAIM duplicate them there where the storage
        can (on the executor). The plan and the adopted links or duplicates."""
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(None, self.read, path)
        adopted: list[str] = []
        shared_files, shared = self.retention.shared_files, plan.metadata.shared_files
        if shared:
            claim = self.settings.claim_mode is RecoveryClaimMode.CLAIM
            take = shared_files.adopt if claim else shared_files.duplicate
            adopted = await loop.run_in_executor(None, take, plan.pointer, shared)
        return plan, adopted

    def read(self, path: str) -> RestorePlan:
        """``execution.state-recovery.path``: a retained checkpoint or savepoint of any job,
        read and verified (blocking I/O). Reads only: the snapshot is not modified (the job's
        metadata key is loaded, and created under the job's root if missing)."""
        location = self.storage.resolve(path)
        storage = CheckpointStorage(location.root_uri, location.job_id)
        payload = storage.read_metadata(location.pointer, self.settings.metadata_max_size)
        try:
            meta = decode_metadata(
                payload, self.key.load(), where=path, expected_checkpoint_id=location.checkpoint_id
            )
        except CorruptCheckpointError as err:
            hint = legacy_key_hint(location.root_uri) if "HMAC" in str(err) else None
            if hint is None:
                raise
            raise CorruptCheckpointError(
                f"{err}; {hint}", checkpoint=err.checkpoint, path=err.path
            ) from err
        refused = refuse_restore(meta.properties, path, self.settings.state_backend)
        if refused is not None:
            raise RestoreError(f"job {self.job_id}: {refused}", path=path)
        try:
            check_max_parallelism(self.graph, meta)
            plan = plan_restore(self.graph, meta, storage, self.settings.ignore_unclaimed_state)
        except RestoreError as err:
            raise err.at(path) from None  # the same refusal, naming the snapshot
        return replace(plan, pointer=location.pointer, metadata_size=len(payload))

    def claim(self, plan: RestorePlan, adopted: list[str] | None, next_id: int) -> int:
        """The job starts from ``plan`` (:meth:`read`) with checkpoint ids from ``next_id``:
        apply the claim mode; returns the id of the job's next checkpoint. ``adopted``: the
        snapshot's shared files linked into this job's ``shared/``."""
        meta = plan.metadata
        snapshot = RestoredSnapshot(
            checkpoint_id=meta.checkpoint_id, is_savepoint=meta.is_savepoint,
            pointer=plan.pointer, trigger_timestamp=meta.trigger_timestamp,
            completion_timestamp=meta.completion_timestamp, metadata_size=plan.metadata_size,
        )  # fmt: skip
        decision = decide_claim(self.settings.claim_mode, snapshot, next_id, bool(adopted))
        # Handles name shared files relative to the job directory: the first checkpoint may
        # reuse the snapshot's files only once CLAIM adopted them, or NO_CLAIM duplicated
        # them, into this job's shared/ (:meth:`read_and_adopt`); else it is full.
        self.full_snapshot_due = decision.force_full_snapshot or (
            bool(meta.shared_files) and not adopted
        )
        if decision.retain is None and adopted:
            self.retention.hold_duplicates(meta.checkpoint_id, adopted)
        if decision.retain is not None:
            self.retention.claim(meta, plan, decision.retain, self.settings.claim_mode,
                                 adopted or ())  # fmt: skip
        return decision.next_checkpoint_id
