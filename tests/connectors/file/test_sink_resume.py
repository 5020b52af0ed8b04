"""Row-format part files that stay open across checkpoints: the recoverable writers, the
writer's persist / truncate / resume, the restore plan, and the sink operator's routing of
writer state and committables after rescales (with crashes between checkpoints)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.parquet as pq
import pytest

from undertow.common import Encoder, Types
from undertow.connectors.file import writer as writer_module
from undertow.connectors.file.committer import FileCommitter
from undertow.connectors.file.recoverable import (
    FileSinkRecoveryError,
    InProgressFileRecoverable,
    LocalRecoverableWriter,
    NonResumableWriter,
    recoverable_writer_for,
)
from undertow.connectors.file.sink import FileSink
from undertow.connectors.file.writer import FileWriter
from undertow.connectors.file.writer_state import FileWriterBucketState, plan_restore
from undertow.connectors.sink import SinkWriterContext
from undertow.core.config import Configuration
from undertow.datastream.connectors.file_system import (
    BucketAssigner,
    OutputFileConfig,
    RollingPolicy,
)
from undertow.datastream.formats.parquet import ParquetBulkWriters
from undertow.runtime.task.operator import OperatorSetup
from undertow.runtime.task.sink_operator import SinkWriterOperator

BIG = RollingPolicy.default_rolling_policy(
    part_size=1 << 30, rollover_interval=3_600_000, inactivity_interval=3_600_000
)


class Ctx(SinkWriterContext):
    def __init__(self, subtask: int = 0, parallelism: int = 1) -> None:
        self.subtask, self.n = subtask, parallelism

    def subtask_index(self) -> int:
        return self.subtask

    def parallelism(self) -> int:
        return self.n

    def attempt_number(self) -> int:
        return 0


def _writer(base: str | Path, recovered: list[Any] | None = None, subtask: int = 0, n: int = 1,
            policy: Any = BIG, bulk: Any = None) -> FileWriter:  # fmt: skip
    encoder = None if bulk is not None else Encoder.simple_string_encoder()
    return FileWriter(Ctx(subtask, n), str(base), encoder, bulk,
                      BucketAssigner.base_path_bucket_assigner(), policy,
                      OutputFileConfig("part", ".txt"), 60_000, clean_up=recovered is not None,
                      recovered_state=recovered)  # fmt: skip


def _visible(base: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(base.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}  # fmt: skip


def _hidden(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and p.name.startswith("."))


def _checkpoint(writer: FileWriter) -> tuple[list[Any], list[Any]]:
    """What the sink operator does at a barrier: (committables, writer state)."""
    writer.flush(False)
    return writer.prepare_commit(), writer.snapshot_state(0)


def _crash(writer: FileWriter) -> None:
    """The process dies: what was written reaches the file (the OS has it), nothing closes."""
    for part in writer.open_parts.values():
        part.stream.flush()
    writer.open_parts.clear()


# -- the recoverable writers ---------------------------------------------------------------


def test_only_the_local_file_system_resumes(tmp_path: Path) -> None:
    local, _ = fsspec.core.url_to_fs(str(tmp_path))
    assert isinstance(recoverable_writer_for(local), LocalRecoverableWriter)
    assert recoverable_writer_for(fsspec.core.url_to_fs(f"file://{tmp_path}")[0]).supports_resume
    memory = recoverable_writer_for(fsspec.filesystem("memory"))
    assert isinstance(memory, NonResumableWriter) and not memory.supports_resume
    assert "MemoryFileSystem (memory://)" in str(memory.cannot_resume_reason)


def test_local_recover_truncates_to_the_valid_length_and_appends(tmp_path: Path) -> None:
    rw = LocalRecoverableWriter()
    path = str(tmp_path / ".part.inprogress.x")
    stream = rw.open(path)
    stream.write(b"kept\n")
    resumable = rw.persist(stream, path, str(tmp_path / "part"))
    assert resumable == InProgressFileRecoverable(path, str(tmp_path / "part"), 5)
    stream.write(b"after the checkpoint\n")
    stream.close()
    resumed = rw.recover(resumable)
    assert resumed.tell() == 5
    resumed.write(b"again\n")
    assert rw.close_for_commit(resumed, path) == 11
    assert Path(path).read_bytes() == b"kept\nagain\n"


def test_local_recover_names_the_file_and_both_lengths(tmp_path: Path) -> None:
    rw, path, final = LocalRecoverableWriter(), tmp_path / ".p.inprogress.x", tmp_path / "p"
    with pytest.raises(FileSinkRecoveryError) as missing:
        rw.recover(InProgressFileRecoverable(str(path), str(final), 7))
    assert str(path) in str(missing.value) and "7 valid bytes but it is missing" in str(
        missing.value
    )
    path.write_bytes(b"abc")
    with pytest.raises(FileSinkRecoveryError, match="7 valid bytes but it has only 3 bytes"):
        rw.recover(InProgressFileRecoverable(str(path), str(final), 7))
    path.rename(final)  # committed by a later checkpoint of the job that wrote it
    with pytest.raises(FileSinkRecoveryError, match="a later checkpoint committed it"):
        rw.recover(InProgressFileRecoverable(str(path), str(final), 3))


# -- the writer ----------------------------------------------------------------------------


def test_a_row_format_part_file_stays_open_across_checkpoints(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    for i in range(5):
        writer.write(f"r{i}", None)
        committables, state = _checkpoint(writer)
        assert committables == []
        (bucket,) = state
        assert isinstance(bucket, FileWriterBucketState)
        assert bucket.in_progress.valid_length == 3 * (i + 1)
        assert Path(bucket.in_progress.path).stat().st_size == 3 * (i + 1)  # flushed
    assert len(_hidden(tmp_path)) == 1 and _visible(tmp_path) == {}
    writer.flush(True)  # end of input rolls everything
    FileCommitter().commit(writer.prepare_commit())
    assert list(_visible(tmp_path).values()) == ["r0\nr1\nr2\nr3\nr4\n"]
    assert _hidden(tmp_path) == [] and writer.snapshot_state(9) == []


def test_restore_cuts_off_bytes_written_after_the_checkpoint(tmp_path: Path) -> None:
    first = _writer(tmp_path)
    first.write_batch(["a", "b"], None)
    _, state = _checkpoint(first)  # checkpoint n: "a\nb\n" (4 bytes)
    first.write_batch(["lost-1", "lost-2"], None)  # after n; n+1 never completes
    _crash(first)
    (hidden,) = _hidden(tmp_path)
    assert hidden.read_text() == "a\nb\nlost-1\nlost-2\n"

    second = _writer(tmp_path, recovered=state)
    assert hidden.read_text() == "a\nb\n"  # cut back at once
    second.write("c", None)
    second.flush(True)
    committables = second.prepare_commit()
    assert [c.final_path.rsplit("/", 1)[-1] for c in committables] == [
        state[0].in_progress.final_path.rsplit("/", 1)[-1]
    ]  # the resumed file keeps its name
    FileCommitter().commit(committables)
    assert list(_visible(tmp_path).values()) == ["a\nb\nc\n"]
    assert _hidden(tmp_path) == []


def test_a_file_rolled_after_its_checkpoint_commits_only_checkpointed_bytes(
    tmp_path: Path,
) -> None:
    """In progress at checkpoint n, bytes appended, rolled before n+1 (pending), n+1 taken but
    never completed, crash: the restore from n cuts the pending file back; what is committed
    later holds n's bytes and what the restored job writes, nothing of the lost attempt."""
    policy = RollingPolicy.default_rolling_policy(part_size=20, rollover_interval=10**9,
                                                  inactivity_interval=10**9)  # fmt: skip
    first = _writer(tmp_path, policy=policy)
    first.write("0123456789", None)  # 11 bytes: stays open
    _, state_n = _checkpoint(first)
    first.write("lost-lost-lost", None)  # 26 bytes: rolls on this event
    assert first.open_parts == {}
    committables, state_n1 = _checkpoint(first)  # checkpoint n+1: pending, not committed
    assert [c.size for c in committables] == [26] and state_n1 == []
    _crash(first)

    second = _writer(tmp_path, recovered=state_n, policy=policy)
    second.write("kept", None)
    second.flush(True)
    FileCommitter().commit(second.prepare_commit())
    assert list(_visible(tmp_path).values()) == ["0123456789\nkept\n"]
    assert _hidden(tmp_path) == []


def test_restore_after_the_file_was_committed_fails_clearly(tmp_path: Path) -> None:
    first = _writer(tmp_path)
    first.write("x", None)
    _, state = _checkpoint(first)
    first.flush(True)
    FileCommitter().commit(first.prepare_commit())  # a later checkpoint committed it
    with pytest.raises(FileSinkRecoveryError) as info:
        _writer(tmp_path, recovered=state)
    message = str(info.value)
    assert "subtask 1/1" in message and state[0].in_progress.path in message
    assert "2 valid bytes but it is missing" in message and "committed it" in message


def test_close_keeps_what_a_checkpoint_recorded_and_deletes_the_rest(tmp_path: Path) -> None:
    recorded = _writer(tmp_path)
    recorded.write("in a checkpoint", None)
    _, state = _checkpoint(recorded)
    recorded.close()  # a failure: a retained checkpoint may still need the file
    assert len(_hidden(tmp_path)) == 1
    resumed = _writer(tmp_path, recovered=state)
    unrecorded = _writer(tmp_path / "other")
    unrecorded.write("in no checkpoint", None)
    unrecorded.close()
    assert _hidden(tmp_path / "other") == []
    resumed.close()  # resumed files were recorded too
    assert len(_hidden(tmp_path)) == 1


def test_restart_cleans_its_share_but_keeps_the_files_it_resumes(tmp_path: Path) -> None:
    first = _writer(tmp_path, subtask=1, n=2)
    first.write("kept", None)
    _, state = _checkpoint(first)
    first.write_batch(["x" * 40], None)
    _crash(first)
    orphan = _writer(tmp_path, subtask=1, n=2)  # an attempt that died before a checkpoint
    orphan.write("orphan", None)
    _crash(orphan)
    other = _writer(tmp_path, subtask=0, n=2)  # another subtask's share: not touched
    other.write("other", None)
    _crash(other)
    assert len(_hidden(tmp_path)) == 3
    restored = _writer(tmp_path, recovered=state, subtask=1, n=2)
    assert sorted(p.read_text() for p in _hidden(tmp_path)) == ["kept\n", "other\n"]
    restored.flush(True)
    FileCommitter().commit(restored.prepare_commit())
    assert list(_visible(tmp_path).values()) == ["kept\n"]


def test_processing_time_rolls_an_idle_file_at_the_next_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1_000_000]
    monkeypatch.setattr(writer_module, "_now_ms", lambda: clock[0])
    policy = RollingPolicy.default_rolling_policy(part_size=1 << 30, rollover_interval=10_000,
                                                  inactivity_interval=500)  # fmt: skip
    writer = _writer(tmp_path, policy=policy)
    writer.write("a", None)
    clock[0] += 499
    assert _checkpoint(writer) == ([], writer.snapshot_state(0))
    clock[0] += 1  # idle for the inactivity interval: no record needed to roll it
    committables, state = _checkpoint(writer)
    assert len(committables) == 1 and state == []


def test_memory_file_system_rolls_on_every_checkpoint_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = f"memory://{tmp_path.name}/out"
    with caplog.at_level(logging.INFO, logger=writer_module.__name__):
        writers = [_writer(base, subtask=s, n=2) for s in range(2)]
    said = [r.getMessage() for r in caplog.records if "roll on every checkpoint" in r.message]
    assert len(said) == 1, said
    assert "subtask 1/2" in said[0] and "MemoryFileSystem (memory://)" in said[0]
    for i in range(3):
        writers[0].write(f"r{i}", None)
        committables, state = _checkpoint(writers[0])
        assert len(committables) == 1 and state == []
        FileCommitter().commit(committables)
    fs = fsspec.filesystem("memory")
    assert len([p for p in fs.find(f"/{tmp_path.name}/out") if "/." not in p]) == 3


def test_bulk_formats_roll_on_every_checkpoint_on_the_local_file_system(tmp_path: Path) -> None:
    row = Types.ROW_NAMED(["v"], [Types.INT()])
    writer = _writer(tmp_path, policy=BIG, bulk=ParquetBulkWriters.for_row_type(row))
    assert not writer.keeps_open
    for i in range(3):
        writer.write((i,), None)
        committables, state = _checkpoint(writer)
        assert len(committables) == 1 and state == []
        FileCommitter().commit(committables)
    assert sorted(r["v"] for r in pq.read_table(str(tmp_path)).to_pylist()) == [0, 1, 2]


def test_in_progress_state_cannot_be_restored_where_resume_is_impossible(tmp_path: Path) -> None:
    first = _writer(tmp_path)
    first.write("x", None)
    _, state = _checkpoint(first)
    row = Types.ROW_NAMED(["v"], [Types.INT()])
    with pytest.raises(FileSinkRecoveryError, match="bulk formats roll on every checkpoint"):
        _writer(tmp_path, recovered=state, bulk=ParquetBulkWriters.for_row_type(row))


# -- the restore plan ----------------------------------------------------------------------


def _state(bucket: str, path: str, created: int, counter: int = 0) -> FileWriterBucketState:
    return FileWriterBucketState(bucket, InProgressFileRecoverable(path, path + ".final", 1),
                                 created, created, counter, subtask=0)  # fmt: skip


def test_plan_resumes_the_newest_file_per_bucket_and_rolls_the_others() -> None:
    plan = plan_restore([_state("a", "/1", 5, 3), _state("a", "/2", 9, 7), _state("b", "/3", 1)],
                        "FileSink")  # fmt: skip
    assert sorted(s.in_progress.path for s in plan.resume) == ["/2", "/3"]
    assert [s.in_progress.path for s in plan.roll] == ["/1"]
    assert plan.part_counter == 7 and plan.paths == {"/1", "/2", "/3"}
    assert plan_restore([], "FileSink").paths == frozenset()


def test_plan_refuses_other_versions() -> None:
    old = FileWriterBucketState("a", InProgressFileRecoverable("/p", "/f", 1), 0, 0, 0, 0,
                                version=99)  # fmt: skip
    with pytest.raises(ValueError, match="FileSink x: file sink writer state version 99"):
        plan_restore([old], "FileSink x")


# -- through the sink operator: routing after rescales ---------------------------------------


def _operators(
    sink: FileSink, parallelism: int, attempt: int, restored: list[bytes] | None, rescaled: bool
) -> list[SinkWriterOperator]:
    ops = []
    for s in range(parallelism):
        op = SinkWriterOperator(sink)
        op.setup(OperatorSetup(name="Sink", uid="sink", subtask_index=s, parallelism=parallelism,
                               max_parallelism=128, attempt_number=attempt, output=None,  # type: ignore[arg-type]
                               config=Configuration(), processing_time_service=None))  # type: ignore[arg-type]  # fmt: skip
        if restored is not None:
            op.restore_custom_state(restored, rescaled)
        ops.append(op)
    for op in ops:  # one after the other: a clean-up runs before the next one's commits
        op.open()
    return ops


def _snapshot(ops: list[SinkWriterOperator], checkpoint_id: int) -> list[bytes]:
    blobs = []
    for op in ops:
        op.prepare_snapshot_pre_barrier(checkpoint_id)
        blob = op.snapshot_custom_state(checkpoint_id)
        assert blob is not None
        blobs.append(blob)
    return blobs


def _lines(base: Path) -> list[str]:
    return sorted(ln for text in _visible(base).values() for ln in text.splitlines())


def test_rescaling_twice_keeps_every_checkpointed_line_exactly_once(tmp_path: Path) -> None:
    """p=4 -> p=2 -> p=3 with part files open and pending at each checkpoint: a subtask's
    clean-up never deletes a file that another subtask resumes or commits."""
    policy = RollingPolicy.default_rolling_policy(part_size=30, rollover_interval=10**9,
                                                  inactivity_interval=10**9)  # fmt: skip
    sink = (FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
            .with_rolling_policy(policy).build())  # fmt: skip
    expected: list[str] = []

    def write(ops: list[SinkWriterOperator], tag: str) -> None:
        for s, op in enumerate(ops):
            lines = [f"{tag}-{s}-{i}" for i in range(2)]
            op.process_batch(lines, None)
            expected.extend(lines)

    ops = _operators(sink, 4, 0, None, rescaled=False)
    write(ops, "a")
    first = _snapshot(ops, 1)  # every subtask has one open file
    write(ops, "lost")
    for op in ops:
        op.close()
    expected = [e for e in expected if not e.startswith("lost")]

    ops = _operators(sink, 2, 1, first, rescaled=True)  # old 1 and 3 share a bucket in new 1
    write(ops, "b")  # rolls files at 30 bytes: pending files of resumed (foreign) files
    second = _snapshot(ops, 2)  # never completes
    assert any(op.pending for op in ops)
    for op in ops:
        op.close()

    ops = _operators(sink, 3, 2, second, rescaled=True)
    write(ops, "c")
    for op in ops:
        op.finish()
    for op in ops:
        op.close()
    assert _lines(tmp_path) == sorted(expected)
    assert _hidden(tmp_path) == []


def test_a_row_format_takes_anything_that_encodes_and_refuses_the_rest(tmp_path: Path) -> None:
    class Shouting:  # not an Encoder: its encode() is what counts
        def encode(self, value: Any) -> bytes:
            return f"{value}!\n".encode()

    assert FileSink.for_row_format(str(tmp_path), Shouting()).build() is not None
    with pytest.raises(TypeError, match=r"for_row_format\(\): expected an Encoder, got 5"):
        FileSink.for_row_format(str(tmp_path), 5)  # type: ignore[arg-type]
