"""A subtask's statistics: counters and the busy / backpressured / idle split of its time.

:class:`TaskStatistics` is the frozen record :meth:`StreamTask.statistics
<undertow.runtime.task.stream_task.StreamTask.statistics>` returns (Flink's
``busyTimeMsPerSecond``, ``backPressuredTimeMsPerSecond``, ``idleTimeMsPerSecond``,
``numRecordsIn``/``Out``, ``numBytesOut``, and the overdraft counters);
:class:`TaskTimeAccounting` splits the time at the only place a task sleeps.

Threading: the task's loop thread. Cost: one clock read per wait, nothing per record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from undertow.runtime.network.gate_debloater import DebloatStatistics


@dataclass(frozen=True, slots=True)
class TaskStatistics:
    """A subtask's counters since its ``run`` started (:meth:`StreamTask.statistics`).

    ``busy_ms + backpressured_ms + idle_ms`` is the time since the start. ``records_in`` counts
    records taken from network inputs (0 for sources), ``records_out`` and ``bytes_out`` what
    the task's record writers emitted (0 for sinks); bytes are serialized batch bytes.
    ``max_overdraft_buffers`` is the most buffers beyond its pool any output partition held
    at once; ``overdraft_exceeded`` counts units of work that drew more than the free buffers
    plus ``max-overdraft-buffers-per-gate``: single records whose
    output alone is larger, and chunks whose records cost more than predicted
    (:mod:`undertow.runtime.task.output_budget`).
    """

    records_in: int
    records_out: int
    bytes_out: int
    busy_ms: float
    backpressured_ms: float
    idle_ms: float
    max_overdraft_buffers: int = 0
    overdraft_exceeded: int = 0
    #: The last watermark the task passed on (Flink's ``currentInputWatermark``); Long.MIN
    #: before any.
    input_watermark: int = -(2**63)
    #: Buffer debloating of the inputs (``None``: off, or no network input).
    debloat: DebloatStatistics | None = None
    #: Data buffers taken from network inputs (Flink's ``numBuffersInLocal`` plus
    #: ``numBuffersInRemote``) and sent by the record writers (Flink's ``numBuffersOut``):
    #: records per buffer on each side is what debloating's announcements changed.
    buffers_in: int = 0
    buffers_out: int = 0
    #: NewBufferSize announcements the record writers applied (debloating's feedback arriving).
    buffer_sizes_received: int = 0


class TaskTimeAccounting:
    """Splits a task's time since its start into busy, backpressured and idle.

    The task calls :meth:`start_wait` right before it sleeps and :meth:`end_wait` when it wakes;
    everything outside waits is busy. :meth:`times_ms` includes a wait in progress, so a task
    blocked for minutes reports it while blocked. Idle waits in which the task could have read
    (``starved``: no channel blocked by a barrier, input not held) are also summed apart
    (:meth:`starved_ms`, what buffer debloating's aim reacts to). ``clock`` returns seconds
    (monotonic). Threading: the task's loop. Cost: one clock read per call.
    """

    __slots__ = ("_backpressured", "_clock", "_idle", "_started", "_starved",
                 "_wait_backpressured", "_wait_started", "_wait_starved")  # fmt: skip

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._started = clock()
        self._backpressured = 0.0
        self._idle = 0.0
        self._starved = 0.0
        self._wait_started: float | None = None
        self._wait_backpressured = False
        self._wait_starved = False

    def start_wait(self, backpressured: bool, starved: bool = False) -> None:
        """A wait begins: ``backpressured`` (an output is full) or idle; an idle wait is
        ``starved`` if the task could have read."""
        self._wait_started = self._clock()
        self._wait_backpressured = backpressured
        self._wait_starved = starved and not backpressured

    def end_wait(self) -> None:
        started = self._wait_started
        if started is None:
            return
        self._wait_started = None
        waited = self._clock() - started
        if self._wait_backpressured:
            self._backpressured += waited
        else:
            self._idle += waited
            if self._wait_starved:
                self._starved += waited

    def starved_ms(self) -> float:
        """Milliseconds of starved waits since the start (a wait in progress included)."""
        starved = self._starved
        if self._wait_started is not None and self._wait_starved:
            starved += self._clock() - self._wait_started
        return starved * 1000.0

    def times_ms(self) -> tuple[float, float, float]:
        """``(busy, backpressured, idle)`` in milliseconds since the start."""
        now = self._clock()
        backpressured, idle = self._backpressured, self._idle
        if self._wait_started is not None:
            if self._wait_backpressured:
                backpressured += now - self._wait_started
            else:
                idle += now - self._wait_started
        busy = max(0.0, now - self._started - backpressured - idle)
        return busy * 1000.0, backpressured * 1000.0, idle * 1000.0
