"""``JsonRowSerializationSchema`` / ``JsonRowDeserializationSchema`` (PyFlink's
``pyflink.datastream.formats.json``): a :class:`~undertow.common.Row` <-> one JSON object.

The row type (``Types.ROW_NAMED``, or one derived from a JSON schema) gives the field names
and types. Serialization writes the fields in order, nested rows as objects, lists as arrays,
dates and times in ISO 8601, decimals as numbers. Deserialization reads a JSON object into a
row of those fields: a missing field is ``None`` unless ``fail_on_missing_field()``; a message
that is not valid JSON or does not fit the type raises ``ValueError`` naming the field and the
value, or yields ``None`` (Flink's "skip this record") with ``ignore_parse_errors()``.

Schemas are immutable after ``build()`` and shared by all subtasks.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

from undertow.common.row import Row
from undertow.common.serialization import DeserializationSchema, SerializationSchema
from undertow.common.typeinfo import RowTypeInfo, TypeInformation, Types

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]


def _row_type(type_info: Any, who: str) -> RowTypeInfo:
    if not isinstance(type_info, RowTypeInfo):
        raise TypeError(f"{who}: type_info must be a row type (Types.ROW_NAMED), got {type_info!r}")
    return type_info


def _to_json(value: Any) -> Any:
    if isinstance(value, Row):
        try:
            return {k: _to_json(v) for k, v in value.as_dict().items()}
        except TypeError:  # a row without field names: an array, as Flink writes it
            return [_to_json(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (datetime.date, datetime.time, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    return value


class JsonRowSerializationSchema(SerializationSchema):
    """Row -> UTF-8 JSON object. Build with ``builder().with_type_info(row_type).build()``."""

    def __init__(self, row_type: RowTypeInfo) -> None:
        self._type = row_type
        self._names = row_type.get_field_names()

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
        obj = {name: _to_json(v) for name, v in zip(self._names, values)}
        return json.dumps(obj, separators=(",", ":"), default=_number).encode("utf-8")

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


def _number(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as JSON")


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


class JsonRowDeserializationSchema(DeserializationSchema):
    """UTF-8 JSON object -> Row. Build with ``builder().type_info(row_type).build()`` or
    ``builder().json_schema(text).build()``."""

    def __init__(self, row_type: RowTypeInfo, fail_on_missing_field: bool = False,
                 ignore_parse_errors: bool = False) -> None:  # fmt: skip
        self._type = row_type
        self._fail_on_missing = fail_on_missing_field
        self._ignore_errors = ignore_parse_errors

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        return JsonRowDeserializationSchema.Builder()

    def get_produced_type(self) -> TypeInformation:
        return self._type

    def deserialize(self, message: bytes | bytearray | memoryview) -> Row | None:
        try:
            return self._row(json.loads(bytes(message).decode("utf-8")), self._type, "$")
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
            value = obj[name]
            if isinstance(field_type, RowTypeInfo) and value is not None:
                value = self._row(value, field_type, f"{where}.{name}")
            values.append(value)
        try:
            row: Row = row_type.conform(values)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from err
        problem = row_type.check(row)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")
        return row

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
