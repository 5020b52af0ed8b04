"""The Delta sink against a real table: the 2PC crash matrix, partitions, and its errors.

The sink's operators are driven by hand (:mod:`committer_harness`): writers of parallelism 2
and the global committer, checkpoints taken and completed explicitly, crashes by dropping an
attempt and restoring the next one from the last completed checkpoint's committer state. The
table is read back with ``deltalake`` (only files in the Delta log are seen).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from committer_harness import Attempt
from deltalake import DeltaTable

from undertow.common import Row, Types
from undertow.connectors.delta.committable import DeltaSinkError
from undertow.connectors.delta.committer import CHECKPOINT_KEY
from undertow.connectors.delta.sink import DeltaSink
from undertow.connectors.global_committer import END_OF_INPUT

ROW = Types.ROW_NAMED(["id", "day", "v"], [Types.LONG(), Types.STRING(), Types.DOUBLE()])


def read(uri: Path) -> list[tuple[Any, ...]]:
    """Sorted rows of the table's current version. A pyarrow filesystem is passed explicitly:
    deltalake's own one makes the interpreter abort at exit (delta-io/delta-rs#2184)."""
    fs = pafs.SubTreeFileSystem(str(uri), pafs.LocalFileSystem())
    table = DeltaTable(str(uri)).to_pyarrow_table(filesystem=fs)
    return sorted((r["id"], r["day"], r["v"]) for r in table.to_pylist())


def data_commits(uri: Path) -> list[int]:
    """Checkpoint ids of the sink's table commits, oldest first."""
    history = DeltaTable(str(uri)).history()
    return [h[CHECKPOINT_KEY] for h in reversed(history) if CHECKPOINT_KEY in h]


def rows(start: int, end: int) -> list[Row]:
    return [Row(id=i, day=f"d{i % 3}", v=i / 2) for i in range(start, end)]


def expected(start: int, end: int) -> list[tuple[Any, ...]]:
    return sorted((i, f"d{i % 3}", i / 2) for i in range(start, end))


def sink(uri: Path, *partitions: str) -> DeltaSink:
    return DeltaSink.for_row_data(str(uri), ROW).with_partition_columns(*partitions).build()


def write_both(job: Attempt, start: int, end: int) -> None:
    batch = rows(start, end)
    job.write(0, batch[::2])
    job.write(1, batch[1::2])


def test_one_table_commit_per_checkpoint_with_every_subtasks_files(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    job = Attempt(sink(uri, "day"), parallelism=2)
    write_both(job, 0, 10)
    job.checkpoint(1)
    assert read(uri) == []  # files written, not in the log: invisible
    job.complete(1)
    assert read(uri) == expected(0, 10)
    job.checkpoint(2)  # no data: no commit
    job.complete(2)
    write_both(job, 10, 14)
    job.finish()
    assert read(uri) == expected(0, 14)
    assert data_commits(uri) == [1, END_OF_INPUT]
    table = DeltaTable(str(uri))
    assert table.version() == 2  # create + 2 commits
    assert table.metadata().partition_columns == ["day"]
    assert {Path(p).parent.name for p in table.file_uris()} == {"day=d0", "day=d1", "day=d2"}


def test_crash_after_pre_commit_the_uncommitted_files_stay_invisible(tmp_path: Path) -> None:
    """Crash 1: checkpoint 2's files are written (pre-commit) but it never completes. The
    restore from checkpoint 1 rewrites that data; it is committed once, the orphans never."""
    uri = tmp_path / "t"
    first = Attempt(sink(uri), parallelism=2)
    write_both(first, 0, 10)
    state1 = first.checkpoint(1)
    first.complete(1)
    write_both(first, 10, 20)
    first.checkpoint(2)
    first.close()  # crash
    files_on_disk = len([f for f in os.listdir(uri) if f.endswith(".parquet")])
    assert read(uri) == expected(0, 10)

    second = Attempt(sink(uri), parallelism=2, attempt=1, restored=state1)
    write_both(second, 10, 20)  # the source replays after checkpoint 1
    second.checkpoint(3)
    second.complete(3)
    assert read(uri) == expected(0, 20)
    assert data_commits(uri) == [1, 3]
    committed = len(DeltaTable(str(uri)).file_uris())
    assert files_on_disk == 4 and committed == 4  # 2 orphans of checkpoint 2 are not in the log


def test_crash_after_checkpoint_complete_before_commit(tmp_path: Path) -> None:
    """Crash 2: checkpoint 2 completed but its notification never arrived; the restore from
    checkpoint 2 commits its files."""
    uri = tmp_path / "t"
    first = Attempt(sink(uri), parallelism=2)
    write_both(first, 0, 10)
    first.checkpoint(1)
    first.complete(1)
    write_both(first, 10, 20)
    state2 = first.checkpoint(2)
    first.close()  # crash before notify_checkpoint_complete(2)
    assert read(uri) == expected(0, 10)

    second = Attempt(sink(uri), parallelism=2, attempt=1, restored=state2)
    assert second.committer.committed == 1
    assert read(uri) == expected(0, 20)
    assert data_commits(uri) == [1, 2]


def test_crash_after_commit_before_it_is_recorded_the_replay_is_a_no_op(tmp_path: Path) -> None:
    """Crash 3: checkpoint 2 was committed to the table, then the job died before a later
    checkpoint recorded that; the restored state still holds it, and its replay finds the app
    transaction and does nothing."""
    uri = tmp_path / "t"
    first = Attempt(sink(uri), parallelism=2)
    write_both(first, 0, 10)
    first.checkpoint(1)
    first.complete(1)
    write_both(first, 10, 20)
    state2 = first.checkpoint(2)
    first.complete(2)  # committed
    committer_id = first.committer.committer_id
    first.close()  # crash
    version = DeltaTable(str(uri)).version()
    assert DeltaTable(str(uri)).transaction_version(committer_id) == 2

    second = Attempt(sink(uri), parallelism=2, attempt=1, restored=state2)
    assert (second.committer.committed, second.committer.already_committed) == (0, 1)
    assert DeltaTable(str(uri)).version() == version
    write_both(second, 20, 24)
    second.finish()
    assert read(uri) == expected(0, 24)
    assert data_commits(uri) == [1, 2, END_OF_INPUT]


def test_a_failed_commit_names_table_checkpoint_and_file(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    job = Attempt(sink(uri), parallelism=2)
    write_both(job, 0, 4)
    job.checkpoint(7)
    victim = next(p for p in os.listdir(uri) if p.endswith(".parquet"))
    os.remove(uri / victim)
    with pytest.raises(DeltaSinkError) as info:
        job.complete(7)
    message = str(info.value)
    assert str(uri) in message and "checkpoint 7" in message and victim in message
    assert read(uri) == []


def test_an_existing_table_with_other_columns_is_refused(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    Attempt(sink(uri), parallelism=1).close()
    other = Types.ROW_NAMED(["id", "day", "v"], [Types.INT(), Types.STRING(), Types.DOUBLE()])
    with pytest.raises(DeltaSinkError, match=r"id \(int32, table has int64\)"):
        Attempt(DeltaSink.for_row_data(str(uri), other).build(), parallelism=1)


def test_a_record_that_does_not_fit_names_table_subtask_and_record(tmp_path: Path) -> None:
    job = Attempt(sink(tmp_path / "t"), parallelism=2)
    with pytest.raises(DeltaSinkError, match=r"t \(subtask 1\): record \('x', 'd', 1.0\)"):
        job.write(1, [("x", "d", 1.0)])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda u: DeltaSink.builder(u).build(), "with_schema"),
        (lambda u: DeltaSink.for_row_data(u, ROW).with_partition_columns("nope").build(),
         "'nope' is not a column"),
        (lambda u: DeltaSink.for_row_data(u, ROW).with_partition_columns("v").build(),
         "'v' has type"),
        (lambda u: DeltaSink.for_batches(u, pa.schema([("k", pa.string()), ("v", pa.float64())]))
         .with_partition_columns("v").build(), "'v' has type double"),
    ],
)  # fmt: skip
def test_builder_errors(tmp_path: Path, build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build(str(tmp_path / "t"))


BATCH_SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.float64())])


def batches(start: int, end: int) -> list[pa.RecordBatch]:
    """The rows of :func:`rows` as two record batches."""
    ids = list(range(start, end))
    half = len(ids) // 2
    return [pa.record_batch({"id": part, "day": [f"d{i % 3}" for i in part],
                             "v": [i / 2 for i in part]}, BATCH_SCHEMA)
            for part in (ids[:half], ids[half:])]  # fmt: skip


def test_record_batches_are_committed_exactly_once_across_a_crash(tmp_path: Path) -> None:
    """A batch sink (``for_batches``) through the same 2PC: checkpoint 2's files are written
    but it never completes; the restore from checkpoint 1 rewrites that data once."""
    uri = tmp_path / "t"
    batch_sink = DeltaSink.for_batches(str(uri), BATCH_SCHEMA).with_partition_columns("day").build()
    first = Attempt(batch_sink, parallelism=2)
    first.write(0, batches(0, 10)[:1])
    first.write(1, batches(0, 10)[1:])
    state1 = first.checkpoint(1)
    first.complete(1)
    first.write(0, batches(10, 20))
    first.checkpoint(2)
    first.close()  # crash
    assert read(uri) == expected(0, 10)
    second = Attempt(batch_sink, parallelism=2, attempt=1, restored=state1)
    second.write(1, batches(10, 20))  # the source replays after checkpoint 1
    second.finish()
    assert read(uri) == expected(0, 20)
    assert DeltaTable(str(uri)).metadata().partition_columns == ["day"]
