"""Fakes to test the worker's parts without a JobMaster, a network or running tasks.

* :class:`RecordingTask`: a task as the worker's control router
  (:class:`~undertow.runtime.worker.control_router.TaskControl`) and metrics loop
  (:class:`~undertow.runtime.worker.metrics_loop.MeteredTask`) see it; it records every call
  in order and answers a trigger as a real task would (``False`` once it finished).
* :class:`RecordingLink`: the worker as its tasks' messages see it
  (:class:`~undertow.runtime.worker.task_link.WorkerLink`): every message sent is kept.

Threading: one thread (a test's, or one event loop's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from undertow.core.types import AttemptNumber
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.task.collect_credit import CollectCredits
from undertow.runtime.task.task_statistics import TaskStatistics


@dataclass
class RecordingTask:
    """Records the control calls it gets, as ``(method name, argument)`` pairs."""

    #: Has a checkpointer (a task without one takes no trigger).
    checkpointing: bool = True
    #: The task finished: it takes no trigger any more.
    finished: bool = False
    statistics_value: TaskStatistics = field(
        default_factory=lambda: TaskStatistics(0, 0, 0, 0.0, 0.0, 0.0)
    )
    user_metrics_value: dict[str, float] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> bool:
        if not self.checkpointing or self.finished:
            return False
        self.calls.append(("trigger_checkpoint", barrier))
        return True

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.checkpointing:
            self.calls.append(("notify_checkpoint_complete", checkpoint_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        if self.checkpointing:
            self.calls.append(("notify_checkpoint_aborted", checkpoint_id))

    def add_splits(self, splits: list[Any]) -> None:
        self.calls.append(("add_splits", splits))

    def no_more_splits(self) -> None:
        self.calls.append(("no_more_splits", None))

    def stop_with_savepoint(self, drain: bool) -> None:
        self.calls.append(("stop_with_savepoint", drain))

    def cancel(self) -> None:
        self.calls.append(("cancel", None))

    def statistics(self) -> TaskStatistics:
        return self.statistics_value

    def user_metrics(self) -> dict[str, float]:
        return dict(self.user_metrics_value)


@dataclass
class RecordingLink:
    """A worker that keeps what its tasks send (``sent``), in order."""

    attempt: AttemptNumber = field(default_factory=lambda: AttemptNumber(1))
    tasks: dict[tuple[int, int], Any] = field(default_factory=dict)
    sent: list[Any] = field(default_factory=list)
    collect_credits: CollectCredits = field(default_factory=CollectCredits)

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def send_from_any_thread(self, message: Any) -> None:
        self.sent.append(message)  # one append: atomic under the GIL
