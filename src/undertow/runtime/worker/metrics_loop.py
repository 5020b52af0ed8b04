"""The worker's metrics loop: samples of its tasks' counters, sent to the JobMaster.

Every ``undertow.metrics.report-interval`` one ``TaskMetricsReport`` carries a sample of each
task that has not ended; when a task ends (finished, failed or cancelled) it gets one final
sample of its own and none after it. The JobMaster's ``TaskMetricsStore`` turns samples into
Flink's per-second ratios.

Threading: the worker's loop thread only. Lifecycle: one per worker; :meth:`MetricsLoop.run`
(at the job's interval) runs while the worker serves and is cancelled with it;
:meth:`MetricsLoop.final_sample` may be called before, during or after it. Cost: one
``statistics()`` call per task per interval.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from undertow.core.types import AttemptNumber
from undertow.runtime.control.messages import TaskMetrics, TaskMetricsReport
from undertow.runtime.task.task_statistics import TaskStatistics


class MeteredTask(Protocol):
    """What the metrics loop reads of a task (loop thread)."""

    def statistics(self) -> TaskStatistics: ...

    def user_metrics(self) -> dict[str, float]: ...


def sample(key: tuple[int, int], task: MeteredTask, final: bool = False) -> TaskMetrics:
    """One sample of ``task`` (``key``: its vertex id and subtask), stamped with the wall clock."""
    return TaskMetrics(key[0], key[1], time.time_ns() // 1_000_000, task.statistics(), final,
                       task.user_metrics())  # fmt: skip


class MetricsLoop:
    """Samples ``tasks`` (the worker's mapping, read at each sample) and sends them with
    ``send``."""

    def __init__(
        self,
        tasks: Mapping[tuple[int, int], MeteredTask],
        send: Callable[[Any], None],
        attempt: AttemptNumber,
        worker_index: int,
    ) -> None:
        self._tasks = tasks
        self._send = send
        self._attempt = attempt
        self._worker_index = worker_index
        #: Tasks whose final sample was sent: they are not sampled again.
        self.ended: set[tuple[int, int]] = set()

    async def run(self, interval_s: float) -> None:
        """Every ``interval_s``: one report with a sample per task that has not ended (none if all
        ended). Runs until cancelled."""
        while True:
            await asyncio.sleep(interval_s)
            samples = tuple(
                sample(key, task) for key, task in self._tasks.items() if key not in self.ended
            )
            if samples:
                self._send(TaskMetricsReport(self._attempt, self._worker_index, samples))

    def final_sample(self, key: tuple[int, int]) -> None:
        """The task ``key`` ended: send its final sample now; no periodic sample follows."""
        self.ended.add(key)
        last = sample(key, self._tasks[key], final=True)
        self._send(TaskMetricsReport(self._attempt, self._worker_index, (last,)))
