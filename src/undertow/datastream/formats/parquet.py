"""PyFlink's ``pyflink.datastream.formats.parquet`` (re-exports of
:mod:`undertow.connectors.file.parquet`): ``ParquetBulkWriters.for_row_type(row_type)`` for
``FileSink.for_bulk_format`` and ``ParquetColumnarRowInputFormat(row_type)`` for
``FileSource.for_bulk_file_format``; ``row_type`` is ``Types.ROW_NAMED(...)``. For batch
streams (not PyFlink's): ``ParquetBatchInputFormat`` and ``ParquetBulkWriters.for_batches``."""

from undertow.connectors.file.parquet import (
    ParquetBatchInputFormat,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
    ParquetWriterFactory,
)

__all__ = [
    "ParquetBatchInputFormat",
    "ParquetBulkWriters",
    "ParquetColumnarRowInputFormat",
    "ParquetWriterFactory",
]
