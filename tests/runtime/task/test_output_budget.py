"""The overdraft bound: chunks sized so that their expected output fits into the free buffers
plus ``max-overdraft-buffers-per-gate``.

Checked twice: on :class:`OutputBudget` with a real record writer whose partition is drained
by hand (exact buffer counts), and on a real :class:`StreamTask` running a fan-out flatMap
whose output is never drained (it must stop at pool + overdraft, or count the one record that
alone went past it).
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from tests.runtime.task.task_fakes import EndlessProducer, NullServices, settled

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.graph.partitioners import ForwardPartitioner
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.output_budget import OutputBudget, overdraft_warning
from undertow.runtime.task.stream_task import StreamTask
from undertow.runtime.task.task_statistics import TaskStatistics

SEGMENT = 1000


def partition(pool: int, channels: int = 1) -> ResultPartition:
    """A partition without a transport: buffers leave only through :func:`drain`."""
    return ResultPartition(
        "out", list(range(channels)), buffers_per_channel=1, floating_buffers=pool - channels,
        max_buffers_per_channel=1000,
    )  # fmt: skip


def drain(p: ResultPartition, count: int) -> None:
    """The consumer took ``count`` buffers (as the transport would report)."""
    p.on_data_sent(min(count, p.queued))


def emit_units(writer: RecordWriter, units: int, buffers_per_unit: int) -> None:
    """``units`` input records, each emitting one record that spans ``buffers_per_unit``
    segments; flushed, so every unit draws exactly ``buffers_per_unit`` buffers."""
    size = (buffers_per_unit - 1) * SEGMENT + SEGMENT // 2
    for _ in range(units):
        writer.emit([b"x" * (size - 40)], None)
        writer.flush_all()


def take(budget: OutputBudget, p: ResultPartition, wanted: int = 64) -> int:
    """The task's rule: as many units as fit, at least one (only while available)."""
    assert p.is_available()
    fit = budget.begin()
    return wanted if fit >= wanted else max(1, int(fit))


def test_first_unit_is_one_record_then_chunks_shrink_to_the_fan_out() -> None:
    p = partition(pool=12)
    writer = RecordWriter(p, ForwardPartitioner(), SEGMENT)
    budget = OutputBudget([writer], overdraft=5)
    assert take(budget, p) == 1  # cost unknown: one record
    emit_units(writer, 1, buffers_per_unit=3)
    budget.end(1)
    assert budget.cost(0) == 3
    drain(p, 3)
    assert take(budget, p) == (12 + 5) // 3  # 17 free-or-allowed buffers, 3 per record
    emit_units(writer, 5, buffers_per_unit=3)
    budget.end(5)
    assert p.in_use == 15 <= p.pool_size + 5 and not p.is_available()
    drain(p, 4)  # available again with one free buffer: room 1 + 5
    assert take(budget, p) == 2
    assert budget.exceeded == budget.mispredicted == 0


@pytest.mark.parametrize("overdraft", [0, 5])
def test_in_use_stays_within_pool_plus_overdraft(overdraft: int) -> None:
    """A consumer that takes two buffers per round; the producer's records draw three each."""
    p = partition(pool=6)
    writer = RecordWriter(p, ForwardPartitioner(), SEGMENT)
    budget = OutputBudget([writer], overdraft=overdraft)
    records = 0
    for _ in range(200):
        if p.is_available():
            k = take(budget, p)
            emit_units(writer, k, buffers_per_unit=3)
            budget.end(k)
            records += k
            assert p.in_use <= p.pool_size + max(overdraft, 3 - 1), (k, p.in_use)
        drain(p, 2)
    assert records > 100
    assert budget.mispredicted == 0
    if overdraft == 5:  # one free buffer plus five covers a record of three
        assert budget.exceeded == 0 and p.max_overdraft_seen <= 5
    else:  # no allowance: a record that needs three buffers when one is free exceeds it
        assert budget.exceeded > 0 and p.max_overdraft_seen == 2


def test_a_record_larger_than_the_allowance_is_counted_once_per_record() -> None:
    p = partition(pool=4)
    writer = RecordWriter(p, ForwardPartitioner(), SEGMENT)
    reported: list[tuple[int, int, int, int]] = []
    budget = OutputBudget([writer], overdraft=5, on_exceeded=lambda *a: reported.append(a))
    for _ in range(3):
        take(budget, p)
        emit_units(writer, 1, buffers_per_unit=12)  # alone more than pool + overdraft
        budget.end(1)
        drain(p, p.queued)
    assert budget.exceeded == 3
    assert reported == [(0, 1, 12, 4 + 5)], "reported the first time only"
    assert p.max_overdraft_seen == 12 - 4


def test_a_chunk_that_costs_more_than_the_ones_before_is_a_misprediction() -> None:
    p = partition(pool=20)
    writer = RecordWriter(p, ForwardPartitioner(), SEGMENT)
    budget = OutputBudget([writer], overdraft=0)
    take(budget, p)
    emit_units(writer, 1, buffers_per_unit=1)
    budget.end(1)
    drain(p, 1)
    assert take(budget, p) == 20
    emit_units(writer, 20, buffers_per_unit=2)  # the records suddenly cost twice as much
    budget.end(20)
    assert (budget.mispredicted, budget.exceeded) == (1, 1)
    assert budget.cost(0) == 2, "the next chunk is sized from the new cost"


def test_cost_falls_by_at_most_a_quarter_per_chunk() -> None:
    p = partition(pool=1000)
    writer = RecordWriter(p, ForwardPartitioner(), SEGMENT)
    budget = OutputBudget([writer], overdraft=5)
    budget.begin()
    emit_units(writer, 1, buffers_per_unit=4)
    budget.end(1)
    budget.begin()
    budget.end(10)  # ten records that drew nothing (a filter, say)
    assert budget.cost(0) == pytest.approx(3.0)
    budget.begin()
    budget.end(10, measure=False)  # not learned from
    assert budget.cost(0) == pytest.approx(3.0)


def test_the_tightest_output_limits_the_chunk() -> None:
    loose, tight = partition(pool=100), partition(pool=6)
    writers = [RecordWriter(loose, ForwardPartitioner(), SEGMENT),
               RecordWriter(tight, ForwardPartitioner(), SEGMENT)]  # fmt: skip
    budget = OutputBudget(writers, overdraft=0)
    budget.begin()
    for w in writers:
        emit_units(w, 1, buffers_per_unit=2)
    budget.end(1)
    assert budget.begin() == pytest.approx((6 - 2) / 2)


# -- a real task --------------------------------------------------------------------------------
def fan_out_vertex(records_per_input: int) -> JobVertex:
    """The middle vertex of source -> flatMap -> sink: every input record becomes
    ``records_per_input`` records of about 100 bytes."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_collection([1]).rebalance()
    stream.flat_map(lambda x: [f"{x}:{i}:".ljust(100, "y") for i in range(records_per_input)]).name(
        "fan-out"
    ).rebalance().print()
    graph = env._job_graph("overdraft")
    [vertex] = [v for v in graph.vertices if v.name == "fan-out"]
    return vertex


def fan_out_task(records_per_input: int, overdraft: int) -> tuple[StreamTask, ResultPartition]:
    """The fan-out task, fed without end, with an output nobody drains (pool 16)."""
    vertex = fan_out_vertex(records_per_input)
    config = Configuration({"taskmanager.network.memory.max-overdraft-buffers-per-gate":
                            str(overdraft)})  # fmt: skip
    gate = InputGate("fan-out input", vertex.inputs[0].target_input, floating_buffers=8)
    channel = gate.add_channel(0, "fan-out input channel 0", initial_credit=2)
    channel.connect(EndlessProducer(channel, batch=256))
    edge = vertex.outputs[0]
    out = ResultPartition("fan-out out", [1], buffers_per_channel=2, floating_buffers=14,
                          max_buffers_per_channel=100)  # fmt: skip
    writer = RecordWriter(out, edge.new_partitioner(), 1024)
    deployment = TaskDeployment(vertex=vertex, subtask_index=0, attempt=0, config=config,
                                gates=(gate,), writers={edge.id: writer})  # fmt: skip
    task = StreamTask(deployment=deployment, services=NullServices(),
                      loop=asyncio.get_running_loop())  # fmt: skip
    return task, out


async def run_until_stuck(
    records_per_input: int, overdraft: int
) -> tuple[TaskStatistics, ResultPartition]:
    """Run the fan-out task until it stops taking input (its output is full)."""
    task, out = fan_out_task(records_per_input, overdraft)
    running = asyncio.ensure_future(task.run())
    stats = await settled(task, backpressured=True)
    task.cancel()
    await asyncio.gather(running, return_exceptions=True)
    return stats, out


@pytest.mark.parametrize("overdraft", [0, 5])
def test_a_fan_out_task_stops_at_pool_plus_overdraft(overdraft: int) -> None:
    # a record: 10 x ~110 bytes, about one 1 KiB buffer and a bit
    stats, out = asyncio.run(run_until_stuck(records_per_input=10, overdraft=overdraft))
    assert not out.is_available()
    assert stats.records_in > 3, "chunks of several records once the cost is known"
    if overdraft == 5:
        assert stats.overdraft_exceeded == 0
        assert 0 <= stats.max_overdraft_buffers <= 5, stats
    else:  # a record needs two buffers: past a pool with one free buffer, it exceeds
        assert stats.max_overdraft_buffers <= 2, stats
    assert out.in_use - out.pool_size <= max(overdraft, 2)


def test_a_record_larger_than_the_allowance_is_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="undertow.runtime.task.stream_task")
    # a record: 400 x ~110 bytes, over 40 buffers of 1 KiB: more than 16 + 5
    stats, out = asyncio.run(run_until_stuck(records_per_input=400, overdraft=5))
    assert stats.records_in == 1, "a single record's output is never split"
    assert stats.overdraft_exceeded == 1
    assert stats.max_overdraft_buffers == out.in_use - out.pool_size > 5
    [warning] = [r for r in caplog.records if "overdraft" in r.getMessage()]
    message = warning.getMessage()
    assert "operator 'fan-out' (subtask 1/1)" in message
    assert f"drew {out.in_use} buffers" in message, message
    assert "plus the 5 overdraft buffers allowed" in message, message
    beyond = stats.max_overdraft_buffers  # what the option must allow for this record
    assert (
        f"raise taskmanager.network.memory.max-overdraft-buffers-per-gate to {beyond} or more"
    ) in message, message
    assert "numOverdraftExceeded" in message, "names where the further cases are counted"


def test_the_warning_of_a_mispredicted_chunk_says_why_and_how_far_to_raise_the_limit() -> None:
    message = overdraft_warning("t (2/3)", "explode", "2/3", "t out", units=8, drawn=30,
                                room=12, overdraft=5)  # fmt: skip
    assert message.startswith("t (2/3): a chunk of 8 records of operator 'explode' (subtask 2/3)")
    assert "more than its 7 free buffers plus the 5 overdraft buffers" in message
    assert "cost more than the ones before, so 23 buffers went beyond the pool" in message
    assert "max-overdraft-buffers-per-gate to 23 or more" in message


def test_deferred_work_runs_once_the_output_is_available_again() -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        task, out = fan_out_task(records_per_input=10, overdraft=0)
        running = asyncio.ensure_future(task.run())
        await asyncio.sleep(0.1)
        assert not out.is_available()
        ran: list[int] = []
        task.mailbox.when_output_available(lambda: ran.append(task.records_in))
        await asyncio.sleep(0.05)
        before = list(ran)
        out.on_data_sent(out.queued)  # the consumer took everything
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return before, ran

    before, ran = asyncio.run(scenario())
    assert before == [], "not while the output is full"
    assert len(ran) == 1
