"""PyFlink's ``pyflink.datastream.formats.csv`` (re-exports of
:mod:`undertow.connectors.file.csv_format`)."""

from undertow.connectors.file.csv_format import (
    CsvReaderFormat,
    CsvRowEncoder,
    CsvSchema,
    CsvSchemaBuilder,
)

__all__ = ["CsvReaderFormat", "CsvRowEncoder", "CsvSchema", "CsvSchemaBuilder"]
