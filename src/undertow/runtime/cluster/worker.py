"""A worker: one process (or thread) with one asyncio loop, hosting slots of subtasks.

Lifecycle::

    start data server -> connect to the JobMaster (HMAC) -> RegisterWorker -> receive Deploy
    -> build partitions, gates and tasks -> connect peers -> wire channels -> run tasks
    -> report TaskFinished / TaskFailed -> Shutdown (or the JobMaster vanished) -> exit

Deployment builds partitions, gates and one ``TaskDeployment`` record per
subtask in one place; the channel state it restores is read and checked by
``runtime.checkpoint.channel_state_reader``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import pickle
import select
import threading
import time
import traceback
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.core.config import Configuration, Options
from undertow.core.errors import NetworkError, RestoreError
from undertow.core.types import AttemptNumber, SubtaskIndex, VertexId
from undertow.graph.job_graph import JobGraph, JobVertex
from undertow.runtime.checkpoint.channel_state_files import (
    ChannelStateFileWriter,
    SubtaskChannelStateWriter,
)
from undertow.runtime.checkpoint.channel_state_reader import (
    ChannelStateReader,
    ReemitStream,
    RestoredChannels,
    with_channel_state,
)
from undertow.runtime.checkpoint.restore_fault import apply_to_snapshot
from undertow.runtime.checkpoint.restore_plan import unclaimed_message
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.runtime.cluster.control import ControlConnection
from undertow.runtime.cluster.io_pool import IOPool
from undertow.runtime.cluster.log_context import add_log_context, set_log_context
from undertow.runtime.cluster.messages import (
    AddSplits,
    CancelTasks,
    ChannelStateRecovered,
    Deploy,
    Heartbeat,
    NoMoreSplits,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    PrintLines,
    RegisterWorker,
    Shutdown,
    StopSource,
    TaskFailed,
    TaskFinished,
    TaskMetricsReport,
    TasksDeployed,
    TriggerSourceCheckpoint,
    WorkerFailed,
)
from undertow.runtime.cluster.metrics import TaskMetrics
from undertow.runtime.cluster.placement import ChannelSpec, ExecutionPlan, plan_execution
from undertow.runtime.cluster.stdout_forwarding import forward_stdout
from undertow.runtime.cluster.task_link import ResponderToMaster, TaskServicesToMaster
from undertow.runtime.network.framing import client_handshake
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import RecordWriter, ResultPartition
from undertow.runtime.network.transport import NetworkEnvironment
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.runtime.task.context import user_metric_values
from undertow.runtime.task.deployment import ReemittedChannel, TaskDeployment
from undertow.runtime.task.lifecycle import Finished
from undertow.runtime.task.mailbox_loop import fit_switch_interval
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.stream_task import StreamTask, TaskCancelled
from undertow.storage.checkpoint_storage import CheckpointStorage
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
        #: A worker process sends ``print()`` output to the driver (``stdout_forwarding``).
        self.forward_stdout = forward_stdout
        self.attempt = attempt
        self.master = master
        self.secret = secret
        self.config = config
        self.tasks: dict[tuple[int, int], StreamTask] = {}
        #: Tasks whose final metrics sample was sent.
        self.ended: set[tuple[int, int]] = set()
        self.ctrl: ControlConnection | None = None
        self._failed = False
        self.storage: CheckpointStorage | None = None
        self.io_pool: IOPool | None = None
        self.channel_state_files: ChannelStateFileWriter | None = None
        self.channel_state_writers: dict[tuple[int, int], SubtaskChannelStateWriter] = {}
        #: The slice length of this worker's tasks (short while a checkpoint passes).
        self.pace = TaskPace.of(config)

    def send(self, message: Any) -> None:
        if self.ctrl is not None:
            self.ctrl.send(message)

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
        config = self.config
        self.env = NetworkEnvironment(
            self.worker_index,
            self.secret,
            bind_host=config.get(Options.BIND_HOST),
            max_frame_size=config.get(Options.MAX_FRAME_SIZE),
            on_failure=self._on_network_failure,
        )
        port = await self.env.start_server()
        reader, writer = await asyncio.open_connection(*self.master)
        await client_handshake(reader, writer, self.secret, self.worker_index)
        self.ctrl = ControlConnection(
            reader, writer, "JobMaster", config.get(Options.MAX_FRAME_SIZE)
        )
        control_socket = writer.get_extra_info("socket")
        if control_socket is not None and hasattr(select, "poll"):
            self.pace.watch(control_socket.fileno())
        self.send(
            RegisterWorker(self.attempt, self.worker_index, config.get(Options.BIND_HOST), port,
                           os.getpid())
        )  # fmt: skip
        heartbeat = asyncio.ensure_future(self._heartbeat())
        printing = contextlib.ExitStack()
        if self.forward_stdout:
            printing.enter_context(forward_stdout(self._print_lines_from_any_thread()))
        try:
            deploy = await self.ctrl.recv()
            if isinstance(deploy, Shutdown) or deploy is None:
                return
            assert isinstance(deploy, Deploy), deploy
            early = await self._deploy_watching_control(deploy)
            if early is not None:
                await self._serve(early)
        except Exception as err:
            fatal = isinstance(err, (CorruptCheckpointError, RestoreError))
            self.send(WorkerFailed(self.attempt, self.worker_index, str(err),
                                   traceback.format_exc(), fatal))  # fmt: skip
            await self.ctrl.drain()
            raise
        finally:
            printing.close()
            heartbeat.cancel()
            for task in self.tasks.values():
                task.cancel()
            if self.channel_state_files is not None:
                self.channel_state_files.cancel()
            self.env.close()
            if self.io_pool is not None:
                self.io_pool.shutdown(wait=False, cancel_futures=True)
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
        self.config = Configuration(deploy.config)
        graph: JobGraph = pickle.loads(deploy.job_graph)
        checkpoint_dir = self.config.get(Options.CHECKPOINT_DIR)
        if checkpoint_dir:
            self.storage = CheckpointStorage(checkpoint_dir, deploy.job_id)
            # Checkpoint writes and restore reads; jobs in flight lower the switch interval
            self.io_pool = IOPool(2, thread_name_prefix=f"undertow-io-{self.worker_index}")
        checkpointing = CheckpointSettings.of(self.config)
        if self.storage is not None and checkpointing.writes_channel_state:
            self.channel_state_files = ChannelStateFileWriter(
                self.storage.write_file,
                self.config.get(Options.MAX_SUBTASKS_PER_CHANNEL_STATE_FILE),
                executor=self.io_pool,
            )
        restored = await self._read_restored_state(graph, deploy)
        restored_channels = await self._read_restored_channel_state(graph, deploy)
        reemitted = await self._read_reemitted_channel_state(graph, deploy)
        assignment = deploy.restore
        rescaled_outputs = assignment.rescaled_outputs if assignment is not None else {}
        rescaled_gates = assignment.rescaled_gates if assignment is not None else {}
        plan = plan_execution(graph, deploy.num_workers)
        by_producer: dict[tuple[int, int], list[ChannelSpec]] = defaultdict(list)
        by_consumer: dict[tuple[int, int], list[ChannelSpec]] = defaultdict(list)
        for ch in plan.channels:
            by_producer[(ch.edge_id, ch.producer_subtask)].append(ch)
            by_consumer[(ch.edge_id, ch.consumer_subtask)].append(ch)
        loop = asyncio.get_running_loop()
        needed: set[int] = set()
        for vertex_id, subtask in plan.subtasks_of(graph, self.worker_index):
            vertex = graph.vertex(vertex_id)
            services = TaskServicesToMaster(self, vertex_id, subtask)
            writers = self._build_writers(vertex, subtask, by_producer, plan, needed)
            gates = self._build_gates(vertex, subtask, by_consumer, plan, needed)
            snapshots = restored.get((vertex_id, subtask))
            if (vertex_id, subtask) in restored_channels:
                snapshots = with_channel_state(
                    vertex, subtask, snapshots, gates, list(writers.values()),
                    restored_channels[(vertex_id, subtask)],
                )  # fmt: skip
            deployment = TaskDeployment(
                vertex=vertex, subtask_index=subtask, attempt=self.attempt, config=self.config,
                gates=tuple(gates), writers=writers, restored=tuple(snapshots or ()),
                finished_on_restore=(
                    deploy.restore is not None and vertex_id in deploy.restore.finished_vertices
                ),
                reemit=tuple(
                    ReemittedChannel(output, tuple(chunks), where)
                    for output, chunks, where in reemitted.get((vertex_id, subtask), [])
                ),
                recovery_outputs=rescaled_outputs.get(vertex_id, frozenset()),
                recovering_gates=frozenset(rescaled_gates.get(vertex_id, frozenset())),
            )  # fmt: skip
            channel_state_writer = None
            if self.channel_state_files is not None:
                channel_state_writer = self.channel_state_files.register(deployment.name)
                self.channel_state_writers[(vertex_id, subtask)] = channel_state_writer
            io = CheckpointIO(
                responder=ResponderToMaster(self, vertex_id, subtask),
                state_writer=self.storage.write_file if self.storage is not None else None,
                executor=self.io_pool, channel_state_writer=channel_state_writer,
                shared_writer=self.storage.write_shared_file if self.storage is not None else None,
            )  # fmt: skip
            recovered = None
            if deployment.recovering_gates:
                recovered = functools.partial(
                    self.send, ChannelStateRecovered(self.attempt, vertex_id, subtask)
                )
            task = StreamTask(deployment=deployment, services=services, loop=loop,
                              pace=self.pace, checkpoint_io=io,
                              on_channel_state_recovered=recovered)  # fmt: skip
            self.tasks[(vertex_id, subtask)] = task
        needed.discard(self.worker_index)
        await self.env.connect_peers(deploy.peers, needed)
        me = self.worker_index
        for ch in plan.channels:
            producer = plan.worker_of(ch.producer_subtask)
            consumer = plan.worker_of(ch.consumer_subtask)
            if me in (producer, consumer):
                self.env.wire(ch.channel_id, producer, consumer)
        self.env.start_pumping()
        self.send(TasksDeployed(self.attempt, self.worker_index))

    async def _read_restored_state(
        self, graph: JobGraph, deploy: Deploy
    ) -> dict[tuple[int, int], list[SubtaskSnapshot]]:
        """Read and verify the state files this worker's subtasks restore (on the I/O pool)."""
        assignment = deploy.restore
        if assignment is None:
            return {}
        storage = CheckpointStorage(assignment.checkpoint_dir, assignment.job_id)
        plan = plan_execution(graph, deploy.num_workers)
        mine = set(plan.subtasks_of(graph, self.worker_index))
        loop = asyncio.get_running_loop()
        restored: dict[tuple[int, int], list[SubtaskSnapshot]] = {}
        for key, handles in assignment.subtask_files.items():
            if key not in mine:
                continue
            snapshots = []
            for handle in handles:
                data = await loop.run_in_executor(
                    self.io_pool, storage.read_file, handle, assignment.checkpoint_id
                )  # verifies size and checksum before anything is unpickled
                snapshot = pickle.loads(data)
                if assignment.fault is not None:
                    vertex = graph.vertex(key[0])
                    sources = [v.operators[0].uid for v in graph.vertices if v.is_source]
                    apply_to_snapshot(assignment.fault, snapshot,
                                      f"{vertex.name} ({key[1] + 1}/{vertex.parallelism})",
                                      sources)  # fmt: skip
                await loop.run_in_executor(
                    self.io_pool, snapshot.download_native, storage.read_file,
                    assignment.checkpoint_id, self.config.get(Options.ROCKSDB_LOCAL_DIR),
                )  # fmt: skip
                snapshots.append(snapshot)
            restored[key] = snapshots
        if not self.config.get(Options.IGNORE_UNCLAIMED_STATE):
            uids = {op.uid for vertex in graph.vertices for op in vertex.operators}
            stray = {u for snaps in restored.values() for s in snaps for u in s.operators} - uids
            if stray:
                raise RestoreError(unclaimed_message(assignment.checkpoint_id, list(stray)))
        return restored

    async def _read_restored_channel_state(
        self, graph: JobGraph, deploy: Deploy
    ) -> dict[tuple[int, int], RestoredChannels]:
        """The in-place channel state of this worker's subtasks (verified, on the I/O pool)."""
        reader = self._channel_state_reader(graph, deploy)
        return {} if reader is None else await reader.read_in_place()

    async def _read_reemitted_channel_state(
        self, graph: JobGraph, deploy: Deploy
    ) -> dict[tuple[int, int], list[ReemitStream]]:
        """Per subtask of this worker: the old channels it re-emits after a rescale."""
        reader = self._channel_state_reader(graph, deploy)
        return {} if reader is None else await reader.read_reemitted()

    def _channel_state_reader(self, graph: JobGraph, deploy: Deploy) -> ChannelStateReader | None:
        """A reader of the channel state this worker's subtasks restore, if there is any."""
        assignment = deploy.restore
        if assignment is None or not (assignment.channel_state or assignment.reemit):
            return None
        plan = plan_execution(graph, deploy.num_workers)
        return ChannelStateReader(
            assignment, set(plan.subtasks_of(graph, self.worker_index)), self.io_pool
        )

    def _build_writers(
        self,
        vertex: JobVertex,
        subtask: int,
        by_producer: dict[tuple[int, int], list[ChannelSpec]],
        plan: ExecutionPlan,
        needed: set[int],
    ) -> dict[int, RecordWriter]:
        config = self.config
        writers: dict[int, RecordWriter] = {}
        for edge in vertex.outputs:
            channels = sorted(by_producer[(edge.id, subtask)], key=lambda c: c.subpartition)
            partition = ResultPartition(
                f"{vertex.name} ({subtask + 1}/{vertex.parallelism}) edge {edge.id}",
                [c.channel_id for c in channels],
                buffers_per_channel=config.get(Options.BUFFERS_PER_CHANNEL),
                floating_buffers=config.get(Options.FLOATING_BUFFERS_PER_GATE),
                max_buffers_per_channel=config.get(Options.MAX_BUFFERS_PER_CHANNEL),
            )
            for ch, sp in zip(channels, partition.subpartitions):
                self.env.subpartitions[ch.channel_id] = sp
                needed.add(plan.worker_of(ch.consumer_subtask))
            writers[edge.id] = RecordWriter(
                partition, edge.new_partitioner(), config.get(Options.SEGMENT_SIZE)
            )
        return writers

    def _build_gates(
        self,
        vertex: JobVertex,
        subtask: int,
        by_consumer: dict[tuple[int, int], list[ChannelSpec]],
        plan: ExecutionPlan,
        needed: set[int],
    ) -> list[InputGate]:
        config = self.config
        gates = []
        for edge in vertex.inputs:
            name = f"{vertex.name} ({subtask + 1}/{vertex.parallelism}) input {edge.id}"
            gate = InputGate(name, edge.target_input, config.get(Options.FLOATING_BUFFERS_PER_GATE))
            for ch in sorted(by_consumer[(edge.id, subtask)], key=lambda c: c.gate_channel):
                ic = gate.add_channel(
                    ch.channel_id, f"{name} channel {ch.gate_channel}",
                    config.get(Options.BUFFERS_PER_CHANNEL),
                )  # fmt: skip
                self.env.input_channels[ch.channel_id] = ic
                needed.add(plan.worker_of(ch.producer_subtask))
            gates.append(gate)
        return gates

    async def _serve(self, early: _EarlyControl) -> None:
        """Run the tasks until ``Shutdown``, first handling what arrived while deploying."""
        assert self.ctrl is not None
        running = {
            asyncio.ensure_future(self._run_task(key, task)) for key, task in self.tasks.items()
        }
        control = asyncio.ensure_future(self._control_loop(early))
        reporter = asyncio.ensure_future(self._report_metrics())
        try:
            await control
        finally:
            reporter.cancel()
            for t in running:
                t.cancel()
            await asyncio.gather(reporter, *running, return_exceptions=True)

    async def _heartbeat(self) -> None:
        """Every ``heartbeat.interval``: tell the JobMaster this worker is alive."""
        interval_s = self.config.get(Options.HEARTBEAT_INTERVAL) / 1000.0
        while True:
            await asyncio.sleep(interval_s)
            self.send(Heartbeat(self.attempt, self.worker_index))

    async def _report_metrics(self) -> None:
        """Every report interval: one ``TaskMetricsReport`` with a sample per running task."""
        interval_s = self.config.get(Options.METRICS_REPORT_INTERVAL) / 1000.0
        while True:
            await asyncio.sleep(interval_s)
            samples = tuple(
                _sample(key, task) for key, task in self.tasks.items() if key not in self.ended
            )
            if samples:
                self.send(TaskMetricsReport(self.attempt, self.worker_index, samples))

    async def _control_loop(self, early: _EarlyControl) -> None:
        assert self.ctrl is not None
        backlog = deque(early.messages)
        read: asyncio.Future[Any] | None = early.read
        while True:
            if backlog:
                msg = backlog.popleft()
            elif read is not None:
                msg, read = await read, None
            else:
                msg = await self.ctrl.recv()
            if msg is None or isinstance(msg, Shutdown):
                return
            if isinstance(msg, AddSplits):
                task = self.tasks[(msg.vertex_id, msg.subtask)]
                task.post(functools.partial(task.head.add_splits, msg.splits))
            elif isinstance(msg, NoMoreSplits):
                task = self.tasks[(msg.vertex_id, msg.subtask)]
                task.post(task.head.no_more_splits)
            elif isinstance(msg, TriggerSourceCheckpoint):
                task = self.tasks[(msg.vertex_id, msg.subtask)]
                # A task that finished meanwhile: its TaskFinished makes the JobMaster count it
                # as acknowledged (FLIP-147), so the trigger is dropped.
                if task.checkpointer is not None and not isinstance(task.lifecycle, Finished):
                    self.pace.hurry()
                    task.post(functools.partial(task.checkpointer.trigger_checkpoint, msg.barrier))
            elif isinstance(msg, StopSource):
                task = self.tasks[(msg.vertex_id, msg.subtask)]
                task.post(functools.partial(task.stop_source, msg.drain))
            elif isinstance(msg, NotifyCheckpointComplete):
                for task in self.tasks.values():
                    if task.checkpointer is not None:
                        task.post(functools.partial(
                            task.checkpointer.notify_checkpoint_complete, msg.checkpoint_id
                        ))  # fmt: skip
            elif isinstance(msg, NotifyCheckpointAborted):
                for task in self.tasks.values():
                    if task.checkpointer is not None:
                        task.post(functools.partial(
                            task.checkpointer.notify_checkpoint_aborted, msg.checkpoint_id
                        ))  # fmt: skip
            elif isinstance(msg, CancelTasks):
                for task in self.tasks.values():
                    task.cancel()
            else:
                log.warning("worker %d: unexpected control message %r", self.worker_index, msg)

    async def _run_task(self, key: tuple[int, int], task: StreamTask) -> None:
        try:
            await self._run_task_reporting(key, task)
        finally:
            writer = self.channel_state_writers.pop(key, None)
            if writer is not None and self.channel_state_files is not None:
                self.channel_state_files.release(writer)  # its group stops waiting for it

    async def _run_task_reporting(self, key: tuple[int, int], task: StreamTask) -> None:
        vertex_id, subtask = key
        add_log_context(task.name)
        try:
            await task.run()
        except (TaskCancelled, asyncio.CancelledError):
            self._send_final_sample(key, task)
            return
        except BaseException as err:
            self._send_final_sample(key, task)
            self.send(
                TaskFailed(
                    self.attempt, vertex_id, subtask, task.operator_of(err.__traceback__),
                    f"{type(err).__name__}: {err}", traceback.format_exc(),
                )
            )  # fmt: skip
            return
        self._send_final_sample(key, task)
        accumulators = dict(task.chain.accumulators)
        accumulators[f"records_in[{task.vertex.name}]"] = task.records_in
        stats = task.statistics()
        if stats.max_overdraft_buffers > 0 or stats.overdraft_exceeded > 0:  # per subtask
            accumulators[f"max_overdraft_buffers[{task.name}]"] = stats.max_overdraft_buffers
            accumulators[f"overdraft_exceeded[{task.name}]"] = stats.overdraft_exceeded
        if task.debloater is not None:  # per subtask: how often its gates announced sizes
            accumulators[f"buffer_debloat_announcements[{task.name}]"] = (
                task.debloater.announcements
            )
        if stats.buffer_sizes_received:  # per subtask: how many of them its writers applied
            accumulators[f"buffer_debloat_sizes_received[{task.name}]"] = (
                stats.buffer_sizes_received
            )
        self.send(TaskFinished(self.attempt, VertexId(vertex_id),
                               SubtaskIndex(subtask), accumulators))  # fmt: skip

    def _send_final_sample(self, key: tuple[int, int], task: StreamTask) -> None:
        self.ended.add(key)
        sample = _sample(key, task, final=True)
        self.send(TaskMetricsReport(self.attempt, self.worker_index, (sample,)))

    def _on_network_failure(self, err: BaseException) -> None:
        if self._failed:
            return
        self._failed = True
        detail = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        self.send(WorkerFailed(self.attempt, self.worker_index, str(err), detail))
        for task in self.tasks.values():
            task.cancel()


def _sample(key: tuple[int, int], task: StreamTask, final: bool = False) -> TaskMetrics:
    user = user_metric_values(task.chain.operators)
    return TaskMetrics(key[0], key[1], time.time_ns() // 1_000_000, task.statistics(), final, user)


def run_worker(
    worker_index: int,
    attempt: int,
    master: tuple[str, int],
    secret: bytes,
    config: dict[str, str],
    forward_stdout: bool = False,
) -> None:
    """Entry point of a worker thread or process: runs the worker's loop to completion, with
    the switch interval fitted to the mailbox slice (:func:`fit_switch_interval`). A worker
    process passes ``forward_stdout`` (a thread shares the driver's stdout already)."""
    configuration = Configuration(config)
    fit_switch_interval(configuration.get(Options.MAILBOX_SLICE) / 1000.0)
    worker = Worker(
        worker_index, AttemptNumber(attempt), master, secret, configuration, forward_stdout
    )
    try:
        asyncio.run(worker.run())
    except (NetworkError, ConnectionError) as err:
        log.error("worker %d stopped: %s", worker_index, err)
        raise
