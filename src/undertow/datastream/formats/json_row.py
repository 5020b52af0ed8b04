"""``JsonRowSerializationSchema`` / ``JsonRowDeserializationSchema`` (PyFlink's
``pyflink.datastream.formats.json``): a :class:`~undertow.common.Row` <-> one JSON object.

The row type (``Types.ROW_NAMED``, or one derived from a JSON schema) gives the field names
and types. Serialization writes what Flink's writes (Jackson, compact): the fields in the
type's order, nested rows as objects, arrays as arrays, ``SQL_DATE`` as ``2020-01-02``,
``SQL_TIME`` as ``12:00:01Z`` and ``SQL_TIMESTAMP`` as ``2020-01-02T03:04:05.123Z``
(RFC 3339, fraction only when there is one), decimals with their digits (``1.50``), byte
arrays in base64. Deserialization reads those back (the ``Z`` optional) into a row of those
fields: a missing field is ``None`` unless ``fail_on_missing_field()``; a message
that is not valid JSON or does not fit the type raises ``ValueError`` naming the field and the
value, or yields ``None`` (Flink's "skip this record") with ``ignore_parse_errors()``.

Schemas are immutable after ``build()`` and shared by all subtasks.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
from typing import Any

from undertow.common.row import Row
from undertow.common.serialization import DeserializationSchema, SerializationSchema
from undertow.common.typeinfo import (
    BasicArrayTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TypeInformation,
    Types,
)

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]


def _row_type(type_info: Any, who: str) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(f"{who}: type_info must be a row type (Types.ROW_NAMED), got {type_info!r}")
    return type_info


def _fraction(micros: int) -> str:
    return f".{micros:06d}".rstrip("0") if micros else ""


def _time_text(t: datetime.time | datetime.datetime) -> str:
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}{_fraction(t.microsecond)}Z"


def _to_json(value: Any, t: TypeInformation | None) -> Any:
    """``value`` as the JSON value Flink writes for type ``t`` (``None``: by the value)."""
    if value is None:
        return None
    if isinstance(t, RowTypeInfo) and isinstance(value, (tuple, list)):
        types = t.get_field_types()
        return {n: _to_json(v, f) for n, v, f in zip(t.get_field_names(), value, types)}
    if isinstance(t, PrimitiveArrayTypeInfo) and isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(
        t, (BasicArrayTypeInfo, ObjectArrayTypeInfo, ListTypeInfo, PrimitiveArrayTypeInfo)
    ):
        return [_to_json(v, t.element_type) for v in value]
    if isinstance(t, MapTypeInfo) and isinstance(value, dict):
        return {str(k): _to_json(v, t.value_type) for k, v in value.items()}
    if isinstance(value, datetime.datetime):
        return f"{value.date().isoformat()}T{_time_text(value)}"
    if isinstance(value, datetime.time):
        return _time_text(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, Row):
        try:
            return {k: _to_json(v, None) for k, v in value.as_dict().items()}
        except TypeError:  # a row without field names, and no type to name them
            return [_to_json(v, None) for v in value]
    if isinstance(value, (list, tuple)):
        return [_to_json(v, None) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v, None) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


def _encode(value: Any) -> str:
    """Compact JSON with decimals written with their digits, as Jackson writes a BigDecimal
    (``json.dumps`` cannot)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise TypeError(f"cannot write the decimal {value!r} as JSON")
        return str(value)
    return json.dumps(value)


class JsonRowSerializationSchema(SerializationSchema):
    """Row -> UTF-8 JSON object. Build with ``builder().with_type_info(row_type).build()``."""

    def __init__(self, row_type: RowTypeInfo) -> None:
        self._type = row_type
        self._names = row_type.get_field_names()
        self._has_decimals = _mentions(row_type, Types.BIG_DEC())

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        return JsonRowSerializationSchema.Builder()

    def serialize(self, element: Any) -> bytes:
        values = list(element) if isinstance(element, (Row, tuple, list)) else None
        if values is None or len(values) != len(self._names):
            raise ValueError(
                f"JsonRowSerializationSchema: expected a row of {len(self._names)} fields "
                f"{self._names}, got {element!r}"
            )
        obj = _to_json(values, self._type)
        if self._has_decimals:
            return _encode(obj).encode("utf-8")
        return json.dumps(obj, separators=(",", ":"), default=_refuse).encode("utf-8")

    class Builder:
        def __init__(self) -> None:
            self._type: RowTypeInfo | None = None

        def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchema.Builder:
            self._type = _row_type(type_info, "JsonRowSerializationSchema")
            return self

        def build(self) -> JsonRowSerializationSchema:
            if self._type is None:
                raise ValueError("JsonRowSerializationSchema: with_type_info(...) is required")
            return JsonRowSerializationSchema(self._type)


def _refuse(value: Any) -> Any:
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as JSON")


def _mentions(t: Any, wanted: TypeInformation) -> bool:
    """Whether ``wanted`` is ``t`` or a part of it."""
    if t == wanted:
        return True
    if isinstance(t, RowTypeInfo):
        return any(_mentions(f, wanted) for f in t.get_field_types())
    if isinstance(t, MapTypeInfo):
        return _mentions(t.key_type, wanted) or _mentions(t.value_type, wanted)
    if isinstance(t, _WITH_ELEMENTS):
        return _mentions(t.element_type, wanted)
    return False


#: The types of sequences, whose element type is a part of them.
_WITH_ELEMENTS = (BasicArrayTypeInfo, ListTypeInfo, ObjectArrayTypeInfo, PrimitiveArrayTypeInfo)


_SCHEMA_TYPES = {
    "string": Types.STRING, "integer": Types.LONG, "number": Types.DOUBLE,
    "boolean": Types.BOOLEAN,
}  # fmt: skip


def type_of_json_schema(schema: Any, where: str = "$") -> TypeInformation:
    """The row type a JSON schema describes (objects -> rows, arrays -> lists)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):  # ["string", "null"]
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object":
        properties = schema.get("properties") or {}
        names = list(properties)
        types = [type_of_json_schema(properties[n], f"{where}.{n}") for n in names]
        return Types.ROW_NAMED(names, types)
    if kind == "array":
        return Types.LIST(type_of_json_schema(schema.get("items", {}), f"{where}[]"))
    if kind in _SCHEMA_TYPES:
        return _SCHEMA_TYPES[kind]()
    raise ValueError(f"JSON schema at {where}: unsupported type {kind!r}")


def _time(text: str) -> datetime.time:
    return _timestamp(f"1970-01-01T{text}").time()


def _timestamp(text: str) -> datetime.datetime:
    """RFC 3339 as Flink writes it (``Z`` optional), any number of fraction digits."""
    text = text.removesuffix("Z").replace(" ", "T", 1)
    head, dot, fraction = text.partition(".")
    micros = (fraction + "000000")[:6] if dot else "000000"
    if dot and not fraction.isdigit():
        raise ValueError(f"bad fraction of a second {fraction!r}")
    return datetime.datetime.fromisoformat(f"{head}.{micros}")


_TEMPORAL = (DateTypeInfo, TimeTypeInfo, TimestampTypeInfo)
_TEMPORAL_PARSERS: dict[type, Any] = {
    DateTypeInfo: datetime.date.fromisoformat, TimeTypeInfo: _time, TimestampTypeInfo: _timestamp,
}  # fmt: skip


class JsonRowDeserializationSchema(DeserializationSchema):
    """UTF-8 JSON object -> Row. Build with ``builder().type_info(row_type).build()`` or
    ``builder().json_schema(text).build()``."""

    def __init__(self, row_type: RowTypeInfo, fail_on_missing_field: bool = False,
                 ignore_parse_errors: bool = False) -> None:  # fmt: skip
        self._type = row_type
        #: Decimal fields keep a number's digits; floats are then read as decimals first.
        self._decimals = _mentions(row_type, Types.BIG_DEC())
        self._fail_on_missing = fail_on_missing_field
        self._ignore_errors = ignore_parse_errors

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        return JsonRowDeserializationSchema.Builder()

    def get_produced_type(self) -> TypeInformation:
        return self._type

    def deserialize(self, message: bytes | bytearray | memoryview) -> Row | None:
        try:
            text = bytes(message).decode("utf-8")
            obj = json.loads(text, parse_float=decimal.Decimal if self._decimals else None)
            return self._row(obj, self._type, "$")
        except (ValueError, TypeError) as err:
            if self._ignore_errors:
                return None
            raise ValueError(f"JsonRowDeserializationSchema: {err} in {bytes(message)!r}") from err

    def _row(self, obj: Any, row_type: RowTypeInfo, where: str) -> Row:
        if not isinstance(obj, dict):
            raise ValueError(f"{where} is not a JSON object: {obj!r}")
        values: list[Any] = []
        for name, field_type in zip(row_type.get_field_names(), row_type.get_field_types()):
            if name not in obj:
                if self._fail_on_missing:
                    raise ValueError(f"field {where}.{name} is missing")
                values.append(None)
                continue
            values.append(self._value(obj[name], field_type, f"{where}.{name}"))
        try:
            row: Row = row_type.conform(values)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from err
        problem = row_type.check(row)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")
        return row

    def _value(self, value: Any, t: TypeInformation, where: str) -> Any:
        """The JSON ``value`` as a value of type ``t`` (what Flink's converters read)."""
        if value is None:
            return None
        try:
            if isinstance(t, RowTypeInfo):
                return self._row(value, t, where)
            if isinstance(t, PrimitiveArrayTypeInfo) and t.element_type == Types.BYTE():
                if isinstance(value, str):
                    return base64.b64decode(value, validate=True)
            elif isinstance(t, (BasicArrayTypeInfo, ObjectArrayTypeInfo, ListTypeInfo)):
                if isinstance(value, list):
                    return [self._value(v, t.element_type, f"{where}[]") for v in value]
            elif isinstance(t, MapTypeInfo) and isinstance(value, dict):
                return {k: self._value(v, t.value_type, f"{where}.{k}") for k, v in value.items()}
            elif isinstance(value, str) and isinstance(t, _TEMPORAL):
                return _TEMPORAL_PARSERS[type(t)](value)
            elif t == Types.BIG_DEC() and isinstance(value, (int, float, decimal.Decimal)):
                return decimal.Decimal(str(value))
            elif isinstance(value, decimal.Decimal):  # a float read while decimals are kept
                return float(value)
        except (ValueError, binascii.Error) as err:
            raise ValueError(f"{where}: {value!r} is not {t!r} ({err})") from err
        return value

    class Builder:
        def __init__(self) -> None:
            self._type: RowTypeInfo | None = None
            self._fail_on_missing = False
            self._ignore_errors = False

        def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchema.Builder:
            self._type = _row_type(type_info, "JsonRowDeserializationSchema")
            return self

        def json_schema(self, json_schema: str) -> JsonRowDeserializationSchema.Builder:
            self._type = _row_type(
                type_of_json_schema(json.loads(json_schema)), "JsonRowDeserializationSchema"
            )
            return self

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            self._fail_on_missing = True
            return self

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            self._ignore_errors = True
            return self

        def build(self) -> JsonRowDeserializationSchema:
            if self._type is None:
                raise ValueError(
                    "JsonRowDeserializationSchema: type_info(...) or json_schema(...) is required"
                )
            return JsonRowDeserializationSchema(
                self._type, self._fail_on_missing, self._ignore_errors
            )
