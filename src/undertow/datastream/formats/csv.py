"""PyFlink's ``pyflink.datastream.formats.csv`` (re-exports of
:mod:`undertow.connectors.file.csv_format`)."""

from undertow.connectors.file.csv_format import (
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
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowEncoder",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]
