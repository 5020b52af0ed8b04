"""File sink pieces: rolling policies, names, bucket assigners, the commit decision and the
committer's idempotence, the writer's part-file lifecycle and recovery clean-up."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import fsspec
import pytest
from tests.datastream.environments import threads_env

from undertow.common import Encoder
from undertow.connectors.file.committable import (
    CommitDecision,
    FileSinkCommitError,
    FileSinkCommittable,
    decide_commit,
)
from undertow.connectors.file.committer import FileCommitter
from undertow.connectors.file.policies import BucketContext, PartFileInfo, java_to_strftime
from undertow.connectors.file.writer import FileWriter, parse_part_subtask
from undertow.connectors.sink import SinkWriterContext
from undertow.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)


def test_default_rolling_policy_rolls_on_size_age_and_inactivity() -> None:
    policy = RollingPolicy.default_rolling_policy(
        part_size=100, rollover_interval=1000, inactivity_interval=300
    )
    assert not policy.should_roll_on_event(PartFileInfo("", 0, 0, 99))
    assert policy.should_roll_on_event(PartFileInfo("", 0, 0, 100))
    part = PartFileInfo("", creation_time=0, last_update_time=900, size=1)
    assert not policy.should_roll_on_processing_time(part, 999)
    assert policy.should_roll_on_processing_time(part, 1000)  # open too long
    assert policy.should_roll_on_processing_time(PartFileInfo("", 500, 600, 1), 900)  # idle
    # a checkpoint rolls only a part file at the size limit (Flink's rule); others stay open
    assert not policy.should_roll_on_checkpoint(part)
    assert policy.should_roll_on_checkpoint(PartFileInfo("", 0, 0, 100))
    with pytest.raises(ValueError):
        RollingPolicy.default_rolling_policy(part_size=0)


def test_on_checkpoint_rolling_policy_rolls_only_on_checkpoints() -> None:
    policy = RollingPolicy.on_checkpoint_rolling_policy()
    big_old = PartFileInfo("", 0, 0, 10**12)
    assert not policy.should_roll_on_event(big_old)
    assert not policy.should_roll_on_processing_time(big_old, 10**12)
    assert policy.should_roll_on_checkpoint(big_old)


def test_output_file_config_refuses_hidden_prefixes_and_slashes() -> None:
    config = OutputFileConfig.builder().with_part_prefix("out").with_part_suffix(".csv").build()
    assert (config.get_part_prefix(), config.get_part_suffix()) == ("out", ".csv")
    for bad in ("_x", ".x", "a/b"):
        with pytest.raises(ValueError):
            OutputFileConfig.builder().with_part_prefix(bad).build()


def test_bucket_assigners() -> None:
    ctx = BucketContext(int(dt.datetime(2024, 3, 5, 7, 8, 9, tzinfo=dt.timezone.utc).timestamp()
                            * 1000), 0, None)  # fmt: skip
    assert BucketAssigner.base_path_bucket_assigner().get_bucket_id("x", ctx) == ""
    utc = BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd--HH", "UTC")
    assert utc.get_bucket_id("x", ctx) == "2024-03-05--07"
    tokyo = BucketAssigner.date_time_bucket_assigner("yyyy/MM/dd/HH'h'mm", "Asia/Tokyo")
    assert tokyo.get_bucket_id("x", ctx) == "2024/03/05/16h08"
    assert java_to_strftime("yyyy-MM-dd--HH") == "%Y-%m-%d--%H"
    with pytest.raises(ValueError, match="'Q'"):
        java_to_strftime("yyyy-Q")


@pytest.mark.parametrize("hourly", [False, True])
def test_a_file_sink_writes_into_its_base_path_unless_told_to_bucket(
    tmp_path: Path, hourly: bool
) -> None:
    """Unlike Flink's FileSink (an hourly DateTimeBucketAssigner by default), undertow's
    writes its part files into the base path, where ``spark.read.parquet(base)`` reads them
    (Spark does not descend into directories that are not partitions); PyFlink's layout is
    one ``with_bucket_assigner(BucketAssigner.date_time_bucket_assigner())`` away."""
    env = threads_env(parallelism=1)
    sink = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
    if hourly:
        sink = sink.with_bucket_assigner(BucketAssigner.date_time_bucket_assigner())
    env.from_collection(["a", "b"]).sink_to(sink.build())
    hours = {dt.datetime.now().strftime("%Y-%m-%d--%H")}
    env.execute("buckets")
    hours.add(dt.datetime.now().strftime("%Y-%m-%d--%H"))  # the job may cross an hour
    parts = [p for p in tmp_path.rglob("*") if p.is_file()]
    where = {p.parent.name for p in parts} if hourly else {p.parent for p in parts}
    assert parts and where <= (hours if hourly else {tmp_path})


def test_commit_decision_table() -> None:
    assert decide_commit(True, None, 10) is CommitDecision.RENAME
    assert decide_commit(False, 10, 10) is CommitDecision.ALREADY_COMMITTED
    assert decide_commit(True, 10, 10) is CommitDecision.DROP_PENDING
    assert decide_commit(True, 4, 10) is CommitDecision.RENAME
    assert decide_commit(False, None, 10) is CommitDecision.MISSING


@pytest.mark.parametrize("root", ["file", "memory"])
def test_committer_is_idempotent(tmp_path: Path, root: str) -> None:
    base = str(tmp_path) if root == "file" else f"memory://{tmp_path.name}"
    fs, path = fsspec.core.url_to_fs(base)
    fs.makedirs(path, exist_ok=True)
    pending, final = f"{path}/.part-0.inprogress.x", f"{path}/part-0"
    with fs.open(pending, "wb") as f:
        f.write(b"hello\n")
    c = FileSinkCommittable(fs.unstrip_protocol(pending), fs.unstrip_protocol(final), 6, 0)
    committer = FileCommitter()
    assert committer.commit_one(c) is CommitDecision.RENAME
    assert committer.commit_one(c) is CommitDecision.ALREADY_COMMITTED
    committer.commit([c, c])
    assert fs.cat(final) == b"hello\n" and not fs.exists(pending)
    fs.rm(final)
    with pytest.raises(FileSinkCommitError, match="part-0"):
        committer.commit([c])


class Ctx(SinkWriterContext):
    def __init__(self, subtask: int = 0, parallelism: int = 1) -> None:
        self.subtask, self.n = subtask, parallelism

    def subtask_index(self) -> int:
        return self.subtask

    def parallelism(self) -> int:
        return self.n

    def attempt_number(self) -> int:
        return 0


def _writer(base: Path, clean_up: bool = False, subtask: int = 0, n: int = 1, **kw: Any) -> Any:
    return FileWriter(
        Ctx(subtask, n), str(base), Encoder.simple_string_encoder(), None,
        kw.get("assigner", BucketAssigner.base_path_bucket_assigner()),
        kw.get("policy", RollingPolicy.default_rolling_policy()),
        OutputFileConfig("part", ".txt"), 60_000, clean_up,
    )  # fmt: skip


def _visible(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and not p.name.startswith("."))


def _hidden(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and p.name.startswith("."))


def test_writer_keeps_parts_hidden_until_committed(tmp_path: Path) -> None:
    writer = _writer(tmp_path, policy=RollingPolicy.default_rolling_policy(part_size=8))
    writer.write_batch(["aaaa", "bbbb", "cc"], None)  # rolls after "bbbb" (10 bytes)
    assert _visible(tmp_path) == [] and len(_hidden(tmp_path)) == 2
    writer.flush(True)  # the end of input rolls the open part file too
    committables = writer.prepare_commit()
    assert [c.size for c in committables] == [10, 3]
    assert len({c.final_path for c in committables}) == 2
    assert _visible(tmp_path) == []
    FileCommitter().commit(committables)
    assert sorted(p.read_text() for p in _visible(tmp_path)) == ["aaaa\nbbbb\n", "cc\n"]
    assert _hidden(tmp_path) == []
    assert all(p.name.startswith("part-") and p.name.endswith(".txt") for p in _visible(tmp_path))
    assert writer.prepare_commit() == []


def test_writer_buckets_into_directories(tmp_path: Path) -> None:
    class ByFirstLetter(BucketAssigner):
        def get_bucket_id(self, element: Any, context: BucketContext) -> str:
            return f"letter={element[0]}"

    writer = _writer(tmp_path, assigner=ByFirstLetter())
    writer.write_batch(["apple", "avocado", "banana"], None)
    writer.flush(True)
    FileCommitter().commit(writer.prepare_commit())
    files = {p.parent.name: p.read_text() for p in _visible(tmp_path)}
    assert files == {"letter=a": "apple\navocado\n", "letter=b": "banana\n"}


def test_close_removes_open_parts_and_restart_cleans_its_share(tmp_path: Path) -> None:
    failed0 = _writer(tmp_path, subtask=0, n=2)
    failed0.write("lost-in-progress", None)
    failed0.close()  # what a failing task does
    assert _hidden(tmp_path) == []
    on_checkpoint = RollingPolicy.on_checkpoint_rolling_policy()
    failed0 = _writer(tmp_path, subtask=0, n=2, policy=on_checkpoint)
    failed1 = _writer(tmp_path, subtask=1, n=2, policy=on_checkpoint)
    for w in (failed0, failed1):
        w.write("pending, never committed", None)
        w.prepare_commit()  # pending files of a checkpoint that never completed
    w.write("in progress", None)  # and one left open by a crash
    assert len(_hidden(tmp_path)) == 3
    restarted = _writer(tmp_path, clean_up=True, subtask=1, n=2)  # subtask 1 cleans its share
    names = [p.name for p in _hidden(tmp_path)]
    assert len(names) == 1 and parse_part_subtask(names[0], OutputFileConfig("part", ".txt")) == 0
    restarted.write("new", None)
    assert restarted.uid in _hidden(tmp_path)[1].name or restarted.uid in _hidden(tmp_path)[0].name
    restarted.close()
    _writer(tmp_path, clean_up=True, subtask=0, n=1)  # rescaled to 1: takes every share
    assert _hidden(tmp_path) == [] and _visible(tmp_path) == []


def test_parse_part_subtask() -> None:
    config = OutputFileConfig("part", ".txt")
    assert parse_part_subtask(".part-abc-3-17.txt.inprogress.f00", config) == 3
    assert parse_part_subtask("part-abc-3-17.txt", config) is None
    assert parse_part_subtask(".other-abc-3-17.txt.inprogress.f00", config) is None
    assert parse_part_subtask(".part-abc-3-17.csv.inprogress.f00", config) is None
