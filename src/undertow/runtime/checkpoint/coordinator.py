"""The checkpoint coordinator: a shell of timers, messages and storage I/O around pure decisions.

Threading: the JobMaster's loop thread; storage calls run on its executor; :meth:`shutdown`
runs on the executor once the attempt stopped.

Why one piece of about 870 lines: it is one class, the shell, whose steps (trigger,
acknowledge, complete, abort, savepoints, restore, sweep) all read and change the same
per-attempt state on one loop; every decision is already in a pure module
(:mod:`.trigger_decider`, :mod:`.pending_checkpoint`, :mod:`.completed_store`,
:mod:`.failure_manager`, :mod:`.trigger_plan`, :mod:`.shared_files`, :mod:`.ack_summary`),
its options in :mod:`.settings`. Restore
planning reads files on the executor, never on the loop.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from undertow.core.config import Configuration, Options
from undertow.core.errors import RestoreError, UndertowError
from undertow.core.types import CheckpointId, SubtaskIndex, VertexId
from undertow.core.units import human_bytes
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.ack_summary import (
    channel_state_of,
    checkpoint_properties,
    shared_of,
    state_file,
)
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions, SnapshotType
from undertow.runtime.checkpoint.claim_mode import (
    RecoveryClaimMode,
    RestoredSnapshot,
    decide_claim,
)
from undertow.runtime.checkpoint.clock import CoordinatorClock, SystemClock, Timer
from undertow.runtime.checkpoint.completed_store import (
    CompletedCheckpoint,
    CompletedCheckpointStore,
    DiscardSubsumed,
)
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
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    VertexMetadata,
    decode_metadata,
    encode_metadata,
    total_state_size,
)
from undertow.runtime.checkpoint.orphan_sweep import (
    SweepFacts,
    select_orphans,
    sweep_due,
)
from undertow.runtime.checkpoint.pending_checkpoint import (
    AckResult,
    CheckpointMetrics,
    PendingCheckpoint,
)
from undertow.runtime.checkpoint.restore_plan import RestorePlan, plan_restore, present
from undertow.runtime.checkpoint.savepoint import (
    SavepointRequest,
    refuse_restore,
    refuse_savepoint,
    savepoint_properties,
)
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.shared_files import SharedFiles
from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
from undertow.runtime.checkpoint.trigger_decider import (
    CheckpointTriggerRequest,
    TriggerNow,
    TriggerState,
    WaitUntil,
    decide,
    enqueue,
    remove,
)
from undertow.runtime.checkpoint.trigger_plan import (
    SubtaskKey,
    SubtaskTopology,
    late_triggers,
    plan_checkpoint,
)
from undertow.runtime.network.buffer import serialize_object
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle
from undertow.storage.errors import CorruptCheckpointError
from undertow.storage.keys import CheckpointKey, legacy_key_hint

log = logging.getLogger(__name__)


class TaskGateway(Protocol):
    """What the coordinator asks of the tasks of the running attempt (implemented by
    :class:`~undertow.runtime.cluster.task_gateway.AttemptGateway`). Loop thread only."""

    def trigger_source(self, vertex_id: int, subtask: int, barrier: CheckpointBarrier) -> None: ...

    def notify_complete(self, checkpoint_id: int) -> None: ...

    def notify_aborted(self, checkpoint_id: int) -> None: ...

    def fail_job(self, error: UndertowError) -> None: ...

    def enumerators(self) -> dict[int, Any]:
        """Source vertex id -> its running split enumerator."""

    def stop_source(self, vertex_id: int, subtask: int, drain: bool) -> None:
        """Stop with savepoint: end the source subtask's data; called just before
        ``trigger_source`` for the savepoint, whose barrier must follow it."""


@dataclass(frozen=True, slots=True)
class PendingProps:
    """What the coordinator keeps beside a pending checkpoint's acknowledgements. Replaced,
    never changed, when subtasks finish while it is pending (FLIP-147)."""

    barrier: CheckpointBarrier
    #: source vertex id -> its enumerator's state at the trigger
    enumerators: Mapping[int, object]
    #: the savepoint this checkpoint is, or None for a checkpoint
    savepoint: SavepointRequest | None
    #: subtasks that finished before or while it was pending (acknowledged without state)
    finished: frozenset[SubtaskKey]
    #: subtasks that got its barrier from the coordinator (sources, and late triggers)
    triggered: frozenset[SubtaskKey]


def _ignore(event: CheckpointEvent) -> None:
    pass


class CheckpointCoordinator:
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
        #: authenticates ``_metadata``; loaded (maybe created) on the executor when the first
        #: checkpoint or savepoint is triggered or a snapshot is restored, unless it already is
        self.key = key
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
        self.min_pause_ms = settings.min_pause_ms
        self.max_concurrent = settings.max_concurrent
        self.options = settings.options(SnapshotType.CHECKPOINT)
        self.store = CompletedCheckpointStore(settings.num_retained)
        self.failures = CheckpointFailureManager(settings.tolerable_failures)
        self.metadata: dict[int, CheckpointMetadata] = {}
        self.pending: dict[int, PendingCheckpoint[SubtaskStateHandle, PendingProps]] = {}
        self.next_id = 1
        self.last_completion_ms = 0
        self._timer: Timer | None = None
        self._wake: Timer | None = None
        self.queue: tuple[CheckpointTriggerRequest, ...] = ()
        self._request_ids = itertools.count()
        self._timeouts: dict[int, Timer] = {}
        #: Periodic checkpoints are being triggered (an attempt runs and the interval is set).
        self._running = False
        #: An attempt's tasks all run: savepoints may start (with or without periodic ones).
        self._active = False
        self._completing: set[asyncio.Future[None]] = set()
        self._sources = [(v.id, s) for v in graph.vertices if v.is_source
                         for s in range(v.parallelism)]  # fmt: skip
        self._tasks = frozenset((v.id, s) for v in graph.vertices for s in range(v.parallelism))
        self._topology = SubtaskTopology.of(graph)
        #: Subtasks of the current attempt that finished (FLIP-147).
        self._finished: set[SubtaskKey] = set()
        self.checkpoints_after_tasks_finish = settings.after_tasks_finish
        self.savepoint_options = settings.options(SnapshotType.SAVEPOINT)
        #: A stop's savepoint: tasks that take it wait for its completion before closing.
        self.stop_savepoint_options = settings.options(SnapshotType.SYNC_SAVEPOINT)
        self._batch = settings.batch
        #: checkpoint id -> the future of a pending savepoint (its directory, or its failure)
        self._savepoints: dict[int, asyncio.Future[str]] = {}
        #: A stop-with-savepoint is in progress (periodic checkpoints stay off).
        self.stopping = False
        #: A savepoint requested while checkpoints were pending: it starts when they ended.
        self._waiting_savepoint: tuple[SavepointRequest, asyncio.Future[str]] | None = None
        #: ids of the savepoints taken (not in the store; their files are the user's)
        self.savepoint_ids: set[int] = set()
        #: NO_CLAIM restore: the next checkpoint must reference no file of the snapshot.
        self.force_full_snapshot = False
        #: CLAIM restore: the claimed snapshot's id and plan while it is in the store.
        self._claimed: tuple[int, RestorePlan] | None = None
        #: Fully acknowledged checkpoints whose ``_metadata`` is being written (not pending,
        #: not yet in the store): the orphan sweep must not touch their directories.
        self._finalizing: set[int] = set()
        #: When the last periodic orphan sweep started (monotonic ms), and whether it runs.
        self._last_sweep_ms: int | None = None
        self._sweeping = False
        #: Files in ``shared/`` of incremental checkpoints, and who may delete them (FLIP-193).
        self.shared_files = SharedFiles(storage)

    @property
    def enabled(self) -> bool:
        """Periodic checkpoints are configured (``execution.checkpointing.interval`` > 0)."""
        return self.interval_ms > 0

    @property
    def is_running(self) -> bool:
        """An attempt's tasks all run and periodic checkpoints are on."""
        return self._running

    @property
    def is_active(self) -> bool:
        """An attempt's tasks all run, so a savepoint may start (periodic checkpoints or not)."""
        return self._active

    # -- lifecycle (per attempt) ----------------------------------------------------------------
    def start(self, finished: frozenset[SubtaskKey] = frozenset()) -> None:
        """All tasks of the attempt run (but ``finished``, deployed as finished): savepoints
        may start, and periodic triggering starts (random initial delay) if configured."""
        self._finished = set(finished)
        self._active = True
        if not self.enabled:
            return
        self._running = True
        low = min(self.min_pause_ms, self.interval_ms)
        self._schedule(random.uniform(low, self.interval_ms) / 1000.0)

    def stop(self, reason: CheckpointFailureReason) -> None:
        """The attempt ends (failure, cancel, finish): abort what is pending, stop the timer."""
        self._running = False
        self._active = False
        self.queue = ()
        for handle in (self._timer, self._wake):
            if handle is not None:
                handle.cancel()
        self._timer = self._wake = None
        waiting, self._waiting_savepoint = self._waiting_savepoint, None
        for cid in list(self.pending):
            self._abort(cid, reason, notify=False)
        if waiting is not None and not waiting[1].done():
            request, future = waiting
            future.set_exception(CheckpointException(
                reason, f"{request.kind} of job {self.job_id} into {request.target_directory} "
                f"did not start: {reason.message}",
            ))  # fmt: skip
            self.stopping = False

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
        if not self.checkpoints_after_tasks_finish:
            self.stop(CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING)
            return
        key = (vertex_id, subtask)
        self._finished.add(key)
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

    def _schedule(self, delay_s: float) -> None:
        """The periodic timer: every interval, queue a periodic request and decide."""
        if self._running:
            self._timer = self.clock.call_later(delay_s, self._on_period)

    def _on_period(self) -> None:
        self._timer = None
        if not self._running:
            return
        request = CheckpointTriggerRequest.periodic(next(self._request_ids), self.clock.now_ms())
        self.queue = enqueue(self.queue, request).queue
        self._decide()
        self._schedule(self.interval_ms / 1000.0)

    def _decide(self) -> None:
        """Ask the trigger decider what to do now, and do it."""
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if not self._running or self._waiting_savepoint is not None:
            return
        if any(p.props.savepoint is not None for p in self.pending.values()):
            return  # nothing runs beside a savepoint; its completion decides again
        now = self.clock.now_ms()
        state = TriggerState(
            min_pause_ms=self.min_pause_ms,
            max_concurrent=self.max_concurrent,
            num_pending=len(self.pending),
            last_completion_ms=self.last_completion_ms or None,
            is_triggering=False,
            queue=self.queue,
        )
        decision = decide(now, state)
        if isinstance(decision, TriggerNow):
            self.queue = remove(self.queue, decision.request)
            self._trigger(now)
        elif isinstance(decision, WaitUntil):
            delay = max(0, decision.time_ms - now) / 1000.0
            self._wake = self.clock.call_later(delay, self._decide)

    # -- savepoints ----------------------------------------------------------------------------
    def trigger_savepoint(self, request: SavepointRequest) -> asyncio.Future[str]:
        """Start a savepoint now (see :mod:`.savepoint`); the future gets the savepoint
        directory once it completed, or a :class:`CheckpointException` naming the job, the
        checkpoint and the directory. Only on the JobMaster's loop, while an attempt runs."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        problem = refuse_savepoint(
            request, batch=self._batch, stopping=self.stopping, job_id=self.job_id,
            writes_channel_state=self.settings.writes_channel_state,
        )  # fmt: skip
        if problem is None and not self._active:
            problem = f"job {self.job_id}: no attempt is running"
        if problem is not None:
            future.set_exception(
                CheckpointException(CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE, problem)
            )
            return future
        if request.stop:
            self.stopping = True
            self._running = False  # no periodic checkpoint after the sources' EndOfData
            self.queue = ()
            for handle in (self._timer, self._wake):
                if handle is not None:
                    handle.cancel()
            self._timer = self._wake = None
        # A savepoint never runs beside an unaligned checkpoint (reference §7: its barriers
        # could still be overtaken by the savepoint's) or another savepoint: it starts when
        # those ended. Beside aligned ones it starts now: its barriers queue behind theirs
        # (issue 17: waiting for them cost up to a checkpoint's time under backpressure). No
        # periodic checkpoint starts meanwhile.
        self._waiting_savepoint = (request, future)
        self._start_waiting_savepoint()
        return future

    def _start_waiting_savepoint(self) -> None:
        waiting = self._waiting_savepoint
        if waiting is None or any(
            p.props.savepoint is not None or p.props.barrier.options.needs_channel_state
            for p in self.pending.values()
        ):
            return
        self._waiting_savepoint = None
        request, future = waiting
        if self._trigger(self.clock.now_ms(), request, future) is None:
            future.set_exception(CheckpointException(
                CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING,
                f"job {self.job_id}: every task finished; no savepoint to take into "
                f"{request.target_directory}",
            ))  # fmt: skip

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
            if self.force_full_snapshot:  # NO_CLAIM restore (reference §7)
                options = replace(options, snapshot_type=SnapshotType.FULL_CHECKPOINT)
        else:
            options = self._savepoint_options(savepoint)
        barrier = CheckpointBarrier(cid, now, options)
        self._prefetch_key()
        enumerators = self.gateway.enumerators()
        enumerator_states = {vid: e.snapshot_state(cid) for vid, e in enumerators.items()}
        props = PendingProps(barrier, enumerator_states, savepoint, plan.finished, plan.trigger)
        if future is not None:
            self._savepoints[cid] = future
        pending: PendingCheckpoint[SubtaskStateHandle, PendingProps] = PendingCheckpoint(
            cid, now, plan.wait_for, props
        )
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

    def _savepoint_options(self, savepoint: SavepointRequest) -> CheckpointOptions:
        """A savepoint's barrier options: aligned as in Flink, or unaligned when asked
        (beyond Flink: the in-flight data becomes the savepoint's channel state)."""
        options = self.stop_savepoint_options if savepoint.stop else self.savepoint_options
        options = replace(options, savepoint_format=savepoint.format_type)
        return options.as_unaligned() if savepoint.unaligned else options

    def _prefetch_key(self) -> None:
        """Start loading (or creating) the metadata key on the executor if it is not loaded:
        the first trigger is when the job first needs it. A failure is not reported here;
        :meth:`_metadata_key` meets it again when the checkpoint completes."""
        if self.key.is_loaded:
            return
        loading = asyncio.get_running_loop().run_in_executor(None, self.key.load)
        loading.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def _metadata_key(self) -> bytes:
        """The metadata key: from memory when loaded, else loaded on the executor."""
        if self.key.is_loaded:
            return self.key.load()
        return await asyncio.get_running_loop().run_in_executor(None, self.key.load)

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
            if not state.is_empty and cid not in self.metadata:
                self._discard(cid)  # a late ack of an aborted checkpoint re-created its dir
                self._release_shared(cid, state.shared)  # and uploaded shared files
            return
        if pending.acknowledge((vertex_id, subtask), state, metrics) is AckResult.SUCCESS:
            self.listener(Acknowledged(cid, vertex_id, subtask, self.clock.now_ms(), metrics))
            self._on_acknowledged(cid, pending)

    def _on_acknowledged(
        self, cid: int, pending: PendingCheckpoint[SubtaskStateHandle, PendingProps]
    ) -> None:
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
        self.listener(Aborted(cid, self.clock.now_ms(), reason, message or reason.message))
        log.info("checkpoint %d of job %s aborted: %s %s", cid, self.job_id, reason.name, detail)
        if notify:
            self.gateway.notify_aborted(cid)
        self._discard(cid)
        self._release_shared(cid, shared_of(acknowledged))
        request = pending.props.savepoint
        if request is not None:
            self._savepoint_failed(cid, request, reason, detail)
            return
        self._start_waiting_savepoint()
        decision = self.failures.on_failure(cid, reason)
        if isinstance(decision, FailJob):
            self.gateway.fail_job(CheckpointException(reason, f"{decision.message} {detail}"))
        elif decide:
            self._decide()

    def _discard(self, cid: int, level: int = logging.DEBUG) -> None:
        """Delete a checkpoint's directory on the executor; failures are logged at ``level``,
        not raised. DEBUG for a checkpoint that never completed (a task may still be writing
        a late file into it; the orphan sweep deletes what is left)."""

        def discard() -> None:
            try:
                self.storage.discard(cid)
            except OSError as err:
                log.log(level, "job %s: could not delete checkpoint %d: %s", self.job_id, cid,
                        err)  # fmt: skip

        asyncio.get_running_loop().run_in_executor(None, discard)

    def _release_shared(self, cid: int, aborted: tuple[FileHandle, ...] | None = None) -> None:
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
            asyncio.get_running_loop().run_in_executor(None, self.shared_files.delete, release)

    def _discard_subsumed(self, entry: CompletedCheckpoint) -> None:
        """Delete a checkpoint that left the store: one of this job's (its ``chk-<n>``), or a
        claimed snapshot (its own directory, wherever it is). On the executor; failures are
        logged, not raised."""
        claimed = self._claimed
        if claimed is None or claimed[0] != entry.checkpoint_id:
            self._discard(entry.checkpoint_id, logging.WARNING)  # its _metadata may stay
            return
        self._claimed = None

        def discard() -> None:
            try:
                self.storage.discard_location(entry.external_path)
            except (OSError, ValueError) as err:
                log.warning("job %s: could not delete claimed checkpoint %d at %s: %s",
                            self.job_id, entry.checkpoint_id, entry.external_path, err)  # fmt: skip

        log.info("job %s: claimed checkpoint %d subsumed; deleting %s", self.job_id,
                 entry.checkpoint_id, entry.external_path)  # fmt: skip
        asyncio.get_running_loop().run_in_executor(None, discard)

    def _savepoint_failed(self, cid: int, request: SavepointRequest,
                          reason: CheckpointFailureReason, detail: str) -> None:  # fmt: skip
        """A savepoint does not count towards tolerable checkpoint failures; a failed stop
        with savepoint fails the job over to its latest checkpoint (the sources stopped)."""
        error = CheckpointException(
            reason,
            f"{request.kind} {cid} of job {self.job_id} into {request.target_directory} "
            f"failed: {reason.message} {detail}".rstrip(),
        )
        future = self._savepoints.pop(cid, None)
        if future is not None and not future.done():
            future.set_exception(error)
        if request.stop:
            self.stopping = False
            self.gateway.fail_job(error)

    # -- completion ----------------------------------------------------------------------------
    async def _complete(self, pending: PendingCheckpoint[SubtaskStateHandle, PendingProps]) -> None:
        cid = pending.checkpoint_id
        loop = asyncio.get_running_loop()
        try:
            coordinators: dict[int, FileHandle | None] = {}
            for vid, state in pending.props.enumerators.items():
                data = serialize_object(state)
                coordinators[vid] = await loop.run_in_executor(
                    None, self.storage.write_file, cid, f"enumerator-v{vid}.state", data
                )
            states = pending.acknowledged_states
            fully = plan_checkpoint(self._topology, pending.props.finished).fully_finished
            vertices = tuple(
                VertexMetadata(
                    vertex_id=v.id,
                    name=v.name,
                    uids=tuple(op.uid for op in v.operators),
                    parallelism=v.parallelism,
                    max_parallelism=v.max_parallelism,
                    finished=v.id in fully,
                    subtasks=present(
                        {s: state_file(states.get((v.id, s))) for s in range(v.parallelism)}
                    ),
                    channel_state=channel_state_of(
                        {s: states.get((v.id, s)) for s in range(v.parallelism)}
                    ),
                )
                for v in self.graph.vertices
            )
            now = self.clock.now_ms()
            savepoint = pending.props.savepoint
            meta = CheckpointMetadata(
                job_id=self.job_id, checkpoint_id=cid, trigger_timestamp=pending.trigger_timestamp,
                completion_timestamp=now, is_savepoint=savepoint is not None, vertices=vertices,
                coordinators=coordinators,
                properties=self._properties(pending),
                shared_files=shared_of(states.values()),
            )  # fmt: skip
            payload = encode_metadata(
                meta, await self._metadata_key(), self.settings.metadata_max_size
            )
            if savepoint is not None:
                pointer = await loop.run_in_executor(
                    None, self.storage.export_savepoint, cid, savepoint.target_directory, payload
                )
            else:
                pointer = await loop.run_in_executor(
                    None, self.storage.commit_metadata, cid, payload
                )
        except Exception as err:
            if self._active:
                log.exception("checkpoint %d: finalizing failed", cid)
            else:  # the attempt ended meanwhile (cancel, failure): its executor may be gone
                log.info("checkpoint %d of job %s not finalized: the attempt ended (%r)", cid,
                         self.job_id, err)  # fmt: skip
            self.pending[cid] = pending
            self._abort(cid, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, repr(err))
            return
        if savepoint is not None:
            self._savepoint_complete(cid, savepoint, pointer, now - pending.trigger_timestamp)
            return
        self.metadata[cid] = meta
        self.force_full_snapshot = False
        entry = CompletedCheckpoint(cid, pending.trigger_timestamp, now, False, pointer,
                                    len(payload))  # fmt: skip
        self._abort_subsumed_pending(cid)
        self.shared_files.completed(cid, meta.shared_files)  # before anything is subsumed
        for decision in self.store.add(entry):
            self.metadata.pop(decision.checkpoint_id, None)
            if isinstance(decision, DiscardSubsumed):  # savepoints are only forgotten
                self._discard_subsumed(decision.checkpoint)
                self._release_shared(decision.checkpoint_id)
        self._maybe_sweep()
        self.failures.on_success(cid)
        self.last_completion_ms = now
        size = total_state_size(meta)
        metrics = pending.acknowledged_metrics
        alignment = max((m.get("alignment_duration_ms", 0.0) for m in metrics.values()), default=0)
        retained = tuple(entry.checkpoint_id for entry in self.store.all())
        self.listener(Completed(cid, now, self.storage.checkpoint_pointer(cid), False, retained))
        line = (
            f"checkpoint {cid} completed in {now - pending.trigger_timestamp} ms, "
            f"{human_bytes(size)}, "
            f"alignment {alignment:.0f} ms"
        )
        debloated = [
            m["debloat_estimate_ms"] for m in metrics.values() if "debloat_estimate_ms" in m
        ]
        if debloated:  # buffer debloating: the slowest subtask's in-flight buffers
            line += f", buffers ~{max(debloated):.0f} ms to consume"
        if self.options.needs_channel_state:  # unaligned, or aligned with a timeout
            persisted = sum(int(m.get("persisted_data", 0)) for m in metrics.values())
            unaligned = any(m.get("unaligned") for m in metrics.values())
            line += (
                f" ({'unaligned' if unaligned else 'aligned'}, in-flight {human_bytes(persisted)})"
            )
        else:
            line += f" ({self.options.alignment.name.lower()})"
        self.console(line)
        self.gateway.notify_complete(cid)
        self._decide()

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

    def _properties(
        self, pending: PendingCheckpoint[SubtaskStateHandle, PendingProps]
    ) -> dict[str, str]:
        """What ``_metadata`` records of how the checkpoint went; a savepoint adds its format
        and the job's state backend (checked when a job restores it)."""
        properties = checkpoint_properties(pending.acknowledged_metrics.values())
        if pending.props.savepoint is not None:
            backend = self.config.get(Options.STATE_BACKEND)
            properties.update(savepoint_properties(pending.props.savepoint, backend))
        return properties

    def _savepoint_complete(self, cid: int, request: SavepointRequest, pointer: str,
                            duration_ms: int) -> None:  # fmt: skip
        """A savepoint was exported: not stored (never subsumed or restored on failover);
        its files in the job's ``chk-<n>`` go. Only a synchronous one is notified (sinks commit,
        and it is the tasks' final checkpoint)."""
        self._discard(cid)
        self.savepoint_ids.add(cid)
        self.last_completion_ms = self.clock.now_ms()
        self.console(f"{request.kind} {cid} of job {self.job_id[:8]} completed in "
                     f"{duration_ms} ms: {pointer}")  # fmt: skip
        self.listener(Completed(cid, self.clock.now_ms(), pointer, True, None))
        future = self._savepoints.pop(cid, None)
        if future is not None and not future.done():
            future.set_result(pointer)
        if request.stop:
            self.gateway.notify_complete(cid)
        else:
            self._decide()

    # -- orphaned directories ------------------------------------------------------------------
    def _maybe_sweep(self) -> None:
        """After a completion's subsumption, on the loop: start a sweep of orphaned
        directories on the executor if none runs and the last started long enough ago."""
        now = time.monotonic_ns() // 1_000_000
        if self._sweeping or not sweep_due(now, self._last_sweep_ms):
            return
        facts = self._sweep_facts(self._newest_completed_id())
        self._sweeping = True
        self._last_sweep_ms = now
        future = asyncio.get_running_loop().run_in_executor(None, self._sweep, facts, True)
        future.add_done_callback(lambda _: setattr(self, "_sweeping", False))

    def _newest_completed_id(self) -> int | None:
        """The newest completed checkpoint or savepoint (savepoints are not in the store)."""
        ids = [entry.checkpoint_id for entry in self.store.all()] + list(self.savepoint_ids)
        return max(ids, default=None)

    def _sweep_facts(self, below: int | None) -> SweepFacts:
        """The ids a sweep must not touch, taken on the loop (or when nothing else runs)."""
        protected = {entry.checkpoint_id for entry in self.store.all()}
        protected |= set(self.pending) | set(self._finalizing)
        return SweepFacts(below=below, protected=frozenset(protected))

    def _sweep(self, facts: SweepFacts, bounded: bool) -> int:
        """Delete the orphaned ``chk-<n>`` directories of this job (blocking I/O: on the
        executor); return how many went. Failures are logged as warnings, never raised."""
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

    def shutdown(self, final_status: str) -> None:
        """The job ended (``FINISHED``, ``CANCELED`` or ``FAILED``): keep or delete the retained
        checkpoints as ``execution.checkpointing.externalized-checkpoint-retention`` says
        (Flink's rules: finished jobs delete them; cancelled jobs keep them only with
        RETAIN_ON_CANCELLATION; failed jobs keep them unless NO_EXTERNALIZED_CHECKPOINTS).
        First every orphaned ``chk-<n>`` directory goes (see :mod:`.orphan_sweep`), so only
        retained checkpoints stay. Blocking I/O: on the executor, after
        :meth:`finish_completing`, once per job."""
        self.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)
        keep = self.settings.keeps_retained_checkpoints(final_status)
        # Nothing is pending or being finalized any more and no id will be issued: every
        # directory below the next id that is not retained and not completed is an orphan.
        self._sweep(self._sweep_facts(self.next_id), False)
        retained = list(self.store.all())
        if keep:
            self._sweep_shared()
            if retained:
                self.console(
                    f"retained checkpoint {retained[-1].checkpoint_id} of job "
                    f"{self.job_id[:8]}: {retained[-1].external_path}"
                )
            return
        claimed = self._claimed[0] if self._claimed is not None else None
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

    def _sweep_shared(self) -> None:
        """At the end of the job: shared files no retained checkpoint holds go (blocking)."""
        try:
            orphans = self.shared_files.sweep()
        except OSError as err:
            log.warning("job %s: could not sweep shared files: %s", self.job_id, err)
            return
        if orphans:
            log.debug("job %s: deleted %d unreferenced shared files", self.job_id, len(orphans))

    # -- restore -------------------------------------------------------------------------------
    async def latest_restore_plan(self) -> RestorePlan | None:
        """Where a failover restores from: the newest retained checkpoint (a claimed snapshot
        included), or None (then the attempt restores what the job started from, if any).
        The checkpoint is chosen on the loop; its plan, which reads and verifies the
        enumerator state files, is made on the executor. Only between attempts (after
        :meth:`finish_completing`), so the store does not change meanwhile."""
        latest = self.store.latest()
        if latest is None:
            return None
        claimed = self._claimed
        if claimed is not None and claimed[0] == latest.checkpoint_id:
            return claimed[1]
        meta = self.metadata[latest.checkpoint_id]
        return await asyncio.get_running_loop().run_in_executor(
            None, plan_restore, self.graph, meta, self.storage, self.config
        )

    async def restore(self, path: str) -> tuple[RestorePlan, RecoveryClaimMode]:
        """The job starts from ``path`` (``execution.state-recovery.path``): read and verify
        it on the executor (:meth:`restore_from_path`), then claim it on the loop
        (:meth:`claim_restored`); the plan and the claim mode applied."""
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(None, self.restore_from_path, path)
        adopted: list[str] = []
        if self.settings.claim_mode is RecoveryClaimMode.CLAIM and plan.metadata.shared_files:
            adopted = await loop.run_in_executor(
                None, self.shared_files.adopt, plan.pointer, plan.metadata.shared_files
            )
        return plan, self.claim_restored(plan, adopted)

    def restore_from_path(self, path: str) -> RestorePlan:
        """``execution.state-recovery.path``: a retained checkpoint or savepoint of any job,
        read and verified (blocking I/O: call it on an executor, then
        :meth:`claim_restored` on the loop). Reads only: the snapshot is not modified (the
        job's metadata key is loaded, and created under the job's root if missing)."""
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
        refused = refuse_restore(meta.properties, path, self.config.get(Options.STATE_BACKEND))
        if refused is not None:
            raise RestoreError(f"job {self.job_id}: {refused}")
        plan = plan_restore(self.graph, meta, storage, self.config)
        return replace(plan, pointer=location.pointer, metadata_size=len(payload))

    def claim_restored(
        self, plan: RestorePlan, adopted: list[str] | None = None
    ) -> RecoveryClaimMode:
        """The job starts from ``plan`` (:meth:`restore_from_path`): apply
        ``execution.state-recovery.claim-mode`` (see :mod:`.claim_mode`); returns the mode.
        ``adopted``: the claimed snapshot's shared files linked into this job's ``shared/``.
        Only on the JobMaster's loop, before the first attempt."""
        mode = self.settings.claim_mode
        meta = plan.metadata
        snapshot = RestoredSnapshot(
            checkpoint_id=meta.checkpoint_id, is_savepoint=meta.is_savepoint,
            pointer=plan.pointer, trigger_timestamp=meta.trigger_timestamp,
            completion_timestamp=meta.completion_timestamp, metadata_size=plan.metadata_size,
        )  # fmt: skip
        decision = decide_claim(mode, snapshot, self.next_id)
        self.next_id = decision.next_checkpoint_id
        # Handles name shared files relative to the job directory: the first checkpoint may
        # reuse the snapshot's files only once CLAIM adopted them into this job's shared/
        # (:meth:`restore`); else it is full (the claimed files go once it subsumes them).
        self.force_full_snapshot = decision.force_full_snapshot or (
            bool(meta.shared_files) and not adopted
        )
        if decision.retain is not None:
            self.metadata[meta.checkpoint_id] = meta
            self.shared_files.restored(meta.checkpoint_id, plan.pointer, meta.shared_files, mode,
                                       adopted or ())  # fmt: skip
            self._claimed = (meta.checkpoint_id, plan)
            for subsumed in self.store.add(decision.retain):  # an empty store: nothing
                self.metadata.pop(subsumed.checkpoint_id, None)
        return mode
