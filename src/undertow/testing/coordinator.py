"""Fakes to test the checkpoint coordinator's shell without workers, files or waiting.

* :class:`ManualClock`: a :class:`~undertow.runtime.checkpoint.clock.CoordinatorClock` whose
  time moves only in :meth:`ManualClock.advance`, which runs the timers that fall due (the
  periodic trigger, the trigger decider's wake-up, checkpoint timeouts) in time order.
* :class:`FakeTaskGateway`: records what the coordinator asks of the tasks (barriers to
  sources, stopped sources, completion and abort notifications, job failures).
* :func:`in_memory_coordinator`: a :class:`CheckpointCoordinator` for a job graph on a fresh
  ``memory://`` checkpoint storage with a known metadata key, wired to those fakes, that
  records its events and console lines (:class:`CoordinatorUnderTest`).

The coordinator still runs storage I/O on the running loop's executor: call it inside a
running asyncio loop and ``await coordinator.finish_completing()`` to let completions land.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from undertow.core.config import Configuration
from undertow.core.errors import UndertowError
from undertow.core.types import CheckpointId, SubtaskIndex, VertexId
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.checkpoint.events import CheckpointEvent
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.keys import CheckpointKey

__all__ = ["CoordinatorUnderTest", "FakeTaskGateway", "ManualClock", "in_memory_coordinator"]


class _ManualTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """Epoch-ms time that moves only when told; timers run in :meth:`advance`."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._seq = itertools.count()
        self._due: list[tuple[int, int, _ManualTimer, Callable[..., Any], tuple[Any, ...]]] = []

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_s: float, callback: Callable[..., Any], *args: Any) -> _ManualTimer:
        timer = _ManualTimer()
        due = self._now + max(0, round(delay_s * 1000))
        heapq.heappush(self._due, (due, next(self._seq), timer, callback, args))
        return timer

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``, running each timer due by then at its due time (timers
        set by those callbacks run too if they fall due within the step)."""
        end = self._now + ms
        while self._due and self._due[0][0] <= end:
            due, _, timer, callback, args = heapq.heappop(self._due)
            self._now = max(self._now, due)
            if not timer.cancelled:
                callback(*args)
        self._now = end

    @property
    def pending_timers(self) -> int:
        return sum(1 for entry in self._due if not entry[2].cancelled)


@dataclass
class FakeTaskGateway:
    """A :class:`~undertow.runtime.checkpoint.task_gateway.TaskGateway` that records calls."""

    #: (vertex id, subtask, barrier) per ``trigger_source``
    triggered: list[tuple[int, int, CheckpointBarrier]] = field(default_factory=list)
    #: (vertex id, subtask, drain) per ``stop_source``
    stopped: list[tuple[int, int, bool]] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    aborted: list[int] = field(default_factory=list)
    failures: list[UndertowError] = field(default_factory=list)
    #: source vertex id -> enumerator (snapshotted at each trigger)
    source_enumerators: dict[int, Any] = field(default_factory=dict)

    def trigger_source(self, vertex_id: int, subtask: int, barrier: CheckpointBarrier) -> None:
        self.triggered.append((vertex_id, subtask, barrier))

    def stop_source(self, vertex_id: int, subtask: int, drain: bool) -> None:
        self.stopped.append((vertex_id, subtask, drain))

    def notify_complete(self, checkpoint_id: int) -> None:
        self.completed.append(checkpoint_id)

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.aborted.append(checkpoint_id)

    def fail_job(self, error: UndertowError) -> None:
        self.failures.append(error)

    def enumerators(self) -> dict[int, Any]:
        return dict(self.source_enumerators)

    def barriers_of(self, checkpoint_id: int) -> list[tuple[int, int]]:
        """The (vertex id, subtask) pairs that got ``checkpoint_id``'s barrier."""
        return [(v, s) for v, s, b in self.triggered if b.checkpoint_id == checkpoint_id]


@dataclass
class CoordinatorUnderTest:
    coordinator: CheckpointCoordinator
    clock: ManualClock
    gateway: FakeTaskGateway
    storage: CheckpointStorage
    events: list[CheckpointEvent]
    console: list[str]

    def acknowledge_all(self, checkpoint_id: int, metrics: dict[str, Any] | None = None) -> None:
        """Every subtask that the checkpoint still waits for acknowledges it, without state."""
        pending = self.coordinator.pending[checkpoint_id]
        for vertex_id, subtask in sorted(pending.not_yet_acknowledged):
            self.coordinator.receive_ack(
                VertexId(vertex_id),
                SubtaskIndex(subtask),
                CheckpointId(checkpoint_id),
                None,
                metrics or {},
            )


def in_memory_coordinator(
    graph: JobGraph, config: Configuration | dict[str, Any] | None = None,
    clock: ManualClock | None = None,
) -> CoordinatorUnderTest:  # fmt: skip
    """A coordinator for ``graph`` on fakes (see the module docstring); ``config`` are the
    job's options (e.g. ``execution.checkpointing.interval``)."""
    settings = config if isinstance(config, Configuration) else Configuration(config or {})
    clock = clock or ManualClock()
    gateway = FakeTaskGateway()
    storage = CheckpointStorage.in_memory("job-under-test")
    events: list[CheckpointEvent] = []
    console: list[str] = []
    coordinator = CheckpointCoordinator(
        "job-under-test", graph, settings, storage, CheckpointKey.of(b"k" * 32), gateway,
        console.append, events.append, clock,
    )  # fmt: skip
    return CoordinatorUnderTest(coordinator, clock, gateway, storage, events, console)
