"""Files in, Delta and Parquet out, Spark on both ends (issue 6 "Proof", part).

* A bounded job reads Parquet files through a keyed stateful operator into a ``FileSink``
  (Parquet) and a ``DeltaSink``, with a scheduled failure at parallelism 2, on every target:
  the committed output equals the expected records exactly, nothing uncommitted is visible,
  and the Delta table got one commit per checkpoint that carried data.
* Spark reads the FileSink's directory (``spark.read.parquet``); a Spark DataFrame's Parquet
  files are read by an undertow job (``SparkTableSource``), without collecting to the driver.
  Reading the Delta table with Spark needs the delta-spark jars, which are not available
  offline; it is read with ``deltalake`` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.delta import DeltaSink
from undertow.datastream.connectors.file_system import FileSink, FileSource, OutputFileConfig
from undertow.datastream.connectors.spark import SparkSourcePlanningError, SparkTableSource
from undertow.datastream.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from undertow.testing import FailingMap

from .conftest import EnvFactory
from .test_file_connectors import (
    EXPECTED,
    IN_ROW,
    OUT_ROW,
    RESTARTING,
    _config,
    _hidden_files,
    _parquet_input,
    _pipeline,
    assert_resumed,
)

CHECKPOINT_KEY, COMMITTER_KEY = "undertow.checkpoint-id", "undertow.committer-id"


def _read_delta(uri: Path) -> list[tuple[int, int, int]]:
    # An explicit pyarrow filesystem: deltalake's own makes the interpreter abort at exit
    # (delta-io/delta-rs#2184).
    fs = pafs.SubTreeFileSystem(str(uri), pafs.LocalFileSystem())
    table = DeltaTable(str(uri)).to_pyarrow_table(filesystem=fs)
    return sorted((r["key"], r["seq"], r["count"]) for r in table.to_pylist())


def _sinks(tmp_path: Path) -> tuple[Path, FileSink, Path, DeltaSink]:
    parquet_out, delta_out = tmp_path / "parquet", tmp_path / "delta"
    file_sink = FileSink.for_bulk_format(str(parquet_out), ParquetBulkWriters.for_row_type(OUT_ROW))
    file_sink = file_sink.with_output_file_config(OutputFileConfig("part", ".parquet")).build()
    return (
        parquet_out,
        file_sink,
        delta_out,
        DeltaSink.for_row_data(str(delta_out), OUT_ROW).build(),
    )


@pytest.mark.restores
def test_files_to_parquet_and_delta_exactly_once_with_a_failure(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(IN_ROW, batch_size=20), str(_parquet_input(tmp_path / "in"))
    ).build()
    env = make_env(parallelism=2, config=_config(tmp_path))
    parquet_out, file_sink, delta_out, delta_sink = _sinks(tmp_path)
    counted = _pipeline(env, source, FailingMap(fail_after_checkpoints=[2], subtask=0))
    counted.sink_to(file_sink).uid("parquet-sink")
    counted.sink_to(delta_sink).uid("delta-sink")
    result = env.execute("files to parquet and delta")

    console = capsys.readouterr().err
    assert_resumed(result, console)
    assert len(RESTARTING.findall(console)) == 1
    table = pq.read_table(str(parquet_out))
    assert sorted((r["key"], r["seq"], r["count"]) for r in table.to_pylist()) == EXPECTED
    assert _hidden_files(parquet_out) == []

    assert _read_delta(delta_out) == EXPECTED
    delta = DeltaTable(str(delta_out))
    commits = [(h[COMMITTER_KEY], h[CHECKPOINT_KEY]) for h in reversed(delta.history())
               if CHECKPOINT_KEY in h]  # fmt: skip
    assert delta.version() == len(commits), "one CREATE, then only the sink's commits"
    assert len(set(commits)) == len(commits), "a checkpoint committed twice"
    assert len({c for c, _ in commits}) == 2, "one committer id per attempt"
    for committer in {c for c, _ in commits}:
        mine = [cp for c, cp in commits if c == committer]
        assert mine == sorted(mine)
        assert delta.transaction_version(committer) == mine[-1]  # the recorded app transaction
    # Data went in before the failure and after it; every commit carried data files.
    actions = pa.table(delta.get_add_actions(flatten=True))
    assert all(n > 0 for n in actions.column("num_records").to_pylist())


def _local_env(parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    env.set_parallelism(parallelism)
    return env


@pytest.mark.spark
def test_spark_reads_the_parquet_sink_output(spark_session: Any, tmp_path: Path) -> None:
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(IN_ROW, batch_size=50), str(_parquet_input(tmp_path / "in"))
    ).build()
    env = _local_env()
    parquet_out, file_sink, _, _ = _sinks(tmp_path)
    _pipeline(env, source, None).sink_to(file_sink)
    env.execute("files to parquet")
    rows = spark_session.read.parquet(str(parquet_out)).collect()
    assert sorted((r["key"], r["seq"], r["count"]) for r in rows) == EXPECTED


@pytest.mark.spark
def test_a_spark_dataframe_is_read_by_the_subtasks(spark_session: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "spark-out")
    df = spark_session.range(3000).selectExpr(
        "cast(id % 7 as int) as key", "id as seq", "concat('v', cast(id as string)) as name"
    )
    df.repartition(4).write.parquet(path)
    source = SparkTableSource.for_dataframe(spark_session.read.parquet(path), batch_size=100)
    assert len(source.paths) == 4  # planned from the DataFrame's files, one split each
    env = _local_env()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "spark")
    got = stream.map(lambda r: (r["key"], r["seq"], r["name"])).execute_and_collect()
    assert sorted(got) == sorted((i % 7, i, f"v{i}") for i in range(3000))

    spark_session.read.parquet(path).createOrReplaceTempView("undertow_events")
    table_source = SparkTableSource.for_table("undertow_events", spark_session)
    assert sorted(table_source.paths) == sorted(source.paths)


@pytest.mark.spark
def test_a_spark_table_is_read_as_record_batches_by_a_batch_stream(
    spark_session: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "spark-batches")
    df = spark_session.range(2000).selectExpr("cast(id % 5 as int) as key", "id as seq")
    df.repartition(3).write.parquet(path)
    spark_session.read.parquet(path).createOrReplaceTempView("undertow_batches")
    source = SparkTableSource.for_table_batches("undertow_batches", spark_session, batch_rows=128)
    assert len(source.paths) == 3
    env = _local_env()
    batches = env.from_source(source, WatermarkStrategy.no_watermarks(), "spark").as_batches()
    with batches.execute_and_collect() as out:
        got = list(out)
    assert all(isinstance(b, pa.RecordBatch) and b.num_rows <= 128 for b in got)
    assert sorted((r["key"], r["seq"]) for b in got for r in b.to_pylist()) == sorted(
        (i % 5, i) for i in range(2000)
    )
    sums = batches.key_by("key").sum("seq").to_records()
    with sums.execute_and_collect() as out:
        last = {row[0]: row[1] for row in out}
    assert last == {k: sum(range(k, 2000, 5)) for k in range(5)}
    with pytest.raises(SparkSourcePlanningError, match=r"for_dataframe_batches\(\): .*Filter"):
        SparkTableSource.for_dataframe_batches(spark_session.read.parquet(path).filter("seq > 3"))


@pytest.mark.spark
def test_dataframes_that_are_not_plain_parquet_scans_are_refused(
    spark_session: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "p")
    spark_session.range(10).selectExpr("id", "id % 2 as part").write.partitionBy("part").parquet(
        path
    )
    df = spark_session.read.parquet(path)
    with pytest.raises(SparkSourcePlanningError, match=r"partitioned by \['part'\].*write it"):
        SparkTableSource.for_dataframe(df)
    with pytest.raises(SparkSourcePlanningError, match=r"plan is a Filter.*df\.write\.parquet"):
        SparkTableSource.for_dataframe(df.filter("id > 3"))
    with pytest.raises(SparkSourcePlanningError, match="not a plain file scan"):
        SparkTableSource.for_dataframe(spark_session.range(5))
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "a.json").write_text('{"x": 1}\n')
    with pytest.raises(SparkSourcePlanningError, match="reads JSON, not Parquet"):
        SparkTableSource.for_dataframe(spark_session.read.json(str(tmp_path / "j")))
