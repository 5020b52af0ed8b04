"""Batch-stream operators: to_batches' size, delay and barrier flushes; function checks;
map_pandas."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from undertow.common.row import Row
from undertow.core.errors import BatchError
from undertow.runtime.task.batch_operators import (
    FilterBatches,
    MapBatches,
    MapPandas,
    ToBatches,
    ToRecords,
)
from undertow.runtime.task.batch_process import BatchProcessOperator
from undertow.runtime.task.batch_reduce import BatchReduceOperator
from undertow.testing.harness import OneInputOperatorTestHarness

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string())])


def _sizes(harness: OneInputOperatorTestHarness) -> list[int]:
    return [b.num_rows for b in harness.extract_output_values()]


def test_to_batches_cuts_at_max_rows_and_flushes_the_rest_after_max_delay() -> None:
    with OneInputOperatorTestHarness(ToBatches(SCHEMA, 4, 50)) as harness:
        harness.process_elements([(i, str(i)) for i in range(10)])
        assert _sizes(harness) == [4, 4]  # the remainder of 2 waits
        harness.set_processing_time(49)
        assert _sizes(harness) == [4, 4]
        harness.set_processing_time(50)
        assert _sizes(harness) == [4, 4, 2]
        assert harness.extract_output_values()[2].to_pylist() == [
            {"k": 8, "s": "8"}, {"k": 9, "s": "9"},
        ]  # fmt: skip


def test_to_batches_flushes_before_a_barrier_and_at_the_end() -> None:
    op = ToBatches(SCHEMA, 100, 10_000)
    with OneInputOperatorTestHarness(op) as harness:
        harness.process_elements([{"k": 1, "s": "a"}])
        op.prepare_snapshot_pre_barrier(1)
        assert _sizes(harness) == [1]  # nothing stays buffered across a checkpoint
        harness.process_elements([Row(k=2, s="b")])
        harness.finish()
        assert _sizes(harness) == [1, 1]


def test_to_batches_refuses_records_that_do_not_fit_naming_the_operator() -> None:
    with (
        OneInputOperatorTestHarness(ToBatches(SCHEMA, 1, 10), name="To Batches") as harness,
        pytest.raises(BatchError, match=r"operator 'To Batches' \(subtask 1/1\).*do not fit"),
    ):
        harness.process_elements([("not an int", "a")])


def test_map_and_filter_check_what_the_function_returns() -> None:
    batch = pa.record_batch({"k": [1, 2, 3], "s": ["a", "b", "c"]})
    with (
        OneInputOperatorTestHarness(MapBatches(None, lambda b: b.to_pylist()), name="M") as h,
        pytest.raises(BatchError, match=r"'M'.*must return a pyarrow.RecordBatch.*got list"),
    ):
        h.process_element(batch)
    with (
        OneInputOperatorTestHarness(FilterBatches(None, lambda b: [True]), name="F") as h,
        pytest.raises(BatchError, match=r"'F'.*mask of type bool and 1 entries for a batch of 3"),
    ):
        h.process_element(batch)
    with OneInputOperatorTestHarness(FilterBatches(None, lambda b: [True, None, True])) as h:
        h.process_element(batch, 7)
        assert h.get_output()[0][0].column("k").to_pylist() == [1, 3]
        assert h.get_output()[0][1] == 7


def test_to_records_gives_rows_with_names_and_the_batch_timestamp() -> None:
    with OneInputOperatorTestHarness(ToRecords()) as harness:
        harness.process_element(pa.record_batch({"k": [1, 2], "s": ["a", "b"]}), 5)
        assert harness.get_output() == [(Row(k=1, s="a"), 5), (Row(k=2, s="b"), 5)]


def test_map_pandas_converts_to_the_declared_schema_and_names_bad_results() -> None:
    declared = pa.schema([("k", pa.int64()), ("n", pa.int32())])

    def doubled(df: Any) -> Any:
        df = df[df.k > 1]  # a filtered frame: its index no longer starts at 0
        return df.assign(n=df.s.str.len() * 2)[["n", "k"]]  # columns out of order

    with OneInputOperatorTestHarness(MapPandas(None, doubled, declared)) as harness:
        harness.process_element(pa.record_batch({"k": [1, 2, 3], "s": ["a", "bb", "ccc"]}), 7)
        [(batch, stamp)] = harness.get_output()
    assert batch.schema == declared and stamp == 7
    assert batch.to_pylist() == [{"k": 2, "n": 4}, {"k": 3, "n": 6}]
    where = r"operator 'Map Pandas' \(subtask 1/1\): map_pandas\(\)"
    with (
        OneInputOperatorTestHarness(MapPandas(None, lambda df: df, declared), name="Map Pandas")
        as harness,
        pytest.raises(BatchError, match=where + r" returned a DataFrame with columns \['k', 's'\]"),
    ):  # fmt: skip
        harness.process_element(pa.record_batch({"k": [1], "s": ["a"]}))
    with (
        OneInputOperatorTestHarness(MapPandas(None, lambda df: 1), name="Map Pandas") as harness,
        pytest.raises(BatchError, match=where + " must return a pandas.DataFrame, got int"),
    ):
        harness.process_element(pa.record_batch({"k": [1]}))


class Listening:
    """A batch function that is also a ``CheckpointListener`` and wants each barrier."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, int]] = []

    def map_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.heard.append(("barrier", checkpoint_id))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.heard.append(("complete", checkpoint_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.heard.append(("aborted", checkpoint_id))


@pytest.mark.parametrize(
    "build",
    [
        lambda f: MapBatches(f, f.map_batch),
        lambda f: BatchProcessOperator(f, ["k"]),
        lambda f: BatchReduceOperator(f, f.map_batch, ["k"]),
    ],
    ids=["map_batches", "process_batches", "reduce_batches"],
)
def test_batch_operators_tell_their_function_of_checkpoints(build: Any) -> None:
    """As the record operators (and Flink's AbstractUdfStreamOperator): a function with the
    hooks hears of each barrier, completion and abort."""
    function = Listening()
    operator = build(function)
    operator.prepare_snapshot_pre_barrier(4)
    operator.notify_checkpoint_complete(4)
    operator.notify_checkpoint_aborted(5)
    assert function.heard == [("barrier", 4), ("complete", 4), ("aborted", 5)]
