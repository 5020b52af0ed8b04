"""Flink's ``CheckpointStatsTracker``: counts, a bounded history and summaries of checkpoints.

The tracker consumes the coordinator's events (:mod:`undertow.runtime.checkpoint.events`):
a trigger opens an entry, each accepted acknowledgement adds the subtask's sync, async,
alignment and start-delay times and sizes, and a completion or an abort (with its reason)
decides it. Restores come from the JobMaster. :meth:`CheckpointStatsTracker.snapshot` freezes
it all into a :class:`CheckpointStatsSnapshot` for the :class:`~.metrics.JobView`; the history
holds the newest ``web.checkpoints.history`` checkpoints.

Pure: events carry their clock values. Threading: the JobMaster's loop only; nothing locks.
Snapshots are frozen and may go to any thread. Cost: O(1) per event, a snapshot O(subtasks x
history).
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from undertow.runtime.checkpoint.events import (
    Aborted,
    Acknowledged,
    CheckpointEvent,
    Completed,
    Triggered,
)

#: Completed checkpoints the summary percentiles are computed over (Flink keeps a window too).
SUMMARY_WINDOW = 1000

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


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
    #: In-flight bytes referred to in older checkpoints' channel-state files instead of
    #: written (restored data not yet consumed, FLIP-76; buffers still queued since the
    #: previous checkpoint, incremental channel state). No Flink counterpart.
    referenced_data: int = 0

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
            referenced_data=number("referenced_data"),
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
    #: A savepoint's format (Flink's ``savepointFormat``); None for a checkpoint.
    savepoint_format: str | None = None

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
    #: The newest completed checkpoint that is not a savepoint (Flink's ``latest.completed``).
    latest_completed: CheckpointStatsEntry | None = None
    latest_failed: CheckpointStatsEntry | None = None
    latest_restored: RestoredCheckpoint | None = None
    #: The newest completed savepoint (Flink's ``latest.savepoint``).
    latest_savepoint: CheckpointStatsEntry | None = None

    def find(self, checkpoint_id: int) -> CheckpointStatsEntry | None:
        entries = (*self.history, self.latest_completed, self.latest_failed, self.latest_savepoint)
        for entry in entries:
            if entry is not None and entry.checkpoint_id == checkpoint_id:
                return entry
        return None


class _Tracked:
    """Mutable record of one checkpoint inside the tracker."""

    __slots__ = ("acks", "completion", "discarded", "external_path", "failure", "failure_message",
                 "id", "is_savepoint", "savepoint_format", "status", "trigger",
                 "unaligned")  # fmt: skip

    def __init__(
        self, checkpoint_id: int, trigger: int, unaligned: bool, is_savepoint: bool = False
    ) -> None:
        self.id = checkpoint_id
        self.trigger = trigger
        self.unaligned = unaligned
        self.is_savepoint = is_savepoint
        self.savepoint_format: str | None = None
        self.status = CheckpointStatus.IN_PROGRESS
        self.acks: dict[int, dict[int, SubtaskCheckpointStats]] = {}
        self.completion: int | None = None
        self.failure: int | None = None
        self.failure_message: str | None = None
        self.external_path: str | None = None
        self.discarded = False


class CheckpointStatsTracker:
    """Checkpoint statistics of one job, fed by the coordinator's events (see the module
    docstring) and by the JobMaster's restores.

    Every checkpoint comes with one :class:`Triggered` and ends with one :class:`Completed` or
    :class:`Aborted`; events of checkpoints triggered before this tracker existed are ignored.
    The history shows the newest ``history_size`` checkpoints; one that falls out of it while
    in progress is still tracked until it is decided (counts stay exact).
    """

    def __init__(self, parallelism: Mapping[int, int], history_size: int = 10) -> None:
        self.parallelism: Mapping[int, int] = MappingProxyType(dict(parallelism))
        self.history_size = history_size
        self._history: deque[_Tracked] = deque(maxlen=history_size)
        self._pending: dict[int, _Tracked] = {}
        self._total = self._completed = self._failed = self._restored = 0
        self._latest_completed: _Tracked | None = None
        self._latest_savepoint: _Tracked | None = None
        self._latest_failed: _Tracked | None = None
        self._latest_restored: RestoredCheckpoint | None = None
        self._summary = {name: deque[float](maxlen=SUMMARY_WINDOW) for name in SUMMARY_FIELDS}

    # -- events ----------------------------------------------------------------------------
    def on_event(self, event: CheckpointEvent) -> None:
        """The coordinator's listener (a ``CheckpointListener``)."""
        match event:
            case Triggered():
                tracked = _Tracked(event.checkpoint_id, event.timestamp, event.unaligned,
                                   event.is_savepoint)  # fmt: skip
                tracked.savepoint_format = event.savepoint_format
                self._pending[event.checkpoint_id] = tracked
                self._history.appendleft(tracked)
                self._total += 1
            case Acknowledged():
                self._acknowledged(event)
            case Completed():
                self._completed_event(event)
            case Aborted():
                self._aborted(event)

    def _acknowledged(self, event: Acknowledged) -> None:
        tracked = self._pending.get(event.checkpoint_id)
        if tracked is None:
            return
        stats = SubtaskCheckpointStats.from_metrics(event.subtask, event.timestamp, event.metrics)
        tracked.acks.setdefault(event.vertex_id, {}).setdefault(event.subtask, stats)
        # An aligned checkpoint with a timeout that switched to unaligned somewhere is shown
        # as unaligned (Flink's UNALIGNED_CHECKPOINT type)
        tracked.unaligned = tracked.unaligned or stats.unaligned

    def _completed_event(self, event: Completed) -> None:
        tracked = self._pending.pop(event.checkpoint_id, None)
        if tracked is None:
            return
        tracked.status = CheckpointStatus.COMPLETED
        tracked.completion = event.timestamp
        tracked.external_path = event.external_path
        self._completed += 1
        if tracked.is_savepoint:
            if self._latest_savepoint is None or tracked.id > self._latest_savepoint.id:
                self._latest_savepoint = tracked
        elif self._latest_completed is None or tracked.id > self._latest_completed.id:
            self._latest_completed = tracked
        entry = self._freeze(tracked)
        for name in SUMMARY_FIELDS:
            self._summary[name].append(float(_value(entry, name)))
        if event.retained is not None:
            keep = set(event.retained)
            for old in self._history:
                if old.status is CheckpointStatus.COMPLETED:
                    old.discarded = old.id not in keep

    def _aborted(self, event: Aborted) -> None:
        tracked = self._pending.pop(event.checkpoint_id, None)
        if tracked is None:
            return
        tracked.status = CheckpointStatus.FAILED
        tracked.failure = event.timestamp
        tracked.failure_message = event.message
        self._failed += 1
        if self._latest_failed is None or tracked.id > self._latest_failed.id:
            self._latest_failed = tracked

    def report_restored(
        self, checkpoint_id: int, restore_timestamp: int, external_path: str | None,
        is_savepoint: bool = False,
    ) -> None:  # fmt: skip
        """The JobMaster restored the job from this checkpoint or savepoint."""
        self._restored += 1
        self._latest_restored = RestoredCheckpoint(
            checkpoint_id, restore_timestamp, is_savepoint, external_path
        )

    def in_progress_ids(self) -> list[int]:
        return sorted(self._pending)

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
            latest_savepoint=latest(self._latest_savepoint),
        )  # fmt: skip

    def _freeze(self, tracked: _Tracked) -> CheckpointStatsEntry:
        acks = {vid: MappingProxyType(dict(subtasks)) for vid, subtasks in tracked.acks.items()}
        return CheckpointStatsEntry(
            checkpoint_id=tracked.id, status=tracked.status, trigger_timestamp=tracked.trigger,
            is_savepoint=tracked.is_savepoint, unaligned=tracked.unaligned,
            parallelism=self.parallelism,
            acknowledged=MappingProxyType(acks), completion_timestamp=tracked.completion,
            failure_timestamp=tracked.failure, failure_message=tracked.failure_message,
            external_path=tracked.external_path, discarded=tracked.discarded,
            savepoint_format=tracked.savepoint_format,
        )  # fmt: skip


def _value(entry: CheckpointStatsEntry, attribute: str) -> int:
    if attribute == "end_to_end_duration":
        return max(0, entry.end_to_end_duration)
    return entry.total(attribute)
