"""The Delta sink's writer: Parquet data files in the table's directory, one open file per
partition, all closed before every checkpoint barrier.

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

from undertow.common.row import Row
from undertow.common.typeinfo import RowTypeInfo
from undertow.connectors.delta.committable import (
    DeltaCommittable,
    DeltaSinkError,
    partition_directory,
    partition_value,
)
from undertow.connectors.file.bulk_writer import BulkWriter
from undertow.connectors.file.parquet import ParquetWriterFactory
from undertow.connectors.sink import SinkWriter, SinkWriterContext

log = logging.getLogger(__name__)


@dataclass
class _OpenFile:
    path: str  # relative to the table root
    stream: Any
    writer: BulkWriter
    records: int = 0


class DeltaWriter(SinkWriter):
    def __init__(
        self,
        context: SinkWriterContext,
        table_uri: str,
        row_type: RowTypeInfo,
        partition_columns: tuple[str, ...],
        storage_options: dict[str, Any],
        row_group_size: int,
    ) -> None:
        self.table_uri = table_uri.rstrip("/")
        self.subtask = context.subtask_index()
        self.row_type = row_type
        names = row_type.get_field_names()
        types = row_type.get_field_types()
        self.partition_positions = [names.index(c) for c in partition_columns]
        self.partition_columns = partition_columns
        self.data_positions = [i for i in range(len(names)) if names[i] not in partition_columns]
        data_type = RowTypeInfo(tuple(types[i] for i in self.data_positions),
                                tuple(names[i] for i in self.data_positions))  # fmt: skip
        self.factory = ParquetWriterFactory(data_type, row_group_size=row_group_size)
        self.fs, self.root = fsspec.core.url_to_fs(self.table_uri, **storage_options)
        self.writer_id = uuid.uuid4().hex
        self.counter = 0
        self.open_files: dict[tuple[tuple[str, str | None], ...], _OpenFile] = {}

    def _describe(self, path: str) -> str:
        return f"Delta table {self.table_uri}, subtask {self.subtask}, file {path}"

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
        target = self.open_files.get(key)
        if target is None:
            target = self.open_files[key] = self._open(key)
        target.writer.add_element(tuple(row[i] for i in self.data_positions))
        target.records += 1

    def _open(self, key: tuple[tuple[str, str | None], ...]) -> _OpenFile:
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
