"""The worker's deployment builder: from a ``Deploy`` to running-ready tasks.

For the subtasks the placement plan gives this worker, :meth:`TaskDeploymentBuilder.deploy`
reads the state they restore, builds their partitions and gates, one :class:`TaskDeployment`
record and one ``StreamTask`` each, connects the peers its channels need and wires them.

Restore reading: state files are read and verified on the I/O pool, the backends' files they
name downloaded; a stray operator's state fails the restore unless
``execution.state-recovery.ignore-unclaimed-state``. Channel state: its package's worker
interface, :class:`~undertow.runtime.checkpoint.channel_recovery.WorkerChannelRecovery`.

Threading: the worker's loop thread. Lifecycle: one per worker; ``deploy`` once; ``close``
when the worker ends, also after a failed deploy. It owns the worker's checkpoint storage, I/O
pool and channel-state file writer.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
from collections import defaultdict
from collections.abc import Callable

from undertow.core.config import Configuration
from undertow.core.errors import RestoreError
from undertow.core.types import AttemptNumber, SubtaskIndex, VertexId
from undertow.graph.job_graph import JobGraph, JobVertex
from undertow.runtime.checkpoint.channel_recovery import WorkerChannelRecovery
from undertow.runtime.checkpoint.channel_state_files import (
    ChannelStateFileWriter,
    SubtaskChannelStateWriter,
)
from undertow.runtime.checkpoint.restore_fault import apply_to_snapshot
from undertow.runtime.checkpoint.restore_plan import unclaimed_message
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.runtime.control.messages import (
    ChannelStateRecovered,
    Deploy,
    TaskEndOfData,
    TasksDeployed,
)
from undertow.runtime.control.placement import ChannelSpec, ExecutionPlan, plan_execution
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.network.transport import NetworkEnvironment
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.stream_task import StreamTask
from undertow.runtime.worker.io_pool import IOPool
from undertow.runtime.worker.settings import WorkerSettings
from undertow.runtime.worker.task_link import ResponderToMaster, TaskServicesToMaster, WorkerLink
from undertow.storage.checkpoint_storage import CheckpointStorage


class TaskDeploymentBuilder:
    """Builds this worker's tasks into ``tasks`` (the worker's own mapping, filled as they
    are built, so a failed deploy still cancels the ones that exist).

    ``link``: the worker as its tasks' messages see it; ``env``: the worker's network;
    ``pace``: the slice pace its tasks share.
    """

    def __init__(
        self,
        *,
        worker_index: int,
        attempt: AttemptNumber,
        config: Configuration,
        link: WorkerLink,
        env: NetworkEnvironment,
        pace: TaskPace,
        tasks: dict[tuple[int, int], StreamTask],
    ) -> None:
        self.worker_index = worker_index
        self.attempt = attempt
        #: The worker's configuration until ``deploy``, then the job's; ``settings`` follows.
        self.config = config
        self.settings = WorkerSettings.of(config)
        self._link = link
        self._env = env
        self._pace = pace
        self._tasks = tasks
        self.storage: CheckpointStorage | None = None
        self.io_pool: IOPool | None = None
        self.channel_state_files: ChannelStateFileWriter | None = None
        self._channel_state_writers: dict[tuple[int, int], SubtaskChannelStateWriter] = {}

    async def deploy(self, deploy: Deploy) -> None:
        """Restore, build, connect and wire this worker's subtasks; then ``TasksDeployed``."""
        self.config = Configuration(deploy.config)
        self.settings = settings = WorkerSettings.of(self.config)
        graph: JobGraph = pickle.loads(deploy.job_graph)
        checkpoint_dir = settings.checkpoint_dir
        if checkpoint_dir:
            self.storage = CheckpointStorage(checkpoint_dir, deploy.job_id)
            # Checkpoint writes and restore reads; jobs in flight lower the switch interval
            self.io_pool = IOPool(2, thread_name_prefix=f"undertow-io-{self.worker_index}")
        checkpointing = CheckpointSettings.of(self.config)
        if self.storage is not None and checkpointing.writes_channel_state:
            self.channel_state_files = ChannelStateFileWriter(
                self.storage.write_file,
                settings.max_subtasks_per_channel_state_file,
                executor=self.io_pool,
            )
        restored = await self._read_restored_state(graph, deploy)
        plan = plan_execution(graph, deploy.num_workers)
        channels = await WorkerChannelRecovery.read(
            deploy.restore, set(plan.subtasks_of(graph, self.worker_index)), self.io_pool,
            during_recovery=checkpointing.during_recovery,
        )  # fmt: skip
        by_producer: dict[tuple[int, int], list[ChannelSpec]] = defaultdict(list)
        by_consumer: dict[tuple[int, int], list[ChannelSpec]] = defaultdict(list)
        for ch in plan.channels:
            by_producer[(ch.edge_id, ch.producer_subtask)].append(ch)
            by_consumer[(ch.edge_id, ch.consumer_subtask)].append(ch)
        loop = asyncio.get_running_loop()
        needed: set[int] = set()
        for vertex_id, subtask in plan.subtasks_of(graph, self.worker_index):
            vertex = graph.vertex(vertex_id)
            services = TaskServicesToMaster(self._link, vertex_id, subtask, loop)
            writers = self._build_writers(vertex, subtask, by_producer, plan, needed)
            gates = self._build_gates(vertex, subtask, by_consumer, plan, needed)
            snapshots = channels.snapshots_of(
                vertex, subtask, restored.get((vertex_id, subtask)), gates, list(writers.values())
            )
            deployment = TaskDeployment(
                vertex=vertex, subtask_index=subtask, attempt=self.attempt, config=self.config,
                gates=tuple(gates), writers=writers, restored=tuple(snapshots or ()),
                finished_on_restore=(
                    deploy.restore is not None and vertex_id in deploy.restore.finished_vertices
                ),
                channel_recovery=channels.for_subtask(vertex_id, subtask),
            )  # fmt: skip
            channel_state_writer = None
            if self.channel_state_files is not None:
                channel_state_writer = self.channel_state_files.register(deployment.name)
                self._channel_state_writers[(vertex_id, subtask)] = channel_state_writer
            responder = ResponderToMaster(self._link, vertex_id, subtask)
            io = CheckpointIO(
                responder=responder, io_acknowledger=responder,
                state_writer=self.storage.write_file if self.storage is not None else None,
                executor=self.io_pool, channel_state_writer=channel_state_writer,
                shared_writer=self.storage.write_shared_file if self.storage is not None else None,
                end_of_data=functools.partial(
                    self._link.send,
                    TaskEndOfData(self.attempt, VertexId(vertex_id), SubtaskIndex(subtask)),
                ),
            )  # fmt: skip
            recovered: Callable[[], None] | None = None
            recovery = deployment.channel_recovery
            if recovery.recovering_gates or recovery.reports_restored_input:
                recovered = functools.partial(
                    self._link.send, ChannelStateRecovered(self.attempt, vertex_id, subtask)
                )
            task = StreamTask(deployment=deployment, services=services, loop=loop,
                              pace=self._pace, checkpoint_io=io,
                              on_channel_state_recovered=recovered)  # fmt: skip
            self._tasks[(vertex_id, subtask)] = task
        needed.discard(self.worker_index)
        await self._env.connect_peers(deploy.peers, needed)
        me = self.worker_index
        for ch in plan.channels:
            producer = plan.worker_of(ch.producer_subtask)
            consumer = plan.worker_of(ch.consumer_subtask)
            if me in (producer, consumer):
                self._env.wire(ch.channel_id, producer, consumer)
        self._env.start_pumping()
        self._link.send(TasksDeployed(self.attempt, self.worker_index))

    def task_ended(self, key: tuple[int, int]) -> None:
        """The task ``key`` ended: its channel-state file group stops waiting for it."""
        writer = self._channel_state_writers.pop(key, None)
        if writer is not None and self.channel_state_files is not None:
            self.channel_state_files.release(writer)

    def close(self) -> None:
        """Cancel the channel-state file writes and shut the I/O pool down (without waiting)."""
        if self.channel_state_files is not None:
            self.channel_state_files.cancel()
        if self.io_pool is not None:
            self.io_pool.shutdown(wait=False, cancel_futures=True)

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
                    assignment.checkpoint_id, self.settings.rocksdb_local_dir,
                )  # fmt: skip
                snapshots.append(snapshot)
            restored[key] = snapshots
        if not self.settings.ignore_unclaimed_state:
            uids = {op.uid for vertex in graph.vertices for op in vertex.operators}
            stray = {u for snaps in restored.values() for s in snaps for u in s.operators} - uids
            if stray:
                raise RestoreError(unclaimed_message(assignment.checkpoint_id, list(stray), uids))
        return restored

    def _build_writers(
        self,
        vertex: JobVertex,
        subtask: int,
        by_producer: dict[tuple[int, int], list[ChannelSpec]],
        plan: ExecutionPlan,
        needed: set[int],
    ) -> dict[int, RecordWriter]:
        network = self.settings.network
        writers: dict[int, RecordWriter] = {}
        for edge in vertex.outputs:
            channels = sorted(by_producer[(edge.id, subtask)], key=lambda c: c.subpartition)
            partition = ResultPartition(
                f"{vertex.name} ({subtask + 1}/{vertex.parallelism}) edge {edge.id}",
                [c.channel_id for c in channels],
                buffers_per_channel=network.buffers_per_channel,
                floating_buffers=network.floating_buffers_per_gate,
                max_buffers_per_channel=network.max_buffers_per_channel,
            )
            for ch, sp in zip(channels, partition.subpartitions):
                self._env.subpartitions[ch.channel_id] = sp
                needed.add(plan.worker_of(ch.consumer_subtask))
            writers[edge.id] = RecordWriter(partition, edge.new_partitioner(), network.segment_size)
        return writers

    def _build_gates(
        self,
        vertex: JobVertex,
        subtask: int,
        by_consumer: dict[tuple[int, int], list[ChannelSpec]],
        plan: ExecutionPlan,
        needed: set[int],
    ) -> list[InputGate]:
        network = self.settings.network
        gates = []
        for edge in vertex.inputs:
            name = f"{vertex.name} ({subtask + 1}/{vertex.parallelism}) input {edge.id}"
            gate = InputGate(name, edge.target_input, network.floating_buffers_per_gate)
            for ch in sorted(by_consumer[(edge.id, subtask)], key=lambda c: c.gate_channel):
                ic = gate.add_channel(
                    ch.channel_id, f"{name} channel {ch.gate_channel}",
                    network.buffers_per_channel,
                )  # fmt: skip
                self._env.input_channels[ch.channel_id] = ic
                needed.add(plan.worker_of(ch.producer_subtask))
            gates.append(gate)
        return gates
