"""The Delta sink's writer alone (:mod:`undertow.connectors.delta.writer`): one Parquet file per
partition, all finished into committables before a checkpoint, unfinished ones deleted on
close."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq

from undertow.common import Row, Types
from undertow.connectors.delta.writer import DeltaWriter

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
