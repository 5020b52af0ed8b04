"""Encoder and SimpleStringSchema."""

from __future__ import annotations

import pickle

import pytest

from undertow.common import Encoder, Row, SimpleStringSchema, Types
from undertow.common.serialization import (
    DeserializationSchema,
    RowFieldExtractorSchema,
    SerializationSchema,
)


def test_simple_string_encoder_writes_str_and_newline() -> None:
    encoder = Encoder.simple_string_encoder()
    assert encoder.encode("héllo") == "héllo\n".encode()
    assert encoder.encode(42) == b"42\n"
    assert encoder.encode(Row(a=1)) == b"Row(a=1)\n"


def test_simple_string_encoder_charset() -> None:
    latin = Encoder.simple_string_encoder("ISO-8859-1")
    assert latin.encode("é") == b"\xe9\n"
    assert Encoder.simple_string_encoder("utf-16").encode("a").decode("utf-16") == "a\n"
    with pytest.raises(ValueError, match="unknown charset 'nope'"):
        Encoder.simple_string_encoder("nope")


def test_encoder_value_semantics() -> None:
    encoder = Encoder.simple_string_encoder("UTF-8")
    assert encoder == Encoder.simple_string_encoder("utf8")
    assert pickle.loads(pickle.dumps(encoder)) == encoder
    assert repr(encoder) == "Encoder.simple_string_encoder('utf-8')"


def test_simple_string_schema_round_trip() -> None:
    schema = SimpleStringSchema()
    assert isinstance(schema, SerializationSchema) and isinstance(schema, DeserializationSchema)
    assert schema.serialize("héllo") == "héllo".encode()
    assert schema.deserialize("héllo".encode()) == "héllo"
    assert schema.deserialize(bytearray(b"x")) == "x"
    assert schema.get_produced_type() == Types.STRING()
    assert not schema.is_end_of_stream("x")
    assert pickle.loads(pickle.dumps(schema)) == schema


def test_simple_string_schema_charset_and_errors() -> None:
    schema = SimpleStringSchema("ISO-8859-1")
    assert schema.serialize("é") == b"\xe9"
    assert schema.deserialize(b"\xe9") == "é"
    with pytest.raises(TypeError, match="serializes str, got int 5"):
        schema.serialize(5)
    with pytest.raises(ValueError, match="unknown charset"):
        SimpleStringSchema("nope")


def test_deserialize_batch_is_deserialize_per_message() -> None:
    class Upper(DeserializationSchema):
        def deserialize(self, message: bytes) -> str:
            return message.decode().upper()

    assert Upper().deserialize_batch([b"a", b"b"]) == ["A", "B"]
    latin = SimpleStringSchema("ISO-8859-1")
    messages = [b"caf\xe9", bytearray(b"x"), memoryview(b"y")]
    assert latin.deserialize_batch(messages) == [latin.deserialize(m) for m in messages]
    with pytest.raises(TypeError):  # a tombstone (None): the caller finds which record
        SimpleStringSchema().deserialize_batch([b"a", None])  # type: ignore[list-item]


def test_row_field_extractor_schema_takes_one_bytes_field_as_flink_does() -> None:
    key, value = RowFieldExtractorSchema(0), RowFieldExtractorSchema(1)
    row = Row(b"user-1", bytearray(b'{"a": 1}'))
    assert (key.serialize(row), value.serialize(row)) == (b"user-1", b'{"a": 1}')
    assert key.serialize(None) == b"" and key.serialize(Row(None, b"x")) == b""
    assert pickle.loads(pickle.dumps(key)) == key != value
    with pytest.raises(ValueError, match="cannot access field 1 in a row with arity 1"):
        value.serialize(Row(b"only"))
    with pytest.raises(TypeError, match="field at index 0 must be bytes, but was str 'user-1'"):
        key.serialize(Row("user-1", b"v"))
    with pytest.raises(ValueError, match="Field index must be non-negative, got: -1"):
        RowFieldExtractorSchema(-1)
