"""Batch streams through the public API: columnar functions, conversions, key_by by column and
keyed aggregations, on real jobs (local threads), against the record path."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from undertow.common.row import Row
from undertow.common.typeinfo import Types
from undertow.connectors.file.parquet import ParquetBatchInputFormat
from undertow.connectors.file.source import FileSource
from undertow.core.errors import GraphBuildError, JobExecutionError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.batch_stream import BatchStream
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.graph.batch_partitioner import BatchKeyGroupPartitioner
from undertow.graph.transformations import PartitionTransformation

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _rows(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def _key_and_double(batch: pa.RecordBatch) -> pa.RecordBatch:
    value = batch.column("value")
    return pa.record_batch({"k": pc.remainder(value, 7), "v": pc.multiply(value, 2)})


def test_a_batch_source_maps_filters_and_flat_maps_columns(env: StreamExecutionEnvironment) -> None:
    source = NumberSequenceBatchSource(0, 999, batch_rows=128)
    stream = env.from_source(source, None, "batches").as_batches()  # type: ignore[arg-type]
    out = (
        stream.map_batches(_key_and_double, schema=SCHEMA)
        .filter_batches(lambda b: pc.less(b.column("k"), 3))
        .flat_map_batches(lambda b: [b, b.slice(0, 1)])
        .execute_and_collect()
    )
    with out:
        batches = list(out)
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    rows = _rows(batches)
    kept = [i for i in range(1000) if i % 7 < 3]
    extra = Counter(r["v"] for r in rows) - Counter(2 * i for i in kept)
    assert {r["v"] // 2 for r in rows} == set(kept)
    assert len(batches) % 2 == 0 and sum(extra.values()) == len(batches) // 2  # one per slice


class _BatchShapes:
    """A batch map, filter and flat-map by their methods (no base class exists)."""

    def map_batches(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return _key_and_double(batch)

    def filter_batches(self, batch: pa.RecordBatch) -> Any:
        return pc.less(batch.column("k"), 3)

    def flat_map_batches(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        return [batch]


def test_a_batch_function_is_a_callable_or_an_object_whose_class_has_the_method(
    env: StreamExecutionEnvironment,
) -> None:
    env.set_parallelism(1)
    source = NumberSequenceBatchSource(0, 99, batch_rows=32)
    stream = env.from_source(source, None, "batches").as_batches()  # type: ignore[arg-type]
    shapes = _BatchShapes()
    out = (
        stream.map_batches(shapes, schema=SCHEMA)
        .filter_batches(shapes)
        .flat_map_batches(shapes)
        .execute_and_collect()
    )
    with out:
        rows = _rows(list(out))
    assert sorted(r["v"] for r in rows) == [2 * i for i in range(100) if i % 7 < 3]
    on_the_instance = type("Plain", (), {})()
    on_the_instance.map_batches = 5  # an attribute, not a method of its class: no shape
    with pytest.raises(GraphBuildError, match="map_batches\\(\\): expected a callable over"):
        stream.map_batches(on_the_instance)


def test_records_to_batches_and_back(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    records = [Row(k=i % 3, v=i) for i in range(50)]
    stream = env.from_collection(records).to_batches(SCHEMA, max_rows=16, max_delay=50)
    with stream.to_records().execute_and_collect() as out:
        back = list(out)
    assert back == records  # one source subtask: order kept, Row names from the schema
    assert back[0]._fields == ["k", "v"]  # type: ignore[attr-defined]


def test_misuse_is_refused_naming_the_operator(env: StreamExecutionEnvironment) -> None:
    records = env.from_collection([Row(k=1, v=2)])
    refused = r"map_batches\(\) on the record stream of operator 'Source: Collection Source'"
    with pytest.raises(GraphBuildError, match=refused):
        records.map_batches(lambda b: b)
    batches = records.to_batches(SCHEMA)
    assert isinstance(batches, BatchStream)
    refused = r"map\(\) on the batch stream of operator 'To Batches'.*use map_batches"
    with pytest.raises(GraphBuildError, match=refused):
        batches.map(lambda b: b)
    with pytest.raises(GraphBuildError, match="key by a column name"):
        batches.key_by(lambda r: r[0])
    # a key_type is the Arrow columns' business: refused, where it was silently ignored
    refused = r"key_by\(\) on the batch stream of operator 'To Batches': the key columns' Arrow"
    with pytest.raises(GraphBuildError, match=refused):
        batches.key_by("k", key_type=Types.STRING())


def test_a_function_returning_the_wrong_schema_fails_naming_operator_and_subtask(
    env: StreamExecutionEnvironment,
) -> None:
    env.set_parallelism(1)
    batches = env.from_collection([Row(k=1, v=2)]).to_batches(SCHEMA)
    wrong = batches.map_batches(lambda b: b.select(["k"]), schema=SCHEMA)
    message = (
        r"operator 'Map Batches' \(subtask 1/1\): map_batches\(\) returned a batch of schema "
        r"\{k: int64\}, declared \{k: int64, v: int64\}"
    )
    with pytest.raises(JobExecutionError, match=message), wrong.execute_and_collect() as out:
        list(out)


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (Row(k=2, v="oops"), r"the record Row\(k=2, v='oops'\) has 'oops' in field 'v' \(int64\)"),
        (None, r"the record None is a NoneType, not a Row, tuple or dict"),
        ((3,), r"the record \(3,\) has 1 fields, the schema 2"),
    ],
)
def test_a_record_that_does_not_fit_to_batches_schema_is_named(
    env: StreamExecutionEnvironment, bad: Any, named: str
) -> None:
    env.set_parallelism(1)
    records = env.from_collection([Row(k=1, v=2), bad, Row(k=4, v=5)])
    batches = records.to_batches(SCHEMA, max_rows=8)
    message = r"operator 'To Batches' \(subtask 1/1\): to_batches\(\): records do not fit .*"
    with (
        pytest.raises(JobExecutionError, match=message + named),
        batches.execute_and_collect() as out,
    ):
        list(out)


def test_nulls_in_the_key_column_fail_naming_the_operator(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    source = env.from_collection([pa.record_batch({"k": [1, None], "v": [1, 2]})]).as_batches()
    summed = source.key_by("k").sum("v")
    with (
        pytest.raises(JobExecutionError, match=r"key column 'k' has 1 null"),
        summed.execute_and_collect() as out,
    ):
        list(out)


def test_a_keyed_sum_receives_only_the_key_and_summed_columns(
    env: StreamExecutionEnvironment, tmp_path: Path
) -> None:
    """The exchange in front of a running aggregation carries only the columns it reads; a
    sibling consumer of the same keyed stream still receives every column."""
    env.set_parallelism(2)
    batch = pa.record_batch({"k": [i % 3 for i in range(30)], "v": list(range(30)),
                             "pad": [f"row {i}" for i in range(30)]})  # fmt: skip
    keyed = env.from_collection([batch]).as_batches().key_by("k")
    summed = keyed.sum("v")
    seen = tmp_path / "columns"

    def note(b: pa.RecordBatch) -> None:
        with seen.open("a") as out:
            out.write(",".join(b.schema.names) + "\n")

    keyed.add_sink(note)
    with summed.execute_and_collect() as out:
        finals: dict[int, int] = {}
        for row in _rows(list(out)):
            finals[row["k"]] = max(finals.get(row["k"], 0), row["v"])
    assert finals == {k: sum(v for v in range(30) if v % 3 == k) for k in range(3)}
    assert set(seen.read_text().split()) == {"k,v,pad"}
    (edge,) = summed._transformation.inputs  # the sum's exchange
    assert isinstance(edge.partitioner, BatchKeyGroupPartitioner)
    assert edge.partitioner.columns_read == ["k", "v"]


def test_a_keyed_aggregation_reads_through_a_pruned_copy_of_the_key_by_exchange(
    env: StreamExecutionEnvironment,
) -> None:
    """The stream a running aggregation is built on is rebuilt on a copy of the ``key_by``
    exchange: the copy keeps the exchange's name, input and key columns, reads only the key
    columns and the aggregated one, and the rebuilt stream keeps the event-time column (a
    window after it needs it). The keyed stream's own exchange is left whole."""
    batch = pa.record_batch({"k": [1, 2], "ts": [10, 20], "v": [3, 4], "pad": ["a", "b"]})
    keyed = env.from_collection([batch]).as_batches().with_event_time("ts").key_by(["k"])
    keyed.name("by k")
    whole = keyed._transformation
    for aggregated, read in ((keyed.sum("v"), ["k", "v"]), (keyed.count(), ["k"])):
        (edge,) = aggregated._transformation.inputs
        assert isinstance(edge, PartitionTransformation) and edge is not whole
        assert (edge.name, edge.input) == ("by k", whole.input)
        assert isinstance(edge.partitioner, BatchKeyGroupPartitioner)
        assert edge.partitioner.columns == ["k"] and edge.partitioner.columns_read == read
        assert aggregated.time_column == "ts"
    assert isinstance(whole, PartitionTransformation)
    assert isinstance(whole.partitioner, BatchKeyGroupPartitioner)
    assert whole.partitioner.columns_read is None


def test_parquet_files_are_read_as_record_batches(
    env: StreamExecutionEnvironment, tmp_path: Path
) -> None:
    for part in range(2):
        values = list(range(part * 100, part * 100 + 100))
        table = pa.table({"k": [v % 5 for v in values], "v": values})
        pq.write_table(table, tmp_path / f"part-{part}.parquet", row_group_size=30)
    source = FileSource.for_bulk_file_format(ParquetBatchInputFormat(batch_size=16), str(tmp_path))
    batches = env.from_source(source.build(), None, "parquet").as_batches()
    with batches.key_by("k").count().execute_and_collect() as out:
        counts: dict[int, int] = {}
        for batch in out:
            for row in batch.to_pylist():
                counts[row["k"]] = max(counts.get(row["k"], 0), row["count"])
    assert counts == {k: 40 for k in range(5)}


def test_csv_and_json_files_are_read_as_batches_and_written_as_parquet(
    env: StreamExecutionEnvironment, tmp_path: Path
) -> None:
    from undertow.datastream.connectors.file_system import FileSink, OutputFileConfig
    from undertow.datastream.formats.csv import CsvBatchInputFormat
    from undertow.datastream.formats.json import JsonBatchInputFormat
    from undertow.datastream.formats.parquet import ParquetBulkWriters

    (tmp_path / "csv").mkdir()
    (tmp_path / "json").mkdir()
    for part in range(2):
        values = range(part * 50, part * 50 + 50)
        lines = "".join(f"{v % 4},{v}\n" for v in values)
        (tmp_path / "csv" / f"p{part}.csv").write_text("k,v\n" + lines)
        rows = "".join(f'{{"k": {v % 4}, "v": {v}}}\n' for v in values)
        (tmp_path / "json" / f"p{part}.jsonl").write_text(rows)
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    formats = {"csv": CsvBatchInputFormat(schema, batch_size=8),
               "json": JsonBatchInputFormat(schema, batch_size=8)}  # fmt: skip
    for name, fmt in formats.items():
        source = FileSource.for_bulk_file_format(fmt, str(tmp_path / name)).build()
        out = tmp_path / f"out-{name}"
        sink = FileSink.for_bulk_format(str(out), ParquetBulkWriters.for_batches(row_group_size=16))
        sink = sink.with_output_file_config(OutputFileConfig("part", ".parquet")).build()
        batches = env.from_source(source, None, name).as_batches()
        batches.key_by("k").sum("v").sink_to(sink)
        env.execute(f"{name} to parquet")
        table = pq.read_table(str(out))
        assert table.schema.names == ["k", "v"]
        finals: dict[int, int] = defaultdict(int)
        for row in table.to_pylist():
            finals[row["k"]] = max(finals[row["k"]], row["v"])
        assert table.num_rows == 100
        assert dict(finals) == {k: sum(v for v in range(100) if v % 4 == k) for k in range(4)}


def test_the_parquet_batch_writer_refuses_records_and_other_schemas(tmp_path: Path) -> None:
    from undertow.datastream.formats.parquet import ParquetBulkWriters

    with (tmp_path / "f.parquet").open("wb") as stream:
        writer = ParquetBulkWriters.for_batches().create(stream)
        writer.add_element(pa.record_batch({"a": [1]}))
        with pytest.raises(TypeError, match=r"a batch of schema \{b: int64\} does not match"):
            writer.add_element(pa.record_batch({"b": [1]}))
        with pytest.raises(TypeError, match="for_row_type"):
            writer.add_element(Row(a=1))
        writer.finish()
    assert pq.read_table(tmp_path / "f.parquet").to_pylist() == [{"a": 1}]


def _flink_key(k: float) -> str:
    """A float key as Java's ``Double.equals`` tells it: every NaN one, ``±0.0`` two."""
    return "NaN" if k != k else repr(k)


@pytest.mark.parametrize("two_columns", [False, True])
def test_float_keys_are_the_same_keys_on_the_batch_and_the_record_path(
    env: StreamExecutionEnvironment, two_columns: bool
) -> None:
    """``0.0`` and ``-0.0`` are two keys and every NaN one (Flink's, through Java's
    ``Double.equals``), whichever path runs the keyed sum: the running sums per key agree."""
    keys = [0.0, -0.0, float("nan"), -float("nan"), 0.0, -0.0, float("nan"), 1.5, -float("nan")]
    values = list(range(1, len(keys) + 1))
    records = env.from_collection([(k, 7, v) for k, v in zip(keys, values)])
    if two_columns:
        by_record = records.key_by(lambda r: (r[0], r[1]))
    else:
        by_record = records.key_by(lambda r: r[0])
    summed = by_record.reduce(lambda a, b: (b[0], b[1], a[2] + b[2]))
    batch = pa.record_batch({"k": keys, "j": [7] * len(keys), "v": values})
    batches = env.from_collection([batch]).as_batches()
    totals = batches.key_by(["k", "j"] if two_columns else "k").sum("v")
    with summed.execute_and_collect() as out:
        record_sums = sorted((_flink_key(k), v) for k, _, v in out)
    with totals.execute_and_collect() as out:
        batch_sums = sorted((_flink_key(row["k"]), row["v"]) for row in _rows(list(out)))
    assert record_sums == batch_sums == sorted(
        [("0.0", 1), ("0.0", 6), ("-0.0", 2), ("-0.0", 8), ("1.5", 8),
         ("NaN", 3), ("NaN", 7), ("NaN", 14), ("NaN", 23)]
    )  # fmt: skip
