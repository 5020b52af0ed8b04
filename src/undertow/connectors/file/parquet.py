"""Parquet through pyarrow: a bulk writer factory for the file sink and a bulk reader format
for the file source, both typed by a ``Types.ROW_NAMED(...)`` row type.

Types map as: STRING -> string, BOOLEAN -> bool, BYTE/SHORT/INT/LONG -> int8/16/32/64,
FLOAT/DOUBLE -> float32/64, BIG_DEC -> decimal128(38, 18), SQL_DATE -> date32,
SQL_TIMESTAMP -> timestamp[us], ROW -> struct, LIST / BASIC_ARRAY -> list. Anything else is
refused when the factory or format is built, naming the field.

Writer: rows are buffered per column and written as one row group every ``row_group_size``
rows and at ``finish``. Reader: a split is a file; it is read in record batches, and the
position is the number of rows already emitted (restoring skips whole row groups by their
row counts in the footer, then the rest of the rows). A file whose columns do not match the
row type is a bad record (the whole file, offset 0): it fails the job or goes to the side
output, as configured. For batch streams: ParquetBatchInputFormat and ``for_batches``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from undertow.common.row import Row, RowKind, _row_with_fields
from undertow.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TypeInformation,
)
from undertow.connectors.file.bad_records import BadRecord
from undertow.connectors.file.bulk_writer import BulkWriter, BulkWriterFactory
from undertow.connectors.file.formats import BulkFormat, Chunk
from undertow.connectors.file.split import FileSourceSplit

_BASIC = {
    BasicType.STRING: pa.string(),
    BasicType.BOOLEAN: pa.bool_(),
    BasicType.BYTE: pa.int8(),
    BasicType.SHORT: pa.int16(),
    BasicType.INT: pa.int32(),
    BasicType.LONG: pa.int64(),
    BasicType.FLOAT: pa.float32(),
    BasicType.DOUBLE: pa.float64(),
    BasicType.BIG_DEC: pa.decimal128(38, 18),
}


def arrow_type(type_info: TypeInformation, where: str = "value") -> pa.DataType:
    """The Arrow type of ``type_info``; ``where`` names the field in errors."""
    if isinstance(type_info, BasicTypeInfo) and type_info.basic_type in _BASIC:
        return _BASIC[type_info.basic_type]
    if isinstance(type_info, DateTypeInfo):
        return pa.date32()
    if isinstance(type_info, TimestampTypeInfo):
        return pa.timestamp("us")
    if isinstance(type_info, RowTypeInfo):
        return pa.struct(
            [
                pa.field(n, arrow_type(t, f"{where}.{n}"))
                for n, t in zip(type_info.get_field_names(), type_info.get_field_types())
            ]
        )
    if isinstance(type_info, (ListTypeInfo, BasicArrayTypeInfo)):
        return pa.list_(arrow_type(type_info.element_type, f"{where}[]"))
    raise TypeError(
        f"Parquet: field {where!r} has type {type_info!r}, which has no Parquet mapping here"
    )


def arrow_schema(row_type: RowTypeInfo) -> pa.Schema:
    if not isinstance(row_type, RowTypeInfo):
        raise TypeError(f"Parquet needs a row type (Types.ROW_NAMED(...)), got {row_type!r}")
    return pa.schema(
        [
            pa.field(n, arrow_type(t, n))
            for n, t in zip(row_type.get_field_names(), row_type.get_field_types())
        ]
    )


def _plain(value: Any) -> Any:
    if isinstance(value, Row) and value._fields is not None:
        return {n: _plain(v) for n, v in zip(value._fields, value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class ParquetBulkWriter(BulkWriter):
    """Buffers rows column-wise; one row group per ``row_group_size`` rows."""

    def __init__(
        self,
        stream: BinaryIO,
        row_type: RowTypeInfo,
        schema: pa.Schema,
        row_group_size: int,
        compression: str,
    ) -> None:
        self.row_type = row_type
        self.schema = schema
        self.names = row_type.get_field_names()
        self.columns: list[list[Any]] = [[] for _ in self.names]
        self.row_group_size = row_group_size
        self.writer = pq.ParquetWriter(stream, schema, compression=compression)

    def add_element(self, element: Any) -> None:
        if isinstance(element, Row) and element._fields is not None:
            element = element.as_dict()  # named rows map by name, not by position
        try:
            row = self.row_type.conform(element)
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"Parquet writer: {element!r} does not fit {self.row_type!r}: {err}"
            ) from err
        for column, value in zip(self.columns, row):
            column.append(_plain(value))
        if len(self.columns[0]) >= self.row_group_size:
            self.flush()

    def flush(self) -> None:
        if not self.columns[0]:
            return
        try:
            table = pa.table(
                [pa.array(c, type=f.type) for c, f in zip(self.columns, self.schema)],
                schema=self.schema,
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as err:
            raise TypeError(f"Parquet writer: rows do not fit {self.schema}: {err}") from err
        self.writer.write_table(table)
        self.columns = [[] for _ in self.names]

    def finish(self) -> None:
        self.flush()
        self.writer.close()

    def abort(self) -> None:
        """Close the Parquet writer now, while its stream is open (pyarrow would otherwise try
        to write the footer from ``__del__`` into a closed stream)."""
        self.columns = [[] for _ in self.names]
        try:
            self.writer.close()
        except (OSError, ValueError, pa.ArrowException):
            pass  # the file is removed anyway


class ParquetWriterFactory(BulkWriterFactory):
    """Writes ``Row`` (or tuple / dict) values of ``row_type`` as Parquet."""

    def __init__(
        self, row_type: RowTypeInfo, row_group_size: int = 64 * 1024, compression: str = "snappy"
    ) -> None:
        self.row_type = row_type
        self.schema = arrow_schema(row_type)
        self.row_group_size = row_group_size
        self.compression = compression

    def create(self, stream: BinaryIO) -> BulkWriter:
        return ParquetBulkWriter(
            stream, self.row_type, self.schema, self.row_group_size, self.compression
        )

    def __repr__(self) -> str:
        return f"ParquetWriterFactory({self.row_type!r})"


class ParquetBatchWriter(BulkWriter):
    """Writes the ``pyarrow.RecordBatch`` (or ``Table``) elements of a batch stream; the
    file's schema is the factory's, or the first batch's. Batches are buffered and written as
    one row group per ``row_group_size`` rows."""

    def __init__(
        self, stream: BinaryIO, schema: pa.Schema | None, row_group_size: int, compression: str
    ) -> None:
        self.stream = stream
        self.schema = schema
        self.row_group_size = row_group_size
        self.compression = compression
        self.pending: list[pa.RecordBatch] = []
        self.rows = 0
        self.writer: pq.ParquetWriter | None = None

    def add_element(self, element: Any) -> None:
        if isinstance(element, pa.Table):
            batches = element.to_batches()
        elif isinstance(element, pa.RecordBatch):
            batches = [element]
        else:
            raise TypeError(
                "Parquet batch writer: elements must be pyarrow.RecordBatch or Table (a batch "
                f"stream), got {type(element).__name__}; for records use "
                "ParquetBulkWriters.for_row_type"
            )
        for batch in batches:
            if self.schema is None:
                self.schema = batch.schema
            elif not batch.schema.equals(self.schema):
                raise TypeError(
                    f"Parquet batch writer: a batch of schema {_one_line(batch.schema)} does "
                    f"not match the file's {_one_line(self.schema)}"
                )
            self.pending.append(batch)
            self.rows += batch.num_rows
        if self.rows >= self.row_group_size:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        assert self.schema is not None
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.stream, self.schema, compression=self.compression)
        self.writer.write_table(pa.Table.from_batches(self.pending, self.schema))
        self.pending, self.rows = [], 0

    def finish(self) -> None:
        self.flush()
        if self.writer is None and self.schema is not None:  # a file with no rows
            self.writer = pq.ParquetWriter(self.stream, self.schema, compression=self.compression)
        if self.writer is not None:
            self.writer.close()

    def abort(self) -> None:
        self.pending, self.rows = [], 0
        if self.writer is not None:
            try:
                self.writer.close()
            except (OSError, ValueError, pa.ArrowException):
                pass  # the file is removed anyway


def _one_line(schema: pa.Schema) -> str:
    return "{" + ", ".join(f"{f.name}: {f.type}" for f in schema) + "}"


class ParquetBatchWriterFactory(BulkWriterFactory):
    """Writes the record batches of a batch stream as Parquet (docs/columnar.md)."""

    def __init__(
        self,
        schema: pa.Schema | None = None,
        row_group_size: int = 64 * 1024,
        compression: str = "snappy",
    ) -> None:
        if schema is not None and not isinstance(schema, pa.Schema):
            raise TypeError(f"ParquetBulkWriters.for_batches: schema must be a pyarrow.Schema, "
                            f"got {schema!r}")  # fmt: skip
        self.schema = schema
        self.row_group_size = row_group_size
        self.compression = compression

    def create(self, stream: BinaryIO) -> BulkWriter:
        return ParquetBatchWriter(stream, self.schema, self.row_group_size, self.compression)

    def __repr__(self) -> str:
        return f"ParquetBatchWriterFactory({self.schema!r})"


class ParquetBulkWriters:
    """PyFlink's ``ParquetBulkWriters.for_row_type(row_type)``; ``for_batches(schema)`` (not
    PyFlink's) writes the record batches of a batch stream."""

    @staticmethod
    def for_row_type(
        row_type: RowTypeInfo, hadoop_config: Any = None, utc_timestamp: bool = False
    ) -> ParquetWriterFactory:
        return ParquetWriterFactory(row_type)

    @staticmethod
    def for_batches(
        schema: pa.Schema | None = None, row_group_size: int = 64 * 1024
    ) -> ParquetBatchWriterFactory:
        return ParquetBatchWriterFactory(schema, row_group_size)


class ParquetColumnarRowInputFormat(BulkFormat):
    """Reads Parquet files as ``Row`` s of ``row_type`` (columns chosen by name), or with
    ``row_type=None`` as rows of every column of the file."""

    def __init__(
        self,
        row_type: RowTypeInfo | None = None,
        hadoop_config: Any = None,
        batch_size: int = 2048,
        is_utc_timestamp: bool = False,
        is_case_sensitive: bool = True,
    ) -> None:
        self.row_type = row_type
        self.schema = arrow_schema(row_type) if row_type is not None else None
        self.batch_size = batch_size

    def read(self, fs: Any, split: FileSourceSplit, batch_size: int) -> Iterator[Chunk]:
        with fs.open(split.path, "rb") as f:
            parquet = pq.ParquetFile(f)
            problem = self._mismatch(parquet.schema_arrow)
            if problem is not None:
                yield Chunk(
                    [],
                    [BadRecord(split.path, 0, 0, f"schema mismatch: {problem}", "")],
                    records_to_skip=parquet.metadata.num_rows,
                )
                return
            skip = split.records_to_skip
            groups: list[int] = []
            first = 0
            for g in range(parquet.metadata.num_row_groups):
                rows = parquet.metadata.row_group(g).num_rows
                if not groups and first + rows <= skip:
                    first += rows
                else:
                    groups.append(g)
            position, drop = skip, skip - first
            columns = self.row_type.get_field_names() if self.row_type is not None else None
            names = columns or list(parquet.schema_arrow.names)

            size = self._rows_per_read(batch_size)
            for batch in parquet.iter_batches(size, row_groups=groups, columns=columns):
                if drop:
                    cut = min(drop, batch.num_rows)
                    batch, drop = batch.slice(cut), drop - cut
                    if not batch.num_rows:
                        continue
                position += batch.num_rows
                yield Chunk(self._records(batch, names), records_to_skip=position)

    def _rows_per_read(self, batch_size: int) -> int:
        """Rows per Parquet read: at most the reader's records per chunk."""
        return min(batch_size, self.batch_size)

    def _records(self, batch: pa.RecordBatch, names: list[str]) -> list[Any]:
        data = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        return [_row_with_fields(values, names, RowKind.INSERT) for values in zip(*data)]

    def _mismatch(self, actual: pa.Schema) -> str | None:
        if self.schema is None:
            return None
        problems = []
        for expected in self.schema:
            index = actual.get_field_index(expected.name)
            if index < 0:
                problems.append(f"missing column {expected.name!r}")
            elif not actual.field(index).type.equals(expected.type):
                problems.append(
                    f"column {expected.name!r} is {actual.field(index).type}, "
                    f"expected {expected.type}"
                )
        return "; ".join(problems) or None

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self.row_type!r})"


class ParquetBatchInputFormat(ParquetColumnarRowInputFormat):
    """Reads Parquet files as ``pyarrow.RecordBatch`` records of up to ``batch_size`` rows, for
    a batch stream (``env.from_source(...).as_batches()``, docs/columnar.md). Positions and
    restores are those of the row format: a checkpoint remembers the rows read."""

    def __init__(self, row_type: RowTypeInfo | None = None, batch_size: int = 65536) -> None:
        super().__init__(row_type, batch_size=batch_size)

    def _rows_per_read(self, batch_size: int) -> int:
        return self.batch_size  # one record batch is one record: the reader's limit is moot

    def _records(self, batch: pa.RecordBatch, names: list[str]) -> list[Any]:
        return [batch]

    def __repr__(self) -> str:
        return f"ParquetBatchInputFormat({self.row_type!r})"
