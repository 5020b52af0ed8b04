"""A StreamTask and its SubtaskCheckpointer built from one TaskDeployment record."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from tests.runtime.task.task_fakes import NullServices

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.barrier_handler import BarrierHandler, BarrierTracker
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.checkpoint_io import CheckpointIO
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.stream_task import StreamTask


class Responder:
    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None: ...

    def decline(self, checkpoint_id: int, reason: Any, detail: str) -> None: ...


def plus_one(parallelism: int) -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    [vertex] = [v for v in env._job_graph("deployment").vertices if v.name == "plus"]
    return vertex


def deployment(settings: dict[str, str]) -> TaskDeployment:
    vertex = plus_one(3)
    gate = InputGate("plus input", vertex.inputs[0].target_input, floating_buffers=8)
    gate.add_channel(0, "plus input 0", initial_credit=2)
    partition = ResultPartition("plus out", [1], buffers_per_channel=2, floating_buffers=2,
                                max_buffers_per_channel=10)  # fmt: skip
    writer = RecordWriter(partition, vertex.outputs[0].new_partitioner(), 1 << 16)
    return TaskDeployment(vertex=vertex, subtask_index=1, attempt=2,
                          config=Configuration(settings), gates=(gate,),
                          writers={vertex.outputs[0].id: writer})  # fmt: skip


def build(record: TaskDeployment, io: CheckpointIO | None) -> StreamTask:
    async def make() -> StreamTask:
        return StreamTask(deployment=record, services=NullServices(),
                          loop=asyncio.get_running_loop(), checkpoint_io=io)  # fmt: skip

    return asyncio.run(make())


@pytest.mark.parametrize(
    ("mode", "handler"), [("EXACTLY_ONCE", BarrierHandler), ("AT_LEAST_ONCE", BarrierTracker)]
)
def test_the_checkpointer_is_built_from_the_deployment(mode: str, handler: type) -> None:
    record = deployment({"execution.checkpointing.mode": mode})
    task = build(record, CheckpointIO(responder=Responder()))
    checkpointer = task.checkpointer
    assert checkpointer is not None
    assert task.name == checkpointer.task_name == "plus (2/3)"
    assert checkpointer.file_name == f"v{record.vertex.id}-s1.state"
    assert list(checkpointer.gates) == list(record.gates)
    assert list(checkpointer.writers) == record.record_writers
    assert isinstance(checkpointer.handler, handler)
    assert checkpointer.task is task and checkpointer.chain is task.chain
    assert checkpointer.current_watermark() == task.current_watermark()


def test_without_checkpoint_io_the_task_has_no_checkpointer() -> None:
    assert build(deployment({}), None).checkpointer is None


def test_a_deployment_is_frozen_and_keyword_only() -> None:
    record = deployment({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.attempt = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        TaskDeployment(record.vertex, 0, 1, Configuration())  # type: ignore[misc]
    with pytest.raises(TypeError):
        StreamTask(record, NullServices(), None)  # type: ignore[misc]
