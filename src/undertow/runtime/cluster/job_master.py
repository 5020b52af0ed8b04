"""The JobMaster: runs in the driver, deploys the job on workers, supervises it to its end.

It owns the job's lifecycle as an explicit state machine (:class:`JobStatus`, PyFlink's
names)::

    INITIALIZING -> RUNNING -> FINISHED
                        \\-> FAILING -> FAILED        (a task or worker failed)
                        \\-> CANCELLING -> CANCELED   (JobClient.cancel)

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
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import cloudpickle

from undertow.connectors.source import SplitEnumerator, SplitEnumeratorContext
from undertow.core.config import Configuration, Options
from undertow.core.errors import JobCancelledError, JobExecutionError, UndertowError
from undertow.graph.job_graph import JobGraph
from undertow.runtime.cluster.control import ControlConnection
from undertow.runtime.cluster.messages import (
    AddSplits,
    CancelTasks,
    CollectRecords,
    Deploy,
    NoMoreSplits,
    PrintLines,
    RegisterWorker,
    Shutdown,
    SplitRequest,
    TaskFailed,
    TaskFinished,
    WorkerFailed,
)
from undertow.runtime.cluster.placement import ExecutionPlan, plan_execution
from undertow.runtime.network.framing import server_handshake

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


class JobMaster:
    def __init__(
        self, job_graph: JobGraph, config: Configuration, launcher: WorkerLauncher,
        num_workers: int,
    ) -> None:  # fmt: skip
        self.job_graph = job_graph
        self.config = config
        self.launcher = launcher
        self.job_id = uuid.uuid4().hex
        self.secret = secrets.token_bytes(32)
        self.plan: ExecutionPlan = plan_execution(job_graph, num_workers)
        self.attempt = 0
        self._status = JobStatus.INITIALIZING
        self._failure: UndertowError | None = None
        self._workers: dict[int, ControlConnection] = {}
        self._registered: dict[int, RegisterWorker] = {}
        self._finished: set[tuple[int, int]] = set()
        self._accumulators: dict[str, Any] = {}
        self._enumerators: dict[int, SplitEnumerator[Any]] = {}
        self.collected: dict[str, queue.Queue[Any]] = {}
        self._done = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started_at = 0.0
        self._result: JobExecutionResult | None = None
        self._all_registered: asyncio.Event | None = None
        self._terminal: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._on_status: list[Callable[[JobStatus], None]] = []

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
        self._all_registered = asyncio.Event()
        self._terminal = asyncio.Event()
        host = self.config.get(Options.BIND_HOST)
        server = await asyncio.start_server(self._on_worker, host, 0)
        address = (host, int(server.sockets[0].getsockname()[1]))
        started.set()
        try:
            self._started_at = time.monotonic()
            self.launcher.launch(self.plan.num_workers, address, self.secret, self.attempt,
                                 self.config.to_dict())  # fmt: skip
            try:
                await asyncio.wait_for(self._all_registered.wait(), REGISTRATION_TIMEOUT_S)
            except asyncio.TimeoutError:
                missing = sorted(set(range(self.plan.num_workers)) - set(self._registered))
                self._fail(JobExecutionError(
                    f"workers {missing} did not register within {REGISTRATION_TIMEOUT_S:.0f} s: "
                    + "; ".join(f"worker {w}: {self.launcher.describe_exit(w)}" for w in missing)
                ))  # fmt: skip
            if not self._terminal.is_set():
                self._deploy()
            await self._terminal.wait()
        finally:
            for conn in self._workers.values():
                conn.send(Shutdown())
                await conn.drain()
            loop = asyncio.get_running_loop()
            exited = await loop.run_in_executor(None, self.launcher.wait, WORKER_EXIT_TIMEOUT_S)
            if not exited:
                log.warning("job %s: workers did not exit in time; killing them", self.job_id)
                self.launcher.kill()
            for conn in self._workers.values():
                conn.close()
            for enumerator in self._enumerators.values():
                enumerator.close()
            server.close()
            self._finish_status()

    def _finish_status(self) -> None:
        if self._status is JobStatus.FAILING:
            self._status = JobStatus.FAILED
        elif self._status is JobStatus.CANCELLING:
            self._status = JobStatus.CANCELED
            if self._failure is None:
                self._failure = JobCancelledError(f"job {self.job_id} was cancelled")
        elif self._status is JobStatus.RUNNING and self._failure is None:
            self._status = JobStatus.FINISHED

    def _deploy(self) -> None:
        graph_bytes = bytes(cloudpickle.dumps(self.job_graph))
        peers = {w: (r.data_host, r.data_port) for w, r in self._registered.items()}
        for vertex in self.job_graph.vertices:
            if vertex.is_source:
                source = vertex.operators[0].instantiate()["source"]
                ctx = _EnumeratorContext(self, vertex.id, vertex.parallelism)
                enumerator = source.create_enumerator(ctx)
                enumerator.start()
                for subtask in range(vertex.parallelism):
                    enumerator.add_reader(subtask)
                self._enumerators[vertex.id] = enumerator
        self._status = JobStatus.RUNNING
        for conn in self._workers.values():
            conn.send(Deploy(self.attempt, graph_bytes, peers, self.plan.num_workers,
                             self.config.to_dict()))  # fmt: skip

    async def _on_worker(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            index = await server_handshake(reader, writer, self.secret)
        except Exception as err:
            log.warning("job %s: dropped a control connection: %s", self.job_id, err)
            writer.close()
            return
        conn = ControlConnection(reader, writer, f"worker {index}",
                                 self.config.get(Options.MAX_FRAME_SIZE))  # fmt: skip
        try:
            while True:
                msg = await conn.recv()
                if msg is None:
                    break
                if getattr(msg, "attempt", self.attempt) != self.attempt:
                    continue  # fencing: a message from an older attempt
                self._handle(index, conn, msg)
        except asyncio.CancelledError:
            return
        except Exception as err:
            self._fail(JobExecutionError(f"control connection to worker {index} failed: {err}"))
            return
        finally:
            conn.close()
        assert self._terminal is not None
        if not self._terminal.is_set():
            self._fail(JobExecutionError(
                f"worker {index} exited unexpectedly ({self.launcher.describe_exit(index)})"
            ))  # fmt: skip

    def _handle(self, index: int, conn: ControlConnection, msg: Any) -> None:
        if isinstance(msg, PrintLines):
            sys.stdout.write("\n".join(msg.lines) + "\n")
            sys.stdout.flush()
        elif isinstance(msg, CollectRecords):
            self.collect_queue(msg.sink_id).put(msg.values)
        elif isinstance(msg, SplitRequest):
            enumerator = self._enumerators.get(msg.vertex_id)
            if enumerator is not None:
                enumerator.handle_split_request(msg.subtask, msg.hostname)
        elif isinstance(msg, TaskFinished):
            self._finished.add((msg.vertex_id, msg.subtask))
            for name, value in msg.accumulators.items():
                prev = self._accumulators.get(name)
                self._accumulators[name] = value if prev is None else prev + value
            if len(self._finished) == self.job_graph.total_subtasks:
                self._complete()
        elif isinstance(msg, TaskFailed):
            vertex = self.job_graph.vertex(msg.vertex_id)
            self._fail(JobExecutionError(
                f"job failed: operator '{msg.operator}' (subtask {msg.subtask + 1}/"
                f"{vertex.parallelism} of '{vertex.name}') raised {msg.error}",
                operator=msg.operator, subtask=msg.subtask, remote_traceback=msg.traceback,
            ))  # fmt: skip
        elif isinstance(msg, WorkerFailed):
            self._fail(JobExecutionError(
                f"worker {msg.worker_index} failed: {msg.error}", remote_traceback=msg.traceback
            ))  # fmt: skip
        elif isinstance(msg, RegisterWorker):
            self._workers[index] = conn
            self._registered[index] = msg
            assert self._all_registered is not None
            if len(self._registered) == self.plan.num_workers:
                self._all_registered.set()
        else:
            log.warning("job %s: unexpected message %r from worker %d", self.job_id, msg, index)

    def _send_to_subtask(self, subtask: int, message: Any) -> None:
        conn = self._workers.get(self.plan.worker_of(subtask))
        if conn is not None:
            conn.send(message)

    def _complete(self) -> None:
        runtime = int((time.monotonic() - self._started_at) * 1000)
        self._result = JobExecutionResult(self.job_id, runtime, dict(self._accumulators))
        assert self._terminal is not None
        self._terminal.set()

    def _fail(self, error: UndertowError) -> None:
        assert self._terminal is not None
        if self._terminal.is_set():
            return
        self._failure = error
        self._status = JobStatus.FAILING
        for conn in self._workers.values():
            conn.send(CancelTasks(self.attempt))
        self._terminal.set()

    def _cancel(self) -> None:
        assert self._terminal is not None
        if self._terminal.is_set():
            return
        self._status = JobStatus.CANCELLING
        for conn in self._workers.values():
            conn.send(CancelTasks(self.attempt))
        self._terminal.set()


def default_num_workers(config: Configuration, slots: int) -> int:
    configured = config.get(Options.WORKERS)
    return configured if configured > 0 else max(1, min(slots, os.cpu_count() or 1))
