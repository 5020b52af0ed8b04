"""The JobMaster: runs in the driver, deploys the job on workers, supervises it to its end.

It owns the job's lifecycle as an explicit state machine (:class:`JobStatus`, PyFlink's
names)::

    INITIALIZING -> RUNNING -> FINISHED
                        \\-> RESTARTING -> RUNNING  (a failure, and the restart strategy allows)
                        \\-> FAILING -> FAILED        (a failure it does not)
                        \\-> CANCELLING -> CANCELED   (JobClient.cancel)

Each deployment is an *attempt*: fresh workers, fresh tasks, restored from the latest
completed checkpoint; messages of older attempts are dropped (fencing).

It also hosts the split enumerators of the job's sources, prints what ``print()`` sinks send,
and queues what ``execute_and_collect`` sinks send.

Monitoring: workers' ``TaskMetricsReport`` samples go to a :class:`TaskMetricsStore`; triggers,
acknowledgements, declines, completions, aborts and restores go to a
:class:`CheckpointStatsTracker`; :meth:`JobMaster.job_view` freezes both with the job's state
into a :class:`JobView`. The REST API (:mod:`undertow.runtime.cluster.rest`) serves that
view; the JobMaster starts it on its loop before the first attempt (a port that is taken fails
``start``) and closes it when the job has ended. It is imported only when ``rest.port`` is not
-1, and handed only a view-building callable.

Threading: the JobMaster runs its own asyncio loop on a daemon thread. Public methods
(``start``, ``cancel``, ``wait``, ``status``, ``rest_url``) may be called from any thread;
``job_view`` only on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import enum
import logging
import os
import queue
import secrets
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol

import cloudpickle

from undertow.connectors.source import SplitEnumerator, SplitEnumeratorContext
from undertow.core.config import Configuration, Options
from undertow.core.errors import (
    ConfigurationError,
    JobCancelledError,
    JobExecutionError,
    UndertowError,
)
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.savepoint import SavepointRequest, savepoint_directory
from undertow.runtime.cluster.control import ControlConnection
from undertow.runtime.cluster.heartbeat import HeartbeatMonitor
from undertow.runtime.cluster.messages import (
    AcknowledgeCheckpoint,
    AddSplits,
    CancelTasks,
    ChannelStateRecovered,
    CollectRecords,
    DeclineCheckpoint,
    Deploy,
    Heartbeat,
    NoMoreSplits,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    PrintLines,
    RegisterWorker,
    RestoreAssignment,
    Shutdown,
    SplitRequest,
    StopSource,
    TaskFailed,
    TaskFinished,
    TaskMetricsReport,
    TasksDeployed,
    TriggerCheckpoint,
    WorkerFailed,
)
from undertow.runtime.cluster.metrics import (
    CheckpointStatsTracker,
    ExecutionState,
    JobView,
    TaskMetricsStore,
    VertexInput,
    VertexView,
    vertex_rest_id,
)
from undertow.runtime.cluster.placement import ExecutionPlan, plan_execution
from undertow.runtime.cluster.restart import GiveUp, Restart, restart_strategy
from undertow.runtime.network.framing import server_handshake
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.keys import CheckpointKey

log = logging.getLogger(__name__)

REGISTRATION_TIMEOUT_S = 120.0
#: How long a worker's network failure waits for a dead peer to be reported as the cause.
PEER_FAILURE_GRACE_S = 0.3
WORKER_EXIT_TIMEOUT_S = 30.0


class JobStatus(enum.Enum):
    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    def is_globally_terminal_state(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED


class RestServer(Protocol):
    """What the JobMaster keeps of its REST endpoint (``rest.server.RestEndpoint``)."""

    @property
    def url(self) -> str: ...

    def close(self) -> None: ...


class WorkerLauncher(Protocol):
    """Starts the workers of one attempt (implemented in :mod:`undertow.deploy`)."""

    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: int,
        config: dict[str, str],
    ) -> None: ...  # fmt: skip

    def wait(self, timeout: float) -> bool:
        """Wait for all workers to exit; True if they did."""

    def kill(self) -> None: ...

    def describe_exit(self, worker_index: int) -> str:
        """How a worker ended ("exit code 1", "still running"), for error messages. May wait
        briefly for the worker to be reaped: call it off the event loop."""

    def exited(self) -> list[int]:
        """Workers of the current attempt that have already ended (does not wait)."""


@dataclass
class JobExecutionResult:
    """What ``execute`` returns (PyFlink's ``JobExecutionResult``)."""

    job_id: str
    net_runtime_ms: int
    accumulators: dict[str, Any] = field(default_factory=dict)

    def get_job_id(self) -> str:
        return self.job_id

    def get_net_runtime(self) -> int:
        return self.net_runtime_ms

    def get_accumulator_result(self, name: str) -> Any:
        return self.accumulators.get(name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self.accumulators)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        return self


_END = object()


class _EnumeratorContext(SplitEnumeratorContext[Any]):
    def __init__(self, master: JobMaster, vertex_id: int, parallelism: int) -> None:
        self.master = master
        self.vertex_id = vertex_id
        self.parallelism = parallelism

    def current_parallelism(self) -> int:
        return self.parallelism

    def registered_readers(self) -> list[int]:
        return list(range(self.parallelism))

    def assign_split(self, split: Any, subtask: int) -> None:
        self.master._send_to_subtask(subtask, AddSplits(self.vertex_id, subtask, [split]))

    def signal_no_more_splits(self, subtask: int) -> None:
        self.master._send_to_subtask(subtask, NoMoreSplits(self.vertex_id, subtask))


class _Attempt:
    """What belongs to one deployment attempt (see the module docstring)."""

    def __init__(self, number: int, num_workers: int, heartbeat_timeout_ms: int) -> None:
        self.number = number
        self.num_workers = num_workers
        self.heartbeats = HeartbeatMonitor(heartbeat_timeout_ms)
        self.workers: dict[int, ControlConnection] = {}
        self.registered: dict[int, RegisterWorker] = {}
        self.deployed: set[int] = set()
        self.finished: set[tuple[int, int]] = set()
        self.failed: set[tuple[int, int]] = set()
        #: (vertex id, subtask) -> when it finished (epoch ms)
        self.finished_at: dict[tuple[int, int], int] = {}
        #: When the tasks were deployed (epoch ms); -1 before.
        self.deployed_at = -1
        self.accumulators: dict[str, Any] = {}
        self.enumerators: dict[int, SplitEnumerator[Any]] = {}
        self.all_registered = asyncio.Event()
        self.all_deployed = asyncio.Event()
        #: Subtasks still consuming in-flight data re-emitted by a rescaled restore; set when
        #: the attempt is deployed. No checkpoint is triggered before it is empty.
        self.recovering: set[tuple[int, int]] = set()
        #: ChannelStateRecovered reports (they may come before ``recovering`` is computed).
        self.recovering_done: set[tuple[int, int]] = set()
        self.recovered = asyncio.Event()
        self.done = asyncio.Event()
        self.error: UndertowError | None = None
        #: A failure that restarting cannot fix (a corrupt checkpoint to restore).
        self.fatal = False

    def end(self, error: UndertowError | None = None) -> None:
        if self.done.is_set():
            return
        self.error = error
        self.done.set()


#: How long the REST API outlives the job for a stop-with-savepoint result nobody fetched yet.
STOP_RESULT_GRACE_S = 5.0
#: Statuses in which a savepoint request waits for the tasks to run.
_STARTING = frozenset({JobStatus.CREATED, JobStatus.INITIALIZING, JobStatus.RUNNING,
                       JobStatus.RESTARTING})  # fmt: skip


class JobMaster:
    def __init__(
        self, job_graph: JobGraph, config: Configuration, launcher: WorkerLauncher,
        num_workers: int,
    ) -> None:  # fmt: skip
        self.job_graph = job_graph
        self.config = Configuration(config)
        self.launcher = launcher
        self.job_id = uuid.uuid4().hex
        self.secret = secrets.token_bytes(32)
        self.plan: ExecutionPlan = plan_execution(job_graph, num_workers)
        self.attempt = 0
        self.num_restarts = 0
        self._status = JobStatus.INITIALIZING
        self._status_times: dict[JobStatus, int] = {JobStatus.INITIALIZING: _now_ms()}
        self._start_ms = _now_ms()
        self._end_ms = -1
        self._failure: UndertowError | None = None
        self._cancel_requested = False
        self._current: _Attempt | None = None
        self.collected: dict[str, queue.Queue[Any]] = {}
        self._done = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started_at = 0.0
        self._result: JobExecutionResult | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] = ("", 0)
        self._restart = restart_strategy(self.config)
        self._startup_error: UndertowError | None = None
        self._rest: RestServer | None = None
        #: The REST API's address (``http://127.0.0.1:PORT``); None when disabled.
        self.rest_url: str | None = None
        self.task_metrics = TaskMetricsStore()
        self.checkpoint_stats = CheckpointStatsTracker(
            {v.id: v.parallelism for v in job_graph.vertices},
            self.config.get(Options.CHECKPOINTS_HISTORY),
        )
        self._rest_ids = {v.id: vertex_rest_id(v) for v in job_graph.vertices}
        self.coordinator: CheckpointCoordinator | None = None
        #: stop-with-savepoint futures resolved when the job ended, with their savepoints
        self._stopped_with: list[tuple[concurrent.futures.Future[str], str]] = []
        #: REST trigger id -> Flink's AsynchronousOperationResult of the savepoint
        self._operations: dict[str, dict[str, Any]] = {}
        #: REST-triggered stops whose result nobody fetched yet
        self._unfetched: set[str] = set()
        # Always: savepoints (and restores) work without periodic checkpoints, as in Flink.
        self._setup_checkpointing()

    def _setup_checkpointing(self) -> None:
        """The checkpoint coordinator and storage, also with periodic checkpoints off (then
        nothing triggers periodically; savepoints and restores still go through them).

        Nothing is created on disk here for a job that may never need it: with periodic
        checkpoints off and no ``execution.state-recovery.path`` the checkpoint directory and
        its key file are created only when the first savepoint is triggered (tasks write
        their state under the directory; the coordinator loads or creates the key then). With
        either set, the key is loaded (or created) now, on the caller's thread, as it always
        was: a bad key file fails the job's construction, before anything is deployed.
        """
        directory = self.config.get(Options.CHECKPOINT_DIR)
        if not directory:
            directory = os.path.join(tempfile.gettempdir(), "undertow-checkpoints")
            self.config.set(Options.CHECKPOINT_DIR, directory)
        key = CheckpointKey(directory, self.config.get(Options.HMAC_KEY) or None)
        periodic = self.config.get(Options.CHECKPOINT_INTERVAL) > 0
        if periodic or self.config.get(Options.RECOVERY_PATH):
            key.load()
        storage = CheckpointStorage(directory, self.job_id)
        self.coordinator = CheckpointCoordinator(
            self.job_id, self.job_graph, self.config, storage, key, self, self._console
        )

    # -- public, any thread ------------------------------------------------------------------
    @property
    def status(self) -> JobStatus:
        return self._status

    def collect_queue(self, sink_id: str) -> queue.Queue[Any]:
        return self.collected.setdefault(sink_id, queue.Queue())

    def start(self) -> None:
        """Start the JobMaster's loop, its REST API and the first attempt; returns once the
        REST API listens. Raises what kept the job from starting (a taken ``rest.port``)."""
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._thread_main, args=(started,), name=f"undertow-jobmaster-{self.job_id[:8]}",
            daemon=True,
        )  # fmt: skip
        self._thread.start()
        started.wait()
        if self._startup_error is not None:
            raise self._startup_error

    def cancel(self) -> None:
        loop = self._loop
        if loop is not None and not self._status.is_globally_terminal_state():
            loop.call_soon_threadsafe(self._cancel)

    def trigger_savepoint(
        self, request: SavepointRequest, trigger_id: str | None = None
    ) -> concurrent.futures.Future[str]:
        """Take a savepoint (any thread; see :mod:`undertow.runtime.checkpoint.savepoint`).
        The future gets the savepoint directory: at once when it completed, or, for a stop
        with savepoint, once the job has ended ``FINISHED``; it fails naming the job, the
        checkpoint and the directory."""
        result: concurrent.futures.Future[str] = concurrent.futures.Future()
        try:
            request = self.resolve_savepoint_directory(request)
        except ConfigurationError as err:
            result.set_exception(err)
            return result
        loop = self._loop
        if loop is None or self._status.is_globally_terminal_state():
            result.set_exception(self._savepoint_refused(request, f"job is {self._status.value}"))
            return result

        async def start() -> None:
            coordinator = self.coordinator
            if coordinator is None:
                result.set_exception(self._savepoint_refused(request, "no checkpoint coordinator"))
                return
            # A job that is starting (or restarting) takes it once all its tasks run.
            deadline = time.monotonic() + coordinator.timeout_ms / 1000.0
            while (
                not coordinator.is_active and not coordinator.stopping
                and self._status in _STARTING and time.monotonic() < deadline
            ):  # fmt: skip
                await asyncio.sleep(0.01)
            future = coordinator.trigger_savepoint(request)
            future.add_done_callback(lambda f: self._savepoint_done(f, request, result, trigger_id))

        try:
            asyncio.run_coroutine_threadsafe(start(), loop)
        except RuntimeError:  # the loop closed meanwhile: the job ended
            result.set_exception(self._savepoint_refused(request, "job ended"))
        return result

    def resolve_savepoint_directory(self, request: SavepointRequest) -> SavepointRequest:
        """``request`` with its directory, or ``execution.checkpointing.savepoint-dir`` if it
        has none; raises :class:`ConfigurationError` naming the option when neither is set.
        Any thread (reads the configuration only)."""
        directory = savepoint_directory(
            request.target_directory, self.config.get(Options.SAVEPOINT_DIR), self.job_id,
            request.kind,
        )  # fmt: skip
        return replace(request, target_directory=directory)

    def _savepoint_refused(self, request: SavepointRequest, why: str) -> CheckpointException:
        return CheckpointException(
            CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE,
            f"{request.kind} of job {self.job_id} into {request.target_directory}: {why}",
        )

    def _savepoint_done(self, future: asyncio.Future[str], request: SavepointRequest,
                        result: concurrent.futures.Future[str],
                        trigger_id: str | None) -> None:  # fmt: skip
        error = future.exception()
        if trigger_id is not None:
            self._operations[trigger_id] = savepoint_operation(
                None if error is not None else future.result(), error
            )
        if error is not None:
            result.set_exception(error)
        elif request.stop:
            self._stopped_with.append((result, future.result()))
        else:
            result.set_result(future.result())

    # -- REST (JobControl), on the loop ----------------------------------------------------------
    def stop_with_savepoint_trigger(self, target_directory: str | None, drain: bool) -> str:
        """Start a stop with savepoint for the REST API; its trigger id. Without a directory
        the configured ``execution.checkpointing.savepoint-dir`` is used; if that is unset
        too, raises :class:`ConfigurationError` (the request is refused, nothing starts)."""
        request = self.resolve_savepoint_directory(
            SavepointRequest(target_directory or "", stop=True, drain=drain)
        )
        trigger_id = uuid.uuid4().hex
        self._operations[trigger_id] = savepoint_operation(None, None)
        self._unfetched.add(trigger_id)
        result = self.trigger_savepoint(request, trigger_id)
        result.add_done_callback(lambda f: self._trigger_refused(trigger_id, f))
        return trigger_id

    def savepoint_trigger(self, target_directory: str | None) -> str:
        """Start a savepoint for the REST API (the job goes on); its trigger id. Refuses
        (``ConfigurationError``) like :meth:`stop_with_savepoint_trigger`."""
        request = self.resolve_savepoint_directory(SavepointRequest(target_directory or ""))
        trigger_id = uuid.uuid4().hex
        self._operations[trigger_id] = savepoint_operation(None, None)
        result = self.trigger_savepoint(request, trigger_id)
        result.add_done_callback(lambda f: self._trigger_refused(trigger_id, f))
        return trigger_id

    def _trigger_refused(self, trigger_id: str, result: concurrent.futures.Future[str]) -> None:
        """A request refused before it started (the job ended) has no savepoint callback."""
        error = result.exception()
        if error is not None and self._operations.get(trigger_id) == savepoint_operation(
            None, None
        ):
            self._operations[trigger_id] = savepoint_operation(None, error)

    def savepoint_operation(self, trigger_id: str) -> dict[str, Any] | None:
        operation = self._operations.get(trigger_id)
        if operation is not None and operation["status"]["id"] == "COMPLETED":
            self._unfetched.discard(trigger_id)
        return operation

    async def _hand_over_stop_results(self) -> None:
        """The REST API closes with the job, which a stop with savepoint ends at once: keep it
        until the poller fetched the result of every REST-triggered stop, at most
        ``STOP_RESULT_GRACE_S`` (the CLI polls every 100 ms)."""
        deadline = time.monotonic() + STOP_RESULT_GRACE_S
        while self._unfetched and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def _resolve_stops(self) -> None:
        """The job ended: a stop with savepoint succeeded if it ended ``FINISHED``."""
        for result, pointer in self._stopped_with:
            if self._status is JobStatus.FINISHED:
                result.set_result(pointer)
            else:
                result.set_exception(JobExecutionError(
                    f"job {self.job_id} ended {self._status.value} after its savepoint "
                    f"{pointer}: {self._failure}"
                ))  # fmt: skip
        self._stopped_with.clear()

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        """Block until the job ends; raise its failure (or cancellation)."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job_id} still {self._status.value} after {timeout} s")
        if self._failure is not None:
            raise self._failure
        assert self._result is not None
        return self._result

    # -- the loop ----------------------------------------------------------------------------
    def _thread_main(self, started: threading.Event) -> None:
        try:
            asyncio.run(self._main(started))
        except BaseException as err:  # last resort: never leave a caller waiting
            if self._failure is None:
                self._failure = JobExecutionError(f"JobMaster crashed: {err!r}")
            self._set_status(JobStatus.FAILED)
        finally:
            for q in self.collected.values():
                q.put(_END)
            started.set()
            self._done.set()
            self._resolve_stops()

    async def _main(self, started: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        host = self.config.get(Options.BIND_HOST)
        server = await asyncio.start_server(self._on_worker, host, 0)
        self._address = (host, int(server.sockets[0].getsockname()[1]))
        try:
            self._rest = await self._start_rest()
        except ConfigurationError as err:
            server.close()
            self._startup_error = self._failure = err
            self._set_status(JobStatus.FAILED)
            return
        started.set()
        self._started_at = time.monotonic()
        try:
            restore = await self._initial_restore()
            while True:
                error = await self._run_attempt(restore)
                if error is None or self._cancel_requested:
                    break
                decision: Restart | GiveUp
                if self._current is not None and self._current.fatal:
                    decision = GiveUp("the checkpoint to restore from is corrupt (no fallback)")
                else:
                    decision = self._restart.decide(time.time_ns() // 1_000_000)
                if isinstance(decision, GiveUp):
                    if self.num_restarts:
                        self._console(
                            f"job {self.job_id[:8]}: not restarting again after "
                            f"{self.num_restarts} restarts: {decision.reason}"
                        )
                    self._failure = error
                    self._set_status(JobStatus.FAILED)
                    break
                self._set_status(JobStatus.RESTARTING)
                self._console(f"job {self.job_id[:8]} failed ({_first_line(error)}); restarting "
                              f"in {decision.delay_ms} ms")  # fmt: skip
                await asyncio.sleep(decision.delay_ms / 1000.0)
                if self._cancel_requested:
                    break
                self.attempt += 1
                self.num_restarts += 1
                if self.coordinator is not None:
                    await self.coordinator.finish_completing()
                    latest = self.coordinator.latest_restore_plan()
                    if latest is not None:
                        restore = latest
                        self._report_restored(latest)
        except UndertowError as err:  # e.g. the recovery path does not exist or verify
            self._failure = err
        finally:
            server.close()
            self._finish_status()
            if self.coordinator is not None:
                # a checkpoint acknowledged by the last finished tasks may still be written:
                # let it land first, or it would outlive the retention decided here
                await self.coordinator.finish_completing()
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, self.coordinator.shutdown, self._status.value)
            if self._rest is not None:
                await self._hand_over_stop_results()
                self._rest.close()

    async def _start_rest(self) -> RestServer | None:
        if self.config.get(Options.REST_PORT) < 0:
            return None
        from undertow.runtime.cluster.rest.server import start_rest_endpoint

        endpoint = await start_rest_endpoint(self.config, self.job_view, self)
        if endpoint is not None:
            self.rest_url = endpoint.url
            self._console(f"REST API at {endpoint.url}")
        return endpoint

    def _report_restored(self, plan: RestorePlan) -> None:
        meta = plan.metadata
        path = plan.pointer  # a restored (claimed) snapshot; the job's own: its chk-<n>
        if not path:
            storage = CheckpointStorage(plan.checkpoint_dir, plan.job_id)
            path = storage.checkpoint_pointer(meta.checkpoint_id)
        self.checkpoint_stats.report_restored(meta.checkpoint_id, _now_ms(), path,
                                              meta.is_savepoint)  # fmt: skip

    async def _initial_restore(self) -> RestorePlan | None:
        path = self.config.get(Options.RECOVERY_PATH)
        if not path or self.coordinator is None:
            return None
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(None, self.coordinator.restore_from_path, path)
        mode = self.coordinator.claim_restored(plan)
        self._console(f"restoring job {self.job_id[:8]} from checkpoint "
                      f"{plan.metadata.checkpoint_id} at {path} ({mode.value})")  # fmt: skip
        self.checkpoint_stats.report_restored(plan.metadata.checkpoint_id, _now_ms(), path,
                                              plan.metadata.is_savepoint)  # fmt: skip
        return plan

    async def _run_attempt(self, restore: RestorePlan | None) -> UndertowError | None:
        attempt = self._current = _Attempt(
            self.attempt, self.plan.num_workers, self.config.get(Options.HEARTBEAT_TIMEOUT)
        )
        watchdog = asyncio.ensure_future(self._watch_heartbeats(attempt))
        self.task_metrics.clear()
        self.launcher.launch(self.plan.num_workers, self._address, self.secret, self.attempt,
                             self.config.to_dict())  # fmt: skip
        problem = await self._await_registration(attempt)
        if problem is not None:
            attempt.end(JobExecutionError(problem))
        if not attempt.done.is_set():
            self._deploy(attempt, restore)
        deployed = asyncio.ensure_future(attempt.all_deployed.wait())
        finished = asyncio.ensure_future(attempt.done.wait())
        await asyncio.wait({deployed, finished}, return_when=asyncio.FIRST_COMPLETED)
        if attempt.all_deployed.is_set() and not attempt.done.is_set() and self.coordinator:
            await self._await_channel_state_recovery(attempt, restore)
        if attempt.all_deployed.is_set() and not attempt.done.is_set() and self.coordinator:
            done = frozenset() if restore is None else frozenset(
                (vid, s) for vid in restore.finished_vertices
                for s in range(self.job_graph.vertex(vid).parallelism)
            )  # fmt: skip
            self.coordinator.start(done)
        await finished
        deployed.cancel()
        watchdog.cancel()
        self._stop_checkpoints(CheckpointFailureReason.JOB_FAILOVER_REGION)
        await self._shutdown_workers(attempt)
        if attempt.error is None and not self._cancel_requested:
            runtime = int((time.monotonic() - self._started_at) * 1000)
            self._result = JobExecutionResult(self.job_id, runtime, dict(attempt.accumulators))
        return attempt.error

    async def _await_channel_state_recovery(
        self, attempt: _Attempt, restore: RestorePlan | None
    ) -> None:
        """After a rescaled restore of in-flight data, wait (or until the attempt ends) until
        every consumer of a rescaled edge consumed what the producers re-emitted. A checkpoint
        taken before would persist re-emitted records as ordinary in-flight data, and a restore
        from it would no longer deliver them before the live data of other channels (the
        per-key order the ``EndOfChannelStateEvent`` barrier gives). Flink's tasks likewise
        stay INITIALIZING, and untriggerable, while they recover channel state."""
        if restore is None or not restore.rescaled_gates:
            return
        attempt.recovering = {
            (vid, s)
            for vid in restore.rescaled_gates
            if vid not in restore.finished_vertices
            for s in range(self.job_graph.vertex(vid).parallelism)
        } - attempt.recovering_done
        if attempt.recovering:
            attempt.recovered.clear()  # reports before this point may have set it
            recovered = asyncio.ensure_future(attempt.recovered.wait())
            ended = asyncio.ensure_future(attempt.done.wait())
            await asyncio.wait({recovered, ended}, return_when=asyncio.FIRST_COMPLETED)
            recovered.cancel()
            ended.cancel()

    async def _await_registration(self, attempt: _Attempt) -> str | None:
        """Wait until every worker registered; a worker that dies first is noticed at once,
        not at the registration timeout. Returns what went wrong, or None."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REGISTRATION_TIMEOUT_S
        while not attempt.all_registered.is_set() and not attempt.done.is_set():
            dead = [w for w in self.launcher.exited() if w not in attempt.registered]
            if dead or loop.time() > deadline:
                missing = dead or sorted(set(range(attempt.num_workers)) - set(attempt.registered))
                reasons = await loop.run_in_executor(None, self._describe_exits, missing)
                what = (
                    "ended before registering"
                    if dead
                    else (f"did not register within {REGISTRATION_TIMEOUT_S:.0f} s")
                )
                return f"workers {missing} {what}: " + "; ".join(reasons)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(attempt.all_registered.wait(), 0.2)
        return None

    async def _watch_heartbeats(self, attempt: _Attempt) -> None:
        """Fail the attempt when a registered worker stays silent past ``heartbeat.timeout``."""
        timeout_ms = attempt.heartbeats.timeout_ms
        period_s = min(self.config.get(Options.HEARTBEAT_INTERVAL), timeout_ms) / 4000.0
        while not attempt.done.is_set():
            await asyncio.sleep(period_s)
            late = attempt.heartbeats.overdue(_now_ms())
            if late:
                first = late[0]
                self._fail(attempt, JobExecutionError(
                    f"worker {first.worker} sent no heartbeat for {first.silent_ms / 1000:.1f} s "
                    f"(heartbeat.timeout {timeout_ms} ms): it hangs or its host is unreachable"
                ))  # fmt: skip
                # A hung worker will not exit when asked: stop the attempt's workers now.
                await asyncio.get_running_loop().run_in_executor(None, self.launcher.kill)
                return

    def _describe_exits(self, workers: list[int]) -> list[str]:
        return [f"worker {w}: {self.launcher.describe_exit(w)}" for w in workers]

    async def _shutdown_workers(self, attempt: _Attempt) -> None:
        for conn in attempt.workers.values():
            conn.send(Shutdown())
            await conn.drain()
        loop = asyncio.get_running_loop()
        exited = await loop.run_in_executor(None, self.launcher.wait, WORKER_EXIT_TIMEOUT_S)
        if not exited:
            log.warning("job %s: workers did not exit in time; killing them", self.job_id)
            self.launcher.kill()
        for conn in attempt.workers.values():
            conn.close()
        for enumerator in attempt.enumerators.values():
            enumerator.close()

    def _finish_status(self) -> None:
        if self._cancel_requested:
            self._set_status(JobStatus.CANCELED)
            self._failure = JobCancelledError(f"job {self.job_id} was cancelled")
        elif self._failure is not None:
            self._set_status(JobStatus.FAILED)
        elif self._result is not None:
            self._set_status(JobStatus.FINISHED)
        else:
            self._set_status(JobStatus.FAILED)
            self._failure = JobExecutionError(f"job {self.job_id} ended without a result")

    def _deploy(self, attempt: _Attempt, restore: RestorePlan | None) -> None:
        graph_bytes = bytes(cloudpickle.dumps(self.job_graph))
        peers = {w: (r.data_host, r.data_port) for w, r in attempt.registered.items()}
        for vertex in self.job_graph.vertices:
            if vertex.is_source:
                source = vertex.operators[0].instantiate()["source"]
                ctx = _EnumeratorContext(self, vertex.id, vertex.parallelism)
                if restore is not None and vertex.id in restore.enumerator_states:
                    state = restore.enumerator_states[vertex.id]
                    enumerator = source.restore_enumerator(ctx, state)
                else:
                    enumerator = source.create_enumerator(ctx)
                enumerator.start()
                for subtask in range(vertex.parallelism):
                    enumerator.add_reader(subtask)
                attempt.enumerators[vertex.id] = enumerator
        assignment = None
        if restore is not None:
            assignment = RestoreAssignment(restore.metadata.checkpoint_id, restore.checkpoint_dir,
                                           restore.job_id, restore.subtask_files,
                                           restore.channel_state,
                                           restore.finished_vertices, restore.reemit,
                                           restore.rescaled_gates,
                                           restore.rescaled_outputs)  # fmt: skip
        self._set_status(JobStatus.RUNNING)
        attempt.deployed_at = _now_ms()
        for conn in attempt.workers.values():
            conn.send(Deploy(self.attempt, graph_bytes, peers, self.plan.num_workers,
                             self.config.to_dict(), self.job_id, assignment))  # fmt: skip

    async def _on_worker(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            index = await server_handshake(reader, writer, self.secret)
        except Exception as err:
            log.warning("job %s: dropped a control connection: %s", self.job_id, err)
            writer.close()
            return
        conn = ControlConnection(reader, writer, f"worker {index}",
                                 self.config.get(Options.MAX_FRAME_SIZE))  # fmt: skip
        attempt: _Attempt | None = None
        try:
            while True:
                msg = await conn.recv()
                if msg is None:
                    break
                current = self._current
                if current is None or getattr(msg, "attempt", current.number) != current.number:
                    continue  # fencing: a message from an older attempt
                attempt = current
                attempt.heartbeats.seen(index, _now_ms())
                self._handle(attempt, index, conn, msg)
        except asyncio.CancelledError:
            return
        except Exception as err:
            if attempt is not None:
                attempt.end(
                    JobExecutionError(f"control connection to worker {index} failed: {err}")
                )
            return
        finally:
            conn.close()
        if attempt is not None and not attempt.done.is_set():
            loop = asyncio.get_running_loop()
            how = await loop.run_in_executor(None, self.launcher.describe_exit, index)
            self._fail(attempt, JobExecutionError(f"worker {index} exited unexpectedly ({how})"))

    def _handle(self, attempt: _Attempt, index: int, conn: ControlConnection, msg: Any) -> None:
        if isinstance(msg, TaskMetricsReport):
            for sample in msg.metrics:
                self.task_metrics.update(sample)
        elif isinstance(msg, PrintLines):
            sys.stdout.write("\n".join(msg.lines) + "\n")
            sys.stdout.flush()
        elif isinstance(msg, CollectRecords):
            self.collect_queue(msg.sink_id).put(msg.values)
        elif isinstance(msg, SplitRequest):
            enumerator = attempt.enumerators.get(msg.vertex_id)
            if enumerator is not None:
                enumerator.handle_split_request(msg.subtask, msg.hostname)
        elif isinstance(msg, AcknowledgeCheckpoint):
            self.checkpoint_stats.report_ack(msg.checkpoint_id, msg.vertex_id, msg.subtask,
                                             _now_ms(), msg.metrics)  # fmt: skip
            if self.coordinator is not None:
                self.coordinator.receive_ack(msg.vertex_id, msg.subtask, msg.checkpoint_id,
                                             msg.handle, msg.metrics)  # fmt: skip
        elif isinstance(msg, DeclineCheckpoint):
            reason = getattr(msg.reason, "message", str(msg.reason))
            self.checkpoint_stats.report_decline(
                msg.checkpoint_id, f"{reason} (subtask {msg.subtask} of "
                f"'{self.job_graph.vertex(msg.vertex_id).name}'): {msg.detail}"
            )  # fmt: skip
            if self.coordinator is not None:
                self.coordinator.receive_decline(msg.vertex_id, msg.subtask, msg.checkpoint_id,
                                                 msg.reason, msg.detail)  # fmt: skip
        elif isinstance(msg, ChannelStateRecovered):
            key = (msg.vertex_id, msg.subtask)
            attempt.recovering_done.add(key)
            attempt.recovering.discard(key)
            if not attempt.recovering:
                attempt.recovered.set()
        elif isinstance(msg, TaskFinished):
            attempt.finished.add((msg.vertex_id, msg.subtask))
            attempt.finished_at[(msg.vertex_id, msg.subtask)] = _now_ms()
            coordinator = self.coordinator
            if coordinator is not None and coordinator.checkpoints_after_tasks_finish:
                coordinator.on_task_finished(msg.vertex_id, msg.subtask)  # FLIP-147
            else:
                self._stop_checkpoints(CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING)
            for name, value in msg.accumulators.items():
                prev = attempt.accumulators.get(name)
                attempt.accumulators[name] = value if prev is None else prev + value
            if len(attempt.finished) == self.job_graph.total_subtasks:
                attempt.end()
        elif isinstance(msg, TaskFailed):
            attempt.failed.add((msg.vertex_id, msg.subtask))
            vertex = self.job_graph.vertex(msg.vertex_id)
            self._fail(attempt, JobExecutionError(
                f"job failed: operator '{msg.operator}' (subtask {msg.subtask + 1}/"
                f"{vertex.parallelism} of '{vertex.name}') raised {msg.error}",
                operator=msg.operator, subtask=msg.subtask, remote_traceback=msg.traceback,
            ))  # fmt: skip
        elif isinstance(msg, WorkerFailed):
            error = JobExecutionError(
                f"worker {msg.worker_index} failed: {msg.error}", remote_traceback=msg.traceback
            )
            if msg.fatal:
                attempt.fatal = True
                self._fail(attempt, error)
            else:
                # Often the echo of a peer that died (connection reset): give the dead
                # worker's own exit a moment to be reported first, as the real cause.
                loop = asyncio.get_running_loop()
                loop.call_later(PEER_FAILURE_GRACE_S, self._fail, attempt, error)
        elif isinstance(msg, TasksDeployed):
            attempt.deployed.add(index)
            if len(attempt.deployed) == attempt.num_workers:
                attempt.all_deployed.set()
        elif isinstance(msg, RegisterWorker):
            attempt.workers[index] = conn
            attempt.registered[index] = msg
            if len(attempt.registered) == attempt.num_workers:
                attempt.all_registered.set()
        elif isinstance(msg, Heartbeat):
            pass  # every message counts as a sign of life (_on_worker)
        else:
            log.warning("job %s: unexpected message %r from worker %d", self.job_id, msg, index)

    def _send_to_subtask(self, subtask: int, message: Any) -> None:
        attempt = self._current
        if attempt is not None:
            conn = attempt.workers.get(self.plan.worker_of(subtask))
            if conn is not None:
                conn.send(message)

    def _broadcast(self, message: Any) -> None:
        attempt = self._current
        if attempt is not None:
            for conn in attempt.workers.values():
                conn.send(message)

    def _fail(self, attempt: _Attempt, error: UndertowError) -> None:
        if attempt.done.is_set():
            return
        self._set_status(JobStatus.FAILING)
        for conn in attempt.workers.values():
            conn.send(CancelTasks(attempt.number))
        attempt.end(error)

    def _cancel(self) -> None:
        self._cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        attempt = self._current
        if attempt is not None and not attempt.done.is_set():
            for conn in attempt.workers.values():
                conn.send(CancelTasks(attempt.number))
            attempt.end(JobCancelledError(f"job {self.job_id} was cancelled"))

    def _set_status(self, status: JobStatus) -> None:
        self._status = status
        now = _now_ms()
        self._status_times[status] = now
        if status.is_globally_terminal_state():
            self._end_ms = now

    def _stop_checkpoints(self, reason: CheckpointFailureReason) -> None:
        """Stop triggering and abort pending checkpoints; they fail with ``reason``."""
        if self.coordinator is None:
            return
        pending = list(self.coordinator.pending)
        self.coordinator.stop(reason)
        for cid in pending:
            self.checkpoint_stats.report_failed(cid, _now_ms(), reason.message)

    def _console(self, line: str) -> None:
        sys.stderr.write(f"[undertow] {line}\n")
        sys.stderr.flush()

    # -- TaskGateway (the checkpoint coordinator's view) ---------------------------------------
    def trigger_source(self, vertex_id: int, subtask: int, barrier: CheckpointBarrier) -> None:
        self.checkpoint_stats.report_pending(barrier.checkpoint_id, barrier.timestamp,
                                             barrier.options.is_unaligned)  # fmt: skip
        self._send_to_subtask(subtask, TriggerCheckpoint(self.attempt, vertex_id, subtask, barrier))

    def stop_source(self, vertex_id: int, subtask: int, drain: bool) -> None:
        self._send_to_subtask(subtask, StopSource(self.attempt, vertex_id, subtask, drain))

    def report_savepoint(self, checkpoint_id: int, pointer: str) -> None:
        self.checkpoint_stats.report_completed(checkpoint_id, _now_ms(), pointer)

    def notify_complete(self, checkpoint_id: int) -> None:
        coordinator = self.coordinator
        if coordinator is not None and checkpoint_id not in coordinator.savepoint_ids:
            self.checkpoint_stats.report_completed(
                checkpoint_id, _now_ms(), coordinator.storage.checkpoint_pointer(checkpoint_id)
            )
            self.checkpoint_stats.report_retained(c.checkpoint_id for c in coordinator.store.all())
        self._broadcast(NotifyCheckpointComplete(self.attempt, checkpoint_id))

    def notify_aborted(self, checkpoint_id: int) -> None:
        now = _now_ms()
        reason = "checkpoint was aborted"
        trigger = self.checkpoint_stats.trigger_timestamp(checkpoint_id)
        coordinator = self.coordinator
        if coordinator and trigger is not None and now - trigger >= coordinator.timeout_ms:
            reason = CheckpointFailureReason.CHECKPOINT_EXPIRED.message
        self.checkpoint_stats.report_failed(checkpoint_id, now, reason)
        self._broadcast(NotifyCheckpointAborted(self.attempt, checkpoint_id))

    def fail_job(self, error: UndertowError) -> None:
        if self._current is not None:
            self._fail(self._current, error)

    def enumerators(self) -> dict[int, Any]:
        return dict(self._current.enumerators) if self._current is not None else {}

    # -- monitoring ------------------------------------------------------------------------------
    def job_view(self) -> JobView:
        """The job now, frozen (what the REST API serves). Only on the JobMaster's loop."""
        now = _now_ms()
        attempt = self._current
        terminal = self._status.is_globally_terminal_state()
        vertices = []
        for v in self.job_graph.vertices:
            keys = [(v.id, s) for s in range(v.parallelism)]
            ends = [attempt.finished_at.get(k) for k in keys] if attempt is not None else []
            end = -1
            if ends and all(e is not None for e in ends):
                end = max(e for e in ends if e is not None)
            elif terminal:
                end = self._end_ms
            vertices.append(VertexView(
                vertex_id=v.id, rest_id=self._rest_ids[v.id], name=v.name,
                parallelism=v.parallelism, max_parallelism=v.max_parallelism,
                subtask_states=tuple(self._subtask_state(attempt, k) for k in keys),
                start_time=attempt.deployed_at if attempt is not None else -1, end_time=end,
                metrics=tuple(self.task_metrics.view(*k) for k in keys),
                inputs=tuple(VertexInput(self._rest_ids[e.source_vertex], e.partitioner_kind)
                             for e in v.inputs),
            ))  # fmt: skip
        return JobView(
            job_id=self.job_id, name=self.job_graph.job_name, state=self._status.value,
            job_type=self.config.get(Options.RUNTIME_MODE), start_time=self._start_ms,
            end_time=self._end_ms, now=now,
            status_timestamps=MappingProxyType(
                {s.value: self._status_times.get(s, 0) for s in JobStatus}
            ),
            max_parallelism=max(v.max_parallelism for v in self.job_graph.vertices),
            num_workers=self.plan.num_workers, vertices=tuple(vertices),
            checkpoints=self.checkpoint_stats.snapshot(),
            config=MappingProxyType(self.config.to_dict()),
            num_restarts=self.num_restarts,
        )  # fmt: skip

    def _subtask_state(self, attempt: _Attempt | None, key: tuple[int, int]) -> ExecutionState:
        """A subtask's Flink ``ExecutionState``, from the job's status and the attempt's facts."""
        if attempt is not None and key in attempt.failed:
            return ExecutionState.FAILED
        if attempt is not None and key in attempt.finished:
            return ExecutionState.FINISHED
        status = self._status
        if status is JobStatus.RUNNING:
            deployed = attempt is not None and self.plan.worker_of(key[1]) in attempt.deployed
            return ExecutionState.RUNNING if deployed else ExecutionState.DEPLOYING
        if status in (JobStatus.INITIALIZING, JobStatus.CREATED):
            return ExecutionState.CREATED
        if status in (JobStatus.FAILING, JobStatus.CANCELLING):
            return ExecutionState.CANCELING
        if status is JobStatus.FINISHED:
            return ExecutionState.FINISHED
        if status is JobStatus.RESTARTING and attempt is not None and not attempt.done.is_set():
            return ExecutionState.SCHEDULED
        return ExecutionState.CANCELED


def savepoint_operation(location: str | None, error: BaseException | None) -> dict[str, Any]:
    """Flink's ``AsynchronousOperationResult`` body for a savepoint trigger."""
    if error is not None:
        return {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
            "class": type(error).__name__, "error-message": str(error),
        }}}  # fmt: skip
    if location is None:
        return {"status": {"id": "IN_PROGRESS"}}
    return {"status": {"id": "COMPLETED"}, "operation": {"location": location}}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def default_num_workers(config: Configuration, slots: int) -> int:
    configured = config.get(Options.WORKERS)
    return configured if configured > 0 else max(1, min(slots, os.cpu_count() or 1))
