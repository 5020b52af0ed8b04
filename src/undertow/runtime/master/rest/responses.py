"""Flink's REST response bodies, built from a :class:`~undertow.runtime.master.metrics.JobView`.

Field names, nesting and units are Flink's, so scripts and dashboards written for Flink read
them unchanged: timestamps are epoch milliseconds, durations milliseconds, sizes bytes; a
timestamp that does not exist yet is -1; what undertow does not measure is 0.

Pure functions of the view: no I/O, no clock (``now`` comes with the view).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import time
from importlib import metadata
from typing import Any

from undertow.core.modes import ExternalizedCheckpointRetention
from undertow.runtime.master.exception_history import FailureRecord
from undertow.runtime.master.metrics import (
    SUMMARY_FIELDS,
    CheckpointStatsEntry,
    CheckpointStatus,
    ExecutionState,
    JobView,
    SubtaskCheckpointStats,
    SummaryStats,
    VertexView,
    WorkerView,
    summarize,
)
from undertow.runtime.master.rest.metrics_responses import debloat_metrics

Json = dict[str, Any]

#: Flink's ``Long.MAX_VALUE``: the checkpoint interval of a job without periodic checkpoints.
LONG_MAX = 2**63 - 1
_TERMINAL = ("FINISHED", "CANCELED", "FAILED")
_CLASS_NAME = {
    CheckpointStatus.COMPLETED: "completed",
    CheckpointStatus.FAILED: "failed",
    CheckpointStatus.IN_PROGRESS: "in_progress",
}


def version() -> str:
    try:
        return metadata.version("undertow")
    except metadata.PackageNotFoundError:
        return "unknown"


# -- cluster -----------------------------------------------------------------------------------
def dashboard_config(view: JobView) -> Json:
    """``/config`` (the local time zone is the driver's)."""
    local = time.localtime(view.now / 1000)
    return {
        "refresh-interval": 3000,
        "timezone-name": local.tm_zone,
        "timezone-offset": local.tm_gmtoff * 1000,
        "flink-version": version(),
        "flink-revision": "undertow",
        "features": {
            "web-submit": False,
            "web-cancel": False,
            "web-rescale": False,
            "web-history": False,
        },
    }


def cluster_overview(view: JobView) -> Json:
    """``/overview``: one JobMaster runs one job; its slots are the job's widest vertex, and its
    task managers are the current attempt's live workers (none between attempts), as Flink counts
    the registered ones."""
    slots = max((v.parallelism for v in view.vertices), default=0)
    running = view.state not in _TERMINAL
    return {
        "taskmanagers": len(view.workers),
        "slots-total": slots,
        "slots-available": 0 if running else slots,
        "jobs-running": int(running),
        "jobs-finished": int(view.state == "FINISHED"),
        "jobs-cancelled": int(view.state == "CANCELED"),
        "jobs-failed": int(view.state == "FAILED"),
        "flink-version": version(),
        "flink-commit": "undertow",
    }


def taskmanagers(view: JobView) -> Json:
    """``/taskmanagers``: the current attempt's live workers (Flink's ``TaskManagersInfo``), with
    undertow's ``pid`` and ``host`` of the process hosting each. ``timeSinceLastHeartbeat`` is,
    as in Flink despite its name, the epoch ms of the last heartbeat; ``jmxPort`` is -1 (no
    JMX); a worker's slots are the subtask indices placed on it."""
    return {"taskmanagers": [taskmanager(w) for w in view.workers]}


def taskmanager(worker: WorkerView) -> Json:
    return {
        "id": worker.id,
        "path": f"undertow://{worker.host}:{worker.data_port}/worker_{worker.index}",
        "dataPort": worker.data_port,
        "jmxPort": -1,
        "timeSinceLastHeartbeat": worker.last_heartbeat,
        "slotsNumber": worker.slots,
        "freeSlots": worker.free_slots,
        "blocked": False,
        "host": worker.host,
        "pid": worker.pid,
    }


def job_ids(view: JobView) -> Json:
    """``/jobs``."""
    return {"jobs": [{"id": view.job_id, "status": view.state}]}


def jobs_overview(view: JobView) -> Json:
    """``/jobs/overview``."""
    tasks: dict[str, int] = {"total": sum(v.parallelism for v in view.vertices)}
    for state in ExecutionState:
        tasks[state.value.lower()] = sum(
            1 for v in view.vertices for s in v.subtask_states if s is state
        )
    return {
        "jobs": [
            {
                "jid": view.job_id,
                "name": view.name,
                "start-time": view.start_time,
                "end-time": view.end_time,
                "duration": view.duration,
                "last-modification": max(view.status_timestamps.values(), default=0),
                "state": view.state,
                "tasks": tasks,
            }
        ]
    }


# -- job -------------------------------------------------------------------------------------
def job_details(view: JobView) -> Json:
    """``/jobs/:jobid``."""
    status_counts = {state.value: 0 for state in ExecutionState}
    for vertex in view.vertices:
        status_counts[vertex.state.value] += 1
    return {
        "jid": view.job_id,
        "name": view.name,
        "isStoppable": False,
        "state": view.state,
        "job-type": view.job_type,
        "start-time": view.start_time,
        "end-time": view.end_time,
        "duration": view.duration,
        "maxParallelism": view.max_parallelism,
        "now": view.now,
        "timestamps": dict(view.status_timestamps),
        "vertices": [_vertex_details(view, v) for v in view.vertices],
        "status-counts": status_counts,
        "plan": _plan(view),
        "pending-operators": 0,
    }


def _vertex_details(view: JobView, vertex: VertexView) -> Json:
    tasks = {state.value: 0 for state in ExecutionState}
    for state in vertex.subtask_states:
        tasks[state.value] += 1
    duration = -1
    if vertex.start_time >= 0:
        end = vertex.end_time if vertex.end_time >= 0 else view.now
        duration = max(0, end - vertex.start_time)
    return {
        "id": vertex.rest_id,
        "name": vertex.name,
        "maxParallelism": vertex.max_parallelism,
        "parallelism": vertex.parallelism,
        "status": vertex.state.value,
        "start-time": vertex.start_time,
        "end-time": vertex.end_time,
        "duration": duration,
        "tasks": tasks,
        "metrics": _io_metrics(vertex),
    }


def _io_metrics(vertex: VertexView) -> Json:
    """Flink's ``IOMetricsInfo``: sums over subtasks; ``*-complete`` once all reported."""
    samples = [m for m in vertex.metrics if m is not None]
    complete = len(samples) == vertex.parallelism
    return {
        "read-bytes": 0,
        "read-bytes-complete": complete,
        "write-bytes": sum(m.bytes_out for m in samples),
        "write-bytes-complete": complete,
        "read-records": sum(m.records_in for m in samples),
        "read-records-complete": complete,
        "write-records": sum(m.records_out for m in samples),
        "write-records-complete": complete,
        "accumulated-backpressured-time": sum(m.backpressured_ms for m in samples),
        "accumulated-idle-time": sum(m.idle_ms for m in samples),
        "accumulated-busy-time": float(sum(m.busy_ms for m in samples)),
    }


def _plan(view: JobView) -> Json:
    nodes = []
    for vertex in view.vertices:
        node: Json = {
            "id": vertex.rest_id,
            "parallelism": vertex.parallelism,
            "operator": "",
            "operator_strategy": "",
            "description": vertex.description or vertex.name,
            "optimizer_properties": {},
        }
        if vertex.inputs:
            node["inputs"] = [
                {"num": i, "id": edge.source_id, "ship_strategy": edge.ship_strategy,
                 "exchange": "pipelined_bounded"}
                for i, edge in enumerate(vertex.inputs)
            ]  # fmt: skip
        nodes.append(node)
    return {"jid": view.job_id, "name": view.name, "type": view.job_type, "nodes": nodes}


# -- backpressure ------------------------------------------------------------------------------
def backpressure_level(ratio: float) -> str:
    """Flink's thresholds: up to 10% ok, up to 50% low, above high."""
    if ratio <= 0.10:
        return "ok"
    return "low" if ratio <= 0.5 else "high"


def vertex_backpressure(view: JobView, vertex: VertexView) -> Json:
    """``/jobs/:jobid/vertices/:vertexid/backpressure``: ratios over the latest report window
    (``undertow.metrics.report-interval``); ``status`` is ``deprecated`` (Flink's word for
    "no data") until the first report."""
    subtasks: list[Json] = []
    end, worst = -1, 0.0
    for index, sample in enumerate(vertex.metrics):
        if sample is None:
            continue
        end = max(end, sample.timestamp_ms)
        worst = max(worst, round(sample.backpressured_ratio, 3))
        subtasks.append({
            "subtask": index,
            "backpressure-level": backpressure_level(sample.backpressured_ratio),
            "ratio": round(sample.backpressured_ratio, 3),
            "idleRatio": round(sample.idle_ratio, 3),
            "busyRatio": round(sample.busy_ratio, 3),
            **debloat_metrics(sample),
        })  # fmt: skip
    if not subtasks:
        return {"status": "deprecated"}
    return {
        "status": "ok",
        "backpressure-level": backpressure_level(worst),
        "end-timestamp": end,
        "subtasks": subtasks,
    }


# -- checkpoints -------------------------------------------------------------------------------
def checkpointing_statistics(view: JobView) -> Json:
    """``/jobs/:jobid/checkpoints``."""
    stats = view.checkpoints
    summary = {name: summary_dto(stats.summary.get(name, SummaryStats()))
               for name in SUMMARY_FIELDS}  # fmt: skip
    summary["alignment_buffered"] = summary_dto(SummaryStats())
    restored = stats.latest_restored
    return {
        "counts": {
            "restored": stats.restored,
            "total": stats.total,
            "in_progress": stats.in_progress,
            "completed": stats.completed,
            "failed": stats.failed,
        },
        "summary": summary,
        "latest": {
            "completed": _maybe_entry(view, stats.latest_completed),
            "savepoint": _maybe_entry(view, stats.latest_savepoint),
            "failed": _maybe_entry(view, stats.latest_failed),
            "restored": None if restored is None else {
                "id": restored.checkpoint_id,
                "restore_timestamp": restored.restore_timestamp,
                "is_savepoint": restored.is_savepoint,
                "external_path": restored.external_path,
            },
        },
        "history": [checkpoint_entry(view, e) for e in stats.history],
    }  # fmt: skip


def _maybe_entry(view: JobView, entry: CheckpointStatsEntry | None) -> Json | None:
    return None if entry is None else checkpoint_entry(view, entry)


def summary_dto(stats: SummaryStats) -> Json:
    return {
        "min": stats.min, "max": stats.max, "avg": stats.avg, "p50": stats.p50,
        "p90": stats.p90, "p95": stats.p95, "p99": stats.p99, "p999": stats.p999,
    }  # fmt: skip


def checkpoint_entry(view: JobView, entry: CheckpointStatsEntry, details: bool = False) -> Json:
    """Flink's ``CheckpointStatistics`` (completed, failed or in progress). With ``details``
    (``/checkpoints/details/:id``), ``tasks`` holds every vertex with its subtasks."""
    body: Json = {
        "className": _CLASS_NAME[entry.status],
        "id": entry.checkpoint_id,
        "status": entry.status.value,
        "is_savepoint": entry.is_savepoint,
        "savepointFormat": entry.savepoint_format if entry.is_savepoint else None,
        "trigger_timestamp": entry.trigger_timestamp,
        "latest_ack_timestamp": entry.latest_ack_timestamp,
        "checkpointed_size": entry.total("checkpointed_size"),
        "state_size": entry.total("state_size"),
        "end_to_end_duration": entry.end_to_end_duration,
        "alignment_buffered": 0,
        "processed_data": entry.total("processed_data"),
        "persisted_data": entry.total("persisted_data"),
        # undertow's: in-flight bytes referred to in older files, not written again
        "referenced_data": entry.total("referenced_data"),
        "num_subtasks": entry.num_subtasks,
        "num_acknowledged_subtasks": entry.num_acknowledged,
        "checkpoint_type": "SAVEPOINT" if entry.is_savepoint
        else "UNALIGNED_CHECKPOINT" if entry.unaligned else "CHECKPOINT",
        "is_unaligned": entry.unaligned,
        "tasks": {v.rest_id: task_checkpoint(entry, v, details) for v in view.vertices}
        if details else {},
    }  # fmt: skip
    if entry.status is CheckpointStatus.COMPLETED:
        body["external_path"] = entry.external_path
        body["discarded"] = entry.discarded
    elif entry.status is CheckpointStatus.FAILED:
        body["failure_timestamp"] = entry.failure_timestamp
        body["failure_message"] = entry.failure_message
    return body


def task_checkpoint(entry: CheckpointStatsEntry, vertex: VertexView, details: bool = True) -> Json:
    """Flink's ``TaskCheckpointStatistics`` of one vertex; with ``details`` also its ``summary``
    and ``subtasks`` (``TaskCheckpointStatisticsWithSubtaskDetails``)."""
    acks = entry.acknowledged.get(vertex.vertex_id, {})
    latest = max((a.ack_timestamp for a in acks.values()), default=-1)
    body: Json = {
        "id": entry.checkpoint_id,
        "status": entry.status.value,
        "latest_ack_timestamp": latest,
        "checkpointed_size": sum(a.checkpointed_size for a in acks.values()),
        "state_size": sum(a.state_size for a in acks.values()),
        "end_to_end_duration": -1 if latest < 0 else max(0, latest - entry.trigger_timestamp),
        "alignment_buffered": 0,
        "processed_data": sum(a.processed_data for a in acks.values()),
        "persisted_data": sum(a.persisted_data for a in acks.values()),
        "referenced_data": sum(a.referenced_data for a in acks.values()),
        "num_subtasks": vertex.parallelism,
        "num_acknowledged_subtasks": len(acks),
    }
    if details:
        done = list(acks.values())
        trigger = entry.trigger_timestamp

        def dto(values: list[float]) -> Json:
            return summary_dto(summarize(values))

        body["summary"] = {
            "checkpointed_size": dto([a.checkpointed_size for a in done]),
            "state_size": dto([a.state_size for a in done]),
            "end_to_end_duration": dto([max(0, a.ack_timestamp - trigger) for a in done]),
            "checkpoint_duration": {
                "sync": dto([a.sync_duration_ms for a in done]),
                "async": dto([a.async_duration_ms for a in done]),
            },
            "alignment": {
                "buffered": dto([0 for _ in done]),
                "processed": dto([a.processed_data for a in done]),
                "persisted": dto([a.persisted_data for a in done]),
                "duration": dto([a.alignment_duration_ms for a in done]),
            },
            "start_delay": dto([a.start_delay_ms for a in done]),
        }
        body["subtasks"] = [
            _subtask_checkpoint(index, acks.get(index), trigger)
            for index in range(vertex.parallelism)
        ]
    return body


def _subtask_checkpoint(index: int, ack: SubtaskCheckpointStats | None, trigger: int) -> Json:
    if ack is None:
        return {"index": index, "status": "pending_or_failed"}
    return {
        "index": index,
        "status": "completed",
        "ack_timestamp": ack.ack_timestamp,
        "end_to_end_duration": max(0, ack.ack_timestamp - trigger),
        "state_size": ack.state_size,
        "checkpointed_size": ack.checkpointed_size,
        "checkpoint": {"sync": ack.sync_duration_ms, "async": ack.async_duration_ms},
        "alignment": {
            "buffered": 0,
            "processed": ack.processed_data,
            "persisted": ack.persisted_data,
            "referenced": ack.referenced_data,
            "duration": ack.alignment_duration_ms,
        },
        "start_delay": ack.start_delay_ms,
        "unaligned_checkpoint": ack.unaligned,
        "aborted": False,
    }


def checkpoint_config(view: JobView) -> Json:
    """``/jobs/:jobid/checkpoints/config`` (Flink's ``CheckpointConfigInfo``), from the job's
    checkpointing options only."""
    settings = view.checkpointing
    retention = settings.retention
    backend = settings.state_backend
    return {
        "mode": settings.mode.name.lower(),
        "interval": settings.interval_ms if settings.interval_ms > 0 else LONG_MAX,
        "timeout": settings.timeout_ms,
        "min_pause": settings.min_pause_ms,
        "max_concurrent": settings.max_concurrent,
        "externalization": {
            "enabled": retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS,
            "delete_on_cancellation": (
                retention is ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION
            ),
        },
        "state_backend": "HashMapStateBackend" if backend == "hashmap" else backend,
        "checkpoint_storage": "FileSystemCheckpointStorage",
        "unaligned_checkpoints": settings.unaligned,
        "tolerable_failed_checkpoints": settings.tolerable_failures,
        "aligned_checkpoint_timeout": settings.aligned_timeout_ms,
        "checkpoints_after_tasks_finish": False,
        "state_changelog_enabled": False,
    }


# -- exceptions --------------------------------------------------------------------------------
def job_exceptions(view: JobView, max_exceptions: int | None = None) -> Json:
    """``/jobs/:jobid/exceptions``: Flink's ``JobExceptionsInfoWithHistory``, one history entry
    per failed attempt (newest first), at most ``max_exceptions`` of them (then ``truncated``
    says whether some were left out). The legacy fields (``root-exception``, ``timestamp``,
    ``all-exceptions``, ``truncated``) describe the newest failure; ``taskName`` and
    ``location`` are left out when the failure came from no task, as Flink does."""
    latest = view.exceptions[0] if view.exceptions else None
    shown = view.exceptions if max_exceptions is None else view.exceptions[:max_exceptions]
    all_exceptions = []
    if latest is not None and latest.origin is not None:
        all_exceptions.append({
            "exception": latest.stacktrace, "task": latest.origin.task_name,
            "location": latest.origin.location, "timestamp": latest.timestamp,
            "taskManagerId": latest.origin.location,
        })  # fmt: skip
    return {
        "root-exception": None if latest is None else latest.stacktrace,
        "timestamp": None if latest is None else latest.timestamp,
        "all-exceptions": all_exceptions,
        "truncated": False,
        "exceptionHistory": {
            "entries": [_exception_entry(record) for record in shown],
            "truncated": view.exceptions_truncated or len(shown) < len(view.exceptions),
        },
    }


def _exception_entry(record: FailureRecord) -> Json:
    entry: Json = {
        "exceptionName": record.exception_name,
        "stacktrace": record.stacktrace,
        "timestamp": record.timestamp,
        "failureLabels": {},
    }
    if record.origin is not None:
        entry["taskName"] = record.origin.task_name
        entry["location"] = record.origin.location
        entry["endpoint"] = record.origin.location
        entry["taskManagerId"] = record.origin.location
    entry["concurrentExceptions"] = []
    return entry


# -- savepoint operations ----------------------------------------------------------------------
def savepoint_operation(location: str | None, error: BaseException | None) -> Json:
    """Flink's ``AsynchronousOperationResult`` body for a savepoint trigger: in progress
    (neither given), completed at ``location``, or failed with ``error``."""
    if error is not None:
        return {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
            "class": type(error).__name__, "error-message": str(error),
        }}}  # fmt: skip
    if location is None:
        return {"status": {"id": "IN_PROGRESS"}}
    return {"status": {"id": "COMPLETED"}, "operation": {"location": location}}
