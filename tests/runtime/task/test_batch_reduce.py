"""reduce_batches: the running reductions equal a sequential per-record reduce (with a
non-commutative function, so order matters), and the state survives snapshot, restore and
rescaling through its per-key-group blobs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import Batched, keyed_batch_harness

from undertow.core.errors import BatchError
from undertow.runtime.task.batch_reduce import BatchReduceOperator
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing.harness import OneInputOperatorTestHarness


def _sum_and_concat(a: pa.RecordBatch, b: pa.RecordBatch) -> pa.RecordBatch:
    """Associative, not commutative: sums ``v``, concatenates ``s`` (earlier first)."""
    s = pc.binary_join_element_wise(a.column("s"), b.column("s"), "")
    return pa.record_batch({"v": pc.add(a.column("v"), b.column("v")), "s": s})


def _op(fn: Any = _sum_and_concat, *, subtask: int = 0, parallelism: int = 1,
        blobs: dict[int, bytes] | None = None,
        ) -> Batched[BatchReduceOperator]:  # fmt: skip
    return keyed_batch_harness(BatchReduceOperator(None, fn, ["k"]), "Keyed Batch Reduce",
                               subtask=subtask, parallelism=parallelism, blobs=blobs)  # fmt: skip


def _batch(rows: list[tuple[int, int, str]]) -> pa.RecordBatch:
    return pa.record_batch({"k": pa.array([r[0] for r in rows], pa.int64()),
                            "v": pa.array([r[1] for r in rows], pa.int64()),
                            "s": pa.array([r[2] for r in rows], pa.string())})  # fmt: skip


def _rows(harness: OneInputOperatorTestHarness) -> list[dict[str, Any]]:
    return [row for batch in harness.extract_output_values() for row in batch.to_pylist()]


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.lists(
            st.tuples(st.integers(0, 5), st.integers(-100, 100), st.sampled_from("abc")),
            max_size=24,
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_running_reductions_equal_a_sequential_reduce(batches: list[list[Any]]) -> None:
    with _op() as (_, harness):
        for rows in batches:
            harness.process_element(_batch(rows))
        got = _rows(harness)
    state: dict[int, tuple[int, str]] = {}
    want = []
    for k, v, s in (r for rows in batches for r in rows):
        old = state.get(k)
        state[k] = (v, s) if old is None else (old[0] + v, old[1] + s)
        want.append({"k": k, "v": state[k][0], "s": state[k][1]})
    assert got == want


def test_the_scan_calls_the_function_log_times() -> None:
    calls: list[int] = []

    def counted(a: pa.RecordBatch, b: pa.RecordBatch) -> pa.RecordBatch:
        calls.append(a.num_rows)
        return _sum_and_concat(a, b)

    with _op(counted) as (_, harness):
        harness.process_element(_batch([(i % 2, 1, "x") for i in range(64)]))
        assert [r["v"] for r in _rows(harness)][-2:] == [32, 32]
    assert len(calls) == 5  # runs of 32 rows: steps 1, 2, 4, 8, 16


def test_snapshot_restore_and_rescale_continue_every_key() -> None:
    first = _batch([(k, 1, "a") for k in range(30)])
    with _op() as (op, harness):
        harness.process_element(first)
        blobs = op.snapshot_key_groups()
    assert len(blobs) > 1  # one blob per non-empty key group
    seen: dict[int, tuple[int, str]] = {}
    for subtask in range(3):  # rescale 1 -> 3: each new subtask keeps its key groups
        mine = key_group_range_for_subtask(16, 3, subtask)
        with _op(subtask=subtask, parallelism=3, blobs=blobs) as (op, h):
            assert set(op.snapshot_key_groups()) == set(blobs) & set(mine)
            h.process_element(_batch([(k, 2, "b") for k in range(30)]))
            for row in _rows(h):
                if assign_to_key_group(row["k"], 16) in mine:
                    seen[row["k"]] = (row["v"], row["s"])
    assert seen == {k: (3, "ab") for k in range(30)}  # each key continued from the snapshot


def test_a_result_of_another_schema_or_length_names_operator_and_subtask() -> None:
    def wrong(a: pa.RecordBatch, b: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch({"v": pc.add(a.column("v"), b.column("v"))})

    message = r"operator 'Keyed Batch Reduce' \(subtask 2/2\): reduce_batches\(\) returned 1 rows"
    with (
        _op(wrong, subtask=1, parallelism=2) as (_, harness),
        pytest.raises(BatchError, match=message),
    ):
        harness.process_element(_batch([(1, 1, "a"), (1, 2, "b")]))
    with _op(lambda a, b: a.slice(1)) as (_, harness), pytest.raises(BatchError, match="0 rows"):
        harness.process_element(_batch([(1, 1, "a"), (1, 2, "b")]))


def test_a_null_reduced_number_and_a_null_key_are_refused() -> None:
    def nulls(a: pa.RecordBatch, b: pa.RecordBatch) -> pa.RecordBatch:
        v = pa.array(np.zeros(b.num_rows, dtype=np.int64), mask=np.ones(b.num_rows, dtype=bool))
        return pa.record_batch({"v": v, "s": b.column("s")})

    with _op(nulls) as (_, harness), pytest.raises(BatchError, match="column 'v' is null"):
        harness.process_element(_batch([(1, 1, "a"), (1, 2, "b")]))
    with _op() as (_, harness), pytest.raises(BatchError, match="key column 'k' has 1 null"):
        harness.process_element(pa.record_batch({"k": [1, None], "v": [1, 2], "s": ["a", "b"]}))


def test_a_batch_without_the_first_batchs_columns_is_refused() -> None:
    with _op() as (_, harness):
        harness.process_element(_batch([(1, 1, "a")]))
        with pytest.raises(BatchError, match=r"a batch has the columns \['k', 'v'\], the first"):
            harness.process_element(pa.record_batch({"k": [1], "v": [2]}))


def _sum_and_last(a: pa.RecordBatch, b: pa.RecordBatch) -> pa.RecordBatch:
    """Numeric columns only (the numpy path of the scan): a sum, and the later value."""
    return pa.record_batch({"v": pc.add(a.column("v"), b.column("v")), "w": b.column("w")})


@settings(max_examples=30, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 3), st.integers(-9, 9), st.floats(-1, 1)), max_size=40),
        min_size=1,
        max_size=3,
    )
)
def test_numeric_running_reductions_equal_a_sequential_reduce(batches: list[list[Any]]) -> None:
    with _op(_sum_and_last) as (_, harness):
        for rows in batches:
            harness.process_element(pa.record_batch({
                "k": pa.array([r[0] for r in rows], pa.int64()),
                "v": pa.array([r[1] for r in rows], pa.int64()),
                "w": pa.array([r[2] for r in rows], pa.float64()),
            }))  # fmt: skip
        got = _rows(harness)
    state: dict[int, int] = {}
    want = []
    for k, v, w in (r for rows in batches for r in rows):
        state[k] = state.get(k, 0) + v
        want.append({"k": k, "v": state[k], "w": w})
    assert got == want
