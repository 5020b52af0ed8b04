"""Reader formats: records, positions that resume exactly, and bad records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from undertow.common import Row, Types
from undertow.connectors.file.bulk_writer import BulkWriter, BulkWriterFactory
from undertow.connectors.file.csv_format import CsvReaderFormat, CsvRowEncoder, CsvSchema
from undertow.connectors.file.formats import CHUNK_BYTES, Chunk, FileFormat, StreamFormat
from undertow.connectors.file.json_format import JsonLinesEncoder, JsonLinesFormat
from undertow.connectors.file.parquet import ParquetBatchInputFormat
from undertow.connectors.file.split import FileSourceSplit
from undertow.datastream.formats.csv import CsvBulkWriters
from undertow.datastream.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from undertow.table import DataTypes

FS = fsspec.filesystem("file")


def _split(path: Path) -> FileSourceSplit:
    return FileSourceSplit(str(path), path.stat().st_size)


def read_all(fmt: FileFormat, split: FileSourceSplit, batch: int = 3) -> list[Chunk]:
    return list(fmt.read(FS, split, batch))


def records(chunks: list[Chunk]) -> list[Any]:
    return [r for c in chunks for r in c.records]


def resumed_everywhere(fmt: FileFormat, split: FileSourceSplit, batch: int = 2) -> None:
    """Restarting from the position after any chunk yields exactly the rest of the file."""
    chunks = read_all(fmt, split, batch)
    everything = records(chunks)
    done = 0
    for chunk in chunks:
        done += len(chunk.records)
        after = split.with_position(chunk.offset, chunk.records_to_skip, chunk.line)
        assert records(read_all(fmt, after, batch)) == everything[done:]


def test_text_lines_and_resume(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("alpha\nbeta\r\n\ngamma\ndelta")
    fmt = StreamFormat.text_line_format()
    assert records(read_all(fmt, _split(path))) == ["alpha", "beta", "", "gamma", "delta"]
    resumed_everywhere(fmt, _split(path))


def test_a_chunk_of_lines_ends_at_its_bytes_too_and_resumes_there(tmp_path: Path) -> None:
    """Chunks are pending in the source (and in its checkpoints) until emitted: long lines
    end a chunk at ``CHUNK_BYTES`` of the file (Flink's io-fetch-size), short ones at the
    batch size as before."""
    path = tmp_path / "long.txt"
    line = "y" * (CHUNK_BYTES // 3)
    path.write_text("".join(f"{i}{line}\n" for i in range(10)) + "a\nb\nc\n")
    fmt = StreamFormat.text_line_format()
    chunks = read_all(fmt, _split(path), batch=1024)
    assert [len(c.records) for c in chunks] == [3, 3, 3, 1 + 3]  # 3 long lines: 1 MiB
    assert all(c.offset - (0 if i == 0 else chunks[i - 1].offset) >= CHUNK_BYTES
               for i, c in enumerate(chunks[:-1]))  # fmt: skip
    assert [r[:1] for r in records(chunks)] == [str(i) for i in range(10)] + ["a", "b", "c"]
    resumed_everywhere(fmt, _split(path), batch=1024)


def test_undecodable_text_is_a_bad_record_with_offset_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\n\xff\xfe broken\nfine\n")
    chunks = read_all(StreamFormat.text_line_format(), _split(path))
    assert records(chunks) == ["ok", "fine"]
    [bad] = [b for c in chunks for b in c.bad]
    assert (bad.offset, bad.line) == (3, 2) and "utf-8" in bad.reason


def test_json_lines_rows_and_bad_records(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(
        '{"id": 1, "name": "a"}\n'
        "\n"
        '{"id": 2, "name": "b"\n'
        '{"id": "x", "name": "c"}\n'
        '{"name": "d"}\n'
        "[1, 2]\n"
        '{"id": 5, "name": "e"}\n'
    )
    fmt = JsonLinesFormat(Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]))
    chunks = read_all(fmt, _split(path))
    assert records(chunks) == [Row(id=1, name="a"), Row(id=5, name="e")]  # names sort alike
    assert records(chunks)[0].name == "a"
    bad = {b.line: b for c in chunks for b in c.bad}
    assert sorted(bad) == [3, 4, 5, 6]
    assert "malformed JSON" in bad[3].reason and bad[3].raw == '{"id": 2, "name": "b"'
    assert "schema mismatch" in bad[4].reason and "id" in bad[4].reason
    assert "missing field" in bad[5].reason
    assert "expected a JSON object" in bad[6].reason
    assert bad[3].offset == len('{"id": 1, "name": "a"}\n\n')
    resumed_everywhere(fmt, _split(path))


def test_json_lines_without_type_and_encoder_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    values: list[Any] = [{"a": 1}, Row(x=1, y="ü"), [1, 2], "s"]
    path.write_bytes(b"".join(JsonLinesEncoder().encode(v) for v in values))
    got = records(read_all(JsonLinesFormat(), _split(path)))
    assert got == [{"a": 1}, {"x": 1, "y": "ü"}, [1, 2], "s"]


CSV_ROW = Row("id", "name", "score", "ok")
SCHEMA = (
    CsvSchema.builder()
    .add_number_column("id", Types.LONG())
    .add_string_column("name")
    .add_number_column("score", Types.DOUBLE())
    .add_boolean_column("ok")
    .set_use_header()
    .build()
)


def test_csv_header_quotes_multiline_and_nulls(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text('id,name,score,ok\n1,plain,1.5,true\n2,"a, ""quoted""\nname",,false\n3,x,2,\n')
    fmt = CsvReaderFormat.for_schema(SCHEMA)
    got = records(read_all(fmt, _split(path)))
    assert got == [
        CSV_ROW(1, "plain", 1.5, True),
        CSV_ROW(2, 'a, "quoted"\nname', None, False),
        CSV_ROW(3, "x", 2.0, None),
    ]
    assert got[0]._fields == ["id", "name", "score", "ok"]
    resumed_everywhere(fmt, _split(path), batch=1)


def test_csv_bad_records_name_the_column(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("id,name,score,ok\n1,a,1.0,true\nx,b,1.0,true\n2,c\n3,d,1.0,maybe\n")
    chunks = read_all(CsvReaderFormat.for_schema(SCHEMA), _split(path))
    assert records(chunks) == [CSV_ROW(1, "a", 1.0, True)]
    reasons = [(b.line, b.reason) for c in chunks for b in c.bad]
    assert [line for line, _ in reasons] == [3, 4, 5]
    assert "'id'" in reasons[0][1] and "expected 4 columns" in reasons[1][1]
    assert "'ok'" in reasons[2][1]


def test_csv_encoder_round_trips_through_the_reader(tmp_path: Path) -> None:
    schema = CsvSchema.builder().add_number_column("id", Types.INT()).add_string_column("s").build()
    rows = [Row(id=1, s="x,y"), Row(id=2, s='q"q'), Row(id=None, s="")]
    path = tmp_path / "c.csv"
    path.write_bytes(b"".join(CsvRowEncoder.for_schema(schema).encode(r) for r in rows))
    assert records(read_all(CsvReaderFormat.for_schema(schema), _split(path))) == [
        (1, "x,y"),
        (2, 'q"q'),
        (None, ""),
    ]


PQ_ROW = Row("k", "v", "tags")
ROW = Types.ROW_NAMED(["k", "v", "tags"], [Types.STRING(), Types.LONG(), Types.LIST(Types.INT())])


def _write_parquet(path: Path, rows: list[Any], row_group_size: int) -> None:
    factory = ParquetBulkWriters.for_row_type(ROW)
    factory.row_group_size = row_group_size
    with open(path, "wb") as f:
        writer = factory.create(f)
        for r in rows:
            writer.add_element(r)
        writer.finish()


def test_parquet_writer_and_reader_resume_across_row_groups(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    rows = [PQ_ROW(f"k{i}", i, [i, i + 1]) for i in range(25)]
    _write_parquet(path, [(r.k, r.v, r.tags) if r.v % 2 else r for r in rows], row_group_size=7)
    table = pq.read_table(path)
    assert table.num_rows == 25 and pq.ParquetFile(path).metadata.num_row_groups == 4
    fmt = ParquetColumnarRowInputFormat(ROW)
    got = records(read_all(fmt, _split(path), batch=4))
    assert got == rows and got[3].k == "k3"
    resumed_everywhere(fmt, _split(path), batch=4)


def test_parquet_schema_mismatch_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"k": ["a"], "v": ["not a number"]}), path)
    [chunk] = read_all(ParquetColumnarRowInputFormat(ROW), _split(path))
    assert chunk.records == [] and len(chunk.bad) == 1
    reason = chunk.bad[0].reason
    assert "column 'v' is string, expected int64" in reason and "missing column 'tags'" in reason


def test_parquet_writer_refuses_a_row_that_does_not_fit(tmp_path: Path) -> None:
    with open(tmp_path / "p.parquet", "wb") as f:
        factory = ParquetBulkWriters.for_row_type(ROW)
        writer = factory.create(f)
        assert isinstance(factory, BulkWriterFactory) and isinstance(writer, BulkWriter)
        with pytest.raises(TypeError, match="does not fit"):
            writer.add_element(("only", 2))
        writer.abort()


def test_unsupported_parquet_type_is_refused_naming_the_field() -> None:
    with pytest.raises(TypeError, match="'blob'"):
        ParquetBulkWriters.for_row_type(Types.ROW_NAMED(["blob"], [Types.PICKLED_BYTE_ARRAY()]))


def test_parquet_batches_are_record_batches_and_resume_after_any_batch(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    table = pa.table({"k": [f"k{i}" for i in range(25)], "v": list(range(25))})
    pq.write_table(table, path, row_group_size=7)
    fmt = ParquetBatchInputFormat(batch_size=4)
    chunks = read_all(fmt, _split(path))
    batches = records(chunks)
    assert all(isinstance(b, pa.RecordBatch) and b.num_rows <= 4 for b in batches)
    assert pa.Table.from_batches(batches).equals(table)
    rows = 0
    for chunk, batch in zip(chunks, batches):  # one record batch per chunk
        rows += batch.num_rows
        after = _split(path).with_position(chunk.offset, chunk.records_to_skip, chunk.line)
        rest = records(read_all(fmt, after))
        assert sum(b.num_rows for b in rest) == 25 - rows
        assert not rest or rest[0].column("v")[0].as_py() == rows


def test_csv_schema_built_as_pyflinks_docs_build_it(tmp_path: Path) -> None:
    schema = (
        CsvSchema.builder()
        .add_number_column("id", number_type=DataTypes.INT())
        .add_string_column("name")
        .add_array_column("list", ",", element_type=DataTypes.STRING())
        .add_number_column("n")
        .set_column_separator("|")
        .set_escape_char("\\")
        .set_null_value("NULL")
        .set_allow_comments()
        .set_use_header()
        .set_strict_headers()
        .build()
    )
    assert schema.row_type == Types.ROW_NAMED(
        ["id", "name", "list", "n"],
        [Types.INT(), Types.STRING(), Types.BASIC_ARRAY(Types.STRING()), Types.LONG()],
    )
    path = tmp_path / "c.csv"
    path.write_text("id|name|list|n\n# a comment\n1|a\\|b|x,y|7\n2|NULL||NULL\n")
    fmt = CsvReaderFormat.for_schema(schema)
    got = records(read_all(fmt, _split(path)))
    assert got == [(1, "a|b", ["x", "y"], 7), (2, None, None, None)]
    encoded = CsvRowEncoder.for_schema(schema).encode(Row(3, None, ["p", "q"], 4))
    assert encoded == b"3|NULL|p,q|4\n"
    path.write_text("id|name|lst|n\n1|a|x|2\n")
    (bad,) = [b for c in read_all(fmt, _split(path)) for b in c.bad]
    assert bad.line == 1 and "strict headers" in bad.reason and "'lst'" in bad.reason
    with pytest.raises(NotImplementedError, match=r"CsvSchemaBuilder.set_any_property_name\(\)"):
        CsvSchema.builder().set_any_property_name("extra")


def test_csv_bulk_writers_write_the_schemas_lines(tmp_path: Path) -> None:
    schema = (
        CsvSchema.builder()
        .add_number_column("id", number_type=DataTypes.INT())
        .add_array_column("tags", ",")
        .set_column_separator("|")
        .set_use_header()
        .build()
    )
    factory = CsvBulkWriters.for_schema(schema)
    path = tmp_path / "part.csv"
    with path.open("wb") as stream:
        writer = factory.create(stream)
        writer.add_element(Row(1, ["a", "b"]))
        writer.add_element(Row(2, []))
        writer.finish()
    assert path.read_text() == "id|tags\n1|a,b\n2|\n"
    assert records(read_all(CsvReaderFormat.for_schema(schema), _split(path))) == [
        (1, ["a", "b"]),
        (2, None),
    ]
