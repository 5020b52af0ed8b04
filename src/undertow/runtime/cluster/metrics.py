"""What the JobMaster observes about its job, for monitoring: task metrics, checkpoint statistics,
and the immutable :class:`JobView` the REST API renders.

* :class:`TaskMetrics` is one sample of a subtask's counters (records, bytes, busy /
  backpressured / idle time), taken by its worker every ``undertow.metrics.report-interval``
  and once more when the task ends. :class:`TaskMetricsStore` keeps the few latest samples per
  (vertex, subtask) and turns them into Flink's per-second ratios (``busyTimeMsPerSecond /
  1000`` and so on) over the latest window.
* :class:`CheckpointStatsTracker` is Flink's ``CheckpointStatsTracker``: it learns about
  triggers, acknowledgements (with each subtask's sync, async, alignment and start-delay times),
  completions, failures and restores, and keeps counts, a bounded history
  (``web.checkpoints.history``) and summaries over completed checkpoints.
* :class:`JobView` (with :class:`VertexView` and :class:`CheckpointStatsSnapshot`) is an
  immutable picture of the job built on request; the web layer maps it to Flink's JSON.

They share one purpose (the facts the REST API serves) and one caller, so they are one module.
Everything here is pure: the JobMaster feeds facts and clock values in.

Threading: the JobMaster's loop thread calls the store and the tracker; nothing locks. Views are
frozen (mappings are read-only copies), so they may be handed to any thread. Cost: O(1) per
sample and per acknowledgement; a snapshot is O(subtasks x history).
"""

from __future__ import annotations

import enum
import hashlib
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from undertow.graph.job_graph import JobVertex
from undertow.runtime.task.task_statistics import TaskStatistics

#: A new sample replaces the start of the rate window only when the window is at least this
#: long, so a final sample right after a periodic one does not yield a noisy 5 ms ratio.
MIN_RATE_WINDOW_MS = 250.0
#: Completed checkpoints the summary percentiles are computed over (Flink keeps a window too).
SUMMARY_WINDOW = 1000

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


# -- task metrics ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TaskMetrics:
    """One sample of a subtask's counters (sent in a ``TaskMetricsReport``)."""

    vertex_id: int
    subtask: int
    #: The worker's wall clock (epoch ms) when sampled.
    timestamp_ms: int
    statistics: TaskStatistics
    #: The task ended (finished, failed or was cancelled): no sample follows.
    final: bool = False


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
    #: Buffer debloating (Flink's ``debloatedBufferSize``, ``estimatedTimeToConsumeBuffersMs``;
    #: ``None`` while it is off or the subtask has no network input).
    debloated_buffer_size: int | None = None
    estimated_time_to_consume_buffers_ms: int | None = None


class TaskMetricsStore:
    """Recent samples per (vertex id, subtask) of the current attempt (see module docstring).

    A view's ratios cover the window from the newest sample at least ``MIN_RATE_WINDOW_MS``
    older than the latest one (so a final sample right after a periodic one does not make a
    ratio out of 5 ms); before there is one, they cover the time since the task started.
    """

    def __init__(self) -> None:
        self._samples: dict[tuple[int, int], deque[TaskStatistics]] = {}
        self._timestamps: dict[tuple[int, int], int] = {}

    def clear(self) -> None:
        """A new attempt starts: its tasks count from zero."""
        self._samples.clear()
        self._timestamps.clear()

    def update(self, metrics: TaskMetrics) -> None:
        key = (metrics.vertex_id, metrics.subtask)
        stats = metrics.statistics
        samples = self._samples.setdefault(key, deque())
        if samples and _elapsed(stats) < _elapsed(samples[-1]):
            return  # a sample of an earlier run of this subtask
        samples.append(stats)
        self._timestamps[key] = metrics.timestamp_ms
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
        if len(samples) > 1 and _elapsed(latest) - _elapsed(start) >= MIN_RATE_WINDOW_MS:
            busy -= start.busy_ms
            backpressured -= start.backpressured_ms
            idle -= start.idle_ms
        total = busy + backpressured + idle
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
            debloated_buffer_size=latest.debloat.debloated_buffer_size if latest.debloat else None,
            estimated_time_to_consume_buffers_ms=round(
                latest.debloat.estimated_time_to_consume_buffers_ms
            ) if latest.debloat else None,
        )  # fmt: skip


def _elapsed(stats: TaskStatistics) -> float:
    return stats.busy_ms + stats.backpressured_ms + stats.idle_ms


# -- checkpoint statistics -------------------------------------------------------------------
class CheckpointStatus(enum.Enum):
    """Flink's ``CheckpointStatsStatus``."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class SubtaskCheckpointStats:
    """One subtask's acknowledgement of a checkpoint. Times in ms, sizes in bytes."""

    subtask: int
    ack_timestamp: int
    state_size: int
    checkpointed_size: int
    sync_duration_ms: int
    async_duration_ms: int
    alignment_duration_ms: int
    start_delay_ms: int
    processed_data: int
    persisted_data: int
    unaligned: bool

    @classmethod
    def from_metrics(
        cls, subtask: int, ack_timestamp: int, metrics: Mapping[str, Any]
    ) -> SubtaskCheckpointStats:
        """From the metrics of an ``AcknowledgeCheckpoint`` (keys of ``CheckpointMetrics``)."""

        def number(key: str, default: float = 0) -> int:
            value = metrics.get(key, default)
            return round(value) if isinstance(value, (int, float)) else round(default)

        state_size = number("state_size")
        return cls(
            subtask=subtask,
            ack_timestamp=ack_timestamp,
            state_size=state_size,
            checkpointed_size=number("checkpointed_size", state_size),
            sync_duration_ms=number("sync_duration_ms"),
            async_duration_ms=number("async_duration_ms"),
            alignment_duration_ms=number("alignment_duration_ms"),
            start_delay_ms=number("start_delay_ms"),
            processed_data=number("processed_data"),
            persisted_data=number("persisted_data"),
            unaligned=bool(metrics.get("unaligned", False)),
        )


@dataclass(frozen=True, slots=True)
class CheckpointStatsEntry:
    """One checkpoint as the REST API shows it (Flink's ``AbstractCheckpointStats``)."""

    checkpoint_id: int
    status: CheckpointStatus
    trigger_timestamp: int
    is_savepoint: bool
    unaligned: bool
    #: job vertex id -> its parallelism (every subtask must acknowledge)
    parallelism: Mapping[int, int]
    #: job vertex id -> subtask index -> its acknowledgement
    acknowledged: Mapping[int, Mapping[int, SubtaskCheckpointStats]]
    completion_timestamp: int | None = None
    failure_timestamp: int | None = None
    failure_message: str | None = None
    external_path: str | None = None
    #: Completed, then subsumed and deleted.
    discarded: bool = False

    @property
    def num_subtasks(self) -> int:
        return sum(self.parallelism.values())

    @property
    def num_acknowledged(self) -> int:
        return sum(len(acks) for acks in self.acknowledged.values())

    def acks(self) -> Iterable[SubtaskCheckpointStats]:
        for acks in self.acknowledged.values():
            yield from acks.values()

    @property
    def latest_ack_timestamp(self) -> int:
        """-1 before the first acknowledgement (Flink's convention)."""
        return max((a.ack_timestamp for a in self.acks()), default=-1)

    @property
    def end_to_end_duration(self) -> int:
        """Trigger to latest acknowledgement (Flink's definition); -1 before any."""
        latest = self.latest_ack_timestamp
        return -1 if latest < 0 else max(0, latest - self.trigger_timestamp)

    def total(self, attribute: str) -> int:
        """Sum of one :class:`SubtaskCheckpointStats` attribute over all acknowledgements."""
        return sum(int(getattr(a, attribute)) for a in self.acks())


@dataclass(frozen=True, slots=True)
class RestoredCheckpoint:
    checkpoint_id: int
    restore_timestamp: int
    is_savepoint: bool
    external_path: str | None


@dataclass(frozen=True, slots=True)
class SummaryStats:
    """Flink's ``StatsSummaryDto``: min, max, average and percentiles (0 when empty)."""

    count: int = 0
    min: int = 0
    max: int = 0
    avg: int = 0
    p50: float = 0.0
    p90: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    p999: float = 0.0


def summarize(values: Iterable[float]) -> SummaryStats:
    """Min, max, average and (linearly interpolated) percentiles of ``values``."""
    data = sorted(values)
    if not data:
        return SummaryStats()

    def quantile(q: float) -> float:
        position = q * (len(data) - 1)
        low, high = math.floor(position), math.ceil(position)
        return round(float(data[low] + (data[high] - data[low]) * (position - low)), 3)

    return SummaryStats(
        count=len(data), min=round(data[0]), max=round(data[-1]),
        avg=round(sum(data) / len(data)), p50=quantile(0.5), p90=quantile(0.9),
        p95=quantile(0.95), p99=quantile(0.99), p999=quantile(0.999),
    )  # fmt: skip


#: What the job-level summary covers, under Flink's names (sums over a checkpoint's
#: acknowledgements, or its end-to-end duration).
SUMMARY_FIELDS = (
    "checkpointed_size",
    "state_size",
    "end_to_end_duration",
    "processed_data",
    "persisted_data",
)


@dataclass(frozen=True, slots=True)
class CheckpointStatsSnapshot:
    """Counts, summaries, history (newest first) and latest checkpoints, frozen."""

    total: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    restored: int = 0
    #: Flink's summary field name -> statistics over completed checkpoints
    summary: Mapping[str, SummaryStats] = field(default_factory=lambda: _EMPTY)
    history: tuple[CheckpointStatsEntry, ...] = ()
    latest_completed: CheckpointStatsEntry | None = None
    latest_failed: CheckpointStatsEntry | None = None
    latest_restored: RestoredCheckpoint | None = None

    def find(self, checkpoint_id: int) -> CheckpointStatsEntry | None:
        for entry in (*self.history, self.latest_completed, self.latest_failed):
            if entry is not None and entry.checkpoint_id == checkpoint_id:
                return entry
        return None


class _Tracked:
    """Mutable record of one checkpoint inside the tracker."""

    __slots__ = ("acks", "completion", "discarded", "external_path", "failure", "failure_message",
                 "id", "status", "trigger", "unaligned")  # fmt: skip

    def __init__(self, checkpoint_id: int, trigger: int, unaligned: bool) -> None:
        self.id = checkpoint_id
        self.trigger = trigger
        self.unaligned = unaligned
        self.status = CheckpointStatus.IN_PROGRESS
        self.acks: dict[int, dict[int, SubtaskCheckpointStats]] = {}
        self.completion: int | None = None
        self.failure: int | None = None
        self.failure_message: str | None = None
        self.external_path: str | None = None
        self.discarded = False


class CheckpointStatsTracker:
    """Checkpoint statistics of one job, fed by the JobMaster (see the module docstring).

    Events for unknown or already decided checkpoints are ignored, so late acknowledgements
    and duplicate notifications are harmless. The history shows the newest
    ``history_size`` checkpoints; one that falls out of it while in progress is still tracked
    until it is decided (counts stay exact).
    """

    def __init__(self, parallelism: Mapping[int, int], history_size: int = 10) -> None:
        self.parallelism: Mapping[int, int] = MappingProxyType(dict(parallelism))
        self.history_size = history_size
        self._history: deque[_Tracked] = deque(maxlen=history_size)
        self._pending: dict[int, _Tracked] = {}
        self._declines: dict[int, str] = {}
        self._total = self._completed = self._failed = self._restored = 0
        self._latest_completed: _Tracked | None = None
        self._latest_failed: _Tracked | None = None
        self._latest_restored: RestoredCheckpoint | None = None
        self._summary = {name: deque[float](maxlen=SUMMARY_WINDOW) for name in SUMMARY_FIELDS}

    # -- events ----------------------------------------------------------------------------
    def report_pending(self, checkpoint_id: int, trigger_timestamp: int, unaligned: bool) -> None:
        """The coordinator triggered ``checkpoint_id`` (idempotent: once per source subtask)."""
        if checkpoint_id in self._pending or any(t.id == checkpoint_id for t in self._history):
            return
        tracked = _Tracked(checkpoint_id, trigger_timestamp, unaligned)
        self._pending[checkpoint_id] = tracked
        self._history.appendleft(tracked)
        self._total += 1

    def report_ack(
        self, checkpoint_id: int, vertex_id: int, subtask: int, ack_timestamp: int,
        metrics: Mapping[str, Any],
    ) -> None:  # fmt: skip
        tracked = self._pending.get(checkpoint_id)
        if tracked is None:
            return
        stats = SubtaskCheckpointStats.from_metrics(subtask, ack_timestamp, metrics)
        tracked.acks.setdefault(vertex_id, {}).setdefault(subtask, stats)
        # An aligned checkpoint with a timeout that switched to unaligned somewhere is shown
        # as unaligned (Flink's UNALIGNED_CHECKPOINT type)
        tracked.unaligned = tracked.unaligned or stats.unaligned

    def report_decline(self, checkpoint_id: int, message: str) -> None:
        """A subtask declined: remembered as the failure message if the checkpoint fails."""
        if checkpoint_id in self._pending:
            self._declines.setdefault(checkpoint_id, message)

    def report_completed(
        self, checkpoint_id: int, completion_timestamp: int, external_path: str | None
    ) -> None:
        tracked = self._pending.pop(checkpoint_id, None)
        if tracked is None:
            return
        tracked.status = CheckpointStatus.COMPLETED
        tracked.completion = completion_timestamp
        tracked.external_path = external_path
        self._completed += 1
        if self._latest_completed is None or checkpoint_id > self._latest_completed.id:
            self._latest_completed = tracked
        entry = self._freeze(tracked)
        for name in SUMMARY_FIELDS:
            self._summary[name].append(float(_value(entry, name)))
        self._declines.pop(checkpoint_id, None)

    def report_failed(self, checkpoint_id: int, failure_timestamp: int, message: str) -> None:
        """The checkpoint was aborted; a decline's message, if any, wins over ``message``."""
        tracked = self._pending.pop(checkpoint_id, None)
        if tracked is None:
            return
        tracked.status = CheckpointStatus.FAILED
        tracked.failure = failure_timestamp
        tracked.failure_message = self._declines.pop(checkpoint_id, message)
        self._failed += 1
        if self._latest_failed is None or checkpoint_id > self._latest_failed.id:
            self._latest_failed = tracked

    def report_retained(self, retained: Iterable[int]) -> None:
        """The completed checkpoints still retained; the others were subsumed (discarded)."""
        keep = set(retained)
        for tracked in self._history:
            if tracked.status is CheckpointStatus.COMPLETED:
                tracked.discarded = tracked.id not in keep

    def report_restored(
        self, checkpoint_id: int, restore_timestamp: int, external_path: str | None,
        is_savepoint: bool = False,
    ) -> None:  # fmt: skip
        self._restored += 1
        self._latest_restored = RestoredCheckpoint(
            checkpoint_id, restore_timestamp, is_savepoint, external_path
        )

    def in_progress_ids(self) -> list[int]:
        return sorted(self._pending)

    def trigger_timestamp(self, checkpoint_id: int) -> int | None:
        """When an in-progress checkpoint was triggered (None if it is not in progress)."""
        tracked = self._pending.get(checkpoint_id)
        return None if tracked is None else tracked.trigger

    # -- snapshot --------------------------------------------------------------------------
    def snapshot(self) -> CheckpointStatsSnapshot:
        history = tuple(self._freeze(t) for t in self._history)
        by_id = {e.checkpoint_id: e for e in history}

        def latest(tracked: _Tracked | None) -> CheckpointStatsEntry | None:
            if tracked is None:
                return None
            return by_id.get(tracked.id) or self._freeze(tracked)

        in_progress = len(self._pending)
        summary = {name: summarize(values) for name, values in self._summary.items()}
        return CheckpointStatsSnapshot(
            total=self._total, in_progress=in_progress, completed=self._completed,
            failed=self._failed, restored=self._restored,
            summary=MappingProxyType(summary), history=history,
            latest_completed=latest(self._latest_completed),
            latest_failed=latest(self._latest_failed), latest_restored=self._latest_restored,
        )  # fmt: skip

    def _freeze(self, tracked: _Tracked) -> CheckpointStatsEntry:
        acks = {vid: MappingProxyType(dict(subtasks)) for vid, subtasks in tracked.acks.items()}
        return CheckpointStatsEntry(
            checkpoint_id=tracked.id, status=tracked.status, trigger_timestamp=tracked.trigger,
            is_savepoint=False, unaligned=tracked.unaligned, parallelism=self.parallelism,
            acknowledged=MappingProxyType(acks), completion_timestamp=tracked.completion,
            failure_timestamp=tracked.failure, failure_message=tracked.failure_message,
            external_path=tracked.external_path, discarded=tracked.discarded,
        )  # fmt: skip


def _value(entry: CheckpointStatsEntry, attribute: str) -> int:
    if attribute == "end_to_end_duration":
        return max(0, entry.end_to_end_duration)
    return entry.total(attribute)


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
    num_workers: int
    vertices: tuple[VertexView, ...]
    checkpoints: CheckpointStatsSnapshot
    #: The job's configuration (strings), for the checkpoint configuration endpoint. Renderers
    #: pick options from it; never serve it whole (it may hold the metadata HMAC key).
    config: Mapping[str, str]

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
