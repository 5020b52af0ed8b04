"""The task lifecycle (runtime/task/lifecycle.py) as pure transitions, and a StreamTask
executing it: a stop without drain, and a subtask deployed as finished."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest
from tests.runtime.task.task_fakes import NullServices

from undertow.common import Configuration
from undertow.core.errors import StateError
from undertow.core.types import MAX_WATERMARK
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.events import EndOfData, EndOfPartitionEvent, WatermarkEvent
from undertow.runtime.task.lifecycle import (
    Finished,
    FinishedOnRestore,
    Finishing,
    Running,
    initial_lifecycle,
)
from undertow.runtime.task.stream_task import StreamTask

# -- pure transitions ----------------------------------------------------------------------------


def test_lifecycle_waits_for_a_checkpoint_after_end_of_data_and_the_inputs() -> None:
    finishing = Running().end_of_data(last_checkpoint_id=4, wait_for_final_checkpoint=True)
    assert not finishing.may_close
    finishing = finishing.checkpoint_complete(4)  # taken before EndOfData: not final
    assert not finishing.final_checkpoint_done
    finishing = finishing.checkpoint_complete(6).checkpoint_complete(5)
    assert finishing.final_checkpoint_done and not finishing.may_close
    finishing = finishing.all_inputs_ended()
    assert finishing.may_close
    finishing.close()


def test_lifecycle_without_a_final_checkpoint_waits_only_for_the_inputs() -> None:
    finishing = Running().end_of_data(last_checkpoint_id=-1, wait_for_final_checkpoint=False)
    assert not finishing.may_close
    with pytest.raises(RuntimeError):
        finishing.close()
    assert isinstance(finishing.all_inputs_ended(), Finishing)
    assert finishing.all_inputs_ended().may_close


def test_lifecycle_waits_for_a_synchronous_savepoint_it_took_even_without_checkpointing() -> None:
    finishing = Running().end_of_data(last_checkpoint_id=-1, wait_for_final_checkpoint=False)
    finishing = finishing.took_synchronous_savepoint(7).all_inputs_ended()
    assert finishing.final_checkpoint_done and not finishing.may_close
    assert not finishing.checkpoint_complete(6).may_close  # an older one does not count
    assert finishing.checkpoint_complete(7).may_close


def test_lifecycle_remembers_a_synchronous_savepoint_taken_while_running() -> None:
    running = Running().took_synchronous_savepoint(4)
    finishing = running.end_of_data(3, wait_for_final_checkpoint=False)
    assert not finishing.all_inputs_ended().may_close
    assert finishing.all_inputs_ended().checkpoint_complete(4).may_close


def test_a_savepoint_completed_while_running_is_no_longer_awaited() -> None:
    running = Running().took_synchronous_savepoint(4)
    assert running.checkpoint_complete(3).awaited_savepoint == 4  # an older one does not count
    finishing = running.checkpoint_complete(4).end_of_data(4, wait_for_final_checkpoint=False)
    assert finishing.all_inputs_ended().may_close


def test_an_input_that_ended_without_drain_makes_the_task_end_without_drain() -> None:
    assert Running().drain
    running = Running().took_synchronous_savepoint(2).input_ended_without_drain()
    assert not running.drain and running.awaited_savepoint == 2
    assert not running.end_of_data(-1, False).drain
    assert not running.input_ended_without_drain().drain  # never goes back
    # a stop at a source says how the data ends
    assert not Running().end_of_data(-1, False, drain=False).drain
    finishing = running.end_of_data(-1, False).checkpoint_complete(2).all_inputs_ended()
    assert not finishing.drain and finishing.may_close


def test_a_subtask_deployed_finished_starts_finished_on_restore() -> None:
    assert initial_lifecycle(False) == Running()
    assert initial_lifecycle(True) == FinishedOnRestore()
    assert FinishedOnRestore().all_inputs_ended() == Finished()


# -- a StreamTask executing it -------------------------------------------------------------------


class Upstream:
    """The producer side of the task's one input channel: sends what it is given."""

    def __init__(self, channel: InputChannel) -> None:
        self.channel, self.sequence = channel, 0

    def add_credit(self, credit: int) -> None: ...

    def resume(self) -> None: ...

    def send(self, payload: object) -> None:
        is_event = not isinstance(payload, Buffer)
        self.channel.on_send(Send(payload, is_event, self.sequence, 0))
        self.sequence += 1


def plus_one() -> JobVertex:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    [vertex] = [v for v in env._job_graph("lifecycle").vertices if v.name == "plus"]
    return vertex


async def run_plus(inputs: list[object], finished_on_restore: bool = False) -> list[Any]:
    """Run the ``plus`` subtask on ``inputs`` to its end; what it sent: records and events."""
    vertex = plus_one()
    gate = InputGate("plus input", vertex.inputs[0].target_input, floating_buffers=8)
    channel = gate.add_channel(0, "plus input 0", initial_credit=2)
    upstream = Upstream(channel)
    channel.connect(upstream)
    partition = ResultPartition("plus out", [1], buffers_per_channel=2, floating_buffers=2,
                                max_buffers_per_channel=100)  # fmt: skip
    writer = RecordWriter(partition, vertex.outputs[0].new_partitioner(), 1 << 16)
    deployment = TaskDeployment(
        vertex=vertex, subtask_index=0, attempt=1, config=Configuration(), gates=(gate,),
        writers={vertex.outputs[0].id: writer}, finished_on_restore=finished_on_restore,
    )  # fmt: skip
    task = StreamTask(
        deployment=deployment, services=NullServices(), loop=asyncio.get_running_loop()
    )
    for payload in inputs:
        upstream.send(payload)
    await asyncio.wait_for(task.run(), 10)
    assert isinstance(task.lifecycle, Finished)
    sent: list[Any] = []
    for entry in partition.subpartitions[0].sender._queue:
        if entry.is_event:
            sent.append(entry.payload)
        else:
            sent += pickle.loads(entry.payload.data)[0]
    return sent


def test_end_of_data_with_drain_moves_event_time_to_the_end() -> None:
    sent = asyncio.run(run_plus([Buffer(serialize_batch([1], None)), EndOfData(),
                                 EndOfPartitionEvent()]))  # fmt: skip
    assert sent == [2, WatermarkEvent(MAX_WATERMARK), EndOfData(True), EndOfPartitionEvent()]


def test_end_of_data_without_drain_keeps_event_time_and_ends_without_drain() -> None:
    """A stop without drain upstream: no watermark goes to the end (timers must not fire
    after the savepoint's state), and the task's own EndOfData says ``drain=False``."""
    sent = asyncio.run(run_plus([Buffer(serialize_batch([1], None)), EndOfData(drain=False),
                                 EndOfPartitionEvent()]))  # fmt: skip
    assert sent == [2, EndOfData(False), EndOfPartitionEvent()]


def test_a_subtask_deployed_finished_runs_no_operator_and_ends_its_outputs_at_once() -> None:
    sent = asyncio.run(run_plus([EndOfData(), EndOfPartitionEvent()], finished_on_restore=True))
    assert sent == [EndOfData(True), EndOfPartitionEvent()]


def test_records_reaching_a_subtask_deployed_finished_fail_it() -> None:
    inputs: list[object] = [Buffer(serialize_batch([1], None)), EndOfPartitionEvent()]
    with pytest.raises(StateError, match=r"'plus' was restored as finished.*plus input 0"):
        asyncio.run(run_plus(inputs, finished_on_restore=True))
