"""PyFlink's ``pyflink.datastream.formats.avro`` row schemas: a :class:`~undertow.common.Row`
<-> one record in Avro's binary encoding (fastavro's codec), as Flink's ``AvroRow*Schema``
read and write Kafka messages: no container header, no schema registry prefix.

The row type comes from the Avro schema as Flink's ``AvroSchemaConverter`` derives it: record
-> ``ROW_NAMED``, array -> ``OBJECT_ARRAY``, map -> ``MAP(STRING, ...)``, ``["null", t]`` -> a
nullable ``t``, bytes and fixed -> ``PRIMITIVE_ARRAY(BYTE)``, enum -> ``STRING``; logical types
date, time-millis, timestamp-millis/micros, decimal -> ``SQL_DATE``, ``SQL_TIME``,
``SQL_TIMESTAMP`` (naive, UTC), ``BIG_DEC``; other unions and null (Flink's ``GENERIC``,
``VOID``) -> ``PICKLED_BYTE_ARRAY``. ``record_class`` (a Java class) is refused: no JVM.
A message that is not the schema's record raises ``ValueError`` naming the record and the cause
(Flink fails the job too), a row that does not fit it one naming the record and the field.
Bytes after the record are not read, as Flink's decoder does not read them.
"""

from __future__ import annotations

import datetime
import io
import json
from typing import Any

import fastavro
import fastavro.validation

from undertow.common.row import Row
from undertow.common.serialization import DeserializationSchema, SerializationSchema
from undertow.common.typeinfo import (
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    RowTypeInfo,
    TypeInformation,
    Types,
)

__all__ = ["AvroRowDeserializationSchema", "AvroRowSerializationSchema"]

_PRIMITIVES = {
    "string": Types.STRING, "int": Types.INT, "long": Types.LONG, "float": Types.FLOAT,
    "double": Types.DOUBLE, "boolean": Types.BOOLEAN, "enum": Types.STRING,
    "bytes": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()),
    "fixed": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()),
}  # fmt: skip
_LOGICAL = {
    "date": Types.SQL_DATE, "time-millis": Types.SQL_TIME, "timestamp-millis": Types.SQL_TIMESTAMP,
    "timestamp-micros": Types.SQL_TIMESTAMP, "decimal": Types.BIG_DEC,
}  # fmt: skip
#: Errors fastavro raises for bytes that are not a record of the schema.
_READ_ERRORS = (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError)


def type_of_avro_schema(schema: Any) -> TypeInformation:
    """The Flink type of a parsed Avro schema (module docstring)."""
    if isinstance(schema, list):  # a union
        kinds = [s for s in schema if s != "null"]
        if len(kinds) == 1:
            return type_of_avro_schema(kinds[0])
        return Types.PICKLED_BYTE_ARRAY()  # Flink's GENERIC(Object): any value of the union
    if isinstance(schema, str):
        schema = {"type": schema}
    kind, logical = schema["type"], schema.get("logicalType")
    if isinstance(kind, (dict, list)):
        return type_of_avro_schema(kind)
    if logical in _LOGICAL:
        return _LOGICAL[logical]()
    if kind == "record":
        fields = schema["fields"]
        return Types.ROW_NAMED(
            [f["name"] for f in fields], [type_of_avro_schema(f["type"]) for f in fields]
        )
    if kind == "array":
        return Types.OBJECT_ARRAY(type_of_avro_schema(schema["items"]))
    if kind == "map":
        return Types.MAP(Types.STRING(), type_of_avro_schema(schema["values"]))
    if kind == "null":  # Flink's VOID; undertow has no type of only None
        return Types.PICKLED_BYTE_ARRAY()
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]()
    raise ValueError(f"Avro type {kind!r} has no Flink type")


def _parse(avro_schema_string: str | None, record_class: str | None, who: str) -> Any:
    if record_class is not None:
        raise TypeError(
            f"{who}: record_class={record_class!r} names a Java SpecificRecord class, which "
            "undertow cannot load (there is no JVM); pass avro_schema_string= instead"
        )
    if avro_schema_string is None:
        raise TypeError("record_class or avro_schema_string should be specified.")
    try:
        schema = fastavro.parse_schema(json.loads(avro_schema_string))
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as err:
        raise ValueError(f"{who}: not an Avro schema: {err}") from err
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ValueError(f"{who}: the Avro schema must be a record, got {avro_schema_string!r}")
    return schema


class _AvroRowSchema:
    def __init__(self, avro_schema_string: str | None, record_class: str | None) -> None:
        self._schema = _parse(avro_schema_string, record_class, type(self).__name__)
        self._row_type: RowTypeInfo = type_of_avro_schema(self._schema)  # type: ignore[assignment]
        self._name: str = self._schema["name"]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(record {self._name})"


class AvroRowSerializationSchema(_AvroRowSchema, SerializationSchema):
    """Row (or tuple, by position) -> the Avro binary encoding of one record of the schema."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None):
        super().__init__(avro_schema_string, record_class)

    def serialize(self, element: Any) -> bytes:
        names = self._row_type.get_field_names()
        if not isinstance(element, (Row, tuple, list)) or len(element) != len(names):
            raise ValueError(
                f"AvroRowSerializationSchema: record {self._name} has {len(names)} fields "
                f"{names}, got {element!r}"
            )
        record = _to_avro(element, self._row_type)
        try:
            fastavro.validation.validate(record, self._schema, raise_errors=True)
            out = io.BytesIO()
            fastavro.schemaless_writer(out, self._schema, record)
        except (fastavro.validation.ValidationError, ValueError, TypeError) as err:
            found = err.errors if isinstance(err, fastavro.validation.ValidationError) else []
            problems = "; ".join(str(e) for e in found or [err])
            raise ValueError(
                f"AvroRowSerializationSchema: {element!r} is not a record {self._name}: {problems}"
            ) from err
        return out.getvalue()


class AvroRowDeserializationSchema(_AvroRowSchema, DeserializationSchema):
    """The Avro binary encoding of one record of the schema -> a Row of its fields."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None):
        super().__init__(avro_schema_string, record_class)

    def get_produced_type(self) -> TypeInformation:
        return self._row_type

    def deserialize(self, message: bytes | bytearray | memoryview) -> Row:
        data = bytes(message)
        try:
            record = fastavro.schemaless_reader(io.BytesIO(data), self._schema, None)
        except _READ_ERRORS as err:
            raise ValueError(
                f"AvroRowDeserializationSchema: {data[:64]!r} is not an Avro record "
                f"{self._name}: {type(err).__name__}: {err}"
            ) from err
        row: Row = _from_avro(record, self._row_type)
        return row


def _to_avro(value: Any, t: TypeInformation) -> Any:
    """``value`` as fastavro writes it: rows as dicts, arrays as lists."""
    if value is None:
        return None
    if isinstance(t, RowTypeInfo) and isinstance(value, (Row, tuple, list)):
        types = t.get_field_types()
        return {n: _to_avro(v, f) for n, v, f in zip(t.get_field_names(), value, types)}
    if isinstance(t, (ObjectArrayTypeInfo, ListTypeInfo)) and isinstance(value, (list, tuple)):
        return [_to_avro(v, t.element_type) for v in value]
    if isinstance(t, MapTypeInfo) and isinstance(value, dict):
        return {k: _to_avro(v, t.value_type) for k, v in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _from_avro(value: Any, t: TypeInformation) -> Any:
    """fastavro's value as a value of ``t``: records as rows, timestamps naive UTC."""
    if value is None:
        return None
    if isinstance(t, RowTypeInfo) and isinstance(value, dict):
        types = t.get_field_types()
        return t.conform([_from_avro(value[n], f) for n, f in zip(t.get_field_names(), types)])
    if isinstance(t, ObjectArrayTypeInfo):
        return [_from_avro(v, t.element_type) for v in value]
    if isinstance(t, MapTypeInfo):
        return {k: _from_avro(v, t.value_type) for k, v in value.items()}
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value
