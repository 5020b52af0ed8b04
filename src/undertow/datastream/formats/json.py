"""JSON lines for files (re-exports of :mod:`undertow.connectors.file.json_format`).

PyFlink has no JSON lines file format of its own (it reads JSON through the Table API);
``JsonLinesFormat`` is the file-source format and ``JsonLinesEncoder`` the row-format encoder.
"""

from undertow.connectors.file.json_format import JsonLinesEncoder, JsonLinesFormat

__all__ = ["JsonLinesEncoder", "JsonLinesFormat"]
