"""JSON lines: one JSON document per line, for the file source and the file sink.

* :class:`JsonLinesFormat` (source): each non-blank line is parsed with :mod:`json`. Without a
  row type a record is the parsed value (usually a ``dict``); with ``Types.ROW_NAMED(...)`` it
  is a :class:`~undertow.common.Row` of the named fields, checked against the field types. A
  line that is not JSON, not an object, misses a field or has a value of the wrong type is a
  bad record (see :mod:`undertow.connectors.file.bad_records`).
* :class:`JsonLinesEncoder` (sink): ``json.dumps`` of the value plus ``'\\n'``; a ``Row`` with
  field names is written as an object, other rows and tuples as arrays.
"""

from __future__ import annotations

import json
from typing import Any

from undertow.common.row import Row
from undertow.common.serialization import Encoder
from undertow.common.typeinfo import RowTypeInfo
from undertow.connectors.file.formats import RecordParseError, StreamFormat


class JsonLinesFormat(StreamFormat):
    """JSON documents, one per line; blank lines are skipped."""

    def __init__(self, row_type: RowTypeInfo | None = None, charset_name: str = "UTF-8") -> None:
        super().__init__(charset_name)
        if row_type is not None and not isinstance(row_type, RowTypeInfo):
            raise TypeError(
                f"JsonLinesFormat: row_type must be Types.ROW_NAMED(...), got {row_type!r}"
            )
        self.row_type = row_type

    @staticmethod
    def for_row_type(row_type: RowTypeInfo | None = None) -> JsonLinesFormat:
        return JsonLinesFormat(row_type)

    def skip(self, text: str) -> bool:
        return not text.strip()

    def parse(self, text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise RecordParseError(f"malformed JSON: {err}") from err
        row_type = self.row_type
        if row_type is None:
            return value
        if not isinstance(value, dict):
            raise RecordParseError(
                f"expected a JSON object for {row_type!r}, got {type(value).__name__}"
            )
        names = row_type.get_field_names()
        missing = [n for n in names if n not in value]
        if missing:
            raise RecordParseError(f"missing field(s) {missing} for {row_type!r}")
        problem = row_type.check(value)
        if problem is not None:
            raise RecordParseError(f"schema mismatch: {problem}")
        return row_type.conform(value)

    def __repr__(self) -> str:
        return f"JsonLinesFormat({self.row_type!r})"


def _plain(value: Any) -> Any:
    if isinstance(value, Row):
        if value._fields is not None:
            return {n: _plain(v) for n, v in zip(value._fields, value)}
        return [_plain(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class JsonLinesEncoder(Encoder):
    """Writes each value as one line of JSON (UTF-8)."""

    def encode(self, value: Any) -> bytes:
        return (json.dumps(_plain(value), ensure_ascii=False, default=str) + "\n").encode()

    def __repr__(self) -> str:
        return "JsonLinesEncoder()"
