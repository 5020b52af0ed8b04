"""The Delta sink's writers alone (:mod:`undertow.connectors.delta.writer`): one Parquet file per
partition, all finished into committables before a checkpoint, unfinished ones deleted on
close; the batch writer splits record batches by partition."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from undertow.common import Row, Types
from undertow.connectors.delta.committable import DeltaSinkError
from undertow.connectors.delta.writer import DeltaBatchWriter, DeltaWriter

ROW = Types.ROW_NAMED(["day", "v"], [Types.STRING(), Types.LONG()])
CONTEXT: Any = SimpleNamespace(subtask_index=lambda: 2)


def writer(table: Path) -> DeltaWriter:
    return DeltaWriter(CONTEXT, str(table), ROW, ("day",), {}, row_group_size=1024)


def test_one_file_per_partition_each_a_committable_before_the_checkpoint(tmp_path: Path) -> None:
    w = writer(tmp_path)
    for day, v in [("mon", 1), ("tue", 2), ("mon", 3)]:
        w.write(Row(day=day, v=v), None)
    committables = sorted(w.prepare_commit(), key=lambda c: c.path)
    assert [(c.partition_values, c.num_records, c.subtask) for c in committables] == [
        ((("day", "mon"),), 2, 2),
        ((("day", "tue"),), 1, 2),
    ]
    first = committables[0]
    assert first.path.startswith("day=mon/part-00002-") and first.path.endswith(".snappy.parquet")
    assert first.size == (tmp_path / first.path).stat().st_size
    assert pq.read_table(tmp_path / first.path).column("v").to_pylist() == [1, 3]
    assert w.prepare_commit() == []  # nothing open after the checkpoint


def test_close_deletes_what_no_checkpoint_finished(tmp_path: Path) -> None:
    w = writer(tmp_path)
    w.write(Row(day="wed", v=1), None)
    [open_file] = w.open_files.values()
    w.close()
    assert not (tmp_path / open_file.path).exists() and w.open_files == {}


SCHEMA = pa.schema([("day", pa.string()), ("v", pa.int64())])


def batch_writer(table: Path, *partitions: str) -> DeltaBatchWriter:
    return DeltaBatchWriter(CONTEXT, str(table), SCHEMA, partitions, {}, row_group_size=1024)


def test_batches_are_split_by_partition_without_the_partition_columns(tmp_path: Path) -> None:
    w = batch_writer(tmp_path, "day")
    w.write(pa.record_batch({"day": ["mon", "tue", None, "mon"], "v": [1, 2, 3, 4]}, SCHEMA), None)
    w.write(pa.record_batch({"day": ["tue"], "v": [5]}, SCHEMA), None)
    committables = sorted(w.prepare_commit(), key=lambda c: c.path)
    assert [(c.partition_values, c.num_records) for c in committables] == [
        ((("day", None),), 1), ((("day", "mon"),), 2), ((("day", "tue"),), 2),
    ]  # fmt: skip
    tuesday = pq.read_table(tmp_path / committables[2].path)
    assert tuesday.column_names == ["v"] and tuesday.column("v").to_pylist() == [2, 5]
    assert committables[0].path.startswith("day=__HIVE_DEFAULT_PARTITION__/")


def test_an_unpartitioned_batch_file_and_the_refusals(tmp_path: Path) -> None:
    w = batch_writer(tmp_path)
    w.write(pa.record_batch({"day": ["a", "b"], "v": [1, 2]}, SCHEMA), None)
    [c] = w.prepare_commit()
    assert pq.read_table(tmp_path / c.path).num_rows == 2 and c.partition_values == ()
    with pytest.raises(DeltaSinkError, match=r"subtask 2\): a batch of schema \{day: string\}"):
        w.write(pa.record_batch({"day": ["a"]}), None)
    with pytest.raises(DeltaSinkError, match=r"takes pyarrow\.RecordBatch records, got Row"):
        w.write(Row(day="a", v=1), None)
