"""Event-time session windows of batch streams: the same sessions and aggregates as the
record path's window operator with ``EventTimeSessionWindows`` fed the same rows record by
record (late rows included), and session state that survives snapshot, restore and
rescaling through key-group blobs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import Batched, keyed_batch_harness

from undertow.api.functions import AggregateFunction, ProcessWindowFunction
from undertow.api.window import EventTimeSessionWindows, TimeWindow
from undertow.core.types import MAX_WATERMARK
from undertow.runtime.task.batch_sessions import BatchSessionAggregate
from undertow.runtime.task.window_aggregates import ColumnAggregate
from undertow.runtime.task.window_functions import aggregate_window_contents
from undertow.runtime.task.window_operator import WindowOperator
from undertow.testing.harness import KeyedOneInputOperatorTestHarness, OneInputOperatorTestHarness


def _sessions(kind: str, gap: int, *, subtask: int = 0, parallelism: int = 1,
              blobs: dict[int, bytes] | None = None) -> Batched[BatchSessionAggregate]:  # fmt: skip
    op = BatchSessionAggregate([ColumnAggregate.of(kind, "v")], ["k"], "t", gap)
    return keyed_batch_harness(op, "Session Batch", subtask=subtask, parallelism=parallelism,
                               blobs=blobs)  # fmt: skip


def _batch(rows: list[tuple[int, int, int]]) -> pa.RecordBatch:
    k, t, v = zip(*rows) if rows else ((), (), ())
    return pa.RecordBatch.from_pydict({"k": pa.array(k, pa.int64()), "t": pa.array(t, pa.int64()),
                                       "v": pa.array(v, pa.int64())})  # fmt: skip


def _results(harness: OneInputOperatorTestHarness, kind: str) -> dict[tuple[int, int, int], Any]:
    out: dict[tuple[int, int, int], Any] = {}
    for batch, stamp in harness.get_output():
        rows = batch.to_pylist()
        assert stamp == max(r["window_end"] for r in rows) - 1
        for row in rows:
            key = (row["k"], row["window_start"], row["window_end"])
            assert key not in out, f"session {key} fired twice"
            out[key] = row["count" if kind == "count" else "v"]
    return out


class _Fold(AggregateFunction[Any, list[int], list[int]]):
    """The record path's accumulator: every value of the session (folded at the end)."""

    def create_accumulator(self) -> list[int]:
        return []

    def add(self, value: Any, accumulator: list[int]) -> list[int]:
        return [*accumulator, value[1]]

    def get_result(self, accumulator: list[int]) -> list[int]:
        return accumulator

    def merge(self, acc_a: list[int], acc_b: list[int]) -> list[int]:
        return acc_a + acc_b


class _Emit(ProcessWindowFunction[Any, Any, Any, TimeWindow]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        (values,) = elements
        yield key, context.window().start, context.window().end, values


def _record_path(kind: str, plan: list[Any], gap: int) -> dict[tuple[int, int, int], Any]:
    """The same rows through the record path's session windows, record by record."""
    contents = aggregate_window_contents(_Fold(), _Emit())
    assigner = EventTimeSessionWindows.with_gap(gap)
    op = WindowOperator(assigner=assigner, trigger=assigner.get_default_trigger(None),
                        key_selector=lambda v: v[0], window_function=contents.window_function,
                        state_descriptor=contents.state_descriptor)  # fmt: skip
    harness = KeyedOneInputOperatorTestHarness(op)
    harness.open()
    for step in plan:
        if isinstance(step, int):
            harness.process_watermark(step)
        else:
            harness.process_elements([(k, v) for k, _, v in step], [t for _, t, _ in step])
    harness.process_watermark(MAX_WATERMARK)
    out = {}
    for (k, start, end, vs), _ in harness.get_output():
        out[(k, start, end)] = {"sum": sum(vs), "count": len(vs), "min": min(vs),
                                "max": max(vs), "mean": sum(vs) / len(vs)}[kind]  # fmt: skip
    harness.close()
    return out


def _monotone(plan: list[Any]) -> list[Any]:
    """The plan with the watermarks a valve would pass on: only rising ones."""
    out, top = [], -1
    for step in plan:
        if isinstance(step, int):
            if step <= top:
                continue
            top = step
        out.append(step)
    return out


row = st.tuples(st.integers(0, 4), st.integers(0, 200), st.integers(-50, 50))
steps = st.lists(st.one_of(st.lists(row, min_size=1, max_size=12), st.integers(0, 260)),
                 max_size=12)  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(["sum", "min", "max", "count", "mean"]), plan=steps,
       gap=st.sampled_from([1, 5, 20]))  # fmt: skip
def test_sessions_equal_the_record_paths_session_windows(
    kind: str, plan: list[Any], gap: int
) -> None:
    plan = _monotone(plan)
    with _sessions(kind, gap) as (op, harness):
        for step in plan:
            if isinstance(step, int):
                harness.process_watermark(step)
            else:
                harness.process_element(_batch(step))
        harness.process_watermark(MAX_WATERMARK)
        got = _results(harness, kind)
    want = _record_path(kind, plan, gap)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key
    assert op.table is None or op.table.num_slots == 0  # fired sessions are forgotten


def test_a_late_row_joins_only_a_session_open_when_it_comes() -> None:
    """Watermark 50, gap 10, one batch: t=38 (late: [38, 48) ended), t=45 (on time), t=38
    again. The first late row finds no open session and is dropped (as Flink drops it record
    by record); the second joins the session t=45 opened: [38, 55) with two rows."""
    with _sessions("count", 10) as (op, harness):
        harness.process_watermark(50)
        harness.process_element(_batch([(1, 38, 0), (1, 45, 0), (1, 38, 0)]))
        harness.process_watermark(MAX_WATERMARK)
        assert _results(harness, "count") == {(1, 38, 55): 2}
        assert op.late_rows_dropped == 1


def test_session_state_rescales_through_its_key_group_blobs() -> None:
    rows = [(k, t, k * 100 + t) for k in range(12) for t in (1, 4, 30)]
    with _sessions("sum", 10) as (op, harness):
        harness.process_element(_batch(rows))
        harness.process_watermark(20)  # [1, 14) fires before the snapshot; [30, 40) is state
        blobs = op.snapshot_key_groups()
        assert _results(harness, "sum") == {(k, 1, 14): 2 * k * 100 + 5 for k in range(12)}
    merged: dict[tuple[int, int, int], Any] = {}
    for subtask in range(3):
        with _sessions("sum", 10, subtask=subtask, parallelism=3, blobs=blobs) as (_, again):
            again.process_watermark(MAX_WATERMARK)  # restored sessions fire with no new batch
            merged.update(_results(again, "sum"))
    assert merged == {(k, 30, 40): k * 100 + 30 for k in range(12)}
    with _sessions("sum", 10, blobs=blobs) as (_, again):  # a restored session still merges
        again.process_element(_batch([(k, 35, 1) for k in range(12)]))
        again.process_watermark(MAX_WATERMARK)
        assert _results(again, "sum") == {(k, 30, 45): k * 100 + 31 for k in range(12)}
