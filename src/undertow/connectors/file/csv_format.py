"""CSV for the file source (:class:`CsvReaderFormat`) and the file sink (:class:`CsvRowEncoder`,
:class:`CsvBulkWriters`).

The schema (:class:`CsvSchema`, built like PyFlink's ``CsvSchema.builder()``) names the
columns and their types; a record is a :class:`~undertow.common.Row` with those names. A line
with the wrong number of columns or a value that does not parse as its column's type is a bad
record. An empty field is ``None`` (CSV's null) except in string columns. Quoted fields may
contain separators, quotes (doubled) and newlines: a record then spans several lines, and the
position after it is still a byte offset. Jackson's options PyFlink's builder sets work as
there: array columns (read as lists), an escape character, no quote character, a null value,
``#`` comments, strict headers (a header that does not name the columns is a bad record).
"""

from __future__ import annotations

import csv
import decimal
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from undertow.common.row import Row
from undertow.common.serialization import Encoder
from undertow.common.typeinfo import BasicType, BasicTypeInfo, RowTypeInfo, TypeInformation, Types
from undertow.connectors.file.bulk_writer import BulkWriter, BulkWriterFactory
from undertow.connectors.file.formats import RecordParseError, StreamFormat


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"not a boolean: {text!r}")


_PARSERS: dict[BasicType, Callable[[str], Any]] = {
    BasicType.STRING: str,
    BasicType.BYTE: int,
    BasicType.SHORT: int,
    BasicType.INT: int,
    BasicType.LONG: int,
    BasicType.BIG_INT: int,
    BasicType.FLOAT: float,
    BasicType.DOUBLE: float,
    BasicType.BOOLEAN: _bool,
    BasicType.BIG_DEC: decimal.Decimal,
}


@dataclass(frozen=True)
class CsvSchema:
    """Column names and types, and Jackson's CSV options PyFlink's builder sets."""

    names: tuple[str, ...]
    types: tuple[TypeInformation, ...]
    separator: str = ","
    quote_char: str | None = '"'
    use_header: bool = False
    #: Per column: the separator of an array column's elements, ``None`` for other columns.
    array_separators: tuple[str | None, ...] = ()
    escape_char: str | None = None
    null_value: str | None = None
    allow_comments: bool = False
    strict_headers: bool = False
    line_separator: str = "\n"

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    @property
    def row_type(self) -> RowTypeInfo:
        return Types.ROW_NAMED(list(self.names), list(self.types))

    def size(self) -> int:
        return len(self.names)

    def __len__(self) -> int:
        return len(self.names)


def _one_char(what: str, value: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"CSV {what} must be one character, got {value!r}")
    return value


class CsvSchemaBuilder:
    """PyFlink's ``CsvSchemaBuilder``: every setter returns the builder."""

    def __init__(self) -> None:
        self._columns: list[tuple[str, TypeInformation, str | None]] = []
        self._options: dict[str, Any] = {}

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        return self.add_column(name, Types.STRING())

    def add_number_column(
        self, name: str, number_type: TypeInformation | None = None
    ) -> CsvSchemaBuilder:
        """A number column, ``BIGINT`` (``Types.LONG()``) unless ``number_type`` says."""
        return self.add_column(name, Types.LONG() if number_type is None else number_type)

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        return self.add_column(name, Types.BOOLEAN())

    def add_array_column(
        self, name: str, separator: str = ";", element_type: TypeInformation | None = None
    ) -> CsvSchemaBuilder:
        """A column of ``separator``-separated values of ``element_type`` (default string),
        read as a list."""
        element = Types.STRING() if element_type is None else element_type
        self._check(name, element)
        if not isinstance(separator, str) or not separator:
            raise ValueError(f"CSV column {name!r}: the array separator must be a non-empty str")
        self._columns.append((name, Types.BASIC_ARRAY(element), separator))
        return self

    def add_column(self, name: str, type_info: TypeInformation) -> CsvSchemaBuilder:
        self._check(name, type_info)
        self._columns.append((name, type_info, None))
        return self

    @staticmethod
    def _check(name: str, type_info: TypeInformation) -> None:
        if not (isinstance(type_info, BasicTypeInfo) and type_info.basic_type in _PARSERS):
            raise TypeError(
                f"CSV column {name!r}: unsupported type {type_info!r} "
                f"(strings, numbers and booleans, or arrays of them, only)"
            )

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        seps = schema.array_separators or (None,) * schema.size()
        self._columns.extend(zip(schema.names, schema.types, seps))
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        self._columns.clear()
        return self

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        self._options["separator"] = _one_char("column separator", char)
        return self

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        self._options["quote_char"] = _one_char("quote char", char)
        return self

    def disable_quote_char(self) -> CsvSchemaBuilder:
        self._options["quote_char"] = None
        return self

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        self._options["escape_char"] = _one_char("escape char", char)
        return self

    def disable_escape_char(self) -> CsvSchemaBuilder:
        self._options["escape_char"] = None
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        """A field equal to ``null_value`` reads as ``None``, and ``None`` writes as it."""
        self._options["null_value"] = null_value
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        """Lines starting with ``#`` are comments, not records."""
        self._options["allow_comments"] = allow
        return self

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        """What ends each record the CSV encoder writes (reading takes any line end)."""
        self._options["line_separator"] = separator
        return self

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """Jackson's schema-wide default for array columns without a separator of their own.
        Every column ``add_array_column`` adds has one (``;`` unless given), in PyFlink as
        here, so this changes no column."""
        return self

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """The first line of every file is a header, not a record."""
        self._options["use_header"] = use
        return self

    set_skip_first_data_row = set_use_header

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """With a header: a header whose names are not the columns' in order is a bad record."""
        self._options["strict_headers"] = strict
        return self

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        return _unsupported("set_any_property_name", "records have exactly the schema's columns")

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        return _unsupported("disable_array_element_separator", _SEPARATORS)

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        return _unsupported("remove_array_element_separator", _SEPARATORS)

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def build(self) -> CsvSchema:
        if not self._columns:
            raise ValueError("CsvSchema needs at least one column")
        names, types, seps = zip(*self._columns)
        return CsvSchema(tuple(names), tuple(types), array_separators=tuple(seps), **self._options)


_SEPARATORS = "array columns keep the separator add_array_column() gave them"


def _unsupported(method: str, why: str) -> Any:
    raise NotImplementedError(f"CsvSchemaBuilder.{method}() is not supported by undertow: {why}")


class CsvReaderFormat(StreamFormat):
    """CSV records as rows of ``schema`` (PyFlink's ``CsvReaderFormat.for_schema``)."""

    def __init__(self, schema: CsvSchema, charset_name: str = "UTF-8") -> None:
        super().__init__(charset_name)
        self.schema = schema
        self._quote = schema.quote_char.encode() if schema.quote_char else b""
        seps = schema.array_separators or (None,) * schema.size()
        self._parsers = [_parser(t, sep) for t, sep in zip(schema.types, seps)]
        self._strings = [t == Types.STRING() for t in schema.types]
        self._row_type = schema.row_type
        dialect: dict[str, Any] = {"delimiter": schema.separator, "strict": True}
        if schema.quote_char is None:
            dialect["quoting"] = csv.QUOTE_NONE
        else:
            dialect["quotechar"] = schema.quote_char
        if schema.escape_char is not None:
            dialect["escapechar"] = schema.escape_char
        self._dialect = dialect

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        return CsvReaderFormat(schema)

    def get_produced_type(self) -> RowTypeInfo:
        return self._row_type

    def complete(self, raw: bytes) -> bool:
        return not self._quote or raw.count(self._quote) % 2 == 0

    def skip(self, text: str) -> bool:
        return not text or (self.schema.allow_comments and text.startswith("#"))

    def skip_header(self, text: str) -> bool:
        schema = self.schema
        if schema.use_header and schema.strict_headers:
            header = self._fields(text)
            if header != list(schema.names):
                raise RecordParseError(
                    f"strict headers: the header names {header}, the schema {list(schema.names)}"
                )
        return schema.use_header

    def _fields(self, text: str) -> list[str]:
        try:
            return next(csv.reader([text], **self._dialect))
        except csv.Error as err:
            raise RecordParseError(f"malformed CSV: {err}") from err

    def parse(self, text: str) -> Row:
        schema = self.schema
        fields = self._fields(text)
        if len(fields) != schema.size():
            raise RecordParseError(
                f"expected {schema.size()} columns {list(schema.names)}, got {len(fields)}"
            )
        values: list[Any] = []
        for name, parse, is_str, text_value, type_info in zip(
            schema.names, self._parsers, self._strings, fields, schema.types
        ):
            if text_value == schema.null_value or (not is_str and text_value == ""):
                values.append(None)
                continue
            try:
                value = parse(text_value)
            except (ValueError, decimal.InvalidOperation) as err:
                raise RecordParseError(
                    f"column {name!r}: {text_value!r} is not {type_info!r}"
                ) from err
            problem = type_info.check(value)
            if problem is not None:
                raise RecordParseError(f"column {name!r}: {problem}")
            values.append(value)
        row: Row = self._row_type.conform(values)
        return row

    def __repr__(self) -> str:
        return f"CsvReaderFormat({list(self.schema.names)})"


def _parser(type_info: TypeInformation, separator: str | None) -> Callable[[str], Any]:
    if separator is None:
        return _PARSERS[type_info.basic_type]  # type: ignore[attr-defined]
    element = _PARSERS[type_info.element_type.basic_type]  # type: ignore[attr-defined]
    return lambda text: [element(part) for part in text.split(separator)] if text else []


class CsvRowEncoder(Encoder):
    """Writes rows, tuples or lists as CSV lines (``None`` as an empty field, or as the
    schema's null value); with a schema, array columns as their elements joined by the
    column's separator."""

    def __init__(
        self,
        separator: str = ",",
        quote_char: str | None = '"',
        *,
        null_value: str | None = None,
        line_separator: str = "\n",
        escape_char: str | None = None,
        array_separators: tuple[str | None, ...] = (),
    ) -> None:
        self.separator = separator
        self.quote_char = quote_char
        self.null_value = "" if null_value is None else null_value
        self.line_separator = line_separator
        self.escape_char = escape_char
        self.array_separators = array_separators

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvRowEncoder:
        return CsvRowEncoder(
            schema.separator, schema.quote_char, null_value=schema.null_value,
            line_separator=schema.line_separator, escape_char=schema.escape_char,
            array_separators=schema.array_separators,
        )  # fmt: skip

    def _field(self, index: int, value: Any) -> Any:
        if value is None:
            return self.null_value
        sep = self.array_separators[index] if index < len(self.array_separators) else None
        if sep is not None and isinstance(value, (list, tuple)):
            return sep.join(str(v) for v in value)
        return value

    def encode(self, value: Any) -> bytes:
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, (tuple, list)):
            value = [value]
        out = io.StringIO()
        dialect: dict[str, Any] = {"delimiter": self.separator, "escapechar": self.escape_char}
        if self.quote_char is None:
            dialect["quoting"] = csv.QUOTE_NONE
        else:
            dialect["quotechar"] = self.quote_char
        csv.writer(out, lineterminator=self.line_separator, **dialect).writerow(
            [self._field(i, v) for i, v in enumerate(value)]
        )
        return out.getvalue().encode()

    def __repr__(self) -> str:
        return f"CsvRowEncoder({self.separator!r})"


class _CsvBulkWriter(BulkWriter):
    def __init__(self, stream: BinaryIO, schema: CsvSchema) -> None:
        self._stream = stream
        self._encoder = CsvRowEncoder.for_schema(schema)
        if schema.use_header:
            stream.write(self._encoder.encode(list(schema.names)))

    def add_element(self, element: Any) -> None:
        self._stream.write(self._encoder.encode(element))

    def finish(self) -> None:
        self._stream.flush()


class _CsvBulkWriterFactory(BulkWriterFactory):
    def __init__(self, schema: CsvSchema) -> None:
        self.schema = schema

    def create(self, stream: BinaryIO) -> BulkWriter:
        return _CsvBulkWriter(stream, self.schema)

    def __repr__(self) -> str:
        return f"CsvBulkWriters.for_schema({list(self.schema.names)})"


class CsvBulkWriters:
    """PyFlink's ``CsvBulkWriters``: ``FileSink.for_bulk_format(path,
    CsvBulkWriters.for_schema(schema))`` writes rows as the schema's CSV lines (a header
    first in each part file if the schema uses one). As a bulk format it rolls part files
    on every checkpoint; ``FileSink.for_row_format(path, CsvRowEncoder.for_schema(schema))``
    writes the same lines into files that can stay open."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> BulkWriterFactory:
        if not isinstance(schema, CsvSchema):
            raise TypeError(f"CsvBulkWriters.for_schema(): expected a CsvSchema, got {schema!r}")
        return _CsvBulkWriterFactory(schema)
