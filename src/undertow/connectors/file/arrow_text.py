"""CSV and JSON-lines files read as ``pyarrow.RecordBatch`` records, for batch streams.

``CsvBatchInputFormat`` and ``JsonBatchInputFormat`` are bulk formats of the file source: each
record is one record batch of up to ``batch_size`` rows, parsed by pyarrow's streaming readers
(``pyarrow.csv.open_csv``, ``pyarrow.json.open_json``), so a file is never loaded whole. As
for Parquet, a split's position counts what was emitted from the file start; a restore reads
the file again and drops that much.

Bad input: a CSV row with the wrong number of fields is a bad record (file, line, reason,
text), failing the job or going to the format's side output as for the other file formats. A
value that does not convert to its column's type, or malformed JSON, fails the read naming
the file (a batch has one type per column, so such a row cannot be set aside alone).

Threading: formats are immutable and shared; ``read`` returns an iterator used on one task's
loop thread.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from undertow.connectors.file.bad_records import BadRecord
from undertow.connectors.file.formats import BulkFormat, Chunk
from undertow.connectors.file.split import FileSourceSplit

#: Rows per record batch by default, as ParquetBatchInputFormat's.
DEFAULT_BATCH_ROWS = 65536
#: Bytes pyarrow parses at a time; bounds the memory one open file holds.
BLOCK_BYTES = 1 << 20


class ArrowTextFormatError(ValueError):
    """A CSV or JSON file pyarrow could not parse; the message names the file."""


class _ArrowTextBatchFormat(BulkFormat):
    """Common reading: a pyarrow streaming reader's batches cut to ``batch_size`` rows. A
    split's position counts the units emitted in file order, per parsed block its bad rows
    first, then its rows; a restore drops as many units of the file read again."""

    def __init__(self, schema: pa.Schema | None, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError(f"{type(self).__name__}: batch_size must be >= 1, got {batch_size}")
        if schema is not None and not isinstance(schema, pa.Schema):
            raise TypeError(
                f"{type(self).__name__}: schema must be a pyarrow.Schema, got {schema!r}"
            )
        self.schema = schema
        self.batch_size = batch_size

    @abstractmethod
    def _open(self, stream: Any, bad: Callable[[int, str, str], None]) -> Any:
        """A pyarrow streaming reader over ``stream`` (not empty); ``bad(line, reason, text)``
        receives the rows the reader sets aside."""

    def read(self, fs: Any, split: FileSourceSplit, batch_size: int) -> Iterator[Chunk]:
        bad: list[BadRecord] = []

        def set_aside(line: int, reason: str, text: str) -> None:
            bad.append(BadRecord(split.path, 0, line, reason, text))

        with fs.open(split.path, "rb") as stream:
            if not stream.read(1):
                return  # pyarrow refuses an empty file; it has no rows
            stream.seek(0)
            position, drop = 0, split.records_to_skip
            try:
                reader = self._open(stream, set_aside)
                for batch in reader:
                    block_bad, bad[:] = list(bad), []
                    for start in range(0, max(batch.num_rows, 1), self.batch_size):
                        part = batch.slice(start, self.batch_size)
                        chunk_bad, block_bad = block_bad, []
                        position += len(chunk_bad) + part.num_rows
                        if drop:
                            cut = min(drop, len(chunk_bad))
                            chunk_bad, drop = chunk_bad[cut:], drop - cut
                            cut = min(drop, part.num_rows)
                            part, drop = part.slice(cut), drop - cut
                        if part.num_rows or chunk_bad:
                            records = [part] if part.num_rows else []
                            yield Chunk(records, chunk_bad, records_to_skip=position)
                if bad:  # rows set aside in a last block that had no good row
                    position += len(bad)
                    rest = bad[min(drop, len(bad)) :]
                    if rest:
                        yield Chunk([], rest, records_to_skip=position)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
                raise ArrowTextFormatError(
                    f"{type(self).__name__}: cannot parse {split.path}: {err}"
                ) from err


class CsvBatchInputFormat(_ArrowTextBatchFormat):
    """CSV files as record batches of up to ``batch_size`` rows. Column names come from the
    header line (``has_header=True``) or are ``f0, f1, ...``; ``schema`` fixes column types
    (and, without a header, names), otherwise pyarrow infers them per file."""

    def __init__(
        self,
        schema: pa.Schema | None = None,
        batch_size: int = DEFAULT_BATCH_ROWS,
        delimiter: str = ",",
        has_header: bool = True,
    ) -> None:
        super().__init__(schema, batch_size)
        if len(delimiter) != 1:
            raise ValueError(f"CsvBatchInputFormat: delimiter must be one character: {delimiter!r}")
        self.delimiter = delimiter
        self.has_header = has_header

    def _open(self, stream: Any, bad: Callable[[int, str, str], None]) -> Any:
        names = None
        if not self.has_header:
            names = (
                self.schema.names
                if self.schema is not None
                else _generated_names(stream, self.delimiter)
            )
        # one thread: pyarrow then numbers the rows it sets aside (their line in the file)
        read = pa_csv.ReadOptions(block_size=BLOCK_BYTES, column_names=names, use_threads=False)

        def invalid(row: Any) -> str:
            reason = f"{row.actual_columns} fields, expected {row.expected_columns}"
            bad(row.number or 0, reason, row.text)
            return "skip"

        parse = pa_csv.ParseOptions(delimiter=self.delimiter, invalid_row_handler=invalid)
        types = None if self.schema is None else dict(zip(self.schema.names, self.schema.types))
        convert = pa_csv.ConvertOptions(column_types=types)
        return pa_csv.open_csv(stream, read, parse, convert)

    def __repr__(self) -> str:
        return f"CsvBatchInputFormat({self.schema!r}, delimiter={self.delimiter!r})"


def _generated_names(stream: Any, delimiter: str) -> list[str]:
    """``f0, f1, ...`` for a file without header: as many as its first line has fields
    (counted by the delimiter; a quoted delimiter in that line needs a ``schema``)."""
    first = stream.readline()
    stream.seek(0)
    return [f"f{i}" for i in range(first.count(delimiter.encode()) + 1)]


class JsonBatchInputFormat(_ArrowTextBatchFormat):
    """JSON-lines files (one object per line) as record batches of up to ``batch_size`` rows;
    ``schema`` fixes column types (fields not in it are dropped), otherwise pyarrow infers
    them."""

    def __init__(
        self, schema: pa.Schema | None = None, batch_size: int = DEFAULT_BATCH_ROWS
    ) -> None:
        super().__init__(schema, batch_size)

    def _open(self, stream: Any, bad: Callable[[int, str, str], None]) -> Any:
        read = pa_json.ReadOptions(block_size=BLOCK_BYTES)
        parse = pa_json.ParseOptions(
            explicit_schema=self.schema,
            unexpected_field_behavior="ignore" if self.schema is not None else "infer",
        )
        return pa_json.open_json(stream, read, parse)

    def __repr__(self) -> str:
        return f"JsonBatchInputFormat({self.schema!r})"
