"""PyFlink's ``pyflink.datastream.formats.csv`` (re-exports of
:mod:`undertow.connectors.file.csv_format`), and ``CsvBatchInputFormat`` (not PyFlink's): CSV
files as record batches for batch streams."""

from undertow.connectors.file.arrow_text import CsvBatchInputFormat
from undertow.connectors.file.csv_format import (
    CsvBulkWriters,
    CsvReaderFormat,
    CsvRowEncoder,
    CsvSchema,
    CsvSchemaBuilder,
)
from undertow.datastream.formats.csv_row import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)

__all__ = [
    "CsvBatchInputFormat",
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowEncoder",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]
