"""PyFlink's ``pyflink.datastream.formats.json``: the JSON row schemas
(:mod:`undertow.datastream.formats.json_row`), plus undertow's JSON lines file format and
encoder (:mod:`undertow.connectors.file.json_format`; PyFlink reads JSON files through the
Table API), and ``JsonBatchInputFormat``: JSON lines as record batches for batch streams.
"""

from undertow.connectors.file.arrow_text import JsonBatchInputFormat
from undertow.connectors.file.json_format import JsonLinesEncoder, JsonLinesFormat
from undertow.datastream.formats.json_row import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)

__all__ = [
    "JsonBatchInputFormat",
    "JsonLinesEncoder",
    "JsonLinesFormat",
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
]
