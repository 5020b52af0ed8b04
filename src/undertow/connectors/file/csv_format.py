"""CSV for the file source (:class:`CsvReaderFormat`) and the file sink (:class:`CsvRowEncoder`).

The schema (:class:`CsvSchema`, built like PyFlink's ``CsvSchema.builder()``) names the
columns and their types; a record is a :class:`~undertow.common.Row` with those names. A line
with the wrong number of columns or a value that does not parse as its column's type is a bad
record. An empty field is ``None`` (CSV's null) except in string columns. Quoted fields may
contain separators, quotes (doubled) and newlines: a record then spans several lines, and the
position after it is still a byte offset.
"""

from __future__ import annotations

import csv
import decimal
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.common.row import Row
from undertow.common.serialization import Encoder
from undertow.common.typeinfo import BasicType, BasicTypeInfo, RowTypeInfo, TypeInformation, Types
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
    """Column names and types, separator, quote character, header."""

    names: tuple[str, ...]
    types: tuple[TypeInformation, ...]
    separator: str = ","
    quote_char: str = '"'
    use_header: bool = False

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    @property
    def row_type(self) -> RowTypeInfo:
        return Types.ROW_NAMED(list(self.names), list(self.types))

    def size(self) -> int:
        return len(self.names)


class CsvSchemaBuilder:
    def __init__(self) -> None:
        self._columns: list[tuple[str, TypeInformation]] = []
        self._separator = ","
        self._quote = '"'
        self._header = False

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        return self.add_column(name, Types.STRING())

    def add_number_column(self, name: str, number_type: TypeInformation) -> CsvSchemaBuilder:
        return self.add_column(name, number_type)

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        return self.add_column(name, Types.BOOLEAN())

    def add_column(self, name: str, type_info: TypeInformation) -> CsvSchemaBuilder:
        if not (isinstance(type_info, BasicTypeInfo) and type_info.basic_type in _PARSERS):
            raise TypeError(
                f"CSV column {name!r}: unsupported type {type_info!r} "
                f"(strings, numbers and booleans only)"
            )
        self._columns.append((name, type_info))
        return self

    def set_column_separator(self, separator: str) -> CsvSchemaBuilder:
        if len(separator) != 1:
            raise ValueError(f"CSV column separator must be one character, got {separator!r}")
        self._separator = separator
        return self

    def set_quote_char(self, quote_char: str) -> CsvSchemaBuilder:
        if len(quote_char) != 1:
            raise ValueError(f"CSV quote char must be one character, got {quote_char!r}")
        self._quote = quote_char
        return self

    def set_use_header(self, use_header: bool = True) -> CsvSchemaBuilder:
        """The first line of every file is a header, not a record."""
        self._header = use_header
        return self

    set_skip_first_data_row = set_use_header

    def build(self) -> CsvSchema:
        if not self._columns:
            raise ValueError("CsvSchema needs at least one column")
        names, types = zip(*self._columns)
        return CsvSchema(tuple(names), tuple(types), self._separator, self._quote, self._header)


class CsvReaderFormat(StreamFormat):
    """CSV records as rows of ``schema`` (PyFlink's ``CsvReaderFormat.for_schema``)."""

    def __init__(self, schema: CsvSchema, charset_name: str = "UTF-8") -> None:
        super().__init__(charset_name)
        self.schema = schema
        self._quote = schema.quote_char.encode()
        self._parsers = [_PARSERS[t.basic_type] for t in schema.types]  # type: ignore[attr-defined]
        self._strings = [t.basic_type is BasicType.STRING for t in schema.types]  # type: ignore[attr-defined]
        self._row_type = schema.row_type

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        return CsvReaderFormat(schema)

    def get_produced_type(self) -> RowTypeInfo:
        return self._row_type

    def complete(self, raw: bytes) -> bool:
        return raw.count(self._quote) % 2 == 0

    def skip(self, text: str) -> bool:
        return not text

    def skip_header(self, text: str) -> bool:
        return self.schema.use_header

    def parse(self, text: str) -> Row:
        schema = self.schema
        try:
            fields = next(
                csv.reader(
                    [text], delimiter=schema.separator, quotechar=schema.quote_char, strict=True
                )
            )
        except csv.Error as err:
            raise RecordParseError(f"malformed CSV: {err}") from err
        if len(fields) != schema.size():
            raise RecordParseError(
                f"expected {schema.size()} columns {list(schema.names)}, got {len(fields)}"
            )
        values: list[Any] = []
        for name, parse, is_str, text_value, type_info in zip(
            schema.names, self._parsers, self._strings, fields, schema.types
        ):
            if not is_str and text_value == "":
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


class CsvRowEncoder(Encoder):
    """Writes rows, tuples or lists as CSV lines (``None`` as an empty field)."""

    def __init__(self, separator: str = ",", quote_char: str = '"') -> None:
        self.separator = separator
        self.quote_char = quote_char

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvRowEncoder:
        return CsvRowEncoder(schema.separator, schema.quote_char)

    def encode(self, value: Any) -> bytes:
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, (tuple, list)):
            value = [value]
        out = io.StringIO()
        csv.writer(
            out, delimiter=self.separator, quotechar=self.quote_char, lineterminator="\n"
        ).writerow(["" if v is None else v for v in value])
        return out.getvalue().encode()

    def __repr__(self) -> str:
        return f"CsvRowEncoder({self.separator!r})"
