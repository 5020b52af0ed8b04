"""Flink's metric bodies (:mod:`undertow.runtime.master.rest.metrics_responses`) from subtask
samples: names, values as strings, aggregation over chosen subtasks, and bad queries named."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from undertow.runtime.master.metrics import SubtaskMetricsView
from undertow.runtime.master.rest.metrics_responses import (
    BadQuery,
    aggregated_subtask_metrics,
    metric_list,
    subtask_metrics,
    vertex_metrics,
    watermarks,
)


def sample(records_in: int, busy: float = 0.25, watermark: int = 7) -> SubtaskMetricsView:
    return SubtaskMetricsView(
        timestamp_ms=1, records_in=records_in, records_out=0, bytes_out=0, busy_ms=0,
        backpressured_ms=0, idle_ms=0, busy_ratio=busy, backpressured_ratio=0.0,
        idle_ratio=1 - busy, input_watermark=watermark, user_metrics={"map.seen": 3.0},
    )  # fmt: skip


VERTEX: Any = SimpleNamespace(parallelism=3, metrics=[sample(10), sample(30, 0.5), None])


def test_a_subtask_has_flinks_names_and_none_before_its_first_sample() -> None:
    metrics = subtask_metrics(sample(10))
    assert metrics["numRecordsIn"] == 10 and metrics["busyTimeMsPerSecond"] == 250.0
    assert metrics["map.seen"] == 3.0 and "debloatedBufferSize" not in metrics
    assert (metrics["maxOverdraftBuffers"], metrics["numOverdraftExceeded"]) == (0, 0)
    assert subtask_metrics(None) == {}
    assert "1.numRecordsIn" in vertex_metrics(VERTEX) and "2.numRecordsIn" not in vertex_metrics(
        VERTEX
    )


def test_the_overdraft_counters_are_task_metrics() -> None:
    """So a running job shows them (its accumulators only come when a task ends)."""
    view = dataclasses.replace(sample(1), max_overdraft_buffers=24, overdraft_exceeded=3)
    metrics = subtask_metrics(view)
    assert (metrics["maxOverdraftBuffers"], metrics["numOverdraftExceeded"]) == (24, 3)


def test_values_are_strings_and_only_asked_names_are_listed() -> None:
    metrics = {"a": 2.0, "b": 0.5}
    assert metric_list(metrics, None) == [{"id": "a"}, {"id": "b"}]
    assert metric_list(metrics, "b, a,zz") == [
        {"id": "b", "value": "0.5"},
        {"id": "a", "value": "2"},
    ]


def test_aggregation_over_chosen_subtasks() -> None:
    body = aggregated_subtask_metrics(VERTEX, "numRecordsIn", "min,max,sum,avg", "0-1")
    assert body == [{"id": "numRecordsIn", "min": 10, "max": 30, "sum": 40, "avg": 20.0}]
    assert aggregated_subtask_metrics(VERTEX, "numRecordsIn", "sum", "2") == []  # no sample
    assert watermarks(VERTEX) == [
        {"id": "0.currentInputWatermark", "value": "7"},
        {"id": "1.currentInputWatermark", "value": "7"},
    ]


@pytest.mark.parametrize(
    ("agg", "subtasks", "message"),
    [
        ("median", None, "agg: unknown aggregation 'median'"),
        (None, "x", "subtasks: 'x' is neither an index nor a range"),
        (None, "1-3", "subtasks: '1-3' outside 0-2"),
    ],
)
def test_a_bad_query_is_named(agg: str | None, subtasks: str | None, message: str) -> None:
    with pytest.raises(BadQuery, match=message):
        aggregated_subtask_metrics(VERTEX, "numRecordsIn", agg, subtasks)
