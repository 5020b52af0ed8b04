"""Flink's metric names and values of a job, and the REST bodies that serve them.

:func:`job_metrics` and :func:`subtask_metrics` name a :class:`JobView`'s facts as Flink's
metrics do (job scope: ``numRestarts``, ``lastCheckpointDuration`` ...; task scope:
``numRecordsInPerSecond``, ``busyTimeMsPerSecond``, ``currentInputWatermark`` ...). The REST
endpoints (``/jobs/:jobid/metrics``, ``.../vertices/:vertexid/metrics``,
``.../subtasks/metrics``, ``.../subtasks/:index/metrics``, ``.../watermarks``) and the
Prometheus exporter both read them here, so they always agree.

REST shapes are Flink's: without ``get`` a list of ``{"id"}``; with ``get=a,b`` the
``{"id", "value"}`` pairs, values as strings; the aggregated subtask endpoint answers
``{"id", "min", "max", "avg", "sum"}`` (``agg`` picks among them, ``subtasks`` picks indices
like ``0,2-3``). Unknown names are left out, as in Flink. Pure functions of the view.
"""

from __future__ import annotations

from typing import Any

from undertow.runtime.master.metrics import JobView, SubtaskMetricsView, VertexView

Json = Any
#: Flink's ``Long.MIN_VALUE``: the watermark before the first one.
LONG_MIN = -(2**63)
AGGREGATIONS = ("min", "max", "avg", "sum")


class BadQuery(ValueError):
    """A query parameter Flink would refuse (400)."""


def job_metrics(view: JobView) -> dict[str, float]:
    """Job-scope metrics (Flink's ``JobManagerJobMetricGroup``)."""
    stats = view.checkpoints
    last = stats.latest_completed
    restored = stats.latest_restored
    end = view.end_time if view.end_time >= 0 else view.now
    running = view.state == "RUNNING"
    return {
        "numRestarts": view.num_restarts,
        "uptime": max(0, end - view.status_timestamps.get("RUNNING", end)) if running else 0,
        "lastCheckpointDuration": max(0, last.end_to_end_duration) if last else -1,
        "lastCheckpointSize": last.total("checkpointed_size") if last else -1,
        "lastCheckpointFullSize": last.total("state_size") if last else -1,
        "lastCheckpointProcessedData": last.total("processed_data") if last else -1,
        "lastCheckpointPersistedData": last.total("persisted_data") if last else -1,
        "lastCompletedCheckpointId": last.checkpoint_id if last else -1,
        "lastCheckpointRestoreTimestamp": restored.restore_timestamp if restored else -1,
        "numberOfCompletedCheckpoints": stats.completed,
        "numberOfFailedCheckpoints": stats.failed,
        "numberOfInProgressCheckpoints": stats.in_progress,
        "totalNumberOfCheckpoints": stats.total,
    }


def subtask_metrics(sample: SubtaskMetricsView | None) -> dict[str, float]:
    """Task-scope metrics of one subtask (empty before its first sample)."""
    if sample is None:
        return {}
    return {
        "numRecordsIn": sample.records_in,
        "numRecordsOut": sample.records_out,
        "numBytesOut": sample.bytes_out,
        # Flink's numBuffersOut; numBuffersIn sums Flink's numBuffersInLocal and ...Remote
        "numBuffersIn": sample.buffers_in,
        "numBuffersOut": sample.buffers_out,
        "numRecordsInPerSecond": round(sample.records_in_per_second, 3),
        "numRecordsOutPerSecond": round(sample.records_out_per_second, 3),
        "numBytesOutPerSecond": round(sample.bytes_out_per_second, 3),
        "busyTimeMsPerSecond": round(sample.busy_ratio * 1000.0, 3),
        "backPressuredTimeMsPerSecond": round(sample.backpressured_ratio * 1000.0, 3),
        "idleTimeMsPerSecond": round(sample.idle_ratio * 1000.0, 3),
        "accumulatedBusyTime": sample.busy_ms,
        "accumulatedBackPressuredTime": sample.backpressured_ms,
        "accumulatedIdleTime": sample.idle_ms,
        "currentInputWatermark": sample.input_watermark,
        # undertow's own (Flink blocks the task instead): the overdraft bound's counters
        "maxOverdraftBuffers": sample.max_overdraft_buffers,
        "numOverdraftExceeded": sample.overdraft_exceeded,
        **debloat_metrics(sample),
        # the user's metrics (get_metrics_group()), as "<operator>.<group...>.<name>"
        **sample.user_metrics,
    }


def debloat_metrics(sample: SubtaskMetricsView) -> dict[str, float]:
    """Buffer debloating's task metrics, named as Flink 1.x registers them at task scope;
    none while debloating is off."""
    size, estimate = sample.debloated_buffer_size, sample.estimated_time_to_consume_buffers_ms
    if size is None or estimate is None:
        return {}
    return {"debloatedBufferSize": size, "estimatedTimeToConsumeBuffersMs": estimate}


def vertex_metrics(vertex: VertexView) -> dict[str, float]:
    """A vertex's metrics as Flink's vertex endpoint names them: ``<subtask>.<metric>``."""
    named: dict[str, float] = {}
    for index, sample in enumerate(vertex.metrics):
        for name, value in subtask_metrics(sample).items():
            named[f"{index}.{name}"] = value
    return named


# -- REST bodies -------------------------------------------------------------------------------
def _render(value: float) -> str:
    """Flink serves metric values as strings (integers without a fraction)."""
    if isinstance(value, float) and not value.is_integer():
        return repr(value)
    return str(int(value))


def metric_list(metrics: dict[str, float], get: str | None) -> list[Json]:
    """Flink's ``MetricCollectionResponseBody``: ids, or ids and values of ``get``."""
    if get is None:
        return [{"id": name} for name in metrics]
    return [
        {"id": name, "value": _render(metrics[name])} for name in _names(get) if name in metrics
    ]


def aggregated_subtask_metrics(
    vertex: VertexView, get: str | None, agg: str | None, subtasks: str | None
) -> list[Json]:
    """Flink's ``AggregatedMetricsResponseBody`` over the chosen subtasks."""
    chosen = _indices(subtasks, vertex.parallelism)
    per_subtask = [subtask_metrics(vertex.metrics[i]) for i in chosen]
    known = list(dict.fromkeys(name for m in per_subtask for name in m))
    if get is None:
        return [{"id": name} for name in known]
    kinds = AGGREGATIONS if agg is None else tuple(_names(agg))
    for kind in kinds:
        if kind not in AGGREGATIONS:
            raise BadQuery(f"agg: unknown aggregation {kind!r}; use {', '.join(AGGREGATIONS)}")
    body = []
    for name in _names(get):
        values = [m[name] for m in per_subtask if name in m]
        if not values:
            continue
        entry: Json = {"id": name}
        every = {"min": min(values), "max": max(values), "sum": sum(values),
                 "avg": sum(values) / len(values)}  # fmt: skip
        entry.update({kind: every[kind] for kind in kinds})
        body.append(entry)
    return body


def watermarks(vertex: VertexView) -> list[Json]:
    """``/jobs/:jobid/vertices/:vertexid/watermarks``: each reporting subtask's
    ``currentInputWatermark``."""
    return [
        {"id": f"{index}.currentInputWatermark", "value": str(sample.input_watermark)}
        for index, sample in enumerate(vertex.metrics)
        if sample is not None
    ]


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _indices(text: str | None, parallelism: int) -> list[int]:
    """``0,2-3`` -> [0, 2, 3]; None: every subtask."""
    if text is None:
        return list(range(parallelism))
    chosen: list[int] = []
    for part in _names(text):
        low, sep, high = part.partition("-")
        try:
            first, last = int(low), int(high if sep else low)
        except ValueError:
            raise BadQuery(f"subtasks: {part!r} is neither an index nor a range") from None
        if not 0 <= first <= last < parallelism:
            raise BadQuery(f"subtasks: {part!r} outside 0-{parallelism - 1}")
        chosen.extend(range(first, last + 1))
    return chosen
