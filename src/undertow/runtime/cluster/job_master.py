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

Threading: the JobMaster runs its own asyncio loop on a daemon thread. Public methods
(``start``, ``cancel``, ``wait``, ``status``) may be called from any thread.
"""

from __future__ import annotations

import asyncio
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
from dataclasses import dataclass, field
from typing import Any, Protocol

import cloudpickle

from undertow.connectors.source import SplitEnumerator, SplitEnumeratorContext
from undertow.core.config import Configuration, Options
from undertow.core.errors import JobCancelledError, JobExecutionError, UndertowError
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator, RestorePlan
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.cluster.control import ControlConnection
from undertow.runtime.cluster.messages import (
    AcknowledgeCheckpoint,
    AddSplits,
    CancelTasks,
    CollectRecords,
    DeclineCheckpoint,
    Deploy,
    NoMoreSplits,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    PrintLines,
    RegisterWorker,
    RestoreAssignment,
    Shutdown,
    SplitRequest,
    TaskFailed,
    TaskFinished,
    TasksDeployed,
    TriggerCheckpoint,
    WorkerFailed,
)
from undertow.runtime.cluster.placement import ExecutionPlan, plan_execution
from undertow.runtime.cluster.restart import GiveUp, restart_strategy
from undertow.runtime.network.framing import server_handshake
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.keys import load_or_create_key

log = logging.getLogger(__name__)

REGISTRATION_TIMEOUT_S = 120.0
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
        """How a worker ended ("exit code 1", "still running"), for error messages."""


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

    def __init__(self, number: int, num_workers: int) -> None:
        self.number = number
        self.num_workers = num_workers
        self.workers: dict[int, ControlConnection] = {}
        self.registered: dict[int, RegisterWorker] = {}
        self.deployed: set[int] = set()
        self.finished: set[tuple[int, int]] = set()
        self.accumulators: dict[str, Any] = {}
        self.enumerators: dict[int, SplitEnumerator[Any]] = {}
        self.all_registered = asyncio.Event()
        self.all_deployed = asyncio.Event()
        self.done = asyncio.Event()
        self.error: UndertowError | None = None

    def end(self, error: UndertowError | None = None) -> None:
        if self.done.is_set():
            return
        self.error = error
        self.done.set()


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
        self.coordinator: CheckpointCoordinator | None = None
        if self.config.get(Options.CHECKPOINT_INTERVAL) > 0 or self.config.get(
            Options.RECOVERY_PATH
        ):
            self._setup_checkpointing()

    def _setup_checkpointing(self) -> None:
        directory = self.config.get(Options.CHECKPOINT_DIR)
        if not directory:
            directory = os.path.join(tempfile.gettempdir(), "undertow-checkpoints")
            self.config.set(Options.CHECKPOINT_DIR, directory)
        key = load_or_create_key(directory, self.config.get(Options.HMAC_KEY) or None)
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
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._thread_main, args=(started,), name=f"undertow-jobmaster-{self.job_id[:8]}",
            daemon=True,
        )  # fmt: skip
        self._thread.start()
        started.wait()

    def cancel(self) -> None:
        loop = self._loop
        if loop is not None and not self._status.is_globally_terminal_state():
            loop.call_soon_threadsafe(self._cancel)

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
            self._status = JobStatus.FAILED
        finally:
            for q in self.collected.values():
                q.put(_END)
            started.set()
            self._done.set()

    async def _main(self, started: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        host = self.config.get(Options.BIND_HOST)
        server = await asyncio.start_server(self._on_worker, host, 0)
        self._address = (host, int(server.sockets[0].getsockname()[1]))
        started.set()
        self._started_at = time.monotonic()
        try:
            restore = await self._initial_restore()
            while True:
                error = await self._run_attempt(restore)
                if error is None or self._cancel_requested:
                    break
                decision = self._restart.decide(time.time_ns() // 1_000_000)
                if isinstance(decision, GiveUp):
                    if self.num_restarts:
                        self._console(
                            f"job {self.job_id[:8]}: not restarting again after "
                            f"{self.num_restarts} restarts: {decision.reason}"
                        )
                    self._failure = error
                    self._status = JobStatus.FAILED
                    break
                self._status = JobStatus.RESTARTING
                self._console(f"job {self.job_id[:8]} failed ({_first_line(error)}); restarting "
                              f"in {decision.delay_ms} ms")  # fmt: skip
                await asyncio.sleep(decision.delay_ms / 1000.0)
                if self._cancel_requested:
                    break
                self.attempt += 1
                self.num_restarts += 1
                if self.coordinator is not None:
                    restore = self.coordinator.latest_restore_plan() or restore
        finally:
            server.close()
            self._finish_status()
            if self.coordinator is not None:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, self.coordinator.shutdown, self._status.value)

    async def _initial_restore(self) -> RestorePlan | None:
        path = self.config.get(Options.RECOVERY_PATH)
        if not path or self.coordinator is None:
            return None
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(None, self.coordinator.restore_from_path, path)
        self._console(f"restoring job {self.job_id[:8]} from checkpoint "
                      f"{plan.metadata.checkpoint_id} at {path}")  # fmt: skip
        return plan

    async def _run_attempt(self, restore: RestorePlan | None) -> UndertowError | None:
        attempt = self._current = _Attempt(self.attempt, self.plan.num_workers)
        self.launcher.launch(self.plan.num_workers, self._address, self.secret, self.attempt,
                             self.config.to_dict())  # fmt: skip
        try:
            await asyncio.wait_for(attempt.all_registered.wait(), REGISTRATION_TIMEOUT_S)
        except asyncio.TimeoutError:
            missing = sorted(set(range(self.plan.num_workers)) - set(attempt.registered))
            attempt.end(JobExecutionError(
                f"workers {missing} did not register within {REGISTRATION_TIMEOUT_S:.0f} s: "
                + "; ".join(f"worker {w}: {self.launcher.describe_exit(w)}" for w in missing)
            ))  # fmt: skip
        if not attempt.done.is_set():
            self._deploy(attempt, restore)
        deployed = asyncio.ensure_future(attempt.all_deployed.wait())
        finished = asyncio.ensure_future(attempt.done.wait())
        await asyncio.wait({deployed, finished}, return_when=asyncio.FIRST_COMPLETED)
        if attempt.all_deployed.is_set() and not attempt.done.is_set() and self.coordinator:
            self.coordinator.start()
        await finished
        deployed.cancel()
        if self.coordinator is not None:
            self.coordinator.stop(CheckpointFailureReason.JOB_FAILOVER_REGION)
        await self._shutdown_workers(attempt)
        if attempt.error is None and not self._cancel_requested:
            runtime = int((time.monotonic() - self._started_at) * 1000)
            self._result = JobExecutionResult(self.job_id, runtime, dict(attempt.accumulators))
        return attempt.error

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
            self._status = JobStatus.CANCELED
            self._failure = JobCancelledError(f"job {self.job_id} was cancelled")
        elif self._failure is not None:
            self._status = JobStatus.FAILED
        elif self._result is not None:
            self._status = JobStatus.FINISHED
        else:
            self._status = JobStatus.FAILED
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
                                           restore.job_id, restore.subtask_files)  # fmt: skip
        self._status = JobStatus.RUNNING
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
            attempt.end(JobExecutionError(
                f"worker {index} exited unexpectedly ({self.launcher.describe_exit(index)})"
            ))  # fmt: skip

    def _handle(self, attempt: _Attempt, index: int, conn: ControlConnection, msg: Any) -> None:
        if isinstance(msg, PrintLines):
            sys.stdout.write("\n".join(msg.lines) + "\n")
            sys.stdout.flush()
        elif isinstance(msg, CollectRecords):
            self.collect_queue(msg.sink_id).put(msg.values)
        elif isinstance(msg, SplitRequest):
            enumerator = attempt.enumerators.get(msg.vertex_id)
            if enumerator is not None:
                enumerator.handle_split_request(msg.subtask, msg.hostname)
        elif isinstance(msg, AcknowledgeCheckpoint):
            if self.coordinator is not None:
                self.coordinator.receive_ack(msg.vertex_id, msg.subtask, msg.checkpoint_id,
                                             msg.handle, msg.metrics)  # fmt: skip
        elif isinstance(msg, DeclineCheckpoint):
            if self.coordinator is not None:
                self.coordinator.receive_decline(msg.vertex_id, msg.subtask, msg.checkpoint_id,
                                                 msg.reason, msg.detail)  # fmt: skip
        elif isinstance(msg, TaskFinished):
            attempt.finished.add((msg.vertex_id, msg.subtask))
            if self.coordinator is not None:
                self.coordinator.on_task_finished()
            for name, value in msg.accumulators.items():
                prev = attempt.accumulators.get(name)
                attempt.accumulators[name] = value if prev is None else prev + value
            if len(attempt.finished) == self.job_graph.total_subtasks:
                attempt.end()
        elif isinstance(msg, TaskFailed):
            vertex = self.job_graph.vertex(msg.vertex_id)
            self._fail(attempt, JobExecutionError(
                f"job failed: operator '{msg.operator}' (subtask {msg.subtask + 1}/"
                f"{vertex.parallelism} of '{vertex.name}') raised {msg.error}",
                operator=msg.operator, subtask=msg.subtask, remote_traceback=msg.traceback,
            ))  # fmt: skip
        elif isinstance(msg, WorkerFailed):
            self._fail(attempt, JobExecutionError(
                f"worker {msg.worker_index} failed: {msg.error}", remote_traceback=msg.traceback
            ))  # fmt: skip
        elif isinstance(msg, TasksDeployed):
            attempt.deployed.add(index)
            if len(attempt.deployed) == attempt.num_workers:
                attempt.all_deployed.set()
        elif isinstance(msg, RegisterWorker):
            attempt.workers[index] = conn
            attempt.registered[index] = msg
            if len(attempt.registered) == attempt.num_workers:
                attempt.all_registered.set()
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
        self._status = JobStatus.FAILING
        for conn in attempt.workers.values():
            conn.send(CancelTasks(attempt.number))
        attempt.end(error)

    def _cancel(self) -> None:
        self._cancel_requested = True
        self._status = JobStatus.CANCELLING
        attempt = self._current
        if attempt is not None and not attempt.done.is_set():
            for conn in attempt.workers.values():
                conn.send(CancelTasks(attempt.number))
            attempt.end(JobCancelledError(f"job {self.job_id} was cancelled"))

    def _console(self, line: str) -> None:
        sys.stderr.write(f"[undertow] {line}\n")
        sys.stderr.flush()

    # -- TaskGateway (the checkpoint coordinator's view) ---------------------------------------
    def trigger_source(self, vertex_id: int, subtask: int, barrier: CheckpointBarrier) -> None:
        self._send_to_subtask(subtask, TriggerCheckpoint(self.attempt, vertex_id, subtask, barrier))

    def notify_complete(self, checkpoint_id: int) -> None:
        self._broadcast(NotifyCheckpointComplete(self.attempt, checkpoint_id))

    def notify_aborted(self, checkpoint_id: int) -> None:
        self._broadcast(NotifyCheckpointAborted(self.attempt, checkpoint_id))

    def fail_job(self, error: UndertowError) -> None:
        if self._current is not None:
            self._fail(self._current, error)

    def enumerators(self) -> dict[int, Any]:
        return dict(self._current.enumerators) if self._current is not None else {}


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def default_num_workers(config: Configuration, slots: int) -> int:
    configured = config.get(Options.WORKERS)
    return configured if configured > 0 else max(1, min(slots, os.cpu_count() or 1))
