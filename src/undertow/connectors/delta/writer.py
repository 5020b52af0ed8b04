"""The Delta sink's writers: Parquet data files in the table's directory, one open file per
partition, all closed before every checkpoint barrier. :class:`DeltaWriter` takes records
(rows of the sink's row type), :class:`DeltaBatchWriter` the ``pyarrow.RecordBatch`` records
of a batch stream (rows split by partition with Arrow compute, written as they are).

Names carry a uuid per writer, so no two writers of any attempt or job collide.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

import fsspec  # type: ignore[import-untyped]
import pyarrow as pa
import pyarrow.compute as pc

from undertow.common.row import Row
from undertow.common.typeinfo import RowTypeInfo
from undertow.connectors.delta.committable import (
    DeltaCommittable,
    DeltaSinkError,
    partition_directory,
    partition_value,
)
from undertow.connectors.file.bulk_writer import BulkWriter, BulkWriterFactory
from undertow.connectors.file.parquet import ParquetBatchWriterFactory, ParquetWriterFactory
from undertow.connectors.sink import SinkWriter, SinkWriterContext

log = logging.getLogger(__name__)


@dataclass
class _OpenFile:
    path: str  # relative to the table root
    stream: Any
    writer: BulkWriter
    records: int = 0


PartitionKey = tuple[tuple[str, str | None], ...]


class _DeltaFiles(SinkWriter):
    """The data files of one writer: opened per partition, finished into committables before
    each checkpoint barrier (``prepare_commit``), deleted unfinished on ``close``."""

    def __init__(self, context: SinkWriterContext, table_uri: str,
                 partition_columns: tuple[str, ...], storage_options: dict[str, Any],
                 factory: BulkWriterFactory) -> None:  # fmt: skip
        self.table_uri = table_uri.rstrip("/")
        self.subtask = context.subtask_index()
        self.partition_columns = partition_columns
        self.factory = factory
        self.fs, self.root = fsspec.core.url_to_fs(self.table_uri, **storage_options)
        self.writer_id = uuid.uuid4().hex
        self.counter = 0
        self.open_files: dict[PartitionKey, _OpenFile] = {}

    def _describe(self, path: str) -> str:
        return f"Delta table {self.table_uri}, subtask {self.subtask}, file {path}"

    def _file(self, key: PartitionKey) -> _OpenFile:
        target = self.open_files.get(key)
        if target is None:
            target = self.open_files[key] = self._open(key)
        return target

    def _open(self, key: PartitionKey) -> _OpenFile:
        directory = partition_directory(key)
        name = f"part-{self.subtask:05d}-{self.writer_id}-c{self.counter:06d}.snappy.parquet"
        self.counter += 1
        path = f"{directory}/{name}" if directory else name
        full = f"{self.root}/{path}"
        try:
            if directory:
                self.fs.makedirs(f"{self.root}/{directory}", exist_ok=True)
            stream = self.fs.open(full, "wb")
        except OSError as err:
            raise DeltaSinkError(f"{self._describe(path)}: cannot create: {err}") from err
        return _OpenFile(path, stream, self.factory.create(stream))

    def prepare_commit(self) -> list[Any]:
        committables: list[Any] = []
        for key, f in self.open_files.items():
            try:
                f.writer.finish()
                f.stream.close()
                size = self.fs.size(f"{self.root}/{f.path}")
            except (OSError, TypeError) as err:
                raise DeltaSinkError(f"{self._describe(f.path)}: cannot finish: {err}") from err
            now = time.time_ns() // 1_000_000
            committables.append(
                DeltaCommittable(f.path, int(size), key, f.records, now, self.subtask)
            )
        self.open_files.clear()
        return committables

    def close(self) -> None:
        for f in self.open_files.values():
            try:
                try:
                    f.writer.finish()  # the Parquet writer must not write to a closed stream
                finally:
                    f.stream.close()
                self.fs.rm(f"{self.root}/{f.path}")
            except Exception as err:  # closing after a failure must not raise
                log.warning("%s: could not delete the unfinished file: %s",
                            self._describe(f.path), err)  # fmt: skip
        self.open_files.clear()


class DeltaWriter(_DeltaFiles):
    """Records: rows of ``row_type`` (a ``Row``, tuple or dict), checked against it."""

    def __init__(
        self,
        context: SinkWriterContext,
        table_uri: str,
        row_type: RowTypeInfo,
        partition_columns: tuple[str, ...],
        storage_options: dict[str, Any],
        row_group_size: int,
    ) -> None:
        self.row_type = row_type
        names = row_type.get_field_names()
        types = row_type.get_field_types()
        self.partition_positions = [names.index(c) for c in partition_columns]
        self.data_positions = [i for i in range(len(names)) if names[i] not in partition_columns]
        data_type = RowTypeInfo(tuple(types[i] for i in self.data_positions),
                                tuple(names[i] for i in self.data_positions))  # fmt: skip
        factory = ParquetWriterFactory(data_type, row_group_size=row_group_size)
        super().__init__(context, table_uri, partition_columns, storage_options, factory)

    def write(self, element: Any, timestamp: int | None) -> None:
        value = element.as_dict() if isinstance(element, Row) and element._fields else element
        try:
            row = self.row_type.conform(value)
            problem = self.row_type.check(row)
        except (TypeError, ValueError) as err:
            row, problem = None, str(err)
        if problem is not None:
            raise DeltaSinkError(
                f"Delta table {self.table_uri} (subtask {self.subtask}): record {element!r} "
                f"does not fit {self.row_type!r}: {problem}"
            )
        key = tuple(
            (c, partition_value(row[i]))
            for c, i in zip(self.partition_columns, self.partition_positions)
        )
        target = self._file(key)
        target.writer.add_element(tuple(row[i] for i in self.data_positions))
        target.records += 1


class DeltaBatchWriter(_DeltaFiles):
    """Record batches of ``schema`` (a batch stream): each batch's rows go to the files of
    their partitions, without the partition columns (their values are in the path)."""

    def __init__(self, context: SinkWriterContext, table_uri: str, schema: pa.Schema,
                 partition_columns: tuple[str, ...], storage_options: dict[str, Any],
                 row_group_size: int) -> None:  # fmt: skip
        self.schema = schema
        self.data_columns = [n for n in schema.names if n not in partition_columns]
        data_schema = pa.schema([schema.field(n) for n in self.data_columns])
        factory = ParquetBatchWriterFactory(data_schema, row_group_size=row_group_size)
        super().__init__(context, table_uri, partition_columns, storage_options, factory)

    def write(self, element: Any, timestamp: int | None) -> None:
        batches = element.to_batches() if isinstance(element, pa.Table) else [element]
        for batch in batches:
            if not isinstance(batch, pa.RecordBatch):
                raise DeltaSinkError(
                    f"Delta table {self.table_uri} (subtask {self.subtask}): a batch sink "
                    f"(DeltaSink.for_batches) takes pyarrow.RecordBatch records, got "
                    f"{type(element).__name__} {element!r:.80}; use DeltaSink.for_row_data "
                    "for records"
                )
            if not batch.schema.equals(self.schema):
                raise DeltaSinkError(
                    f"Delta table {self.table_uri} (subtask {self.subtask}): a batch of schema "
                    f"{_show(batch.schema)} does not match the sink's {_show(self.schema)}"
                )
            if batch.num_rows:
                self._write_batch(batch)

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        data = batch.select(self.data_columns)
        if not self.partition_columns:
            target = self._file(())
            target.writer.add_element(data)
            target.records += batch.num_rows
            return
        parts = batch.select(list(self.partition_columns))
        for combo in (
            pa.Table.from_batches([parts]).group_by(parts.schema.names).aggregate([]).to_pylist()
        ):
            mask = None
            for name, value in combo.items():
                column = batch.column(name)
                match = (
                    pc.is_null(column)
                    if value is None
                    else pc.fill_null(pc.equal(column, value), False)
                )
                mask = match if mask is None else pc.and_(mask, match)
            rows = data.filter(mask)
            key = tuple((c, partition_value(combo[c])) for c in self.partition_columns)
            target = self._file(key)
            target.writer.add_element(rows)
            target.records += rows.num_rows


def _show(schema: pa.Schema) -> str:
    return "{" + ", ".join(f"{f.name}: {f.type}" for f in schema) + "}"
