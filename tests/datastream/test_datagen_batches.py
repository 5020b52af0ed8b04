"""DataGeneratorBatchSource: record batches of a vectorised function of the row indices, the
same rows as DataGeneratorSource's, a split's state its position only."""

from __future__ import annotations

import pickle
from collections import Counter, defaultdict
from typing import Any

import cloudpickle
import numpy as np
import pyarrow as pa
import pytest

from undertow.core.errors import JobExecutionError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.datagen_batches import (
    DataGeneratorBatchSource,
    GeneratorBatchSplit,
)
from undertow.testing.source_reader import CollectingOutput, StandaloneReaderContext


def _pairs(i: np.ndarray) -> pa.RecordBatch:
    return pa.record_batch({"k": i % 7, "v": i})


def _tagged(tag: str) -> Any:
    return lambda i: pa.record_batch({"tag": [tag] * len(i), "i": i})


class _EnumContext:
    def __init__(self, parallelism: int = 1) -> None:
        self.parallelism = parallelism

    def current_parallelism(self) -> int:
        return self.parallelism


def _splits(source: DataGeneratorBatchSource, parallelism: int = 1) -> list[Any]:
    enumerator = source.create_enumerator(_EnumContext(parallelism))  # type: ignore[arg-type]
    return list(enumerator.remaining)  # type: ignore[attr-defined]


def _poll(source: DataGeneratorBatchSource, splits: list[Any], polls: int) -> list[pa.RecordBatch]:
    reader = source.create_reader(StandaloneReaderContext())
    reader.add_splits(splits)
    reader.notify_no_more_splits()
    out = CollectingOutput()
    for _ in range(polls):
        reader.poll_next(out)
    return out.values


def test_a_job_gets_every_index_once_in_batches_of_at_most_batch_rows(
    env: StreamExecutionEnvironment,
) -> None:
    source = DataGeneratorBatchSource(_pairs, count=5000, batch_rows=300)
    stream = env.from_source(source, None, "generator").as_batches()
    with stream.execute_and_collect() as out:
        batches = list(out)
    assert all(isinstance(b, pa.RecordBatch) and 0 < b.num_rows <= 300 for b in batches)
    rows = [(r["k"], r["v"]) for b in batches for r in b.to_pylist()]
    assert Counter(rows) == Counter((i % 7, i) for i in range(5000))


def test_a_keyed_sum_over_generated_batches_equals_the_record_sources(
    env: StreamExecutionEnvironment,
) -> None:
    source = DataGeneratorBatchSource(_pairs, count=3000, batch_rows=256)
    stream = env.from_source(source, None, "generator").as_batches()
    with stream.key_by("k").sum("v").to_records().execute_and_collect() as out:
        last: dict[int, int] = {}
        for row in out:
            last[row[0]] = row[1]
    expected: defaultdict[int, int] = defaultdict(int)
    for i in range(3000):
        expected[i % 7] += i
    assert last == expected


def test_each_reader_takes_every_parallelism_th_index() -> None:
    source = DataGeneratorBatchSource(_pairs, count=10, batch_rows=2)
    first, second = _splits(source, parallelism=2)
    assert [b.column("v").to_pylist() for b in _poll(source, [second], polls=5)] == [
        [1, 3],
        [5, 7],
        [9],
    ]
    assert isinstance(first, GeneratorBatchSplit) and first.position == 0


def test_a_restored_split_resumes_after_its_last_batch_with_the_new_jobs_function() -> None:
    old = DataGeneratorBatchSource(_tagged("old"), count=1000, batch_rows=100)
    reader = old.create_reader(StandaloneReaderContext())
    reader.add_splits(_splits(old))
    out = CollectingOutput()
    reader.poll_next(out)
    reader.poll_next(out)
    assert [b.column("i")[-1].as_py() for b in out.values] == [99, 199]
    state = cloudpickle.dumps(reader.snapshot_state(1))
    assert b"old" not in state  # no user code in the checkpoint

    new = DataGeneratorBatchSource(_tagged("new"), count=1000, batch_rows=100)
    batches = _poll(new, pickle.loads(state), polls=20)
    rows = [r for b in batches for r in b.to_pylist()]
    assert rows == [{"tag": "new", "i": i} for i in range(200, 1000)]


def test_a_throttled_source_emits_small_batches_at_the_rate_in_rows() -> None:
    source = DataGeneratorBatchSource(_pairs, count=None, batch_rows=8192, rows_per_second=1000)
    assert source.batch_rows == 20  # about 20 ms of rows
    assert source.per_second == 50  # the reader's rate counts batches
    assert _poll(source, _splits(source), polls=1)[0].num_rows == 20
    fast = DataGeneratorBatchSource(_pairs, batch_rows=100, rows_per_second=1_000_000)
    assert (fast.batch_rows, fast.per_second) == (100, 10_000)


def test_bad_arguments_are_refused_naming_the_value() -> None:
    with pytest.raises(ValueError, match="batch_rows must be >= 1, got 0"):
        DataGeneratorBatchSource(_pairs, batch_rows=0)
    with pytest.raises(ValueError, match="rows_per_second must be > 0, got -5"):
        DataGeneratorBatchSource(_pairs, rows_per_second=-5)
    with pytest.raises(ValueError, match=r"^DataGeneratorBatchSource: count must be >= 0, got -1"):
        DataGeneratorBatchSource(_pairs, count=-1)


def test_a_function_returning_no_record_batch_fails_the_job_naming_split_and_indices(
    env: StreamExecutionEnvironment,
) -> None:
    env.set_parallelism(1)
    source = DataGeneratorBatchSource(lambda i: {"k": i}, count=10, batch_rows=4)
    stream = env.from_source(source, None, "generator").as_batches()
    message = (
        r"DataGeneratorBatchSource \(split 0\): the generator function returned dict for the "
        r"indices 0\.\.3; it must return a pyarrow.RecordBatch"
    )
    with pytest.raises(JobExecutionError, match=message), stream.execute_and_collect() as out:
        list(out)
