"""Columnar keyed aggregations: per-row running results equal a per-record fold, and the
state survives snapshot, restore and rescaling through its per-key-group blobs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import Batched, keyed_batch_harness

from undertow.core.errors import BatchError
from undertow.runtime.task.batch_aggregate import BatchAggregateOperator, segmented_scan
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing.harness import OneInputOperatorTestHarness


def _op(kind: str, column: str | None, keys: list[str], *, subtask: int = 0,
        parallelism: int = 1, blobs: dict[int, bytes] | None = None,
        ) -> Batched[BatchAggregateOperator]:  # fmt: skip
    return keyed_batch_harness(BatchAggregateOperator(kind, column, keys), "Keyed Batch Agg",
                               subtask=subtask, parallelism=parallelism, blobs=blobs)  # fmt: skip


def _rows(harness: OneInputOperatorTestHarness) -> list[dict[str, Any]]:
    return [row for batch in harness.extract_output_values() for row in batch.to_pylist()]


def _oracle(kind: str, rows: list[tuple[int, int]]) -> list[Any]:
    """What a per-record fold emits, record by record."""
    state: dict[int, list[Any]] = {}
    out: list[Any] = []
    for k, v in rows:
        s = state.setdefault(k, [0, 0, None, None])
        s[0] += v
        s[1] += 1
        s[2] = v if s[2] is None else min(s[2], v)
        s[3] = v if s[3] is None else max(s[3], v)
        out.append({"sum": s[0], "count": s[1], "min": s[2], "max": s[3],
                    "mean": s[0] / s[1]}[kind])  # fmt: skip
    return out


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["sum", "min", "max", "count", "mean"]),
    batches=st.lists(
        st.lists(
            st.tuples(st.integers(0, 6), st.integers(-(10**6), 10**6)), min_size=0, max_size=20
        ),
        min_size=1,
        max_size=5,
    ),
    key_kind=st.sampled_from(["dense int", "wide int", "string"]),
)
def test_running_aggregates_equal_a_per_record_fold(
    kind: str, batches: list[list[Any]], key_kind: str
) -> None:
    """Keys of every kind the slot index serves: dense integers (its lookup table), integers
    spread too wide for one (``index_in``) and strings."""
    column = None if kind == "count" else "v"
    key = {"dense int": lambda k: k, "wide int": lambda k: k * 10**15 - 3 * 10**15,
           "string": str}[key_kind]  # fmt: skip
    with _op(kind, column, ["k"]) as (_, harness):
        for rows in batches:
            harness.process_element(
                pa.record_batch({"k": [key(r[0]) for r in rows],
                                 "v": pa.array([r[1] for r in rows], type=pa.int64())})
            )  # fmt: skip
        got = _rows(harness)
    flat = [r for rows in batches for r in rows]
    name = "count" if kind == "count" else "v"
    assert [g["k"] for g in got] == [key(k) for k, _ in flat]
    expected = _oracle(kind, flat)
    if kind == "mean":
        assert [g[name] for g in got] == pytest.approx(expected)
    else:
        assert [g[name] for g in got] == expected


def test_compound_string_keys_and_float_sums() -> None:
    batch = pa.record_batch(
        {"a": ["x", "y", "x", "x"], "b": [1, 1, 2, 1], "v": [0.5, 1.0, 2.0, 0.25]}
    )
    with _op("sum", "v", ["a", "b"]) as (_, harness):
        harness.process_element(batch)
        assert _rows(harness) == [
            {"a": "x", "b": 1, "v": 0.5}, {"a": "y", "b": 1, "v": 1.0},
            {"a": "x", "b": 2, "v": 2.0}, {"a": "x", "b": 1, "v": 0.75},
        ]  # fmt: skip


def test_segmented_scan_restarts_at_each_group() -> None:
    values = np.array([3, 1, 2, 5, 4, 9])
    groups = np.array([0, 0, 0, 1, 1, 2])
    assert segmented_scan(np.minimum, values, groups).tolist() == [3, 1, 1, 5, 4, 9]


def test_snapshot_restore_and_rescale_keep_every_key() -> None:
    keys = list(range(40))
    first = pa.record_batch({"k": keys, "v": [1] * 40})
    with _op("sum", "v", ["k"]) as (op, harness):
        harness.process_element(first)
        blobs = op.snapshot_key_groups()
    assert len(blobs) > 1  # one blob per non-empty key group
    seen: dict[int, int] = {}
    for subtask in range(3):  # rescale 1 -> 3: each new subtask keeps its key groups
        mine = key_group_range_for_subtask(16, 3, subtask)
        with _op("sum", "v", ["k"], subtask=subtask, parallelism=3, blobs=blobs) as (op, h):
            assert set(op.snapshot_key_groups()) == set(blobs) & set(mine)
            h.process_element(first)
            for row in _rows(h):
                if assign_to_key_group(row["k"], 16) in mine:
                    seen[row["k"]] = row["v"]
    assert seen == {k: 2 for k in keys}  # each key's sum continued from the snapshot, once


def test_nulls_in_the_key_column_name_operator_and_subtask() -> None:
    message = r"operator 'Keyed Batch Agg' \(subtask 2/2\).*key column 'k' has 1 null"
    with (
        _op("sum", "v", ["k"], subtask=1, parallelism=2) as (_, harness),
        pytest.raises(BatchError, match=message),
    ):
        harness.process_element(pa.record_batch({"k": [1, None], "v": [1, 2]}))


def test_a_missing_or_non_numeric_column_is_refused() -> None:
    with (
        _op("sum", "v", ["k"]) as (_, harness),
        pytest.raises(BatchError, match=r"sum\('v'\): no column 'v'"),
    ):
        harness.process_element(pa.record_batch({"k": [1], "w": [2]}))
    with (
        _op("max", "v", ["k"]) as (_, harness),
        pytest.raises(BatchError, match="has type string; a numeric column is needed"),
    ):
        harness.process_element(pa.record_batch({"k": [1], "v": ["a"]}))
