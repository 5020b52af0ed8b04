"""Retention and cleanup of a job's checkpoints: what is kept, what goes, and when.

Flink's ``CompletedCheckpointStore`` plus ``CheckpointsCleaner``, out of the coordinator
shell. :class:`CheckpointRetention` owns the completed store and the ``_metadata`` of every
retained checkpoint, the ids of the savepoints taken, a claimed snapshot (CLAIM restore), the
shared-file registry (FLIP-193) and the periodic sweep of orphaned ``chk-<n>`` directories.
Decisions are in pure modules (:mod:`.completed_store`, :mod:`.shared_files`,
:mod:`.orphan_sweep`); this one executes them: deletes run on the running loop's executor and
are logged, never raised.

Threading: the JobMaster's loop, but :meth:`~CheckpointRetention.shutdown` (blocking, on the
executor, once nothing else runs). Invariant: ``metadata`` holds exactly the store's ids.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.completed_store import (
    CompletedCheckpoint,
    CompletedCheckpointStore,
    DiscardSubsumed,
)
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    referenced_channel_state_files,
)
from undertow.runtime.checkpoint.orphan_sweep import SweepFacts, select_orphans, sweep_due
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.shared_files import SharedFiles
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle

log = logging.getLogger(__name__)


class CheckpointRetention:
    """What a job keeps of its checkpoints, and the deletes that follow (module docstring)."""

    def __init__(self, job_id: str, storage: CheckpointStorage, num_retained: int) -> None:
        self.job_id = job_id
        self.storage = storage
        self.store = CompletedCheckpointStore(num_retained)
        #: checkpoint id -> its ``_metadata``, for every checkpoint in the store
        self.metadata: dict[int, CheckpointMetadata] = {}
        #: ids of the savepoints taken (not in the store; their files are the user's)
        self.savepoint_ids: set[int] = set()
        #: CLAIM restore: the claimed snapshot's id and plan while it is in the store
        self.claimed: tuple[int, RestorePlan] | None = None
        #: NO_CLAIM restore whose shared files were duplicated: the restored checkpoint's id,
        #: which holds the duplicates until the first checkpoint completed (FLIP-193)
        self.duplicates_held: int | None = None
        #: Files in ``shared/`` of incremental checkpoints, and who may delete them (FLIP-193).
        self.shared_files = SharedFiles(storage)
        #: When the last periodic orphan sweep started (monotonic ms), and whether it runs.
        self._last_sweep_ms: int | None = None
        self._sweeping = False
        #: Deletes run one at a time on the executor (a filesystem such as fsspec's memory one
        #: is not safe for concurrent changes; their decisions are already made on the loop).
        self._deleting = threading.Lock()
        #: The deletes started on the executor and not ended yet (:meth:`settled`).
        self._running: set[asyncio.Future[Any]] = set()

    # -- completion and subsumption -------------------------------------------------------------
    def completed(self, entry: CompletedCheckpoint, meta: CheckpointMetadata,
                  in_flight: Iterable[int]) -> tuple[int, ...]:  # fmt: skip
        """Checkpoint ``entry`` completed: store it, delete what it subsumed (directories and
        the shared files only they held), maybe start an orphan sweep (``in_flight``: ids
        pending or being finalised). Returns the retained ids."""
        cid = entry.checkpoint_id
        self.metadata[cid] = meta
        # before anything is subsumed
        self.shared_files.completed(cid, meta.shared_files, referenced_channel_state_files(meta))
        if self.duplicates_held is not None:  # the duplicates it does not reuse go
            self.release_shared(self.duplicates_held)
            self.duplicates_held = None
        for decision in self.store.add(entry):
            self.metadata.pop(decision.checkpoint_id, None)
            if isinstance(decision, DiscardSubsumed):  # savepoints are only forgotten
                self._discard_subsumed(decision.checkpoint)
                self.release_shared(decision.checkpoint_id)
        self._maybe_sweep(in_flight)
        return tuple(e.checkpoint_id for e in self.store.all())

    def savepoint_taken(self, cid: int) -> None:
        """A savepoint was exported: its files in the job's ``chk-<n>`` go; never stored."""
        self.discard(cid)
        self.savepoint_ids.add(cid)

    def claim(self, meta: CheckpointMetadata, plan: RestorePlan, retain: CompletedCheckpoint,
              mode: RecoveryClaimMode, adopted: Iterable[str]) -> None:  # fmt: skip
        """A restored snapshot joins the (empty) store as the job's own (CLAIM, or LEGACY):
        it goes once subsumed. ``adopted``: its shared files linked into this job's. Under
        CLAIM the channel-state files of its job's older checkpoints it refers to are the
        job's too: they go with it (:meth:`.SharedFiles.restored`)."""
        self.metadata[meta.checkpoint_id] = meta
        referred = referenced_channel_state_files(meta)
        self.shared_files.restored(meta.checkpoint_id, plan.pointer, meta.shared_files, mode,
                                   tuple(adopted), referred)  # fmt: skip
        self.claimed = (meta.checkpoint_id, plan)
        for subsumed in self.store.add(retain):  # an empty store: nothing
            self.metadata.pop(subsumed.checkpoint_id, None)

    def hold_duplicates(self, restored_id: int, duplicates: Iterable[str]) -> None:
        """A NO_CLAIM restore duplicated the snapshot's shared files into this job's
        ``shared/``: they are held until the first checkpoint completed (:meth:`completed`)."""
        self.shared_files.hold_duplicates(restored_id, duplicates)
        self.duplicates_held = restored_id

    # -- deletes on the executor ----------------------------------------------------------------
    def discard(self, cid: int, level: int = logging.DEBUG) -> None:
        """Delete a checkpoint's directory on the executor, but the channel-state files a
        retained checkpoint refers to (:meth:`.SharedFiles.kept_in`, decided here on the
        loop); failures are logged at ``level``, not raised. DEBUG for a checkpoint that never
        completed (a task may still be writing a late file into it; the orphan sweep deletes
        what is left)."""
        keep = self.shared_files.kept_in(cid)

        def discard() -> None:
            try:
                with self._deleting:
                    self.storage.discard(cid, keep)
            except OSError as err:
                log.log(level, "job %s: could not delete checkpoint %d: %s", self.job_id, cid,
                        err)  # fmt: skip

        self._in_background(discard)

    def release_shared(self, cid: int, aborted: tuple[FileHandle, ...] | None = None) -> None:
        """Checkpoint ``cid`` no longer holds its shared files (subsumed; or aborted, with
        the files its subtasks uploaded): delete, on the executor, those nobody holds and the
        job owns (:mod:`.shared_files`)."""
        if aborted is not None:
            release = self.shared_files.aborted(cid, aborted) if aborted else None
        else:
            release = self.shared_files.released(cid)
        if release is not None and release.delete:
            log.debug("job %s: checkpoint %d released; deleting shared files %s", self.job_id,
                      cid, list(release.delete))  # fmt: skip
            self._in_background(self._delete_shared, release)

    def _delete_shared(self, release: Any) -> None:
        with self._deleting:
            self.shared_files.delete(release)

    def _discard_subsumed(self, entry: CompletedCheckpoint) -> None:
        """Delete a checkpoint that left the store: one of this job's (its ``chk-<n>``), or a
        claimed snapshot (its own directory, wherever it is). On the executor; failures are
        logged, not raised."""
        claimed = self.claimed
        if claimed is None or claimed[0] != entry.checkpoint_id:
            self.discard(entry.checkpoint_id, logging.WARNING)  # its _metadata may stay
            return
        self.claimed = None

        def discard() -> None:
            try:
                with self._deleting:
                    self.storage.discard_location(entry.external_path)
            except (OSError, ValueError) as err:
                log.warning("job %s: could not delete claimed checkpoint %d at %s: %s",
                            self.job_id, entry.checkpoint_id, entry.external_path, err)  # fmt: skip

        log.info("job %s: claimed checkpoint %d subsumed; deleting %s", self.job_id,
                 entry.checkpoint_id, entry.external_path)  # fmt: skip
        self._in_background(discard)

    def _in_background(self, delete: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run ``delete(*args)`` on the running loop's executor, tracked for :meth:`settled`."""
        future = asyncio.get_running_loop().run_in_executor(None, delete, *args)
        self._running.add(future)
        future.add_done_callback(self._running.discard)
        return future

    async def settled(self) -> None:
        """Wait until every delete started on the executor ended (on the loop, once no
        checkpoint completes or aborts any more: at the end of the job, before
        :meth:`shutdown`, so that what the job reports when it ended is what stays)."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    # -- orphaned directories ---------------------------------------------------------------------
    def _maybe_sweep(self, in_flight: Iterable[int]) -> None:
        """After a completion's subsumption, on the loop: start a sweep of orphaned
        directories on the executor if none runs and the last started long enough ago."""
        now = time.monotonic_ns() // 1_000_000
        if self._sweeping or not sweep_due(now, self._last_sweep_ms):
            return
        facts = self.sweep_facts(self.newest_completed_id(), in_flight)
        self._sweeping = True
        self._last_sweep_ms = now
        self._in_background(self.sweep, facts, True).add_done_callback(self._sweep_ended)

    def _sweep_ended(self, _: object) -> None:
        self._sweeping = False

    def newest_completed_id(self) -> int | None:
        """The newest completed checkpoint or savepoint (savepoints are not in the store)."""
        ids = [entry.checkpoint_id for entry in self.store.all()] + list(self.savepoint_ids)
        return max(ids, default=None)

    def sweep_facts(self, below: int | None, in_flight: Iterable[int]) -> SweepFacts:
        """The ids a sweep must not touch, taken on the loop (or when nothing else runs)."""
        protected = {entry.checkpoint_id for entry in self.store.all()} | set(in_flight)
        protected |= self.shared_files.holding_directories()
        return SweepFacts(below=below, protected=frozenset(protected))

    def sweep(self, facts: SweepFacts, bounded: bool) -> int:
        """Delete the orphaned ``chk-<n>`` directories of this job (blocking I/O: on the
        executor); return how many went. Failures are logged as warnings, never raised."""
        with self._deleting:
            return self._sweep(facts, bounded)

    def _sweep(self, facts: SweepFacts, bounded: bool) -> int:
        try:
            listed = self.storage.checkpoint_directories()
        except OSError as err:
            log.warning("job %s: could not list checkpoint directories in %s: %s",
                        self.job_id, self.storage.job_uri, err)  # fmt: skip
            return 0
        orphans = select_orphans(listed, facts) if bounded else select_orphans(
            listed, facts, limit=len(listed)
        )  # fmt: skip
        deleted = 0
        for cid in orphans:
            try:
                if self.storage.discard_uncommitted(cid):
                    deleted += 1
            except OSError as err:
                log.warning("job %s: could not delete orphaned checkpoint directory %s: %s",
                            self.job_id, self.storage.checkpoint_pointer(cid), err)  # fmt: skip
        if orphans:
            log.debug("job %s: deleted %d orphaned checkpoint directories of %s", self.job_id,
                      deleted, list(orphans))  # fmt: skip
        return deleted

    # -- the end of the job -----------------------------------------------------------------------
    def shutdown(
        self, keep: bool, next_id: int, in_flight: Iterable[int] = ()
    ) -> CompletedCheckpoint | None:
        """The job ended: every orphaned ``chk-<n>`` below ``next_id`` goes (see
        :mod:`.orphan_sweep`; ``in_flight`` as in :meth:`completed`, empty once the
        coordinator stopped and finished completing); then the retained checkpoints stay
        (``keep``) or go, a claimed snapshot with them, and the shared files no retained
        checkpoint holds. Blocking I/O, once per job. Returns the newest checkpoint kept."""
        self.sweep(self.sweep_facts(next_id, in_flight), False)
        if self.duplicates_held is not None:  # no checkpoint completed: nobody reuses them
            release = self.shared_files.released(self.duplicates_held)
            self.duplicates_held = None
            if release is not None:
                self.shared_files.delete(release)
        retained = list(self.store.all())
        if keep:
            self._sweep_shared()
            return retained[-1] if retained else None
        claimed = self.claimed[0] if self.claimed is not None else None
        for entry in retained:  # a claimed snapshot is the job's: it goes the same way
            cid = entry.checkpoint_id
            try:
                if cid == claimed:
                    self.storage.discard_location(entry.external_path)
                else:
                    self.storage.discard(cid)
            except (OSError, ValueError) as err:
                log.warning("job %s: could not delete checkpoint %d: %s", self.job_id, cid, err)
            release = self.shared_files.released(cid)
            if release is not None:
                self.shared_files.delete(release)
        self._sweep_shared()
        return None

    def _sweep_shared(self) -> None:
        """At the end of the job: shared files no retained checkpoint holds go (blocking)."""
        try:
            orphans = self.shared_files.sweep()
        except OSError as err:
            log.warning("job %s: could not sweep shared files: %s", self.job_id, err)
            return
        if orphans:
            log.debug("job %s: deleted %d unreferenced shared files", self.job_id, len(orphans))
