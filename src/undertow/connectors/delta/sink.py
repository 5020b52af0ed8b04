"""``DeltaSink``: exactly-once appends to a Delta Lake table (Flink's Delta connector, written
with the ``deltalake`` package)::

    sink = (DeltaSink.for_row_data("/data/events", Types.ROW_NAMED(["id", "day", "v"],
                                   [Types.LONG(), Types.STRING(), Types.DOUBLE()]))
            .with_partition_columns("day")
            .build())
    stream.sink_to(sink)

``DeltaSink.for_batches(uri, pyarrow_schema)`` builds the same sink for a batch stream: its
writers take ``pyarrow.RecordBatch`` records of that schema (docs/columnar.md).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from undertow.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    RowTypeInfo,
)
from undertow.connectors.delta.committer import DeltaGlobalCommitter
from undertow.connectors.delta.writer import DeltaBatchWriter, DeltaWriter
from undertow.connectors.file.parquet import arrow_schema
from undertow.connectors.global_committer import (
    GlobalCommitter,
    GlobalCommitterContext,
    GlobalCommittingSink,
)
from undertow.connectors.sink import SinkWriter, SinkWriterContext

_PARTITION_TYPES = {BasicType.STRING, BasicType.BOOLEAN, BasicType.BYTE, BasicType.SHORT,
                    BasicType.INT, BasicType.LONG}  # fmt: skip


class DeltaSink(GlobalCommittingSink):
    """Immutable; pickled to the writers and the committer. Build it with the builder."""

    def __init__(
        self,
        table_uri: str,
        row_type: RowTypeInfo | pa.Schema,
        partition_columns: tuple[str, ...],
        storage_options: dict[str, str],
        filesystem_options: dict[str, Any],
        row_group_size: int,
    ) -> None:
        self.table_uri = table_uri
        #: The row type of the records, or None for a batch sink (``for_batches``).
        self.row_type = row_type if isinstance(row_type, RowTypeInfo) else None
        self.schema = row_type if isinstance(row_type, pa.Schema) else arrow_schema(row_type)
        self.partition_columns = partition_columns
        self.storage_options = storage_options
        self.filesystem_options = filesystem_options
        self.row_group_size = row_group_size

    @staticmethod
    def for_row_data(table_uri: str, row_type: RowTypeInfo) -> DeltaSinkBuilder:
        """Flink's ``DeltaSink.forRowData(path, conf, rowType)``."""
        return DeltaSinkBuilder(table_uri).with_schema(row_type)

    @staticmethod
    def for_batches(table_uri: str, schema: pa.Schema) -> DeltaSinkBuilder:
        """A sink for a batch stream: its records are ``pyarrow.RecordBatch`` of ``schema``."""
        return DeltaSinkBuilder(table_uri).with_schema(schema)

    @staticmethod
    def builder(table_uri: str) -> DeltaSinkBuilder:
        return DeltaSinkBuilder(table_uri)

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        if self.row_type is None:
            return DeltaBatchWriter(context, self.table_uri, self.schema, self.partition_columns,
                                    self.filesystem_options, self.row_group_size)  # fmt: skip
        return DeltaWriter(context, self.table_uri, self.row_type, self.partition_columns,
                           self.filesystem_options, self.row_group_size)  # fmt: skip

    def create_global_committer(self, context: GlobalCommitterContext) -> GlobalCommitter:
        return DeltaGlobalCommitter(context, self.table_uri, self.schema, self.partition_columns,
                                    self.storage_options, self.filesystem_options)  # fmt: skip

    def __repr__(self) -> str:
        parts = f", partitioned by {list(self.partition_columns)}" if self.partition_columns else ""
        return f"DeltaSink({self.table_uri}{parts})"


class DeltaSinkBuilder:
    def __init__(self, table_uri: str) -> None:
        if not isinstance(table_uri, str) or not table_uri:
            raise TypeError(
                f"DeltaSink: the table URI must be a non-empty string, got {table_uri!r}"
            )
        self._uri = table_uri
        self._row_type: RowTypeInfo | pa.Schema | None = None
        self._partition_columns: tuple[str, ...] = ()
        self._storage_options: dict[str, str] = {}
        self._filesystem_options: dict[str, Any] = {}
        self._row_group_size = 64 * 1024

    def with_schema(self, row_type: RowTypeInfo | pa.Schema) -> DeltaSinkBuilder:
        """The table's columns, as ``Types.ROW_NAMED([...], [...])`` (records), or a
        ``pyarrow.Schema`` (a batch stream's record batches)."""
        if not isinstance(row_type, (RowTypeInfo, pa.Schema)):
            raise TypeError(f"DeltaSink {self._uri}: with_schema() needs Types.ROW_NAMED(...) "
                            f"or a pyarrow.Schema, got {row_type!r}")  # fmt: skip
        self._row_type = row_type
        return self

    def with_partition_columns(self, *columns: str) -> DeltaSinkBuilder:
        self._partition_columns = tuple(columns)
        return self

    def with_storage_options(self, options: dict[str, str]) -> DeltaSinkBuilder:
        """Options for ``deltalake`` (object store credentials and endpoints)."""
        self._storage_options = dict(options)
        return self

    def with_filesystem_options(self, options: dict[str, Any]) -> DeltaSinkBuilder:
        """Options for the fsspec filesystem the writers write data files with."""
        self._filesystem_options = dict(options)
        return self

    def with_row_group_size(self, rows: int) -> DeltaSinkBuilder:
        if rows < 1:
            raise ValueError(f"DeltaSink {self._uri}: row group size must be >= 1, got {rows}")
        self._row_group_size = rows
        return self

    def build(self) -> DeltaSink:
        if self._row_type is None:
            raise ValueError(f"DeltaSink {self._uri}: call with_schema(Types.ROW_NAMED(...)) "
                             "before build()")  # fmt: skip
        row_type = self._row_type
        if isinstance(row_type, pa.Schema):
            names = row_type.names
            types: dict[str, Any] = {f.name: f.type for f in row_type}
        else:
            names = row_type.get_field_names()
            types = dict(zip(names, row_type.get_field_types()))
        for column in self._partition_columns:
            t = types.get(column)
            if t is None:
                raise ValueError(f"DeltaSink {self._uri}: partition column {column!r} is not "
                                 f"a column of the schema {names}")  # fmt: skip
            basic = isinstance(t, BasicTypeInfo) and t.basic_type in _PARTITION_TYPES
            arrow = isinstance(t, pa.DataType) and (
                pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)
                or pa.types.is_date32(t)
            )  # fmt: skip
            if not (basic or arrow or isinstance(t, DateTypeInfo)):
                shown = str(t) if isinstance(t, pa.DataType) else repr(t)
                raise ValueError(f"DeltaSink {self._uri}: partition column {column!r} has type "
                                 f"{shown}; use string, integer, boolean or date")  # fmt: skip
        if len(set(self._partition_columns)) != len(self._partition_columns):
            raise ValueError(f"DeltaSink {self._uri}: duplicate partition columns "
                             f"{list(self._partition_columns)}")  # fmt: skip
        if len(self._partition_columns) == len(names):
            raise ValueError(f"DeltaSink {self._uri}: every column is a partition column")
        return DeltaSink(self._uri, row_type, self._partition_columns,
                         self._storage_options, self._filesystem_options,
                         self._row_group_size)  # fmt: skip
