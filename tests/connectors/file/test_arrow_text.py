"""CSV and JSON-lines files as record batches: rows, types, positions that resume exactly after
any chunk, bad rows, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.connectors.file.arrow_text import ArrowTextFormatError
from undertow.connectors.file.formats import Chunk, FileFormat
from undertow.connectors.file.split import FileSourceSplit
from undertow.datastream.formats.csv import CsvBatchInputFormat
from undertow.datastream.formats.json import JsonBatchInputFormat

FS = fsspec.filesystem("file")


def _split(path: Path) -> FileSourceSplit:
    return FileSourceSplit(str(path), path.stat().st_size)


def _chunks(fmt: FileFormat, split: FileSourceSplit) -> list[Chunk]:
    return list(fmt.read(FS, split, 1024))


def _rows(chunks: list[Chunk]) -> list[dict[str, object]]:
    return [row for chunk in chunks for batch in chunk.records for row in batch.to_pylist()]


def _resumes_exactly(fmt: FileFormat, path: Path) -> None:
    """From the position after any chunk, the rest of the file and its bad rows, once."""
    chunks = _chunks(fmt, _split(path))
    for i, chunk in enumerate(chunks):
        after = _split(path).with_position(chunk.offset, chunk.records_to_skip, chunk.line)
        rest = _chunks(fmt, after)
        assert _rows(rest) == _rows(chunks[i + 1 :])
        assert [b.line for c in rest for b in c.bad] == [
            b.line for c in chunks[i + 1 :] for b in c.bad
        ]


def test_csv_rows_arrive_as_typed_batches_of_at_most_batch_size(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("k,v\n" + "".join(f"k{i % 3},{i}\n" for i in range(10)))
    schema = pa.schema([("k", pa.string()), ("v", pa.int32())])
    chunks = _chunks(CsvBatchInputFormat(schema, batch_size=4), _split(path))
    batches = [b for c in chunks for b in c.records]
    assert [b.num_rows for b in batches] == [4, 4, 2]
    assert all(b.schema.equals(schema) for b in batches)
    assert _rows(chunks) == [{"k": f"k{i % 3}", "v": i} for i in range(10)]
    assert [c.records_to_skip for c in chunks] == [4, 8, 10]


def test_csv_without_header_names_columns_f0_f1_or_by_schema(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("1;x\n2;y\n")
    plain = _rows(_chunks(CsvBatchInputFormat(delimiter=";", has_header=False), _split(path)))
    assert plain == [{"f0": 1, "f1": "x"}, {"f0": 2, "f1": "y"}]
    schema = pa.schema([("n", pa.int64()), ("s", pa.string())])
    named = _rows(_chunks(CsvBatchInputFormat(schema, has_header=False, delimiter=";"),
                          _split(path)))  # fmt: skip
    assert named == [{"n": 1, "s": "x"}, {"n": 2, "s": "y"}]


def test_csv_rows_with_the_wrong_field_count_are_bad_records_with_their_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.csv"
    path.write_text("a,b\n1,2\n3\n4,5\n6,7,8\n")
    chunks = _chunks(CsvBatchInputFormat(batch_size=1), _split(path))
    bad = [b for c in chunks for b in c.bad]
    assert [(b.path, b.line, b.raw) for b in bad] == [(str(path), 3, "3"), (str(path), 5, "6,7,8")]
    assert "1 fields, expected 2" in bad[0].reason
    assert _rows(chunks) == [{"a": 1, "b": 2}, {"a": 4, "b": 5}]
    _resumes_exactly(CsvBatchInputFormat(batch_size=1), path)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.one_of(st.integers(0, 99), st.none()), max_size=40),
    batch_size=st.integers(1, 7),
)
def test_csv_resumes_exactly_after_any_chunk(
    tmp_path_factory: pytest.TempPathFactory, rows: list[int | None], batch_size: int
) -> None:
    """None stands for a bad row (three fields); the rest are good rows."""
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    path.write_text("a,b\n" + "".join("x,y,z\n" if r is None else f"{r},{r * 2}\n" for r in rows))
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    fmt = CsvBatchInputFormat(schema, batch_size=batch_size)
    chunks = _chunks(fmt, _split(path))
    assert _rows(chunks) == [{"a": r, "b": r * 2} for r in rows if r is not None]
    assert sum(len(c.bad) for c in chunks) == rows.count(None)
    _resumes_exactly(fmt, path)


def test_json_lines_arrive_as_batches_and_resume_after_any_chunk(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(
        "".join(json.dumps({"k": i % 2, "v": i, "extra": "x"}) + "\n" for i in range(9))
    )
    schema = pa.schema([("k", pa.int64()), ("v", pa.float64())])
    fmt = JsonBatchInputFormat(schema, batch_size=4)
    chunks = _chunks(fmt, _split(path))
    assert _rows(chunks) == [{"k": i % 2, "v": float(i)} for i in range(9)]
    _resumes_exactly(fmt, path)


def test_empty_files_have_no_rows(tmp_path: Path) -> None:
    for name, fmt in (("e.csv", CsvBatchInputFormat()), ("e.jsonl", JsonBatchInputFormat())):
        (tmp_path / name).write_bytes(b"")
        assert _chunks(fmt, _split(tmp_path / name)) == []


def test_values_that_do_not_convert_fail_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("a\n1\nx\n")
    fmt = CsvBatchInputFormat(pa.schema([("a", pa.int64())]))
    with pytest.raises(ArrowTextFormatError, match=r"CsvBatchInputFormat: cannot parse .*a\.csv"):
        _chunks(fmt, _split(path))
    bad_json = tmp_path / "b.jsonl"
    bad_json.write_text('{"a": 1}\n{"a":\n')
    with pytest.raises(ArrowTextFormatError, match=r"b\.jsonl"):
        _chunks(JsonBatchInputFormat(), _split(bad_json))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        CsvBatchInputFormat(batch_size=0)
    with pytest.raises(TypeError, match=r"pyarrow\.Schema"):
        JsonBatchInputFormat({"a": "int"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one character"):
        CsvBatchInputFormat(delimiter="::")
