"""What the JobMaster observes about its job, for monitoring: task metrics and the immutable
:class:`JobView` the REST API renders.

* :class:`~undertow.runtime.control.messages.TaskMetrics` is one sample of a subtask's
  counters (records, bytes, busy / backpressured / idle time), taken by its worker every
  ``undertow.metrics.report-interval`` and once more when the task ends.
  :class:`TaskMetricsStore` keeps the few latest samples per (vertex, subtask) and turns them
  into Flink's per-second ratios (``busyTimeMsPerSecond / 1000`` and so on).
* :class:`JobView` (with :class:`VertexView`, the checkpoint statistics of
  :mod:`.checkpoint_stats` and the failures of :mod:`.exception_history`) is an immutable
  picture of the job built on request; the web layer maps it to Flink's JSON.

Pure: the JobMaster feeds facts and clock values in. Threading: the JobMaster's loop thread
calls the store; nothing locks. Views are frozen (mappings are read-only copies), so they may
be handed to any thread. Cost: O(1) per sample.
"""

from __future__ import annotations

import enum
import hashlib
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.control.messages import TaskMetrics
from undertow.runtime.master.checkpoint_stats import (
    SUMMARY_FIELDS,
    CheckpointStatsEntry,
    CheckpointStatsSnapshot,
    CheckpointStatsTracker,
    CheckpointStatus,
    RestoredCheckpoint,
    SubtaskCheckpointStats,
    SummaryStats,
    summarize,
)
from undertow.runtime.master.exception_history import FailureRecord
from undertow.runtime.task.task_statistics import TaskStatistics

__all__ = [  # the checkpoint statistics moved to .checkpoint_stats; re-exported for callers
    "SUMMARY_FIELDS", "CheckpointStatsEntry", "CheckpointStatsSnapshot", "CheckpointStatsTracker",
    "CheckpointStatus", "RestoredCheckpoint", "SubtaskCheckpointStats", "SummaryStats",
    "summarize",
]  # fmt: skip

_EMPTY: Mapping[Any, Any] = MappingProxyType({})

#: A new sample replaces the start of the rate window only when the window is at least this
#: long, so a final sample right after a periodic one does not yield a noisy 5 ms ratio.
MIN_RATE_WINDOW_MS = 250.0


# -- task metrics ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SubtaskMetricsView:
    """A subtask's accumulated counters and its time ratios over the latest rate window.

    The three ratios sum to 1 (or are all 0 before any time passed): the task's time is split
    into exactly these three parts (see ``TaskTimeAccounting``).
    """

    timestamp_ms: int
    records_in: int
    records_out: int
    bytes_out: int
    busy_ms: int
    backpressured_ms: int
    idle_ms: int
    busy_ratio: float
    backpressured_ratio: float
    idle_ratio: float
    #: The latest sample's user metrics (``"<operator>.<identifier>"`` -> value).
    user_metrics: Mapping[str, float] = field(default_factory=lambda: _EMPTY)
    #: Records (in, out) and bytes (out) per second over the same window as the ratios.
    records_in_per_second: float = 0.0
    records_out_per_second: float = 0.0
    bytes_out_per_second: float = 0.0
    #: Flink's ``currentInputWatermark`` (Long.MIN before any watermark).
    input_watermark: int = -(2**63)
    #: Buffer debloating (Flink's ``debloatedBufferSize``, ``estimatedTimeToConsumeBuffersMs``;
    #: ``None`` while it is off or the subtask has no network input).
    debloated_buffer_size: int | None = None
    estimated_time_to_consume_buffers_ms: int | None = None
    #: Data buffers taken from network inputs and sent by the record writers (see
    #: ``TaskStatistics``).
    buffers_in: int = 0
    buffers_out: int = 0
    #: The overdraft bound's counters (``TaskStatistics``): the most buffers beyond its pool
    #: an output held at once, and units of work that went past pool plus overdraft.
    max_overdraft_buffers: int = 0
    overdraft_exceeded: int = 0


class TaskMetricsStore:
    """Recent samples per (vertex id, subtask) of the current attempt (see module docstring).

    A view's ratios cover the window from the newest sample at least ``MIN_RATE_WINDOW_MS``
    older than the latest one (so a final sample right after a periodic one does not make a
    ratio out of 5 ms); before there is one, they cover the time since the task started.
    """

    def __init__(self) -> None:
        self._samples: dict[tuple[int, int], deque[TaskStatistics]] = {}
        self._timestamps: dict[tuple[int, int], int] = {}
        self._user: dict[tuple[int, int], Mapping[str, float]] = {}

    def clear(self) -> None:
        """A new attempt starts: its tasks count from zero."""
        self._samples.clear()
        self._timestamps.clear()
        self._user.clear()

    def update(self, metrics: TaskMetrics) -> None:
        key = (metrics.vertex_id, metrics.subtask)
        stats = metrics.statistics
        samples = self._samples.setdefault(key, deque())
        if samples and _elapsed(stats) < _elapsed(samples[-1]):
            return  # a sample of an earlier run of this subtask
        samples.append(stats)
        self._timestamps[key] = metrics.timestamp_ms
        self._user[key] = MappingProxyType(dict(metrics.user_metrics))
        # keep the newest sample that can start a window, and everything after it
        while len(samples) > 2 and _elapsed(stats) - _elapsed(samples[1]) >= MIN_RATE_WINDOW_MS:
            samples.popleft()

    def view(self, vertex_id: int, subtask: int) -> SubtaskMetricsView | None:
        key = (vertex_id, subtask)
        samples = self._samples.get(key)
        if not samples:
            return None
        latest = samples[-1]
        busy, backpressured, idle = latest.busy_ms, latest.backpressured_ms, latest.idle_ms
        start = samples[0]
        counts_from = (0, 0, 0)
        if len(samples) > 1 and _elapsed(latest) - _elapsed(start) >= MIN_RATE_WINDOW_MS:
            busy -= start.busy_ms
            backpressured -= start.backpressured_ms
            idle -= start.idle_ms
            counts_from = (start.records_in, start.records_out, start.bytes_out)
        total = busy + backpressured + idle
        per_ms = 1000.0 / total if total > 0 else 0.0
        ratios = (0.0, 0.0, 0.0)
        if total > 0:
            ratios = (busy / total, backpressured / total, idle / total)
        return SubtaskMetricsView(
            timestamp_ms=self._timestamps[key],
            records_in=latest.records_in,
            records_out=latest.records_out,
            bytes_out=latest.bytes_out,
            busy_ms=round(latest.busy_ms),
            backpressured_ms=round(latest.backpressured_ms),
            idle_ms=round(latest.idle_ms),
            busy_ratio=max(0.0, ratios[0]),
            backpressured_ratio=max(0.0, ratios[1]),
            idle_ratio=max(0.0, ratios[2]),
            user_metrics=self._user.get(key, _EMPTY),
            records_in_per_second=(latest.records_in - counts_from[0]) * per_ms,
            records_out_per_second=(latest.records_out - counts_from[1]) * per_ms,
            bytes_out_per_second=(latest.bytes_out - counts_from[2]) * per_ms,
            input_watermark=latest.input_watermark,
            buffers_in=latest.buffers_in,
            buffers_out=latest.buffers_out,
            max_overdraft_buffers=latest.max_overdraft_buffers,
            overdraft_exceeded=latest.overdraft_exceeded,
            debloated_buffer_size=latest.debloat.debloated_buffer_size if latest.debloat else None,
            estimated_time_to_consume_buffers_ms=round(
                latest.debloat.estimated_time_to_consume_buffers_ms
            ) if latest.debloat else None,
        )  # fmt: skip


def _elapsed(stats: TaskStatistics) -> float:
    return stats.busy_ms + stats.backpressured_ms + stats.idle_ms


# -- the job as a whole ----------------------------------------------------------------------
class ExecutionState(enum.Enum):
    """Flink's ``ExecutionState`` of a subtask (in Flink's order)."""

    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"
    RECONCILING = "RECONCILING"
    INITIALIZING = "INITIALIZING"


def aggregate_state(states: Iterable[ExecutionState]) -> ExecutionState:
    """A vertex's state from its subtasks' (Flink's ``getAggregateJobVertexState``)."""
    counts = {state: 0 for state in ExecutionState}
    n = 0
    for state in states:
        counts[state] += 1
        n += 1
    if n and counts[ExecutionState.FINISHED] == n:
        return ExecutionState.FINISHED
    for state in (ExecutionState.CANCELING, ExecutionState.CANCELED, ExecutionState.FAILED,
                  ExecutionState.RUNNING):  # fmt: skip
        if counts[state]:
            return state
    if counts[ExecutionState.FINISHED]:
        return ExecutionState.RUNNING
    for state in (ExecutionState.INITIALIZING, ExecutionState.DEPLOYING,
                  ExecutionState.SCHEDULED):  # fmt: skip
        if counts[state]:
            return state
    return ExecutionState.CREATED


def vertex_rest_id(vertex: JobVertex) -> str:
    """A stable 32-hex-digit id for a job vertex (Flink's ``JobVertexID`` format), derived from
    the uids of its operators, so the same job graph gets the same ids in every run."""
    text = "\0".join(op.uid for op in vertex.operators)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class WorkerView:
    """A registered worker of the current attempt whose control connection is open: what
    ``GET /taskmanagers`` serves (Flink's ``TaskManagerInfo``, with the worker's pid)."""

    index: int
    #: ``worker 1 (host:port)``: the ``taskManagerId`` of the exceptions of its tasks
    id: str
    host: str
    data_port: int
    #: The process hosting the worker (on ``host``).
    pid: int
    #: When it last sent anything (epoch ms).
    last_heartbeat: int
    #: Subtask indices placed on it (a slot holds subtask ``s`` of every vertex) and how many
    #: of them have every subtask finished.
    slots: int
    free_slots: int


@dataclass(frozen=True, slots=True)
class VertexInput:
    source_id: str
    #: The partitioner, in Flink's words (FORWARD, HASH, REBALANCE, ...).
    ship_strategy: str


@dataclass(frozen=True, slots=True)
class VertexView:
    vertex_id: int
    #: :func:`vertex_rest_id`
    rest_id: str
    name: str
    parallelism: int
    max_parallelism: int
    subtask_states: tuple[ExecutionState, ...]
    #: Epoch ms; -1 when unknown (not deployed yet / not ended).
    start_time: int
    end_time: int
    #: Per subtask; None before its first sample.
    metrics: tuple[SubtaskMetricsView | None, ...]
    inputs: tuple[VertexInput, ...]
    #: The operators' descriptions (``set_description``, else names), as Flink's REST shows.
    description: str = ""

    @property
    def state(self) -> ExecutionState:
        return aggregate_state(self.subtask_states)


@dataclass(frozen=True, slots=True)
class JobView:
    """The whole job at ``now`` (epoch ms), frozen."""

    job_id: str
    name: str
    #: ``JobStatus`` value (RUNNING, FINISHED, ...)
    state: str
    #: STREAMING or BATCH
    job_type: str
    start_time: int
    #: -1 while the job runs.
    end_time: int
    now: int
    #: JobStatus value -> when the job last entered it (epoch ms)
    status_timestamps: Mapping[str, int]
    max_parallelism: int
    vertices: tuple[VertexView, ...]
    checkpoints: CheckpointStatsSnapshot
    #: The job's checkpointing options, for the checkpoint configuration endpoint (typed; the
    #: configuration itself never reaches the REST API: it may hold the metadata HMAC key).
    checkpointing: CheckpointSettings
    #: Root causes of the failed attempts, newest first (:mod:`.exception_history`).
    exceptions: tuple[FailureRecord, ...] = ()
    #: Older failures were dropped from ``exceptions``.
    exceptions_truncated: bool = False
    #: Restarts of the job so far (Flink's ``numRestarts``).
    num_restarts: int = 0
    #: The current attempt's live workers, by index (none between attempts).
    workers: tuple[WorkerView, ...] = ()

    def vertex(self, rest_id: str) -> VertexView | None:
        """By REST id, or by the plain job-vertex number."""
        for vertex in self.vertices:
            if vertex.rest_id == rest_id or str(vertex.vertex_id) == rest_id:
                return vertex
        return None

    @property
    def duration(self) -> int:
        end = self.end_time if self.end_time >= 0 else self.now
        return max(0, end - self.start_time)
