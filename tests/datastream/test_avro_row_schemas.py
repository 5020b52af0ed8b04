"""Avro row schemas at PyFlink's path: the bytes Flink's Java serializer writes (worked out
from the Avro spec here, not by the codec), round trips, the derived row type, bad input."""

from __future__ import annotations

import datetime
import decimal
import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.common import Row, Types
from undertow.datastream.formats.avro import (
    AvroRowDeserializationSchema,
    AvroRowSerializationSchema,
)

POINT = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "double"}]}
SCHEMA = json.dumps({
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "total", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "at", "type": POINT},
        {"name": "raw", "type": "bytes"},
        {"name": "weight", "type": "float"},
    ],
})  # fmt: skip
ROW_TYPE = Types.ROW_NAMED(
    ["id", "total", "name", "paid", "note", "tags", "counts", "at", "raw", "weight"],
    [Types.INT(), Types.LONG(), Types.STRING(), Types.BOOLEAN(), Types.STRING(),
     Types.OBJECT_ARRAY(Types.STRING()), Types.MAP(Types.STRING(), Types.LONG()),
     Types.ROW_NAMED(["x"], [Types.DOUBLE()]), Types.PRIMITIVE_ARRAY(Types.BYTE()),
     Types.FLOAT()],
)  # fmt: skip


def _long(n: int) -> bytes:
    """An Avro int/long: zigzag, then 7 bits a byte, low bits first (the Avro spec)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _text(s: str) -> bytes:
    data = s.encode("utf-8")
    return _long(len(data)) + data


def test_writes_the_bytes_flinks_serializer_writes_and_reads_them_back() -> None:
    row = Row(-3, 300, "hé", True, "rush", ["a", "bc"], {"k": 2}, Row(1.5), b"\x00\xff", 0.5)
    expected = (
        _long(-3) + _long(300) + _text("hé") + b"\x01"
        + _long(1) + _text("rush")  # union branch 1 (string), then the string
        + _long(2) + _text("a") + _text("bc") + _long(0)  # one block of 2 items, then 0
        + _long(1) + _text("k") + _long(2) + _long(0)
        + struct.pack("<d", 1.5) + _long(2) + b"\x00\xff" + struct.pack("<f", 0.5)
    )  # fmt: skip
    assert _long(-3) == b"\x05" and _long(300) == b"\xd8\x04"  # the spec's own examples
    data = AvroRowSerializationSchema(avro_schema_string=SCHEMA).serialize(row)
    assert data == expected
    back = AvroRowDeserializationSchema(avro_schema_string=SCHEMA).deserialize(expected)
    assert back == row and back.as_dict()["at"].as_dict() == {"x": 1.5}
    null_note = Row(1, 1, "", False, None, [], {}, Row(0.0), b"", 0.0)
    assert AvroRowSerializationSchema(avro_schema_string=SCHEMA).serialize(null_note)[3:5] == (
        b"\x00\x00"  # paid=false, then union branch 0 (null) and nothing more
    )


def test_the_row_type_comes_from_the_avro_schema() -> None:
    assert AvroRowDeserializationSchema(avro_schema_string=SCHEMA).get_produced_type() == ROW_TYPE
    logical = json.dumps({"type": "record", "name": "L", "fields": [
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "m", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5,
                               "scale": 2}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    ]})  # fmt: skip
    schema = AvroRowDeserializationSchema(avro_schema_string=logical)
    assert schema.get_produced_type() == Types.ROW_NAMED(
        ["d", "t", "m", "e"],
        [Types.SQL_DATE(), Types.SQL_TIMESTAMP(), Types.BIG_DEC(), Types.STRING()],
    )
    row = Row(
        datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 2, 3, 4, 5, 123000),
        decimal.Decimal("12.34"), "B",
    )  # fmt: skip
    data = AvroRowSerializationSchema(avro_schema_string=logical).serialize(row)
    assert data[:3] == _long((datetime.date(2024, 2, 29) - datetime.date(1970, 1, 1)).days)
    assert schema.deserialize(data) == row


def test_the_constructor_takes_pyflinks_arguments() -> None:
    with pytest.raises(TypeError, match="record_class or avro_schema_string"):
        AvroRowDeserializationSchema()
    with pytest.raises(TypeError, match=r"com\.acme\.Order.*no JVM"):
        AvroRowSerializationSchema(record_class="com.acme.Order")
    with pytest.raises(ValueError, match="must be a record"):
        AvroRowSerializationSchema(None, '"string"')


def test_a_row_that_does_not_fit_names_the_record_and_the_field() -> None:
    out = AvroRowSerializationSchema(avro_schema_string=SCHEMA)
    too_big = Row(2**31, 1, "", False, None, [], {}, Row(0.0), b"", 0.0)
    with pytest.raises(ValueError, match=r"record shop\.Order.*Order\.id"):
        out.serialize(too_big)
    with pytest.raises(ValueError, match=r"record shop\.Order has 10 fields"):
        out.serialize(Row(1, 2))


def test_a_message_that_is_not_the_record_names_the_record_and_the_error() -> None:
    schema = AvroRowDeserializationSchema(avro_schema_string=SCHEMA)
    with pytest.raises(ValueError, match=r"not an Avro record shop\.Order: EOFError"):
        schema.deserialize(_long(1) + _long(2))  # ends after two fields
    with pytest.raises(ValueError, match=r"not an Avro record shop\.Order: UnicodeDecodeError"):
        schema.deserialize(_long(1) + _long(2) + _long(1) + b"\xff")


@given(st.binary(max_size=64))
def test_any_bytes_are_a_row_or_a_value_error(data: bytes) -> None:
    schema = AvroRowDeserializationSchema(avro_schema_string=SCHEMA)
    try:
        row = schema.deserialize(data)
    except ValueError as err:
        assert "record shop.Order" in str(err)
    else:
        assert ROW_TYPE.check(row) is None


INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.tuples(
    INT32, INT64, st.text(), st.booleans(), st.none() | st.text(), st.lists(st.text()),
    st.dictionaries(st.text(), INT64), st.floats(allow_nan=False), st.binary(),
    st.floats(width=32, allow_nan=False),
))  # fmt: skip
def test_rows_survive_a_round_trip(values: tuple[object, ...]) -> None:
    row = Row(*values[:7], Row(values[7]), *values[8:])
    data = AvroRowSerializationSchema(avro_schema_string=SCHEMA).serialize(row)
    assert AvroRowDeserializationSchema(avro_schema_string=SCHEMA).deserialize(data) == row
