"""Task metrics: the busy / backpressured / idle split of a task's time, records and bytes, and
the JobMaster-side store that turns samples into Flink's ratios.

The split is checked twice: on :class:`TaskTimeAccounting` with a fake clock (exact numbers),
and on a real :class:`StreamTask` whose output is never drained (it must end up
backpressured) or whose input stays empty (it must be idle).
"""

from __future__ import annotations

import asyncio

import pytest
from tests.runtime.task.task_fakes import EndlessProducer, NullServices

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.control.messages import TaskMetrics
from undertow.runtime.master.metrics import TaskMetricsStore
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.stream_task import StreamTask, TaskStatistics, TaskTimeAccounting


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_time_is_split_at_waits_only() -> None:
    clock = FakeClock()
    account = TaskTimeAccounting(clock)
    clock.now += 1.0  # busy
    account.start_wait(backpressured=True)
    clock.now += 2.0
    assert account.times_ms() == pytest.approx((1000.0, 2000.0, 0.0))  # a wait in progress counts
    account.end_wait()
    clock.now += 0.5  # busy
    account.start_wait(backpressured=False)
    clock.now += 3.0
    account.end_wait()
    account.end_wait()  # a second end is a no-op
    busy, backpressured, idle = account.times_ms()
    assert (busy, backpressured, idle) == pytest.approx((1500.0, 2000.0, 3000.0))
    assert busy + backpressured + idle == pytest.approx((clock.now - 100.0) * 1000)


def test_idle_waits_in_which_the_task_could_read_are_also_summed_as_starved() -> None:
    clock = FakeClock()
    account = TaskTimeAccounting(clock)
    account.start_wait(backpressured=False, starved=True)
    clock.now += 2.0
    assert account.starved_ms() == pytest.approx(2000.0)  # a wait in progress counts
    account.end_wait()
    account.start_wait(backpressured=False)  # aligning, or the input held: idle, not starved
    clock.now += 1.0
    account.end_wait()
    account.start_wait(backpressured=True, starved=True)  # a full output is never starvation
    clock.now += 4.0
    account.end_wait()
    assert account.starved_ms() == pytest.approx(2000.0)
    assert account.times_ms() == pytest.approx((0.0, 4000.0, 3000.0))


def sample(busy: float, backpressured: float, idle: float, records: int = 0) -> TaskMetrics:
    stats = TaskStatistics(records, records, 8 * records, busy, backpressured, idle)
    return TaskMetrics(0, 1, int(busy + backpressured + idle), stats)


def test_store_reports_ratios_over_the_latest_window() -> None:
    store = TaskMetricsStore()
    assert store.view(0, 1) is None
    store.update(sample(500, 500, 0, records=10))  # first sample: ratios since the start
    first = store.view(0, 1)
    assert first is not None
    assert (first.busy_ratio, first.backpressured_ratio, first.idle_ratio) == (0.5, 0.5, 0.0)
    store.update(sample(600, 1400, 0, records=20))  # window: +100 busy, +900 backpressured
    view = store.view(0, 1)
    assert view is not None
    assert view.backpressured_ratio == pytest.approx(0.9)
    assert view.busy_ratio + view.backpressured_ratio + view.idle_ratio == pytest.approx(1.0)
    assert (view.records_in, view.records_out, view.bytes_out) == (20, 20, 160)
    assert (view.busy_ms, view.backpressured_ms, view.idle_ms) == (600, 1400, 0)
    # a final sample right after a periodic one keeps the window's start (no 5 ms ratios)
    store.update(sample(600, 1400, 5))
    view = store.view(0, 1)
    assert view is not None and view.backpressured_ratio == pytest.approx(900 / 1005)
    store.update(sample(1, 1, 1))  # an older run of the subtask: ignored
    assert store.view(0, 1) == view
    store.clear()
    assert store.view(0, 1) is None


def test_a_view_carries_the_overdraft_counters_of_the_latest_sample() -> None:
    store = TaskMetricsStore()
    stats = TaskStatistics(5, 5, 40, 10.0, 0.0, 0.0, max_overdraft_buffers=24,
                           overdraft_exceeded=2)  # fmt: skip
    store.update(TaskMetrics(0, 1, 10, stats))
    view = store.view(0, 1)
    assert view is not None
    assert (view.max_overdraft_buffers, view.overdraft_exceeded) == (24, 2)


def test_frequent_samples_still_give_a_window() -> None:
    store = TaskMetricsStore()
    for step in range(1, 8):  # every 100 ms: first all busy, then all idle
        busy = min(step, 3) * 100.0
        store.update(sample(busy, 0, step * 100.0 - busy))
    view = store.view(0, 1)
    assert view is not None and view.idle_ratio == 1.0  # the last 300 ms were idle


# -- a real task -----------------------------------------------------------------------------
def map_vertex() -> JobVertex:
    """The middle vertex of source -> map -> sink, with network edges on both sides."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    graph = env._job_graph("metrics")
    [vertex] = [v for v in graph.vertices if v.name == "plus"]
    return vertex


async def run_for(task: StreamTask, seconds: float) -> TaskStatistics:
    running = asyncio.ensure_future(task.run())
    await asyncio.sleep(seconds)
    stats = task.statistics()
    task.cancel()
    await asyncio.gather(running, return_exceptions=True)
    return stats


def build_task(vertex: JobVertex, feed: bool) -> tuple[StreamTask, EndlessProducer | None]:
    config = Configuration()
    loop = asyncio.get_running_loop()
    gate = InputGate("plus input", vertex.inputs[0].target_input, floating_buffers=8)
    channel = gate.add_channel(0, "plus input channel 0", initial_credit=2)
    producer = EndlessProducer(channel, batch=512) if feed else None
    if producer is not None:
        channel.connect(producer)
    edge = vertex.outputs[0]
    # no transport attached: nothing ever leaves the partition, so its buffers fill up
    partition = ResultPartition("plus out", [1], buffers_per_channel=2, floating_buffers=2,
                                max_buffers_per_channel=4)  # fmt: skip
    writer = RecordWriter(partition, edge.new_partitioner(), 4096)
    deployment = TaskDeployment(vertex=vertex, subtask_index=0, attempt=0, config=config,
                                gates=(gate,), writers={edge.id: writer})  # fmt: skip
    task = StreamTask(deployment=deployment, services=NullServices(), loop=loop)
    return task, producer


def test_a_task_whose_output_never_drains_is_backpressured() -> None:
    async def scenario() -> TaskStatistics:
        task, _ = build_task(map_vertex(), feed=True)
        return await run_for(task, 0.4)

    stats = asyncio.run(scenario())
    total = stats.busy_ms + stats.backpressured_ms + stats.idle_ms
    assert total == pytest.approx(400, abs=150)
    assert stats.backpressured_ms > 0.7 * total, stats
    assert stats.records_in > 0 and stats.records_out == stats.records_in
    assert stats.bytes_out > 0


def test_a_task_without_input_is_idle() -> None:
    async def scenario() -> TaskStatistics:
        task, _ = build_task(map_vertex(), feed=False)
        return await run_for(task, 0.3)

    stats = asyncio.run(scenario())
    total = stats.busy_ms + stats.backpressured_ms + stats.idle_ms
    assert stats.idle_ms > 0.8 * total, stats
    assert stats.backpressured_ms == 0
    assert (stats.records_in, stats.records_out, stats.bytes_out) == (0, 0, 0)


@pytest.mark.parametrize("blocked", [False, True], ids=["empty", "blocked"])
def test_a_task_without_input_starves_unless_a_barrier_blocks_its_input(
    monkeypatch: pytest.MonkeyPatch, blocked: bool
) -> None:
    # what buffer debloating's aim reacts to: a wait for input is starvation only while no
    # channel is blocked by an aligned barrier (a wait during alignment is the checkpoint's)
    monkeypatch.setattr(InputGate, "has_blocked_channel", lambda self: blocked)

    async def scenario() -> tuple[TaskStatistics, float]:
        task, _ = build_task(map_vertex(), feed=False)
        stats = await run_for(task, 0.3)
        return stats, task.mailbox.time_accounting.starved_ms()

    stats, starved = asyncio.run(scenario())
    if blocked:
        assert starved == 0.0
    else:
        assert starved == pytest.approx(stats.idle_ms, rel=0.1), (starved, stats)
