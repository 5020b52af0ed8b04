"""Several aggregates per key and window in one operator: every aggregate equals a per-record
model of Flink's windows over the same rows, through a snapshot and a restore at another
parallelism at any point (Hypothesis); one aggregate keeps the accumulator names older
snapshots hold; bad value columns are errors naming the operator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import (
    AGGREGATE,
    MAX_PARALLELISM,
    flink_window_rows,
    keyed_batch_harness,
)

from undertow.core.errors import BatchError
from undertow.core.types import MAX_WATERMARK
from undertow.runtime.task.batch_windows import BatchWindowAggregate
from undertow.runtime.task.window_aggregates import ColumnAggregate, WindowAggregates
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask

#: Value columns of the test batches: ``v`` int64, ``w`` float64 (halves: sums stay exact).
COLUMNS = {"v": 0, "w": 1}


def _batch(rows: list[tuple[int, int, int, float]]) -> pa.RecordBatch:
    k, t, v, w = zip(*rows)
    return pa.RecordBatch.from_pydict({"k": pa.array(k, pa.int64()), "t": pa.array(t, pa.int64()),
                                       "v": pa.array(v, pa.int64()),
                                       "w": pa.array(w, pa.float64())})  # fmt: skip


def _subtask_of(key: int, parallelism: int) -> int:
    group = assign_to_key_group(key, MAX_PARALLELISM)
    ranges = [key_group_range_for_subtask(MAX_PARALLELISM, parallelism, i)
              for i in range(parallelism)]  # fmt: skip
    return next(i for i, owned in enumerate(ranges) if group in owned)


def _fired(outputs: list[tuple[pa.RecordBatch, Any]], names: list[str]) -> dict[Any, Any]:
    got: dict[tuple[int, int], dict[str, Any]] = {}
    for batch, stamp in outputs:
        assert batch.schema.names == ["k", "window_start", "window_end", *names]
        for r in batch.to_pylist():
            assert stamp == r["window_end"] - 1
            key = (r["k"], r["window_start"])
            assert key not in got, f"window {key} fired twice"
            got[key] = {n: r[n] for n in names}
    return got


aggregate = st.tuples(st.sampled_from(["sum", "min", "max", "count", "mean"]),
                      st.sampled_from(["v", "w"]))  # fmt: skip
row = st.tuples(st.integers(0, 7), st.integers(0, 200), st.integers(-50, 50),
                st.integers(-20, 20).map(lambda h: h / 2))  # fmt: skip
steps = st.lists(st.one_of(st.lists(row, min_size=1, max_size=12), st.integers(0, 260)),
                 max_size=12)  # fmt: skip


@settings(max_examples=50, deadline=None)
@given(chosen=st.lists(aggregate, min_size=1, max_size=5), plan=steps,
       shape=st.sampled_from([(10, 10), (30, 10), (25, 10)]), cut=st.integers(0, 12),
       parallelism=st.integers(1, 3))  # fmt: skip
def test_every_aggregate_equals_flinks_windows_through_a_restore_at_another_parallelism(
    chosen: list[tuple[str, str]], plan: list[Any], shape: tuple[int, int], cut: int,
    parallelism: int,
) -> None:  # fmt: skip
    """One operator until step ``cut``, then its snapshot restored into ``parallelism``
    subtasks, each given the rows of its key groups (as ``key_by`` routes them). A watermark
    is not part of a snapshot (in Flink neither): each restored subtask first gets the highest
    one before the cut again, as from an upstream that re-emits it, so lateness is the
    model's."""
    size, slide = shape
    aggregates = [ColumnAggregate(kind, None if kind == "count" else column, f"a{i}")
                  for i, (kind, column) in enumerate(chosen)]  # fmt: skip
    names = [a.name for a in aggregates]

    def operator() -> BatchWindowAggregate:
        return BatchWindowAggregate(aggregates, ["k"], "t", size, slide, 0)

    def feed(harness: Any, step: Any, subtask: int = 0, of: int = 1) -> None:
        if isinstance(step, int):
            harness.process_watermark(step)
            return
        mine = [r for r in step if _subtask_of(r[0], of) == subtask]
        if mine:
            harness.process_element(_batch(mine))

    outputs = []
    with keyed_batch_harness(operator(), "Window Batch") as (op, harness):
        for step in plan[:cut]:
            feed(harness, step)
        blobs = op.snapshot_key_groups()
        outputs += harness.get_output()
    for subtask in range(parallelism):
        restored = keyed_batch_harness(operator(), "Window Batch", subtask=subtask,
                                       parallelism=parallelism, blobs=blobs)  # fmt: skip
        with restored as (op, harness):
            before = [step for step in plan[:cut] if isinstance(step, int)]
            again = [max(before)] if before else []
            for step in [*again, *plan[cut:], MAX_WATERMARK]:
                feed(harness, step, subtask, parallelism)
            outputs += harness.get_output()
            assert op.table is None or op.table.num_slots == 0  # fired windows are forgotten
    got = _fired(outputs, names)
    windows = flink_window_rows([*plan, MAX_WATERMARK], size, slide)
    assert got.keys() == windows.keys()
    for key, rows in windows.items():
        for a in aggregates:
            values = [r[COLUMNS[a.column or "v"]] for r in rows]
            assert got[key][a.name] == pytest.approx(AGGREGATE[a.kind](values)), (key, a)


def test_one_aggregate_keeps_the_accumulator_names_of_older_snapshots() -> None:
    int64, f64 = np.dtype(np.int64), np.dtype(np.float64)
    names = {kind: [(a.name, a.dtype) for a in
                    WindowAggregates([ColumnAggregate.of(kind, "v")]).accumulators({"v": int64})]
             for kind in ("sum", "min", "max", "count", "mean")}  # fmt: skip
    assert names == {"sum": [("sum", int64)], "min": [("min", int64)], "max": [("max", int64)],
                     "count": [("count", int64)],
                     "mean": [("sum", f64), ("count", int64)]}  # fmt: skip
    several = WindowAggregates([ColumnAggregate("mean", "v", "m"), ColumnAggregate("sum", "v", "s"),
                                ColumnAggregate("count", None, "n"),
                                ColumnAggregate("max", "w", "top")])  # fmt: skip
    assert [(a.name, a.dtype) for a in several.accumulators({"v": int64, "w": f64})] == [
        ("mean.sum(v)", f64),
        ("count", int64),
        ("sum(v)", int64),
        ("max(w)", f64),
    ]  # mean and count share the row count


def test_a_window_written_with_one_aggregate_restores_into_the_same_aggregate_by_name() -> None:
    """A ``sum("v")`` window's snapshot (legacy names) restored into ``aggregate(total=("v",
    "sum"))``: the open window goes on from its sum."""
    first = BatchWindowAggregate([ColumnAggregate.of("sum", "v")], ["k"], "t", 10, 10, 0)
    with keyed_batch_harness(first, "Window Batch") as (op, harness):
        harness.process_element(_batch([(1, 2, 5, 0.0), (1, 3, 6, 0.0)]))
        blobs = op.snapshot_key_groups()
    again = BatchWindowAggregate([ColumnAggregate("sum", "v", "total")], ["k"], "t", 10, 10, 0)
    with keyed_batch_harness(again, "Window Batch", blobs=blobs) as (_, harness):
        harness.process_element(_batch([(1, 4, 100, 0.0)]))
        harness.process_watermark(MAX_WATERMARK)
        [(batch, _)] = harness.get_output()
    assert batch.to_pylist() == [{"k": 1, "window_start": 0, "window_end": 10, "total": 111}]


@pytest.mark.parametrize(
    "batch, error",
    [
        (pa.record_batch({"k": [1], "t": [1], "v": [1], "w": pa.array([None], pa.float64())}),
         r"operator 'Window Batch' \(subtask 1/1\): max\('w'\): column has 1 null"),
        (pa.record_batch({"k": [1], "t": [1], "v": [1], "w": ["x"]}),
         r"operator 'Window Batch' \(subtask 1/1\): max\('w'\): a numeric column 'w'.*string"),
        (pa.record_batch({"k": [1], "t": [1], "v": [1]}),
         r"max\('w'\): a numeric column 'w' is needed; the batch has \['k', 't', 'v'\]"),
    ],
)  # fmt: skip
def test_a_bad_value_column_is_an_error_naming_the_operator_and_the_aggregate(
    batch: pa.RecordBatch, error: str
) -> None:
    op = BatchWindowAggregate([ColumnAggregate("sum", "v", "s"), ColumnAggregate("max", "w", "m")],
                              ["k"], "t", 10, 10, 0)  # fmt: skip
    with keyed_batch_harness(op, "Window Batch") as (_, harness):
        harness.process_element(_batch([(1, 1, 1, 1.0)]))
        with pytest.raises(BatchError, match=error):
            harness.process_element(batch)
