"""PyFlink's ``pyflink.datastream.formats.parquet`` (re-exports of
:mod:`undertow.connectors.file.parquet`): ``ParquetBulkWriters.for_row_type(row_type)`` for
``FileSink.for_bulk_format`` and ``ParquetColumnarRowInputFormat(row_type)`` for
``FileSource.for_bulk_file_format``; ``row_type`` is ``Types.ROW_NAMED(...)``."""

from undertow.connectors.file.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
    ParquetWriterFactory,
)

__all__ = ["ParquetBulkWriters", "ParquetColumnarRowInputFormat", "ParquetWriterFactory"]
