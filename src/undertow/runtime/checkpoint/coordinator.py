"""The checkpoint coordinator: a shell of timers, messages and storage I/O around pure decisions.

It triggers checkpoints and savepoints, collects acknowledgements and declines, and aborts.
Its mode is the lifecycle of :mod:`.coordinator_states`; decisions are in pure modules
(:mod:`.trigger_decider`, :mod:`.pending_checkpoint`, :mod:`.failure_manager`,
:mod:`.trigger_plan`, :mod:`.savepoint`), options in :mod:`.settings`; :mod:`.finalization`
writes a completed checkpoint, :mod:`.retention` keeps and deletes, :mod:`.snapshot_restore`
restores and claims. Why ~500 lines in one piece: what is left is the pending map, the
lifecycle and the timeouts that trigger, acknowledge, abort and savepoint start all change
together in one loop step; split, each part would reach back into the others' fields.

Threading: the JobMaster's loop thread; storage calls run on its executor; :meth:`shutdown`
runs on the executor once the attempt stopped.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from undertow.core.config import Configuration
from undertow.core.types import CheckpointId, SubtaskIndex, VertexId
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.ack_summary import shared_of
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, SnapshotType
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.clock import CoordinatorClock, SystemClock, Timer
from undertow.runtime.checkpoint.completed_store import (
    CompletedCheckpoint,
    CompletedCheckpointStore,
)
from undertow.runtime.checkpoint.coordinator_states import (
    AttemptEnded,
    AttemptStarted,
    CoordinatorEvent,
    CoordinatorState,
    Idle,
    SavepointRequested,
    SavepointStarted,
    ShutDown,
    StopSavepointFailed,
    WaitingSavepoint,
)
from undertow.runtime.checkpoint.end_of_data import EndOfDataWatch
from undertow.runtime.checkpoint.events import (
    Aborted,
    Acknowledged,
    CheckpointEvent,
    CheckpointListener,
    Completed,
    Triggered,
)
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.failure_manager import CheckpointFailureManager, FailJob
from undertow.runtime.checkpoint.finalization import (
    CheckpointFinalizer,
    CoordinatorPending,
    PendingProps,
    completion_line,
)
from undertow.runtime.checkpoint.metadata import CheckpointMetadata
from undertow.runtime.checkpoint.pending_checkpoint import (
    AckResult,
    CheckpointMetrics,
    PendingCheckpoint,
)
from undertow.runtime.checkpoint.periodic_trigger import PeriodicTrigger
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.retention import CheckpointRetention
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.checkpoint.savepoint_futures import SavepointFutures
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.shared_files import SharedFiles
from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
from undertow.runtime.checkpoint.snapshot_restore import SnapshotRestore
from undertow.runtime.checkpoint.task_gateway import TaskGateway
from undertow.runtime.checkpoint.trigger_plan import (
    SubtaskKey,
    SubtaskTopology,
    late_triggers,
    plan_checkpoint,
)
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle
from undertow.storage.keys import CheckpointKey

__all__ = ["CheckpointCoordinator", "PendingProps", "TaskGateway"]

log = logging.getLogger(__name__)


def _ignore(event: CheckpointEvent) -> None:
    pass


class CheckpointCoordinator:
    """Triggers, acknowledges and aborts the checkpoints and savepoints of one job, across
    its attempts (see the module docstring). Loop thread only, but :meth:`shutdown`."""

    def __init__(
        self,
        job_id: str,
        graph: JobGraph,
        config: Configuration,
        storage: CheckpointStorage,
        key: CheckpointKey,
        gateway: TaskGateway,
        console: Callable[[str], None],
        listener: CheckpointListener = _ignore,
        clock: CoordinatorClock | None = None,
    ) -> None:
        self.job_id = job_id
        self.graph = graph
        self.config = config
        self.storage = storage
        self.gateway = gateway
        self.console = console
        #: Told of every trigger, acknowledgement, completion and abort (:mod:`.events`).
        self.listener = listener
        #: Time and timers (:mod:`.clock`): the system clock unless a test brings its own.
        self.clock: CoordinatorClock = clock if clock is not None else SystemClock()
        #: The checkpointing options, read once (the coordinator reads no other option).
        self.settings = settings = CheckpointSettings.of(config)
        self.interval_ms = settings.interval_ms
        self.timeout_ms = settings.timeout_ms
        self.options = settings.options(SnapshotType.CHECKPOINT)
        self.failures = CheckpointFailureManager(settings.tolerable_failures)
        self.pending: dict[int, CoordinatorPending] = {}
        self.next_id = 1
        self.last_completion_ms = 0
        #: The highest checkpoint (not savepoint) id completed by this coordinator, 0 before.
        self.latest_completed_id = 0
        self._timeouts: dict[int, Timer] = {}
        #: The lifecycle (:mod:`.coordinator_states`): replaced, never changed, by events.
        self._state: CoordinatorState[asyncio.Future[str]] = Idle()
        self._completing: set[asyncio.Future[None]] = set()
        #: Fully acknowledged checkpoints whose ``_metadata`` is being written (not pending,
        #: not yet in the store): the orphan sweep must not touch their directories.
        self._finalizing: set[int] = set()
        self._topology = SubtaskTopology.of(graph)
        #: Subtasks of the current attempt that finished (FLIP-147).
        self._finished: set[SubtaskKey] = set()
        #: Subtasks of the current attempt waiting for their final checkpoint (FLINK-28386).
        self._end_of_data = EndOfDataWatch(self._topology.subtasks)
        self.savepoints = SavepointFutures(job_id, settings)
        self.periodic_trigger = PeriodicTrigger(self.clock, settings, self)
        #: What is retained and deleted; the finaliser; restores and claims.
        self.retention = CheckpointRetention(job_id, storage, settings.num_retained)
        self.finalizer = CheckpointFinalizer(job_id, graph, settings, storage, key, self.clock)
        self.restorer = SnapshotRestore(job_id, graph, storage, key, settings, self.retention)

    @property
    def enabled(self) -> bool:
        """Periodic checkpoints are configured (``execution.checkpointing.interval`` > 0)."""
        return self.interval_ms > 0

    @property
    def state(self) -> CoordinatorState[asyncio.Future[str]]:
        """The lifecycle state (:mod:`.coordinator_states`)."""
        return self._state

    @property
    def is_active(self) -> bool:
        """An attempt's tasks all run, so a savepoint may start (periodic checkpoints or not)."""
        return self._state.attempt_running

    @property
    def stopping(self) -> bool:
        """A stop-with-savepoint is in progress (or took its savepoint): no savepoint starts."""
        return self._state.stopping

    @property
    def store(self) -> CompletedCheckpointStore:
        return self.retention.store

    @property
    def metadata(self) -> dict[int, CheckpointMetadata]:
        """Checkpoint id -> ``_metadata`` of every retained checkpoint."""
        return self.retention.metadata

    @property
    def shared_files(self) -> SharedFiles:
        return self.retention.shared_files

    def _fire(self, event: CoordinatorEvent[asyncio.Future[str]]) -> None:
        self._state = self._state.on(event)

    # -- lifecycle (per attempt) ----------------------------------------------------------------
    def start(self, finished: frozenset[SubtaskKey] = frozenset()) -> None:
        """All tasks of the attempt run (but ``finished``, deployed as finished): savepoints
        may start, and periodic triggering starts (random initial delay) if configured."""
        self._finished = set(finished)
        self._fire(AttemptStarted(self.enabled))
        if self.enabled:
            self.periodic_trigger.start()
            # a fast subtask's data may have ended before the attempt counted as started
            self._request_final_checkpoint_if_due()

    def stop(self, reason: CheckpointFailureReason) -> None:
        """The attempt ends (failure, cancel, finish): abort what is pending, stop the timer;
        a savepoint that waited to start fails."""
        waiting = self._state.waiting
        self._fire(AttemptEnded())
        self._end_of_data.reset()  # the next attempt's reports may come before its start
        self.periodic_trigger.stop()
        for cid in list(self.pending):
            self._abort(cid, reason, notify=False)
        if waiting is not None:
            self.savepoints.did_not_start(waiting, reason)

    async def finish_completing(self) -> None:
        """Wait until every fully acknowledged checkpoint is finalized (or failed to be): a
        restart must choose its checkpoint after that, or a checkpoint finalized later would
        subsume, and delete, the one being restored."""
        while self._completing:
            await asyncio.gather(*list(self._completing), return_exceptions=True)

    def on_task_finished(self, vertex_id: VertexId, subtask: SubtaskIndex) -> None:
        """A subtask finished (after its final checkpoint and end of partition). Later
        checkpoints skip it; pending ones that still wait for it count it as acknowledged
        without state. Without ``checkpoints-after-tasks-finish`` no checkpoint can complete
        any more in this attempt."""
        if not self.settings.after_tasks_finish:
            self.stop(CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING)
            return
        key = (vertex_id, subtask)
        self._finished.add(key)
        self._request_final_checkpoint_if_due()
        for cid, pending in list(self.pending.items()):
            if key in pending.not_yet_acknowledged:
                pending.props = replace(pending.props, finished=pending.props.finished | {key})
                if pending.acknowledge(key, SubtaskStateHandle.of(None), {}) is AckResult.SUCCESS:
                    self._on_acknowledged(cid, pending)
            if cid not in self.pending:
                continue
            props = pending.props
            late = late_triggers(self._topology, self._finished, pending.not_yet_acknowledged,
                                 props.triggered)  # fmt: skip
            pending.props = replace(props, triggered=props.triggered | late)
            for late_vertex, late_subtask in sorted(late):
                self.gateway.trigger_source(late_vertex, late_subtask, props.barrier)

    def on_task_end_of_data(self, vertex_id: VertexId, subtask: SubtaskIndex) -> None:
        """A subtask sent ``EndOfData`` and waits for its final checkpoint: once every one did
        (or finished), that checkpoint is requested now (:mod:`.end_of_data`)."""
        self._end_of_data.reached((vertex_id, subtask))
        self._request_final_checkpoint_if_due()

    def _request_final_checkpoint_if_due(self) -> None:
        if self._state.periodic and self._end_of_data.due(self._finished):
            self.periodic_trigger.request_now()

    # -- the periodic trigger's view (:class:`~.periodic_trigger.TriggerShell`) ---------------
    @property
    def periodic(self) -> bool:
        """Periodic checkpoints are triggered (an attempt runs, no stop with savepoint)."""
        return self._state.periodic

    def trigger_facts(self) -> tuple[int, int | None] | None:
        if not self._state.periodic or self._state.waiting is not None:
            return None  # no periodic checkpoints, or a savepoint waits to start
        if any(p.props.savepoint is not None for p in self.pending.values()):
            return None  # nothing runs beside a savepoint; its completion decides again
        return len(self.pending), self.last_completion_ms or None

    def trigger_checkpoint(self, now_ms: int) -> object:
        return self._trigger(now_ms)

    # -- savepoints ----------------------------------------------------------------------------
    def trigger_savepoint(self, request: SavepointRequest) -> asyncio.Future[str]:
        """Start a savepoint now (see :mod:`.savepoint`); the future gets the savepoint
        directory once it completed, or a :class:`CheckpointException` naming the job, the
        checkpoint and the directory. Only on the JobMaster's loop, while an attempt runs."""
        state = self._state
        future, accepted = self.savepoints.request(
            request, stopping=state.stopping, attempt_running=state.attempt_running
        )
        if not accepted:
            return future
        if state.waiting is not None:  # at most one savepoint waits to start
            if not request.stop:
                self.savepoints.already_waiting(request, future, state.waiting)
                return future
            self.savepoints.superseded(state.waiting)  # a stop's savepoint takes its place
        # A savepoint never runs beside an unaligned checkpoint (reference §7: its barriers
        # could still be overtaken by the savepoint's) or another savepoint: it starts when
        # those ended. Beside aligned ones it starts now: its barriers queue behind theirs
        # (issue 17: waiting for them cost up to a checkpoint's time under backpressure). No
        # periodic checkpoint starts meanwhile; none at all after a stop's.
        self._fire(SavepointRequested(WaitingSavepoint(request, future)))
        if request.stop:
            self.periodic_trigger.stop()  # no periodic checkpoint after the sources' EndOfData
        self._start_waiting_savepoint()
        return future

    def _start_waiting_savepoint(self) -> None:
        waiting = self._state.waiting
        if waiting is None or any(
            p.props.savepoint is not None or p.props.barrier.options.needs_channel_state
            for p in self.pending.values()
        ):
            return
        self._fire(SavepointStarted())
        if self._trigger(self.clock.now_ms(), waiting.request, waiting.future) is None:
            self.savepoints.nothing_to_take(waiting)

    def _savepoint_failed(self, cid: int, request: SavepointRequest,
                          reason: CheckpointFailureReason, detail: str) -> None:  # fmt: skip
        """A savepoint does not count towards tolerable checkpoint failures; a failed stop
        with savepoint fails the job over to its latest checkpoint (the sources stopped)."""
        error = self.savepoints.failed(cid, request, reason, detail)
        if request.stop:
            self._fire(StopSavepointFailed())
            self.gateway.fail_job(error)

    def _savepoint_complete(self, cid: int, request: SavepointRequest, pointer: str,
                            duration_ms: int) -> None:  # fmt: skip
        """A savepoint was exported: not stored (never subsumed or restored on failover);
        its files in the job's ``chk-<n>`` go. Only a synchronous one is notified (sinks commit,
        and it is the tasks' final checkpoint)."""
        self.retention.savepoint_taken(cid)
        self.last_completion_ms = self.clock.now_ms()
        self.console(f"{request.kind} {cid} of job {self.job_id[:8]} completed in "
                     f"{duration_ms} ms: {pointer}")  # fmt: skip
        self.listener(Completed(cid, self.clock.now_ms(), pointer, True, None))
        self.savepoints.completed(cid, pointer)
        if request.stop:
            self.gateway.notify_complete(cid)
        else:
            self.periodic_trigger.decide()

    # -- trigger --------------------------------------------------------------------------------
    def _trigger(
        self, now: int, savepoint: SavepointRequest | None = None,
        future: asyncio.Future[str] | None = None,
    ) -> int | None:  # fmt: skip
        """Start a checkpoint (or ``savepoint``) now; its id, or None if every subtask
        finished (the attempt is about to end)."""
        plan = plan_checkpoint(self._topology, self._finished)
        if not plan.trigger:
            return None
        cid = self.next_id
        self.next_id += 1
        if savepoint is None:
            options = self.options
            if self.restorer.full_snapshot_due:  # NO_CLAIM restore (reference §7)
                options = replace(options, snapshot_type=SnapshotType.FULL_CHECKPOINT)
        else:
            options = self.savepoints.barrier_options(savepoint)
        barrier = CheckpointBarrier(cid, now, options)
        self.finalizer.prefetch_key()
        enumerators = self.gateway.enumerators()
        enumerator_states = {vid: e.snapshot_state(cid) for vid, e in enumerators.items()}
        self.finalizer.start_enumerator_writes(cid, enumerator_states)
        props = PendingProps(barrier, enumerator_states, savepoint, plan.finished, plan.trigger)
        if future is not None:
            self.savepoints.triggered(cid, future)
        pending: CoordinatorPending = PendingCheckpoint(cid, now, plan.wait_for, props)
        self.pending[cid] = pending
        savepoint_format = None if savepoint is None else savepoint.format_type.name
        self.listener(Triggered(cid, now, options.is_unaligned, savepoint is not None,
                                savepoint_format))  # fmt: skip
        self._timeouts[cid] = self.clock.call_later(self.timeout_ms / 1000.0, self._expire, cid)
        sources = {v.id for v in self.graph.vertices if v.is_source}
        for vertex_id, subtask in sorted(plan.trigger):
            if savepoint is not None and savepoint.stop and vertex_id in sources:
                self.gateway.stop_source(vertex_id, subtask, savepoint.drain)
            self.gateway.trigger_source(vertex_id, subtask, barrier)
        return cid

    def _expire(self, cid: int) -> None:
        self._timeouts.pop(cid, None)
        if cid in self.pending:
            self._abort(cid, CheckpointFailureReason.CHECKPOINT_EXPIRED)

    # -- acknowledgements ----------------------------------------------------------------------
    def receive_ack(self, vertex_id: VertexId, subtask: SubtaskIndex, cid: CheckpointId,
                    handle: SubtaskStateHandle | FileHandle | None,
                    metrics: CheckpointMetrics) -> None:  # fmt: skip
        state = SubtaskStateHandle.of(handle)
        pending = self.pending.get(cid)
        if pending is None:
            if not state.is_empty and cid not in self.retention.metadata:
                self.retention.discard(cid)  # a late ack of an aborted checkpoint re-created
                self.retention.release_shared(cid, state.shared)  # its dir and shared files
            return
        if pending.acknowledge((vertex_id, subtask), state, metrics) is AckResult.SUCCESS:
            self.listener(Acknowledged(cid, vertex_id, subtask, self.clock.now_ms(), metrics))
            self._on_acknowledged(cid, pending)

    def _on_acknowledged(self, cid: int, pending: CoordinatorPending) -> None:
        if pending.is_fully_acknowledged:
            del self.pending[cid]
            timer = self._timeouts.pop(cid, None)
            if timer is not None:
                timer.cancel()
            task = asyncio.ensure_future(self._complete(pending))
            self._completing.add(task)
            self._finalizing.add(cid)
            task.add_done_callback(self._completing.discard)
            task.add_done_callback(lambda _: self._finalizing.discard(cid))
            self._start_waiting_savepoint()

    def receive_decline(self, vertex_id: VertexId, subtask: SubtaskIndex, cid: CheckpointId,
                        reason: CheckpointFailureReason, detail: str) -> None:  # fmt: skip
        if cid in self.pending:
            name = self.graph.vertex(vertex_id).name
            self._abort(
                cid,
                reason,
                detail=f"subtask {subtask} of vertex {vertex_id}: {detail}",
                message=f"{reason.message} (subtask {subtask} of '{name}'): {detail}",
            )

    # -- abort ----------------------------------------------------------------------------------
    def _abort(self, cid: int, reason: CheckpointFailureReason, detail: str = "",
               notify: bool = True, message: str | None = None,
               decide: bool = True) -> None:  # fmt: skip
        """Abort pending ``cid``; ``message`` is what the statistics show (default: the
        reason's); ``decide=False`` while a completion is in progress (it decides last)."""
        pending = self.pending.pop(cid, None)
        timer = self._timeouts.pop(cid, None)
        if timer is not None:
            timer.cancel()
        if pending is None:
            return
        acknowledged = pending.abort(reason)
        self.finalizer.forget(cid)
        self.listener(Aborted(cid, self.clock.now_ms(), reason, message or reason.message))
        log.info("checkpoint %d of job %s aborted: %s %s", cid, self.job_id, reason.name, detail)
        if notify:
            self.gateway.notify_aborted(cid)
        self.retention.discard(cid)
        self.retention.release_shared(cid, shared_of(acknowledged))
        request = pending.props.savepoint
        if request is not None:
            self._savepoint_failed(cid, request, reason, detail)
            return
        self._start_waiting_savepoint()
        decision = self.failures.on_failure(cid, reason)
        if isinstance(decision, FailJob):
            self.gateway.fail_job(CheckpointException(reason, f"{decision.message} {detail}"))
            return
        if decision.counted:  # a failure the user must see, though the job carries on
            why = message or (f"{reason.message} ({detail})" if detail else reason.message)
            self.console(f"checkpoint {cid} of job {self.job_id[:8]} failed: {why}; tolerated "
                         f"({decision.continuous_failures} of {self.failures.tolerable_failures}"
                         " in a row)")  # fmt: skip
        if decide:
            self.periodic_trigger.decide()

    def _abort_subsumed_pending(self, cid: int) -> None:
        """Checkpoint ``cid`` completed: abort the pending checkpoints before it (savepoints
        excepted), as Flink does. Before the completed ones it subsumes release their shared
        files: a pending checkpoint may reuse a file of the previous completed one that ``cid``
        does not, and its abort must find that file still held (it then deletes only its own
        uploads). Completed later, it would enter the store referencing a deleted file. The
        tasks are not told: ``cid``'s notification subsumes it there (sinks keep its data)."""
        for older in sorted(c for c, p in self.pending.items() if c < cid):
            if self.pending[older].props.savepoint is None:
                self._abort(older, CheckpointFailureReason.CHECKPOINT_SUBSUMED,
                            f"by checkpoint {cid}", notify=False, decide=False)  # fmt: skip

    # -- completion ----------------------------------------------------------------------------
    async def _complete(self, pending: CoordinatorPending) -> None:
        """Finalise a fully acknowledged checkpoint (:mod:`.finalization`), then retain it
        (:mod:`.retention`) and tell the listener, the console and the tasks."""
        cid = pending.checkpoint_id
        try:
            finalized = await self.finalizer.finalize(pending)
        except Exception as err:
            if self._state.attempt_running:
                log.exception("checkpoint %d: finalizing failed", cid)
            else:  # the attempt ended meanwhile (cancel, failure): its executor may be gone
                log.info("checkpoint %d of job %s not finalized: the attempt ended (%r)", cid,
                         self.job_id, err)  # fmt: skip
            self.pending[cid] = pending
            self._abort(cid, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, repr(err))
            return
        meta = finalized.metadata
        now = meta.completion_timestamp
        savepoint = pending.props.savepoint
        if savepoint is not None:
            duration = now - pending.trigger_timestamp
            self._savepoint_complete(cid, savepoint, finalized.pointer, duration)
            return
        if cid < self.latest_completed_id:
            # Finalised after a later checkpoint completed (overlapping finalisations): it is
            # subsumed as if still pending. The tasks were told of the later one, and a late
            # notification would reach sinks and incremental backends after it.
            self.pending[cid] = pending
            later = f"by checkpoint {self.latest_completed_id}"
            self._abort(cid, CheckpointFailureReason.CHECKPOINT_SUBSUMED, later, notify=False,
                        decide=False)  # fmt: skip
            return
        self.latest_completed_id = cid
        self.restorer.checkpoint_completed()
        entry = CompletedCheckpoint(cid, pending.trigger_timestamp, now, False, finalized.pointer,
                                    finalized.metadata_size)  # fmt: skip
        self._abort_subsumed_pending(cid)
        retained = self.retention.completed(entry, meta, {*self.pending, *self._finalizing})
        self.failures.on_success(cid)
        self.last_completion_ms = now
        self.listener(Completed(cid, now, self.storage.checkpoint_pointer(cid), False, retained))
        self.console(completion_line(meta, pending.acknowledged_metrics, self.options))
        self.gateway.notify_complete(cid)
        self.periodic_trigger.decide()

    async def end(self, final_status: str) -> None:
        """The job ended ``final_status``: let a checkpoint acknowledged by the last tasks
        land (or it would outlive the retention decided here) and the deletes already started
        end, then :meth:`shutdown` on the executor. Once it returns, the job's checkpoint files
        are final: what the job then reports ended is what a restore finds."""
        await self.finish_completing()
        await self.retention.settled()
        await asyncio.get_running_loop().run_in_executor(None, self.shutdown, final_status)

    def shutdown(self, final_status: str) -> None:
        """The job ended (``FINISHED``, ``CANCELED`` or ``FAILED``): keep or delete the retained
        checkpoints as ``execution.checkpointing.externalized-checkpoint-retention`` says
        (Flink's rules: finished jobs delete them; cancelled jobs keep them only with
        RETAIN_ON_CANCELLATION; failed jobs keep them unless NO_EXTERNALIZED_CHECKPOINTS).
        First every orphaned ``chk-<n>`` directory goes (see :mod:`.orphan_sweep`), so only
        retained checkpoints stay. Blocking I/O: on the executor, after
        :meth:`finish_completing`, once per job (:meth:`end` does both)."""
        self.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)
        keep = self.settings.keeps_retained_checkpoints(final_status)
        # Nothing is pending or being finalized any more and no id will be issued: every
        # directory below the next id that is not retained and not completed is an orphan.
        kept = self.retention.shutdown(keep, self.next_id, {*self.pending, *self._finalizing})
        self._fire(ShutDown())
        if kept is not None:
            self.console(f"retained checkpoint {kept.checkpoint_id} of job {self.job_id[:8]}: "
                         f"{kept.external_path}")  # fmt: skip

    # -- restore (:mod:`.snapshot_restore`) ------------------------------------------------------
    async def latest_restore_plan(self) -> RestorePlan | None:
        """Where a failover restores from: the newest retained checkpoint (a claimed snapshot
        included), or None. Only between attempts (after :meth:`finish_completing`), so the
        store does not change meanwhile."""
        return await self.restorer.latest_plan()

    async def restore(self, path: str) -> tuple[RestorePlan, RecoveryClaimMode]:
        """The job starts from ``path`` (``execution.state-recovery.path``): read and verified
        on the executor, then claimed on the loop, before the first attempt, as
        ``execution.state-recovery.claim-mode`` says; the plan and the claim mode applied."""
        plan, adopted = await self.restorer.read_and_adopt(path)
        self.next_id = self.restorer.claim(plan, adopted, self.next_id)
        return plan, self.settings.claim_mode
