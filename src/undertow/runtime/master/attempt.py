"""One deployment attempt of a job: its workers' registration, heartbeats and control messages.

Each (re)deployment is an :class:`Attempt`: fresh workers, fresh tasks, restored from the
latest completed checkpoint. The JobMaster drops messages of older attempts (fencing) and
hands the others to :func:`dispatch`, which updates the attempt's facts (registered, deployed,
finished, failed subtasks) and routes the rest to the JobMaster (:class:`AttemptHost`): task
metrics, printed lines, collected records, split requests, checkpoint acknowledgements and
declines, failures.

The attempt ends once (:meth:`Attempt.end`): every subtask finished (no error), or the first
failure (its error; later ones are dropped). :func:`await_registration`,
:func:`watch_heartbeats`, :func:`await_channel_state_recovery` and :func:`shutdown_workers`
supervise its workers.

Threading: the JobMaster's loop only; blocking launcher calls run on its executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from typing import Any, Protocol

from undertow.connectors.source import SplitEnumerator
from undertow.core.errors import JobExecutionError, RestoreError, UndertowError
from undertow.core.types import AttemptNumber
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.channel_recovery import in_place_input_subtasks
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.control.connection import ControlConnection
from undertow.runtime.control.messages import (
    AcknowledgeCheckpoint,
    CancelTasks,
    ChannelStateRecovered,
    CollectRecords,
    DeclineCheckpoint,
    Heartbeat,
    PrintLines,
    RegisterWorker,
    Shutdown,
    SplitRequest,
    TaskEndOfData,
    TaskFailed,
    TaskFinished,
    TaskMetricsReport,
    TasksDeployed,
    WorkerFailed,
    WorkerMessage,
)
from undertow.runtime.master.collect_results import CollectResults
from undertow.runtime.master.exception_history import TaskOrigin
from undertow.runtime.master.heartbeat import HeartbeatMonitor
from undertow.runtime.master.launcher import WorkerLauncher
from undertow.runtime.master.metrics import TaskMetricsStore

log = logging.getLogger(__name__)

#: How long a worker's network failure waits for a dead peer to be reported as the cause.
PEER_FAILURE_GRACE_S = 0.3
WORKER_EXIT_TIMEOUT_S = 30.0

SubtaskKey = tuple[int, int]


class Attempt:
    """What belongs to one deployment attempt (see the module docstring)."""

    def __init__(
        self, number: AttemptNumber, graph: JobGraph, num_workers: int, heartbeat_timeout_ms: int
    ) -> None:
        self.number = number
        self.graph = graph
        self.num_workers = num_workers
        self.heartbeats = HeartbeatMonitor(heartbeat_timeout_ms)
        self.workers: dict[int, ControlConnection] = {}
        self.registered: dict[int, RegisterWorker] = {}
        #: Workers whose control connection closed (a registered worker not in it is live).
        self.disconnected: set[int] = set()
        self.deployed: set[int] = set()
        self.finished: set[SubtaskKey] = set()
        self.failed: set[SubtaskKey] = set()
        #: (vertex id, subtask) -> when it finished (epoch ms)
        self.finished_at: dict[SubtaskKey, int] = {}
        #: When the tasks were deployed (epoch ms); -1 before.
        self.deployed_at = -1
        self.accumulators: dict[str, Any] = {}
        #: The runtime's counters of the finished subtasks, summed per name.
        self.counters: dict[str, int] = {}
        self.enumerators: dict[int, SplitEnumerator[Any]] = {}
        self.all_registered = asyncio.Event()
        self.all_deployed = asyncio.Event()
        #: Subtasks still consuming in-flight data re-emitted by a rescaled restore; set when
        #: the attempt is deployed. No checkpoint is triggered before it is empty.
        self.recovering: set[SubtaskKey] = set()
        #: ChannelStateRecovered reports (they may come before ``recovering`` is computed).
        self.recovering_done: set[SubtaskKey] = set()
        self.recovered = asyncio.Event()
        self.done = asyncio.Event()
        self.error: UndertowError | None = None
        #: The task whose failure ended the attempt (None: no task's, or no failure).
        self.origin: TaskOrigin | None = None
        #: When it failed (epoch ms); -1 while it has not.
        self.failed_at = -1
        #: A failure that restarting cannot fix (a corrupt checkpoint to restore, or refused).
        self.fatal = False
        #: The snapshot this attempt restores (its directory), to name in a refusal; or None.
        self.restore_path: str | None = None

    def end(self, error: UndertowError | None = None) -> None:
        if self.done.is_set():
            return
        self.error = error
        if error is not None:
            self.failed_at = now_ms()
        self.done.set()

    def cancel_tasks(self) -> None:
        for conn in self.workers.values():
            conn.send(CancelTasks(self.number))

    def live_workers(self) -> list[int]:
        """Registered workers whose control connection is open, while the attempt runs (an
        ended attempt's workers are shutting down: none)."""
        if self.done.is_set():
            return []
        return sorted(w for w in self.registered if w not in self.disconnected)

    def location(self, worker: int) -> str:
        """Where a worker runs, for failure reports: ``worker 1 (host:port)``."""
        registered = self.registered.get(worker)
        if registered is None:
            return f"worker {worker}"
        return f"worker {worker} ({registered.data_host}:{registered.data_port})"


class AttemptHost(Protocol):
    """What :func:`dispatch` hands on to the JobMaster."""

    coordinator: CheckpointCoordinator | None
    task_metrics: TaskMetricsStore

    results: CollectResults

    def fail(
        self, attempt: Attempt, error: UndertowError, origin: TaskOrigin | None = None
    ) -> None:
        """Fail ``attempt`` (first failure wins): cancel its tasks and end it."""


def dispatch(
    host: AttemptHost, attempt: Attempt, index: int, conn: ControlConnection, msg: WorkerMessage
) -> None:
    """Handle one control message of ``attempt`` from worker ``index``."""
    match msg:
        case TaskMetricsReport():
            for sample in msg.metrics:
                host.task_metrics.update(sample)
        case PrintLines():
            sys.stdout.write("\n".join(msg.lines) + "\n")
            sys.stdout.flush()
        case CollectRecords():
            host.results.add(attempt.number, msg.sink_id, msg.after_checkpoint, msg.payload)
        case SplitRequest():
            enumerator = attempt.enumerators.get(msg.vertex_id)
            if enumerator is not None:
                enumerator.handle_split_request(msg.subtask, msg.hostname)
        case AcknowledgeCheckpoint():
            # An ended attempt acknowledges nothing: after a failure its tasks are cancelled
            # and their channels broken, so an acknowledgement still on its way cannot vouch
            # for the in-flight data of a checkpoint (its pending checkpoints were aborted).
            if host.coordinator is not None and not attempt.done.is_set():
                host.coordinator.receive_ack(msg.vertex_id, msg.subtask, msg.checkpoint_id,
                                             msg.handle, msg.metrics)  # fmt: skip
        case DeclineCheckpoint():
            if host.coordinator is not None:
                host.coordinator.receive_decline(msg.vertex_id, msg.subtask, msg.checkpoint_id,
                                                 msg.reason, msg.detail)  # fmt: skip
        case ChannelStateRecovered():
            key = (msg.vertex_id, msg.subtask)
            attempt.recovering_done.add(key)
            attempt.recovering.discard(key)
            if not attempt.recovering:
                attempt.recovered.set()
        case TaskFinished():
            _task_finished(host, attempt, msg)
        case TaskEndOfData():
            if host.coordinator is not None and not attempt.done.is_set():
                host.coordinator.on_task_end_of_data(msg.vertex_id, msg.subtask)
        case TaskFailed():
            attempt.failed.add((msg.vertex_id, msg.subtask))
            vertex = attempt.graph.vertex(msg.vertex_id)
            origin = TaskOrigin.of(vertex.name, msg.subtask, vertex.parallelism,
                                   attempt.location(index))  # fmt: skip
            host.fail(attempt, JobExecutionError(
                f"job failed: operator '{msg.operator}' (subtask {msg.subtask + 1}/"
                f"{vertex.parallelism} of '{vertex.name}') raised {msg.error}",
                operator=msg.operator, subtask=msg.subtask, remote_traceback=msg.traceback,
                exception_name=msg.exception_name,
            ), origin)  # fmt: skip
        case WorkerFailed():
            error: UndertowError = JobExecutionError(
                f"worker {msg.worker_index} failed: {msg.error}",
                remote_traceback=msg.traceback,
                exception_name=msg.exception_name,
            )
            if msg.restore_refused:  # the job fails with the refusal itself, as on the driver
                error = RestoreError(msg.error, path=attempt.restore_path,
                                     remote_traceback=msg.traceback)  # fmt: skip
            if msg.fatal:
                attempt.fatal = True
                host.fail(attempt, error)
            else:
                # Often the echo of a peer that died (connection reset): give the dead
                # worker's own exit a moment to be reported first, as the real cause.
                loop = asyncio.get_running_loop()
                loop.call_later(PEER_FAILURE_GRACE_S, host.fail, attempt, error)
        case TasksDeployed():
            attempt.deployed.add(index)
            if len(attempt.deployed) == attempt.num_workers:
                attempt.all_deployed.set()
        case RegisterWorker():
            attempt.workers[index] = conn
            attempt.registered[index] = msg
            if len(attempt.registered) == attempt.num_workers:
                attempt.all_registered.set()
        case Heartbeat():
            pass  # every message counts as a sign of life (the JobMaster's connection loop)
        case _:
            log.warning("attempt %d: unexpected message %r from worker %d", attempt.number, msg,
                        index)  # fmt: skip


def _task_finished(host: AttemptHost, attempt: Attempt, msg: TaskFinished) -> None:
    attempt.finished.add((msg.vertex_id, msg.subtask))
    attempt.finished_at[(msg.vertex_id, msg.subtask)] = now_ms()
    # the coordinator decides what a finished task means (FLIP-147); not an ended attempt's
    if host.coordinator is not None and not attempt.done.is_set():
        host.coordinator.on_task_finished(msg.vertex_id, msg.subtask)
    _sum_into(attempt.accumulators, msg.accumulators)
    _sum_into(attempt.counters, msg.counters)
    if len(attempt.finished) == attempt.graph.total_subtasks:
        attempt.end()


def _sum_into(totals: dict[str, Any], values: dict[str, Any]) -> None:
    """Add a finished subtask's ``values`` to the attempt's ``totals`` (a new name is set)."""
    for name, value in values.items():
        prev = totals.get(name)
        totals[name] = value if prev is None else prev + value


# -- supervision ---------------------------------------------------------------------------------
async def await_registration(
    attempt: Attempt, launcher: WorkerLauncher, timeout_s: float
) -> str | None:
    """Wait until every worker registered, at most ``timeout_s`` (``slot.request.timeout``);
    a worker that dies first is noticed at once, not at the timeout. Returns what went wrong,
    or None."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not attempt.all_registered.is_set() and not attempt.done.is_set():
        dead = [w for w in launcher.exited() if w not in attempt.registered]
        if dead or loop.time() > deadline:
            missing = dead or sorted(set(range(attempt.num_workers)) - set(attempt.registered))
            reasons = await loop.run_in_executor(None, _describe_exits, launcher, missing)
            what = (
                "ended before registering"
                if dead
                else f"did not register within {timeout_s:g} s (slot.request.timeout)"
            )
            return f"workers {missing} {what}: " + "; ".join(reasons)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(attempt.all_registered.wait(), 0.2)
    return None


def _describe_exits(launcher: WorkerLauncher, workers: list[int]) -> list[str]:
    return [f"worker {w}: {launcher.describe_exit(w)}" for w in workers]


async def watch_heartbeats(
    host: AttemptHost, attempt: Attempt, interval_ms: int, launcher: WorkerLauncher
) -> None:
    """Fail the attempt when a registered worker stays silent past ``heartbeat.timeout``."""
    timeout_ms = attempt.heartbeats.timeout_ms
    period_s = min(interval_ms, timeout_ms) / 4000.0
    while not attempt.done.is_set():
        await asyncio.sleep(period_s)
        late = attempt.heartbeats.overdue(now_ms())
        if late:
            first = late[0]
            host.fail(attempt, JobExecutionError(
                f"worker {first.worker} sent no heartbeat for {first.silent_ms / 1000:.1f} s "
                f"(heartbeat.timeout {timeout_ms} ms): it hangs or its host is unreachable"
            ))  # fmt: skip
            # A hung worker will not exit when asked: stop the attempt's workers now.
            await asyncio.get_running_loop().run_in_executor(None, launcher.kill)
            return


async def await_channel_state_recovery(
    attempt: Attempt, restore: RestorePlan | None, during_recovery: bool = True
) -> None:
    """After a rescaled restore of in-flight data, wait (or until the attempt ends) until
    every consumer of a rescaled edge received what the producers re-emitted: its input
    processor drains it into its restored input at network speed, unprocessed, and a
    checkpoint then persists what is left of it as *recovered* input, which a restore hands
    to the task before any other input (the per-key order the ``EndOfChannelStateEvent``
    barrier gives). A checkpoint taken before all of it arrived would find re-emitted
    records still queued at the producers, behind the subpartitions the end events block;
    Flink's tasks likewise stay INITIALIZING, and untriggerable, while they recover channel
    state. With ``during_recovery`` false the consumers report only once they processed it.

    Channel state restored in place needs no wait: a checkpoint during its recovery takes
    the restored input not yet consumed as its channel state. With ``during_recovery``
    false (``execution.checkpointing.unaligned.during-recovery.enabled``) it waits for those
    subtasks too (:func:`~undertow.runtime.checkpoint.channel_recovery.in_place_input_subtasks`),
    as Flink before 2.3 does."""
    if restore is None:
        return
    waiting = set() if during_recovery else set(
        in_place_input_subtasks(restore.channel_state, restore.finished_vertices)
    )  # fmt: skip
    if not restore.rescaled_gates and not waiting:
        return
    attempt.recovering = (waiting | {
        (vid, s)
        for vid in restore.rescaled_gates
        if vid not in restore.finished_vertices
        for s in range(attempt.graph.vertex(vid).parallelism)
    }) - attempt.recovering_done  # fmt: skip
    if attempt.recovering:
        attempt.recovered.clear()  # reports before this point may have set it
        recovered = asyncio.ensure_future(attempt.recovered.wait())
        ended = asyncio.ensure_future(attempt.done.wait())
        await asyncio.wait({recovered, ended}, return_when=asyncio.FIRST_COMPLETED)
        recovered.cancel()
        ended.cancel()


async def shutdown_workers(attempt: Attempt, launcher: WorkerLauncher, job_id: str) -> None:
    """Ask the attempt's workers to exit, wait for them (kill them after
    ``WORKER_EXIT_TIMEOUT_S``), close their connections and the attempt's enumerators."""
    for conn in attempt.workers.values():
        conn.send(Shutdown(attempt.number))
        await conn.drain()
    loop = asyncio.get_running_loop()
    exited = await loop.run_in_executor(None, launcher.wait, WORKER_EXIT_TIMEOUT_S)
    if not exited:
        log.warning("job %s: workers did not exit in time; killing them", job_id)
        launcher.kill()
    for conn in attempt.workers.values():
        conn.close()
    for enumerator in attempt.enumerators.values():
        enumerator.close()


def now_ms() -> int:
    return time.time_ns() // 1_000_000
