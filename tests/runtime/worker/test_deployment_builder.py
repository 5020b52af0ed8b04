"""The worker's deployment builder: a ``Deploy`` becomes this worker's tasks, wired."""

from __future__ import annotations

import asyncio
import pickle

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.types import AttemptNumber
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource
from undertow.graph.job_graph import JobGraph
from undertow.runtime.control.messages import Deploy, TasksDeployed
from undertow.runtime.network.transport import NetworkEnvironment
from undertow.runtime.task.pace import TaskPace
from undertow.runtime.task.stream_task import StreamTask
from undertow.runtime.worker.deployment_builder import TaskDeploymentBuilder
from undertow.testing.worker import RecordingLink


def job(parallelism: int, shuffle: bool) -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    stream = env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), "seq")
    stream = stream.map(lambda x: x + 1).name("plus")
    if shuffle:
        stream = stream.rebalance()
    stream.sink_to(DiscardingSink())
    return env._job_graph("builder")


def build(
    graph: JobGraph, num_workers: int, worker_index: int, config: dict[str, str]
) -> tuple[dict[tuple[int, int], StreamTask], RecordingLink, TaskDeploymentBuilder]:
    link = RecordingLink(attempt=AttemptNumber(2))
    tasks: dict[tuple[int, int], StreamTask] = {}

    async def scenario() -> TaskDeploymentBuilder:
        env = NetworkEnvironment(worker_index, b"secret", bind_host="127.0.0.1",
                                 max_frame_size=1 << 20, on_failure=lambda err: None)  # fmt: skip
        builder = TaskDeploymentBuilder(
            worker_index=worker_index, attempt=AttemptNumber(2), config=Configuration(),
            link=link, env=env, pace=TaskPace.of(Configuration()), tasks=tasks,
        )  # fmt: skip
        try:
            await builder.deploy(Deploy(AttemptNumber(2), pickle.dumps(graph), {}, num_workers,
                                        config, job_id="0" * 32))  # fmt: skip
        finally:
            builder.close()
            env.close()
        return builder

    return tasks, link, asyncio.run(scenario())


def test_one_worker_builds_every_subtask_and_wires_its_channels() -> None:
    graph = job(2, shuffle=True)
    tasks, link, _ = build(graph, 1, 0, {"undertow.metrics.report-interval": "123"})
    expected = {(v.id, s) for v in graph.vertices for s in range(v.parallelism)}
    assert set(tasks) == expected
    assert link.sent == [TasksDeployed(AttemptNumber(2), 0)]
    [sink] = [v for v in graph.vertices if not v.outputs]
    task = tasks[(sink.id, 1)]
    assert task.subtask_index == 1 and task.deployment.attempt == 2
    assert [len(g.channels) for g in task.gates] == [2]  # rebalanced from both producers
    assert task.deployment.config.get_string("undertow.metrics.report-interval", "") == "123"
    assert task.checkpointer is not None  # exactly-once by default, without storage


def test_a_worker_builds_only_the_subtasks_of_its_slots() -> None:
    graph = job(2, shuffle=False)  # one chained vertex: no channel between workers
    [vertex] = graph.vertices
    tasks, link, _ = build(graph, 2, 1, {})
    assert set(tasks) == {(vertex.id, 1)}
    assert link.sent == [TasksDeployed(AttemptNumber(2), 1)]


def test_a_checkpoint_directory_gives_the_tasks_storage_and_an_io_pool(tmp_path: object) -> None:
    graph = job(1, shuffle=False)
    config = {"execution.checkpointing.dir": f"file://{tmp_path}",
              "execution.checkpointing.unaligned.enabled": "true"}  # fmt: skip
    tasks, _, builder = build(graph, 1, 0, config)
    assert builder.storage is not None and builder.io_pool is not None
    assert builder.channel_state_files is not None  # unaligned: shared channel-state files
    [task] = tasks.values()
    assert task.checkpointer is not None and task.checkpointer.unaligned_enabled
    builder.task_ended(next(iter(tasks)))  # releases its channel-state writer
    builder.task_ended(next(iter(tasks)))  # once only: a second call finds nothing
