"""The JobMaster: runs in the driver, deploys the job on workers, supervises it to its end.

It runs the job's attempts one after the other (:mod:`.attempt`: registration, heartbeats,
message dispatch), restarting as the restart strategy says from the latest completed checkpoint,
and moves the job through its lifecycle (:mod:`.job_status`). It owns the checkpoint coordinator,
which reaches the tasks through an :class:`.AttemptGateway` and reports to the
:class:`.CheckpointStatsTracker` through its events; savepoints: :mod:`.savepoint_operations`;
source enumerators: :mod:`.enumerators`; workers are started by a :class:`.WorkerLauncher`,
their control connections served by :mod:`.worker_control`; each failed attempt's root cause is
printed at once and kept (:mod:`.exception_history`); the REST API (imported unless
``rest.port`` is -1) serves :meth:`job_view` from before the first attempt to the job's end.

Threading: the JobMaster runs its own asyncio loop on a daemon thread. Public methods
(``start``, ``cancel``, ``wait``, ``status``, ``rest_url``, savepoints) may be called from any
thread; ``job_view`` and the ``AttemptHost`` methods only on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import secrets
import sys
import threading
import time
import uuid
from typing import Any, Protocol

import cloudpickle

from undertow.common.job_execution_result import JobExecutionResult
from undertow.common.job_status import JobStatus
from undertow.core.config import Configuration, Options
from undertow.core.errors import (
    ConfigurationError,
    JobCancelledError,
    JobExecutionError,
    UndertowError,
)
from undertow.core.modes import SavepointFormatType
from undertow.core.types import AttemptNumber
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.checkpoint.events import CheckpointEvent, CheckpointListener
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.control.messages import Deploy
from undertow.runtime.control.placement import ExecutionPlan, plan_execution
from undertow.runtime.master import exit_hook
from undertow.runtime.master.attempt import (
    Attempt,
    await_channel_state_recovery,
    await_registration,
    now_ms,
    shutdown_workers,
    watch_heartbeats,
)
from undertow.runtime.master.collect_results import CollectResults
from undertow.runtime.master.enumerators import start_enumerators
from undertow.runtime.master.exception_history import (
    ExceptionHistory,
    TaskOrigin,
    console_report,
    failure_record,
)
from undertow.runtime.master.job_status import JobEvent, JobLifecycle, next_status
from undertow.runtime.master.job_view import JobFacts, build_job_view
from undertow.runtime.master.launcher import WorkerLauncher, default_num_workers
from undertow.runtime.master.metrics import (
    CheckpointStatsTracker,
    JobView,
    TaskMetricsStore,
    vertex_rest_id,
)
from undertow.runtime.master.restart import GiveUp, Restart, restart_strategy
from undertow.runtime.master.restore_hook import plan_to_apply, record_restored
from undertow.runtime.master.restore_report import restore_line
from undertow.runtime.master.savepoint_operations import SavepointOperations
from undertow.runtime.master.settings import MasterSettings
from undertow.runtime.master.task_gateway import AttemptGateway
from undertow.runtime.master.worker_control import (
    is_own_checkpoint,
    restore_assignment,
    serve_worker,
)
from undertow.runtime.network.framing import attempt_secret
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.keys import CheckpointKey

__all__ = [  # moved to their own modules; these import paths stay
    "JobExecutionResult", "JobMaster", "JobStatus", "WorkerLauncher", "default_num_workers",
    "is_own_checkpoint",
]  # fmt: skip


class RestServer(Protocol):
    """What the JobMaster keeps of its REST endpoint (``rest.server.RestEndpoint``)."""

    @property
    def url(self) -> str: ...

    def close(self) -> None: ...


class JobMaster:
    def __init__(
        self, job_graph: JobGraph, config: Configuration, launcher: WorkerLauncher,
        num_workers: int,
    ) -> None:  # fmt: skip
        self.job_graph = job_graph
        self.config = Configuration(config)
        #: Read once; a bad option fails the JobMaster's construction.
        self.settings = MasterSettings.of(self.config)
        # workers and tasks read the directory from the configuration they are deployed with
        self.config.set(Options.CHECKPOINT_DIR, self.settings.checkpoint_dir)
        self.launcher = launcher
        self.job_id = uuid.uuid4().hex
        self.secret = secrets.token_bytes(32)
        self.plan: ExecutionPlan = plan_execution(job_graph, num_workers)
        self.attempt = AttemptNumber(0)
        self.num_restarts = 0
        self._start_ms = now_ms()
        self._lifecycle = JobLifecycle(self._start_ms)
        self._failure: UndertowError | None = None
        self._cancel_requested = False
        #: Set with ``_cancel_requested`` (on the loop): wakes a restart delay.
        self._cancelled = asyncio.Event()
        self._current: Attempt | None = None
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
        #: The root cause of every failed attempt (REST ``/jobs/:jobid/exceptions``).
        self.exceptions = ExceptionHistory()
        self.checkpoint_stats = CheckpointStatsTracker(
            {v.id: v.parallelism for v in job_graph.vertices},
            self.settings.checkpoints_history,
        )
        self._rest_ids = {v.id: vertex_rest_id(v) for v in job_graph.vertices}
        self.coordinator: CheckpointCoordinator | None = None
        #: The coordinator's way to the current attempt's tasks.
        self.gateway = AttemptGateway(self.plan, self.fail)
        #: ``execute_and_collect``'s records (exactly once with periodic checkpoints), bounded.
        self.results = CollectResults(self.settings.periodic_checkpoints,
                                      self.settings.collect_buffer_size,
                                      self.gateway.grant_collect_credit)  # fmt: skip
        # Always: savepoints (and restores) work without periodic checkpoints, as in Flink.
        self._setup_checkpointing()
        self.savepoints = SavepointOperations(
            self.job_id, self.settings.savepoint_dir, self.coordinator, lambda: self._status
        )

    def _setup_checkpointing(self) -> None:
        """The checkpoint coordinator and storage, also with periodic checkpoints off (then
        nothing triggers periodically; savepoints and restores still go through them).

        With periodic checkpoints off and no ``execution.state-recovery.path``, nothing is
        created on disk here: the directory and the key file wait for the first savepoint.
        With either set, the key is loaded (or created) now; with periodic checkpoints on,
        the job's checkpoint directory is made now. Either failing fails the job's
        construction, before anything is deployed (not every checkpoint after it)."""
        key = CheckpointKey.from_config(self.config)
        if self.settings.periodic_checkpoints or self.settings.recovery_path:
            key.load()
        storage = CheckpointStorage(self.settings.checkpoint_dir, self.job_id)
        if self.settings.periodic_checkpoints:
            storage.create(Options.CHECKPOINT_DIR.key)
        self.coordinator = CheckpointCoordinator(
            self.job_id,
            self.job_graph,
            self.config,
            storage,
            key,
            self.gateway,
            self._console,
            functools.partial(_tell_both, self.checkpoint_stats.on_event,
                              self.results.on_checkpoint_event),
        )  # fmt: skip

    # -- public, any thread ------------------------------------------------------------------
    @property
    def status(self) -> JobStatus:
        return self._lifecycle.status

    @property
    def _status(self) -> JobStatus:
        return self._lifecycle.status

    @property
    def current_attempt(self) -> Attempt | None:
        """The attempt running now (a worker's control connection fences by it); on the loop."""
        return self._current

    def start(self) -> None:
        """Start the JobMaster's loop, its REST API and the first attempt; returns once the
        REST API listens. Raises what kept the job from starting (a taken ``rest.port``)."""
        started = threading.Event()
        exit_hook.track(self)  # cancelled if the interpreter exits while it runs
        self._thread = threading.Thread(
            target=self._thread_main, args=(started,), name=f"undertow-jobmaster-{self.job_id[:8]}",
            daemon=True,
        )  # fmt: skip
        self._thread.start()
        started.wait()
        if self._startup_error is not None:
            raise self._startup_error

    def cancel(self) -> None:
        if (loop := self._loop) is not None and not self._status.is_globally_terminal_state():
            loop.call_soon_threadsafe(self._cancel)

    def trigger_savepoint(
        self, request: SavepointRequest, trigger_id: str | None = None
    ) -> concurrent.futures.Future[str]:
        """Take a savepoint (any thread): :meth:`.SavepointOperations.trigger`."""
        return self.savepoints.trigger(request, trigger_id)

    def resolve_savepoint_directory(self, request: SavepointRequest) -> SavepointRequest:
        """:meth:`.SavepointOperations.resolve_directory` (any thread)."""
        return self.savepoints.resolve_directory(request)

    # -- REST (JobControl), on the loop ----------------------------------------------------------
    def stop_with_savepoint_trigger(
        self, target_directory: str | None, drain: bool, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        return self.savepoints.stop_with_savepoint_trigger(
            target_directory, drain, unaligned, format_type
        )

    def savepoint_trigger(
        self, target_directory: str | None, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        """Start a savepoint for the REST API (the job goes on); its trigger id."""
        return self.savepoints.savepoint_trigger(target_directory, unaligned, format_type)

    def savepoint_operation(self, trigger_id: str) -> dict[str, Any] | None:
        return self.savepoints.savepoint_operation(trigger_id)

    def wait_ended(self, timeout: float) -> bool:
        """Whether the job ended within ``timeout`` seconds (any thread; raises nothing)."""
        return self._done.wait(timeout)

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
            self._fire(JobEvent.CRASHED)
        finally:
            self.results.end()
            started.set()
            self._done.set()
            exit_hook.untrack(self)
            self.savepoints.job_ended(self._status, self._failure)

    async def _main(self, started: threading.Event) -> None:
        self._loop = self.savepoints.loop = self.gateway.loop = asyncio.get_running_loop()
        host = self.settings.bind_host
        server = await asyncio.start_server(functools.partial(serve_worker, self), host, 0)
        self._address = (host, int(server.sockets[0].getsockname()[1]))
        try:
            self._rest = await self._start_rest()
        except ConfigurationError as err:
            server.close()
            self._startup_error = self._failure = err
            self._fire(JobEvent.ENDED_FAILED)
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
                    decision = GiveUp("the checkpoint to restore is corrupt or refused")
                else:
                    decision = self._restart.decide(time.time_ns() // 1_000_000)
                if isinstance(decision, GiveUp):
                    if self.num_restarts:
                        self._console(
                            f"job {self.job_id[:8]}: not restarting again after "
                            f"{self.num_restarts} restarts: {decision.reason}"
                        )
                    self._failure = error  # FAILED when it ended (_ending)
                    break
                self._fire(JobEvent.RESTART)
                self.results.restarting(self.attempt, _first_line(error))
                self._console(f"job {self.job_id[:8]} failed ({_first_line(error)}); restarting "
                              f"in {decision.delay_ms} ms")  # fmt: skip
                try:  # a cancel ends the restart delay at once, not after it
                    await asyncio.wait_for(self._cancelled.wait(), decision.delay_ms / 1000.0)
                    break
                except asyncio.TimeoutError:
                    pass
                self.attempt = AttemptNumber(self.attempt + 1)
                self.num_restarts += 1
                if self.coordinator is not None:
                    await self.coordinator.finish_completing()
                    latest = await self.coordinator.latest_restore_plan()
                    if latest is not None:
                        restore = latest
                        self._report_restored(latest)
        except UndertowError as err:  # e.g. the recovery path does not exist or verify
            self._failure = err
            self._report_failure(err, None)
        finally:
            server.close()
            ended = self._ending()  # reported once the checkpoints are final: a test or
            try:  # script that saw CANCELED restores what stays, not what is being deleted
                if self.coordinator is not None:
                    await self.coordinator.end(next_status(self._status, ended).value)
            finally:
                self._fire(ended)
            if self._rest is not None:
                await self.savepoints.hand_over_stop_results()
                self._rest.close()

    async def _start_rest(self) -> RestServer | None:
        if not self.settings.rest.enabled:
            return None
        from undertow.runtime.master.rest.server import start_rest_endpoint

        endpoint = await start_rest_endpoint(self.settings.rest, self.job_view, self)
        if endpoint is not None:
            self.rest_url = endpoint.url
            self._console(f"REST API at {endpoint.url}{endpoint.access.console_note()}")
        return endpoint

    def _report_restored(self, plan: RestorePlan) -> None:
        meta = plan.metadata
        self.checkpoint_stats.report_restored(meta.checkpoint_id, now_ms(), _pointer(plan),
                                              meta.is_savepoint)  # fmt: skip

    async def _initial_restore(self) -> RestorePlan | None:
        path = self.settings.recovery_path
        if not path or self.coordinator is None:
            return None
        plan, mode = await self.coordinator.restore(path)
        self._console(f"restoring job {self.job_id[:8]} from checkpoint "
                      f"{plan.metadata.checkpoint_id} at {path} ({mode.value})")  # fmt: skip
        self.checkpoint_stats.report_restored(plan.metadata.checkpoint_id, now_ms(), path,
                                              plan.metadata.is_savepoint)  # fmt: skip
        return plan

    async def _run_attempt(self, restore: RestorePlan | None) -> UndertowError | None:
        claimed, restore = restore, plan_to_apply(restore)
        attempt = self._current = self.gateway.attempt = Attempt(
            self.attempt, self.job_graph, self.plan.num_workers,
            self.settings.heartbeat_timeout_ms,
        )  # fmt: skip
        interval = self.settings.heartbeat_interval_ms
        watchdog = asyncio.ensure_future(watch_heartbeats(self, attempt, interval, self.launcher))
        self.task_metrics.clear()
        key = attempt_secret(self.secret, self.attempt)  # fences older attempts' workers
        self.launcher.launch(self.plan.num_workers, self._address, key, self.attempt,
                             self.config.to_dict())  # fmt: skip
        problem = await await_registration(
            attempt, self.launcher, self.settings.registration_timeout_ms / 1000.0
        )
        if problem is not None:
            attempt.end(JobExecutionError(problem))
        if not attempt.done.is_set():
            self._deploy(attempt, restore)
            self.results.attempt_deployed(attempt.number)  # the collect sinks' first credit
        deployed = asyncio.ensure_future(attempt.all_deployed.wait())
        finished = asyncio.ensure_future(attempt.done.wait())
        await asyncio.wait({deployed, finished}, return_when=asyncio.FIRST_COMPLETED)
        if claimed is not None and attempt.all_deployed.is_set():
            # the restore's time is its deployment's: consuming the restored in-flight data
            # is the job's work (and, with during-recovery off, the wait below)
            self._console(restore_line(claimed.metadata, now_ms() - attempt.deployed_at))
            record_restored(claimed.metadata.checkpoint_id)
        if attempt.all_deployed.is_set() and not attempt.done.is_set() and self.coordinator:
            during_recovery = self.coordinator.settings.during_recovery
            await await_channel_state_recovery(attempt, restore, during_recovery)
        if attempt.all_deployed.is_set() and not attempt.done.is_set() and self.coordinator:
            done = frozenset() if restore is None else frozenset(
                (vid, s) for vid in restore.finished_vertices
                for s in range(self.job_graph.vertex(vid).parallelism)
            )  # fmt: skip
            self.coordinator.start(done)
        await finished
        self.results.attempt_ended(attempt.number, attempt.error is None)
        if attempt.error is not None and not self._cancel_requested:
            self._report_failure(attempt.error, attempt)
        deployed.cancel()
        watchdog.cancel()
        self.stop_checkpoints(CheckpointFailureReason.JOB_FAILOVER_REGION)
        await shutdown_workers(attempt, self.launcher, self.job_id)
        if attempt.error is None and not self._cancel_requested:
            runtime = int((time.monotonic() - self._started_at) * 1000)
            accumulators, counters = dict(attempt.accumulators), dict(attempt.counters)
            self._result = JobExecutionResult(self.job_id, runtime, accumulators, counters)
        return attempt.error

    def _ending(self) -> JobEvent:
        """How the job ends (its failure set); fired once the coordinator ended."""
        if self._cancel_requested:
            self._failure = JobCancelledError(f"job {self.job_id} was cancelled")
            return JobEvent.ENDED_CANCELED
        if self._failure is not None:
            return JobEvent.ENDED_FAILED
        if self._result is not None:
            return JobEvent.ENDED_FINISHED
        self._failure = JobExecutionError(f"job {self.job_id} ended without a result")
        return JobEvent.ENDED_FAILED

    def _deploy(self, attempt: Attempt, restore: RestorePlan | None) -> None:
        graph_bytes = bytes(cloudpickle.dumps(self.job_graph))
        peers = {w: (r.data_host, r.data_port) for w, r in attempt.registered.items()}
        attempt.enumerators = start_enumerators(
            self.job_graph, restore.enumerator_states if restore is not None else {},
            self.gateway.send_to_subtask, attempt.number, lambda err: self.fail(attempt, err),
        )  # fmt: skip
        assignment = restore_assignment(restore, self.job_id)
        attempt.restore_path = _pointer(restore) if restore is not None else None
        self._fire(JobEvent.DEPLOYED)
        attempt.deployed_at = now_ms()
        for conn in attempt.workers.values():
            conn.send(Deploy(attempt.number, graph_bytes, peers, self.plan.num_workers,
                             self.config.to_dict(), self.job_id, assignment))  # fmt: skip

    # -- AttemptHost (what an attempt's messages ask of the JobMaster), on the loop ------------
    def fail(
        self, attempt: Attempt, error: UndertowError, origin: TaskOrigin | None = None
    ) -> None:
        """Fail ``attempt`` with ``error`` (from ``origin``): the first failure wins."""
        if attempt.done.is_set():
            return
        attempt.origin = origin
        self._fire(JobEvent.ATTEMPT_FAILED)
        attempt.cancel_tasks()
        attempt.end(error)

    def _cancel(self) -> None:
        self._cancel_requested = True
        self._cancelled.set()
        self._fire(JobEvent.CANCEL)
        attempt = self._current
        if attempt is not None and not attempt.done.is_set():
            attempt.cancel_tasks()
            attempt.end(JobCancelledError(f"job {self.job_id} was cancelled"))

    def _fire(self, event: JobEvent) -> None:
        self._lifecycle.fire(event, now_ms())

    def stop_checkpoints(self, reason: CheckpointFailureReason) -> None:
        """Stop triggering and abort pending checkpoints; they fail with ``reason``."""
        if self.coordinator is not None:
            self.coordinator.stop(reason)

    def _report_failure(self, error: UndertowError, attempt: Attempt | None) -> None:
        """Record the root cause of a failed attempt and print it at once (with its
        traceback): a job started with ``execute_async`` has nobody waiting to raise it."""
        if isinstance(error, JobCancelledError):
            return
        when = attempt.failed_at if attempt is not None and attempt.failed_at >= 0 else now_ms()
        record = failure_record(error, self.attempt, when,
                                attempt.origin if attempt is not None else None)  # fmt: skip
        self.exceptions.record(record)
        self._console(console_report(self.job_id, record))

    def _console(self, line: str) -> None:
        sys.stderr.write(f"[undertow] {line}\n")
        sys.stderr.flush()

    # -- monitoring ------------------------------------------------------------------------------
    def job_view(self) -> JobView:
        """The job now, frozen (what the REST API serves). Only on the JobMaster's loop."""
        return build_job_view(
            JobFacts(self.job_id, self.job_graph, self.plan, self.settings, self._start_ms,
                     self._rest_ids),
            self._lifecycle, self._current, self.task_metrics, self.checkpoint_stats.snapshot(),
            self.exceptions,
            self.num_restarts,
        )  # fmt: skip


def _tell_both(
    first: CheckpointListener, second: CheckpointListener, event: CheckpointEvent
) -> None:
    first(event)
    second(event)


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _pointer(plan: RestorePlan) -> str:
    """The directory of the snapshot ``plan`` restores: a restored (claimed) snapshot's, or
    the job's own ``chk-<n>``."""
    storage = CheckpointStorage(plan.checkpoint_dir, plan.job_id)
    return plan.pointer or storage.checkpoint_pointer(plan.metadata.checkpoint_id)
