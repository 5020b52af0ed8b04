"""The worker's metrics loop: periodic samples of the tasks that run, one final sample each."""

from __future__ import annotations

import asyncio

from undertow.core.types import AttemptNumber
from undertow.runtime.control.messages import TaskMetricsReport
from undertow.runtime.task.task_statistics import TaskStatistics
from undertow.runtime.worker.metrics_loop import MetricsLoop, sample
from undertow.testing.worker import RecordingLink, RecordingTask


def stats(records_in: int) -> TaskStatistics:
    return TaskStatistics(records_in, 0, 0, 1.0, 0.0, 0.0)


def test_a_sample_carries_the_tasks_counters_and_user_metrics() -> None:
    task = RecordingTask(statistics_value=stats(5), user_metrics_value={"Map.seen": 2.0})
    s = sample((3, 1), task, final=True)
    assert (s.vertex_id, s.subtask, s.statistics.records_in, s.final) == (3, 1, 5, True)
    assert s.user_metrics == {"Map.seen": 2.0}
    assert s.timestamp_ms > 0


def test_an_ended_task_gets_one_final_sample_and_no_periodic_one() -> None:
    link = RecordingLink()
    tasks = {(0, 0): RecordingTask(statistics_value=stats(1)),
             (0, 1): RecordingTask(statistics_value=stats(2))}  # fmt: skip
    loop = MetricsLoop(tasks, link.send, AttemptNumber(2), worker_index=4)

    async def reports(count: int) -> None:  # waits for that many messages (5 s at most)
        for _ in range(500):
            if len(link.sent) >= count:
                return
            await asyncio.sleep(0.01)

    async def scenario() -> None:
        running = asyncio.ensure_future(loop.run(0.01))
        await reports(1)
        loop.final_sample((0, 0))
        link.sent.append("ended")
        await reports(len(link.sent) + 1)
        running.cancel()

    asyncio.run(scenario())
    cut = link.sent.index("ended")
    before, final, after = link.sent[: cut - 1], link.sent[cut - 1], link.sent[cut + 1 :]
    assert before and after
    assert all(isinstance(r, TaskMetricsReport) for r in before + after + [final])
    assert all({(m.vertex_id, m.subtask) for m in r.metrics} == {(0, 0), (0, 1)} for r in before)
    assert [(m.vertex_id, m.subtask, m.final) for m in final.metrics] == [(0, 0, True)]
    assert all([(m.vertex_id, m.subtask) for m in r.metrics] == [(0, 1)] for r in after)
    assert {(r.attempt, r.worker_index) for r in link.sent if r != "ended"} == {(2, 4)}
