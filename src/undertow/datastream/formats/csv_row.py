"""``CsvRowSerializationSchema`` / ``CsvRowDeserializationSchema`` (PyFlink's
``pyflink.datastream.formats.csv``): a :class:`~undertow.common.Row` <-> one CSV line.

Built with ``CsvRow...Schema.Builder(row_type)`` and Flink's options: field delimiter (``,``),
quote character (``"``, or none), escape character (none), array element delimiter (``;``),
null literal (empty), line delimiter (``\\n``, serialization only), comments (lines starting
with ``#``, deserialization only) and ignore-parse-errors (a bad line yields ``None``, Flink's
"skip this record"; otherwise ``ValueError`` names the column and the value). Fields are quoted
only when they need it. Types: Flink's basic types, dates and times, and arrays/lists of them,
written as Flink writes them (Java's ``toString``: ``2020-01-02``, ``12:00:01``,
``2020-01-02 03:04:05.0``, ``1.0E20``). Schemas are immutable after ``build()`` and shared by
all subtasks.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import io
from collections.abc import Callable
from typing import Any

from undertow.common.row import Row
from undertow.common.serialization import DeserializationSchema, SerializationSchema
from undertow.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TypeInformation,
    Types,
)
from undertow.runtime.task.print_format import java_double

__all__ = ["CsvRowDeserializationSchema", "CsvRowSerializationSchema"]


def _bool(text: str) -> bool:
    if text.strip().lower() not in ("true", "false"):
        raise ValueError(f"not a boolean: {text!r}")
    return text.strip().lower() == "true"


_BASIC: dict[BasicType, Callable[[str], Any]] = {
    BasicType.STRING: str, BasicType.CHAR: str, BasicType.BYTE: int, BasicType.SHORT: int,
    BasicType.INT: int, BasicType.LONG: int, BasicType.BIG_INT: int, BasicType.FLOAT: float,
    BasicType.DOUBLE: float, BasicType.BOOLEAN: _bool, BasicType.BIG_DEC: decimal.Decimal,
}  # fmt: skip


def _element_type(type_info: TypeInformation) -> TypeInformation | None:
    if isinstance(type_info, (BasicArrayTypeInfo, ListTypeInfo)):
        return type_info.element_type
    return None


def _parser(type_info: TypeInformation, array_sep: str, where: str) -> Callable[[str], Any]:
    element = _element_type(type_info)
    if element is not None:
        parse_one = _parser(element, array_sep, where)
        return lambda text: [parse_one(part) for part in text.split(array_sep)] if text else []
    if isinstance(type_info, BasicTypeInfo) and type_info.basic_type in _BASIC:
        return _BASIC[type_info.basic_type]
    if isinstance(type_info, DateTypeInfo):
        return datetime.date.fromisoformat
    if isinstance(type_info, TimeTypeInfo):
        return datetime.time.fromisoformat
    if isinstance(type_info, TimestampTypeInfo):
        return lambda text: datetime.datetime.fromisoformat(text.replace("T", " "))
    raise TypeError(f"CSV row schemas: column {where} has unsupported type {type_info!r}")


def _row_type(type_info: Any, who: str) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(f"{who}: type_info must be a row type (Types.ROW_NAMED), got {type_info!r}")
    return type_info


class _Options:
    def __init__(self) -> None:
        self.field_delimiter = ","
        self.quote_character: str | None = '"'
        self.escape_character: str | None = None
        self.array_element_delimiter = ";"
        self.null_literal = ""
        self.line_delimiter = "\n"
        self.allow_comments = False
        self.ignore_parse_errors = False

    def dialect(self) -> dict[str, Any]:
        return {
            "delimiter": self.field_delimiter,
            "quotechar": self.quote_character,
            "escapechar": self.escape_character,
            "quoting": csv.QUOTE_MINIMAL if self.quote_character else csv.QUOTE_NONE,
            "lineterminator": self.line_delimiter,
        }


def _char(value: str, what: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"CSV row schema: {what} must be one character, got {value!r}")
    return value


class CsvRowSerializationSchema(SerializationSchema):
    """Row -> one CSV line (with the line delimiter)."""

    def __init__(self, row_type: RowTypeInfo, options: _Options) -> None:
        self._type = row_type
        self._options = options

    def serialize(self, element: Any) -> bytes:
        names = self._type.get_field_names()
        if not isinstance(element, (Row, tuple, list)) or len(element) != len(names):
            raise ValueError(
                f"CsvRowSerializationSchema: expected a row of {len(names)} fields {names}, "
                f"got {element!r}"
            )
        options = self._options
        fields = [self._text(v, t) for v, t in zip(element, self._type.get_field_types())]
        out = io.StringIO()
        csv.writer(out, **options.dialect()).writerow(fields)
        return out.getvalue().encode("utf-8")

    def _text(self, value: Any, t: TypeInformation | None) -> str:
        """``value`` as Flink's schema writes it: Java's ``toString`` of the field's type."""
        if value is None:
            return self._options.null_literal
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            element = _element_type(t) if t is not None else None
            return self._options.array_element_delimiter.join(self._text(v, element) for v in value)
        if isinstance(value, datetime.datetime):  # java.sql.Timestamp: at least one digit
            return f"{value:%Y-%m-%d %H:%M:%S}.{f'{value.microsecond:06d}'.rstrip('0') or '0'}"
        if isinstance(value, datetime.time):  # java.sql.Time: whole seconds
            return f"{value:%H:%M:%S}"
        if isinstance(value, float):
            return java_double(value, single=t == Types.FLOAT())
        return str(value)

    class Builder:
        def __init__(self, type_info: TypeInformation) -> None:
            self._type = _row_type(type_info, "CsvRowSerializationSchema")
            self._options = _Options()

        def set_field_delimiter(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._options.field_delimiter = _char(c, "field delimiter")
            return self

        def set_line_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            if delimiter not in ("\n", "\r", "\r\n", ""):
                raise ValueError(
                    "CSV row schema: line delimiter must be \\n, \\r, \\r\\n or ''; "
                    f"got {delimiter!r}"
                )
            self._options.line_delimiter = delimiter
            return self

        def set_array_element_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            self._options.array_element_delimiter = delimiter
            return self

        def disable_quote_character(self) -> CsvRowSerializationSchema.Builder:
            self._options.quote_character = None
            return self

        def set_quote_character(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._options.quote_character = _char(c, "quote character")
            return self

        def set_escape_character(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._options.escape_character = _char(c, "escape character")
            return self

        def set_null_literal(self, s: str) -> CsvRowSerializationSchema.Builder:
            self._options.null_literal = s
            return self

        def build(self) -> CsvRowSerializationSchema:
            return CsvRowSerializationSchema(self._type, self._options)


class CsvRowDeserializationSchema(DeserializationSchema):
    """One CSV line -> Row (``None`` for a comment line, or a bad one when errors are
    ignored)."""

    def __init__(self, row_type: RowTypeInfo, options: _Options) -> None:
        self._type = row_type
        self._options = options
        names, types = row_type.get_field_names(), row_type.get_field_types()
        self._parsers = [
            _parser(t, options.array_element_delimiter, repr(n)) for n, t in zip(names, types)
        ]

    def get_produced_type(self) -> TypeInformation:
        return self._type

    def deserialize(self, message: bytes | bytearray | memoryview) -> Row | None:
        text = bytes(message).decode("utf-8").rstrip("\r\n")
        if self._options.allow_comments and text.lstrip().startswith("#"):
            return None
        try:
            return self._parse(text)
        except ValueError as err:
            if self._options.ignore_parse_errors:
                return None
            raise ValueError(f"CsvRowDeserializationSchema: {err} in line {text!r}") from err

    def _parse(self, text: str) -> Row:
        options = self._options
        dialect = options.dialect()
        dialect.pop("lineterminator")
        try:
            fields = next(csv.reader([text], strict=True, **dialect))
        except csv.Error as err:
            raise ValueError(f"malformed CSV: {err}") from err
        names = self._type.get_field_names()
        if len(fields) != len(names):
            raise ValueError(f"expected {len(names)} columns {names}, got {len(fields)}")
        values: list[Any] = []
        for name, parse, field in zip(names, self._parsers, fields):
            if field == options.null_literal and (field != "" or parse is not str):
                values.append(None)
                continue
            try:
                values.append(parse(field))
            except (ValueError, decimal.InvalidOperation) as err:
                raise ValueError(f"column {name!r}: cannot read {field!r} ({err})") from err
        row: Row = self._type.conform(values)
        problem = self._type.check(row)
        if problem is not None:
            raise ValueError(problem)
        return row

    class Builder:
        def __init__(self, type_info: TypeInformation) -> None:
            self._type = _row_type(type_info, "CsvRowDeserializationSchema")
            self._options = _Options()

        def set_field_delimiter(self, delimiter: str) -> CsvRowDeserializationSchema.Builder:
            self._options.field_delimiter = _char(delimiter, "field delimiter")
            return self

        def set_allow_comments(self, allow_comments: bool) -> CsvRowDeserializationSchema.Builder:
            self._options.allow_comments = bool(allow_comments)
            return self

        def set_array_element_delimiter(
            self, delimiter: str
        ) -> CsvRowDeserializationSchema.Builder:
            self._options.array_element_delimiter = delimiter
            return self

        def set_quote_character(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._options.quote_character = _char(c, "quote character")
            return self

        def set_escape_character(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._options.escape_character = _char(c, "escape character")
            return self

        def set_null_literal(self, null_literal: str) -> CsvRowDeserializationSchema.Builder:
            self._options.null_literal = null_literal
            return self

        def set_ignore_parse_errors(
            self, ignore_parse_errors: bool
        ) -> CsvRowDeserializationSchema.Builder:
            self._options.ignore_parse_errors = bool(ignore_parse_errors)
            return self

        def build(self) -> CsvRowDeserializationSchema:
            return CsvRowDeserializationSchema(self._type, self._options)
