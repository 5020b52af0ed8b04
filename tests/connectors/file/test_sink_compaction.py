"""FileSink compaction: grouping, merging, and exactly-once output through a failure."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.e2e.kills import RESTARTING

from undertow.common import Configuration, Encoder, Types, WatermarkStrategy
from undertow.connectors.file.committable import FileSinkCommittable
from undertow.connectors.file.compaction import groups
from undertow.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from undertow.datastream.connectors import NumberSequenceSource
from undertow.datastream.connectors.file_system import (
    FileCompactor,
    FileCompactStrategy,
    FileSink,
    RollingPolicy,
)
from undertow.datastream.formats.parquet import ParquetBulkWriters
from undertow.testing import FailingMap

N = 3000


def _c(bucket: str, n: int, size: int) -> FileSinkCommittable:
    return FileSinkCommittable(f"/o/{bucket}/.p{n}.inprogress.x", f"/o/{bucket}/p{n}", size, 0)


def test_groups_per_bucket_in_roll_order_cut_at_the_threshold() -> None:
    files = [_c("a", 0, 40), _c("b", 1, 10), _c("a", 2, 70), _c("a", 3, 5), _c("b", 4, 10)]
    got = [[c.final_path for c in g] for g in groups(files, 100)]
    assert got == [["/o/a/p0", "/o/a/p2"], ["/o/a/p3"], ["/o/b/p1", "/o/b/p4"]]
    assert len(groups(files, -1)) == 2


def test_strategy_and_compactor_builders_check_their_values() -> None:
    strategy = FileCompactStrategy.builder().set_size_threshold(1 << 20).build()
    assert strategy.size_threshold == 1 << 20
    with pytest.raises(ValueError, match=r"enable_compaction_on_checkpoint\(3\)"):
        FileCompactStrategy.builder().enable_compaction_on_checkpoint(3)
    with pytest.raises(ValueError, match="size threshold must be positive or -1"):
        FileCompactStrategy.builder().set_size_threshold(0)
    assert FileCompactor.concat_file_compactor(b"\n").delimiter == b"\n"
    row = Types.ROW_NAMED(["a"], [Types.INT()])
    bulk = FileSink.for_bulk_format("/o", ParquetBulkWriters.for_row_type(row))
    with pytest.raises(ValueError, match="cannot merge bulk part files"):
        bulk.enable_compact(strategy, FileCompactor.concat_file_compactor()).build()


class _Slowly(MapFunction):
    """0.3 ms a record; in the first attempt, past an eighth of the input and until checkpoint 2
    completed, 5 ms a record: the job cannot end before the failure injected after checkpoint
    2 however slow its checkpoints are (they were, once, under a loaded run)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.hold = runtime_context.get_attempt_number() == 0
        self.seen = 0

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if checkpoint_id >= 2:
            self.hold = False

    def map(self, value: int) -> int:
        self.seen += 1
        time.sleep(0.005 if self.hold and self.seen > N // 8 else 0.0003)
        return value


def _run(tmp_path: Path, out: Path, compact: bool, capsys: pytest.CaptureFixture[str]) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration(
            {
                "execution.checkpointing.interval": "250 ms",
                "execution.checkpointing.dir": str(tmp_path / f"cp-{compact}"),
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "1",
                "restart-strategy.fixed-delay.delay": "0 ms",
            }
        )
    )
    env.set_parallelism(2)
    sink = FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
    sink = sink.with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=200))
    if compact:
        strategy = FileCompactStrategy.builder().set_size_threshold(4000).build()
        sink = sink.enable_compact(strategy, FileCompactor.concat_file_compactor())
    stream = env.from_source(NumberSequenceSource(0, N - 1), WatermarkStrategy.no_watermarks(),
                             "numbers").uid("numbers")  # fmt: skip
    stream = stream.map(_Slowly()).uid("slowly").map(FailingMap([2], subtask=1)).uid("failing")
    stream.map(str).sink_to(sink.build())
    env.execute("compaction")
    reasons = RESTARTING.findall(capsys.readouterr().err)
    assert len(reasons) == 1 and "InjectedFailure" in reasons[0], reasons


def _visible(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")]


def test_compacted_output_is_exactly_once_through_a_failure_with_fewer_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, merged = tmp_path / "plain", tmp_path / "merged"
    _run(tmp_path, plain, False, capsys)
    _run(tmp_path, merged, True, capsys)
    for out in (plain, merged):
        lines = [ln for p in _visible(out) for ln in p.read_text().splitlines()]
        assert sorted(int(x) for x in lines) == list(range(N))
        assert [p for p in out.rglob(".*") if p.is_file()] == []
    # ~15 rolled files per subtask and checkpoint without compaction, one with it
    assert len(_visible(merged)) * 2 < len(_visible(plain))
