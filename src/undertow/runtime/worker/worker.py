"""A worker: one process (or thread) with one asyncio loop, hosting slots of subtasks.

Lifecycle::

    start data server -> connect to the JobMaster (HMAC) -> RegisterWorker -> receive Deploy
    -> build partitions, gates and tasks -> connect peers -> wire channels -> run tasks
    -> report TaskFinished / TaskFailed -> Shutdown (or the JobMaster vanished) -> exit

This module is the worker's main: the connection to the JobMaster, the heartbeat, running and
reporting its tasks, and its end. Its parts are modules of their own: the deployment builder
(:mod:`.deployment_builder`: partitions, gates and tasks from the ``Deploy``, and the restore
read), the control router (:mod:`.control_router`: control messages to the tasks, through the
``TaskControl`` protocol) and the metrics loop (:mod:`.metrics_loop`).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import threading
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.core.config import Configuration
from undertow.core.errors import (
    KeySelectorError,
    KeyTypeError,
    NetworkError,
    RestoreError,
    describe,
)
from undertow.core.types import AttemptNumber, SubtaskIndex, VertexId
from undertow.runtime.control.connection import ControlConnection, limit_unacknowledged_time
from undertow.runtime.control.messages import (
    CancelTasks,
    Deploy,
    Heartbeat,
    PrintLines,
    RegisterWorker,
    Shutdown,
    TaskFailed,
    TaskFinished,
    WorkerFailed,
)
from undertow.runtime.network.framing import client_handshake
from undertow.runtime.network.transport import NetworkEnvironment
from undertow.runtime.task.collect_credit import CollectCredits
from undertow.runtime.task.mailbox_loop import fit_switch_interval
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.stream_task import StreamTask, TaskCancelled
from undertow.runtime.worker.control_router import ControlRouter, Routed
from undertow.runtime.worker.deployment_builder import TaskDeploymentBuilder
from undertow.runtime.worker.log_context import add_log_context, set_log_context
from undertow.runtime.worker.metrics_loop import MetricsLoop
from undertow.runtime.worker.settings import WorkerSettings
from undertow.runtime.worker.stdout_forwarding import forward_stdout, forward_thread_stdout
from undertow.storage.errors import CorruptCheckpointError

log = logging.getLogger(__name__)


@dataclass
class _EarlyControl:
    """Control messages read while the worker deployed, and the read still under way."""

    messages: list[Any]
    read: asyncio.Future[Any]


class Worker:
    def __init__(
        self,
        worker_index: int,
        attempt: AttemptNumber,
        master: tuple[str, int],
        secret: bytes,
        config: Configuration,
        forward_stdout: bool = False,
    ) -> None:
        self.worker_index = worker_index
        #: A worker process sends all ``print()`` output to the driver, a worker thread what it
        #: prints itself (``stdout_forwarding``).
        self.forward_stdout = forward_stdout
        self.attempt = attempt
        self.master = master
        self.secret = secret
        self.config = config
        self.settings = WorkerSettings.of(config)
        self.tasks: dict[tuple[int, int], StreamTask] = {}
        #: The credit of this worker's collect sinks (granted by the JobMaster).
        self.collect_credits = CollectCredits()
        self.ctrl: ControlConnection | None = None
        self._failed = False
        #: Builds the tasks on ``Deploy`` (``run`` makes it, once the network is up).
        self.builder: TaskDeploymentBuilder | None = None
        #: The slice length of this worker's tasks (short while a checkpoint passes).
        self.pace = TaskPace.of(config)
        #: Samples of the tasks' counters, sent while the tasks run.
        self.metrics = MetricsLoop(self.tasks, self.send, attempt, worker_index)

    def send(self, message: Any) -> None:
        if self.ctrl is not None:
            self.ctrl.send(message)

    def send_from_any_thread(self, message: Any) -> None:
        """``send`` from any thread (the I/O pool's acknowledgements): straight onto the
        control connection, in order with the loop's messages."""
        ctrl = self.ctrl
        if ctrl is not None:
            ctrl.send_from_any_thread(message)

    def _print_lines_from_any_thread(self) -> Callable[[list[str]], None]:
        """Send printed lines to the JobMaster: directly on the loop thread (in order with the
        print sink's lines), through the loop from any other thread."""
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()

        def emit(lines: list[str]) -> None:
            message = PrintLines(self.attempt, lines)
            if threading.get_ident() == loop_thread:
                self.send(message)
            else:
                loop.call_soon_threadsafe(self.send, message)

        return emit

    async def run(self) -> None:
        network = self.settings.network
        self.env = NetworkEnvironment(
            self.worker_index,
            self.secret,
            bind_host=network.bind_host,
            max_frame_size=network.max_frame_size,
            on_failure=self._on_network_failure,
        )
        port = await self.env.start_server()
        reader, writer = await asyncio.open_connection(*self.master)
        # fencing: behind a partition from the JobMaster, the connection ends (and so does this
        # worker, with its tasks) within heartbeat.timeout, as the JobMaster fails the attempt
        limit_unacknowledged_time(writer, self.settings.heartbeat_timeout_s)
        await client_handshake(reader, writer, self.secret, self.worker_index)
        self.ctrl = ControlConnection(
            reader, writer, "JobMaster", network.max_frame_size, any_thread=True
        )
        control_socket = writer.get_extra_info("socket")
        if control_socket is not None:
            self.pace.watch(control_socket.fileno())
        self.send(
            RegisterWorker(self.attempt, self.worker_index, network.bind_host, port,
                           os.getpid())
        )  # fmt: skip
        heartbeat = asyncio.ensure_future(self._heartbeat())
        printing = contextlib.ExitStack()
        forwarding = forward_stdout if self.forward_stdout else forward_thread_stdout
        printing.enter_context(forwarding(self._print_lines_from_any_thread()))
        try:
            deploy = await self.ctrl.recv()
            if isinstance(deploy, Shutdown) or deploy is None:
                return
            assert isinstance(deploy, Deploy), deploy
            early = await self._deploy_watching_control(deploy)
            if early is not None:
                await self._serve(early)
        except Exception as err:
            refused = isinstance(err, RestoreError)
            fatal = refused or isinstance(err, CorruptCheckpointError)
            self.send(WorkerFailed(self.attempt, self.worker_index, type(err).__name__,
                                   str(err), traceback.format_exc(), fatal, refused))  # fmt: skip
            await self.ctrl.drain()
            raise
        finally:
            printing.close()
            heartbeat.cancel()
            for task in self.tasks.values():
                task.cancel()
            if self.builder is not None:
                self.builder.close()  # cancels channel-state writes, shuts the I/O pool down
            self.env.close()
            await self.ctrl.drain()
            self.ctrl.close()

    async def _deploy_watching_control(self, deploy: Deploy) -> _EarlyControl | None:
        """Deploy while reading the control connection; ``None`` if the deploy was cancelled.

        A worker whose peer failed to deploy waits for that peer's connection, so the JobMaster's
        ``CancelTasks`` and ``Shutdown`` must reach it while it deploys: the deploy is then
        cancelled and the worker waits for ``Shutdown`` (or the JobMaster's end) to exit.
        Any other message that arrives meanwhile is kept, in order, for the control loop.
        """
        assert self.ctrl is not None
        # Set here, not in _deploy: the subtasks' coroutines are created from this context
        set_log_context(f"job {deploy.job_id[:8]} worker {self.worker_index}")
        deploying = asyncio.ensure_future(self._deploy(deploy))
        early = _EarlyControl([], asyncio.ensure_future(self.ctrl.recv()))
        while not deploying.done():
            await asyncio.wait({early.read, deploying}, return_when=asyncio.FIRST_COMPLETED)
            if not early.read.done():
                break
            message = early.read.result()
            if message is None or isinstance(message, (Shutdown, CancelTasks)):
                deploying.cancel()
                await asyncio.gather(deploying, return_exceptions=True)
                while message is not None and not isinstance(message, Shutdown):
                    message = await self.ctrl.recv()
                return None
            early.messages.append(message)
            early.read = asyncio.ensure_future(self.ctrl.recv())
        await deploying  # raises the deploy's failure
        return early

    async def _deploy(self, deploy: Deploy) -> None:
        """Build, connect and wire the tasks (:class:`TaskDeploymentBuilder`)."""
        self.builder = TaskDeploymentBuilder(
            worker_index=self.worker_index, attempt=self.attempt, config=self.config, link=self,
            env=self.env, pace=self.pace, tasks=self.tasks,
        )  # fmt: skip
        try:
            await self.builder.deploy(deploy)
            for fd in self.env.data_sockets():  # a barrier read from them goes first
                self.pace.watch_data(fd)
        finally:
            self.config = self.builder.config  # the job's, also after a failed deploy
            self.settings = self.builder.settings

    async def _serve(self, early: _EarlyControl) -> None:
        """Run the tasks until ``Shutdown``, first handling what arrived while deploying."""
        assert self.ctrl is not None
        running = {
            asyncio.ensure_future(self._run_task(key, task)) for key, task in self.tasks.items()
        }
        control = asyncio.ensure_future(self._control_loop(early))
        reporter = asyncio.ensure_future(self.metrics.run(self.settings.metrics_interval_s))
        try:
            await control
        finally:
            reporter.cancel()
            for t in running:
                t.cancel()
            await asyncio.gather(reporter, *running, return_exceptions=True)

    async def _heartbeat(self) -> None:
        """Every ``heartbeat.interval``: tell the JobMaster this worker is alive."""
        interval_s = self.settings.heartbeat_interval_s
        while True:
            await asyncio.sleep(interval_s)
            self.send(Heartbeat(self.attempt, self.worker_index))

    async def _control_loop(self, early: _EarlyControl) -> None:
        assert self.ctrl is not None
        router = ControlRouter(self.tasks, self.pace.hurry, self.worker_index,
                               self.collect_credits)  # fmt: skip
        backlog = deque(early.messages)
        read: asyncio.Future[Any] | None = early.read
        while True:
            if backlog:
                msg = backlog.popleft()
            elif read is not None:
                msg, read = await read, None
            else:
                msg = await self.ctrl.recv()
            if router.route(msg) is Routed.STOP:
                return

    async def _run_task(self, key: tuple[int, int], task: StreamTask) -> None:
        try:
            await self._run_task_reporting(key, task)
        finally:
            if self.builder is not None:
                self.builder.task_ended(key)  # its channel-state group stops waiting for it

    async def _run_task_reporting(self, key: tuple[int, int], task: StreamTask) -> None:
        vertex_id, subtask = key
        add_log_context(task.name)
        try:
            await task.run()
        except (TaskCancelled, asyncio.CancelledError):
            self.metrics.final_sample(key)
            return
        except BaseException as err:
            self.metrics.final_sample(key)
            # a key the selector made or could not make is the key_by's (PyFlink's key_by
            # operator runs the selector and writes the key), not the producer's or consumer's
            operator = task.operator_of(err.__traceback__)
            if isinstance(err, (KeySelectorError, KeyTypeError)):
                operator = KeySelectorError.OPERATOR
            self.send(
                TaskFailed(
                    self.attempt, vertex_id, subtask, operator,
                    type(err).__name__, describe(err), traceback.format_exc(),
                )
            )  # fmt: skip
            return
        self.metrics.final_sample(key)
        counters = task.counters()
        counters[f"records_in[{task.vertex.name}]"] = task.records_in
        stats = task.statistics()
        if stats.max_overdraft_buffers > 0 or stats.overdraft_exceeded > 0:  # per subtask
            counters[f"max_overdraft_buffers[{task.name}]"] = stats.max_overdraft_buffers
            counters[f"overdraft_exceeded[{task.name}]"] = stats.overdraft_exceeded
        if stats.debloat is not None:  # per subtask: how often its gates announced sizes
            counters[f"buffer_debloat_announcements[{task.name}]"] = stats.debloat.announcements
        if stats.buffer_sizes_received:  # per subtask: how many of them its writers applied
            counters[f"buffer_debloat_sizes_received[{task.name}]"] = stats.buffer_sizes_received
        self.send(TaskFinished(self.attempt, VertexId(vertex_id), SubtaskIndex(subtask),
                               task.accumulators(), counters))  # fmt: skip

    def _on_network_failure(self, err: BaseException) -> None:
        if self._failed:
            return
        self._failed = True
        detail = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        self.send(WorkerFailed(self.attempt, self.worker_index, type(err).__name__, str(err),
                               detail))  # fmt: skip
        for task in self.tasks.values():
            task.cancel()


def fit_gc_threshold(threshold: int) -> None:
    """Raise the young generation's collection threshold to ``threshold`` (never lower it; 0
    leaves it), keeping the older generations' thresholds.

    The record path allocates a container per record (a tuple, a state value) in batches of
    thousands that live for one slice: at Python's 700 a collection ran every ~1,000 records
    and visited mostly records of batches still in flight, ~10% of a worker's CPU on
    ``benchmarks/throughput.py``'s job (docs/design.md, "What a record costs"); at 20,000
    most batches are gone before one runs. A collection then visits at most that many young
    objects (well under a slice). Process-wide; called by every worker.
    """
    young, *older = gc.get_threshold()
    if threshold > young:
        gc.set_threshold(threshold, *older)


def run_worker(
    worker_index: int,
    attempt: AttemptNumber,
    master: tuple[str, int],
    secret: bytes,
    config: dict[str, str],
    forward_stdout: bool = False,
) -> None:
    """Entry point of a worker thread or process: runs the worker's loop to completion, with
    the switch interval fitted to the mailbox slice (:func:`fit_switch_interval`) and the
    collector's young threshold raised (:func:`fit_gc_threshold`). A worker process passes
    ``forward_stdout`` (its whole ``sys.stdout`` is forwarded; a thread forwards its own
    writes)."""
    configuration = Configuration(config)
    settings = WorkerSettings.of(configuration)
    fit_switch_interval(settings.mailbox_slice_s)
    fit_gc_threshold(settings.gc_threshold)
    worker = Worker(
        worker_index, AttemptNumber(attempt), master, secret, configuration, forward_stdout
    )
    try:
        asyncio.run(worker.run())
    except (NetworkError, ConnectionError) as err:
        log.error("worker %d stopped: %s", worker_index, err)
        raise
