"""File source -> keyed state -> file sink, end to end, with failures: exactly once.

Input: one file per key with that key's records ``seq = 1..PER_KEY`` in order, so a key's
records reach its stateful operator in order and ``count == seq`` checks that state was
neither lost nor applied twice. Only committed (visible) output is read back: with pyarrow
for Parquet, as text for row formats; it must equal the expected records exactly, and no
hidden in-progress or pending file may be left.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from undertow.common import Duration, Encoder, Row, Types, WatermarkStrategy
from undertow.core.errors import JobCancelledError, JobExecutionError
from undertow.datastream import MapFunction, OutputTag, RuntimeContext
from undertow.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from undertow.datastream.formats.csv import CsvReaderFormat, CsvSchema
from undertow.datastream.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from undertow.datastream.state import ValueStateDescriptor
from undertow.storage import CheckpointStorage
from undertow.testing import FailingMap

from .conftest import EnvFactory
from .kills import RESTARTING
from .restore_evidence import (
    CountingMap,
    evidence,
    handled_in_finishing_attempt,
    restored_checkpoints,
)

KEYS, PER_KEY = 8, 500
OUT_ROW = Types.ROW_NAMED(["key", "seq", "count"], [Types.INT(), Types.LONG(), Types.LONG()])
IN_ROW = Types.ROW_NAMED(["key", "seq"], [Types.INT(), Types.LONG()])
CSV = CsvSchema.builder().add_number_column("key", Types.INT())
CSV = CSV.add_number_column("seq", Types.LONG()).build()
OUT = Row("key", "seq", "count")
EXPECTED = sorted((k, s, s) for k in range(KEYS) for s in range(1, PER_KEY + 1))


class CountPerKey(MapFunction):
    """(key, seq) -> (key, seq, records of this key so far)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def map(self, value: Any) -> Any:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return OUT(value[0], value[1], count)


def _config(tmp_path: Path, restarts: int = 1) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
    }


def _csv_input(root: Path) -> Path:
    root.mkdir()
    for k in range(KEYS):
        (root / f"k{k}.csv").write_text("".join(f"{k},{s}\n" for s in range(1, PER_KEY + 1)))
    return root


def _parquet_input(root: Path) -> Path:
    root.mkdir()
    for k in range(KEYS):
        seqs = list(range(1, PER_KEY + 1))
        table = pa.table({"key": pa.array([k] * PER_KEY, pa.int32()), "seq": seqs})
        pq.write_table(table, root / f"k{k}.parquet", row_group_size=150)
    return root


def _hidden_files(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and p.name.startswith((".", "_"))]


def _text_output(root: Path) -> list[tuple[int, int, int]]:
    lines = [ln for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")
             for ln in p.read_text().splitlines()]  # fmt: skip
    return sorted(tuple(int(x) for x in ln.split(",")) for ln in lines)  # type: ignore[misc]


def _slowly(value: Any) -> Any:
    """Paces the sources (chained to them): checkpoints stop once a source finished (no
    FLIP-147 yet), so checkpoints and failures must land while the sources still read."""
    time.sleep(0.0004)
    return value


def _pipeline(env: Any, source: FileSource, failing: FailingMap | None) -> Any:
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "files").uid("files")
    stream = stream.map(CountingMap("read")).uid("counted").map(_slowly).uid("slowly")
    if failing is not None:
        stream = stream.map(failing).uid("failing")
    return stream.key_by(lambda r: r[0]).map(CountPerKey()).uid("count")


def _text_sink(out: Path) -> FileSink:
    return (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".csv").build())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=4096))
        .build()
    )


def _as_csv(row: Row) -> str:
    return f"{row[0]},{row[1]},{row[2]}"


def assert_resumed(result: Any, console: str) -> None:
    """One restore line, and the restored attempt read fewer rows than the files hold."""
    restored = restored_checkpoints(console)
    evidence(len(restored) == 1, f"expected one restore line, got {restored}:\n{console}")
    read = handled_in_finishing_attempt(result, "read")
    evidence(read < len(EXPECTED), f"the restored attempt read {read} of {len(EXPECTED)} "
             "rows: resumed readers read fewer")  # fmt: skip


@pytest.mark.restores(catches=["source-positions"])
def test_csv_files_to_text_sink_exactly_once_with_a_failure(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (
        FileSource.for_record_stream_format(
            CsvReaderFormat.for_schema(CSV), str(_csv_input(tmp_path / "in"))
        )
        .set_batch_size(20)
        .build()
    )
    failing = FailingMap(fail_after_checkpoints=[2], subtask=1)
    env = make_env(parallelism=2, config=_config(tmp_path))
    out = tmp_path / "out"
    _pipeline(env, source, failing).map(_as_csv).sink_to(_text_sink(out))
    result = env.execute("csv to text")

    console = capsys.readouterr().err
    assert_resumed(result, console)
    reasons = RESTARTING.findall(console)
    assert len(reasons) == 1 and "InjectedFailure" in reasons[0], reasons
    assert _text_output(out) == EXPECTED
    assert _hidden_files(out) == []


@pytest.mark.restores
def test_parquet_files_to_parquet_sink_exactly_once_with_a_failure(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(IN_ROW, batch_size=20), str(_parquet_input(tmp_path / "in"))
    ).build()
    failing = FailingMap(fail_after_checkpoints=[2], subtask=0)
    env = make_env(parallelism=2, config=_config(tmp_path))
    out = tmp_path / "out"
    sink = FileSink.for_bulk_format(str(out), ParquetBulkWriters.for_row_type(OUT_ROW))
    sink = sink.with_output_file_config(OutputFileConfig("scores", ".parquet")).build()
    _pipeline(env, source, failing).sink_to(sink)
    result = env.execute("parquet to parquet")

    console = capsys.readouterr().err
    assert_resumed(result, console)
    assert len(RESTARTING.findall(console)) == 1
    table = pq.read_table(str(out))  # pyarrow skips '.'-prefixed (uncommitted) files itself
    assert table.schema.names == ["key", "seq", "count"]
    got = sorted((r["key"], r["seq"], r["count"]) for r in table.to_pylist())
    assert got == EXPECTED
    assert _hidden_files(out) == []
    names = [p.name for p in out.rglob("*") if p.is_file()]
    assert names and all(re.fullmatch(r"scores-.+\.parquet", n) for n in names), names


def _completed_checkpoints(root: Path) -> list[tuple[int, str]]:
    """(id, pointer) of every retained completed checkpoint, oldest first."""
    found = []
    for job_dir in root.iterdir() if root.exists() else []:
        if job_dir.is_dir() and not job_dir.name.startswith("_"):
            storage = CheckpointStorage(str(root), job_dir.name)
            found += [
                (c, storage.checkpoint_pointer(c)) for c in storage.completed_checkpoint_ids()
            ]
    return sorted(found)


@pytest.mark.restores
def test_cancelled_job_resumes_from_its_checkpoint_without_duplicates_or_loss(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kill in the middle (cancel, checkpoint retained), resume in a new job: reader positions,
    the enumerator's remaining files and the sink's pending files all come back."""
    inputs = _csv_input(tmp_path / "in")
    config = {**_config(tmp_path, restarts=0),
              "execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION"}  # fmt: skip
    out = tmp_path / "out"

    def job(extra: dict[str, str]) -> Any:
        env = make_env(parallelism=2, config={**config, **extra})
        src = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV), str(inputs))
        _pipeline(env, src.set_batch_size(10).build(), None).map(_as_csv).sink_to(_text_sink(out))
        return env

    client = job({}).execute_async("first")
    deadline = time.monotonic() + 60
    # three checkpoints, and output committed by one of them (on a loaded machine the first
    # checkpoints may complete before any record reached the sink)
    while (max(_completed_checkpoints(tmp_path / "checkpoints"), default=(0, ""))[0] < 3
           or not _text_output(out)):  # fmt: skip
        assert time.monotonic() < deadline, "no checkpoint committed output in 60 s"
        time.sleep(0.02)
    client.cancel()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=20)
    first = _text_output(out)
    assert 0 < len(first) < len(EXPECTED), "the first job must stop in the middle"

    pointer = _completed_checkpoints(tmp_path / "checkpoints")[-1][1]
    capsys.readouterr()
    result = job({"execution.state-recovery.path": pointer}).execute("second")
    assert_resumed(result, capsys.readouterr().err)
    # Every record exactly once, and the per-key count continues from the restored state.
    assert _text_output(out) == sorted(EXPECTED)
    assert _hidden_files(out) == []


BAD_CSV = "1,1\nnot-a-number,2\n1,2\n1\n1,3\n"


def test_bad_records_to_a_side_output(make_env: EnvFactory, tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text(BAD_CSV)
    bad = OutputTag("bad")
    fmt = CsvReaderFormat.for_schema(CSV).with_bad_records(bad)
    env = make_env(parallelism=1)
    stream = env.from_source(
        FileSource.for_record_stream_format(fmt, str(tmp_path)).build(),
        WatermarkStrategy.no_watermarks(), "csv",
    )  # fmt: skip
    good = stream.map(lambda r: ("ok", r.key, r.seq))
    side = stream.get_side_output(bad).map(
        lambda b: ("bad", Path(b.path).name, b.offset, b.line, b.raw, b.reason)
    )
    got = list(good.union(side).execute_and_collect())
    assert sorted(g for g in got if g[0] == "ok") == [("ok", 1, 1), ("ok", 1, 2), ("ok", 1, 3)]
    bad_records = sorted((g for g in got if g[0] == "bad"), key=lambda g: g[2])
    assert [g[:5] for g in bad_records] == [
        ("bad", "in.csv", 4, 2, "not-a-number,2"),
        ("bad", "in.csv", 23, 4, "1"),
    ]
    assert "'key'" in bad_records[0][5] and "expected 2 columns" in bad_records[1][5]


def test_bad_record_fails_the_job_naming_file_offset_and_reason(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    (tmp_path / "in.csv").write_text(BAD_CSV)
    env = make_env(parallelism=1)
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV), str(tmp_path))
    env.from_source(source.build(), WatermarkStrategy.no_watermarks(), "csv").map(str).print()
    with pytest.raises(JobExecutionError) as info:
        env.execute("bad input")
    message = str(info.value)
    assert "in.csv at byte offset 4 (line 2)" in message, message
    assert "'not-a-number' is not Integer" in message and "'not-a-number,2'" in message


def test_monitored_directory_picks_up_new_files(make_env: EnvFactory, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "first.txt").write_text("a\nb\n")

    def add_later() -> None:
        time.sleep(0.5)
        staging = inputs / ".second.txt"  # hidden while written, then renamed (atomic)
        staging.write_text("c\nd\ne\n")
        staging.rename(inputs / "second.txt")

    env = make_env(parallelism=2)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(inputs))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    writer = threading.Thread(target=add_later)
    writer.start()
    got = env.from_source(source, WatermarkStrategy.no_watermarks(), "monitor").execute_and_collect(
        limit=5
    )
    writer.join()
    assert sorted(got) == ["a", "b", "c", "d", "e"]
