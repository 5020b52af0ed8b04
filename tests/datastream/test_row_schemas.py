"""JSON and CSV row (de)serialization schemas at PyFlink's paths, with PyFlink's builders."""

from __future__ import annotations

import datetime
import decimal

import pytest

from undertow.common import Row, Types
from undertow.datastream.formats.csv_row import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)
from undertow.datastream.formats.json_row import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)

ROW = Types.ROW_NAMED(
    ["id", "name", "tags"], [Types.INT(), Types.STRING(), Types.LIST(Types.STRING())]
)


def test_json_round_trip_with_nested_rows() -> None:
    inner = Types.ROW_NAMED(["x", "y"], [Types.DOUBLE(), Types.BOOLEAN()])
    row_type = Types.ROW_NAMED(["id", "point", "day"], [Types.LONG(), inner, Types.SQL_DATE()])
    out = JsonRowSerializationSchema.builder().with_type_info(row_type).build()
    data = out.serialize(Row(7, Row(x=1.5, y=True), datetime.date(2024, 2, 29)))
    assert data == b'{"id":7,"point":{"x":1.5,"y":true},"day":"2024-02-29"}'
    back = (
        JsonRowDeserializationSchema.builder()
        .type_info(Types.ROW_NAMED(["id", "point"], [Types.LONG(), inner]))
        .build()
        .deserialize(data)
    )
    assert back == Row(7, Row(1.5, True)) and back.as_dict(recursive=True)["point"]["x"] == 1.5


def test_json_missing_fields_and_errors() -> None:
    lenient = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    assert lenient.deserialize(b'{"id": 1}') == Row(1, None, None)
    strict = JsonRowDeserializationSchema.builder().type_info(ROW).fail_on_missing_field().build()
    with pytest.raises(ValueError, match=r"field \$\.name is missing"):
        strict.deserialize(b'{"id": 1}')
    with pytest.raises(ValueError, match="id"):
        lenient.deserialize(b'{"id": "one", "name": "a", "tags": []}')
    ignoring = JsonRowDeserializationSchema.builder().type_info(ROW).ignore_parse_errors().build()
    assert ignoring.deserialize(b"not json") is None


def test_json_schema_gives_the_row_type() -> None:
    schema = (
        JsonRowDeserializationSchema.builder()
        .json_schema(
            '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}'
        )
        .build()
    )
    assert schema.deserialize(b'{"a": 3, "b": "x"}').as_dict() == {"a": 3, "b": "x"}


def test_csv_round_trip_quotes_only_when_needed() -> None:
    out = CsvRowSerializationSchema.Builder(ROW).build()
    assert out.serialize(Row(1, "plain", ["a", "b"])) == b"1,plain,a;b\n"
    line = out.serialize(Row(2, 'with, comma "q"', []))
    assert line == b'2,"with, comma ""q""",\n'
    back = CsvRowDeserializationSchema.Builder(ROW).build().deserialize(line)
    assert back == Row(2, 'with, comma "q"', None)  # an empty array reads as null


def test_csv_options_and_errors() -> None:
    row_type = Types.ROW_NAMED(["n", "price", "when"],
                               [Types.INT(), Types.BIG_DEC(), Types.SQL_TIMESTAMP()])  # fmt: skip
    out = (CsvRowSerializationSchema.Builder(row_type).set_field_delimiter("|")
           .set_null_literal("NULL").set_line_delimiter("").build())  # fmt: skip
    when = datetime.datetime(2024, 1, 2, 3, 4, 5)
    serialized = out.serialize(Row(None, decimal.Decimal("1.50"), when))
    assert serialized == b"NULL|1.50|2024-01-02 03:04:05.0"  # java.sql.Timestamp#toString
    parse = (CsvRowDeserializationSchema.Builder(row_type).set_field_delimiter("|")
             .set_null_literal("NULL").set_allow_comments(True).build())  # fmt: skip
    assert parse.deserialize(b"NULL|1.50|2024-01-02 03:04:05") == Row(
        None, decimal.Decimal("1.50"), when
    )
    assert parse.deserialize(b"# a comment") is None
    with pytest.raises(ValueError, match="column 'n': cannot read 'x'"):
        parse.deserialize(b"x|1|2024-01-02 03:04:05")
    lenient = CsvRowDeserializationSchema.Builder(row_type).set_ignore_parse_errors(True).build()
    assert lenient.deserialize(b"1,2") is None


def test_byte_array_schema_passes_bytes_through() -> None:
    from undertow.common.serialization import ByteArraySchema

    schema = ByteArraySchema()
    assert schema.deserialize(schema.serialize(bytearray(b"\x00raw"))) == b"\x00raw"
    with pytest.raises(TypeError, match="ByteArraySchema serializes bytes, got str"):
        schema.serialize("text")


def test_json_writes_and_reads_what_flinks_schemas_do() -> None:
    row_type = Types.ROW_NAMED(
        ["t", "ts", "dec", "raw", "pos", "day"],
        [Types.SQL_TIME(), Types.SQL_TIMESTAMP(), Types.BIG_DEC(),
         Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.ROW([Types.DOUBLE(), Types.DOUBLE()]),
         Types.SQL_DATE()],
    )  # fmt: skip
    row = Row(datetime.time(12, 0, 1), datetime.datetime(2020, 1, 2, 3, 4, 5, 123000),
              decimal.Decimal("1.50"), b"ab", Row(1.5, 2.0), datetime.date(2020, 1, 2))  # fmt: skip
    data = JsonRowSerializationSchema.builder().with_type_info(row_type).build().serialize(row)
    assert data == (
        b'{"t":"12:00:01Z","ts":"2020-01-02T03:04:05.123Z","dec":1.50,"raw":"YWI=",'
        b'"pos":{"f0":1.5,"f1":2.0},"day":"2020-01-02"}'
    )
    schema = JsonRowDeserializationSchema.builder().type_info(row_type).build()
    back = schema.deserialize(data)
    assert back == row and str(back[2]) == "1.50" and isinstance(back[4][0], float)
    other = b'{"t":"23:59:59.5","ts":"2020-01-02T03:04:05.123456789Z"}'
    assert schema.deserialize(other)[:2] == [
        datetime.time(23, 59, 59, 500000),
        datetime.datetime(2020, 1, 2, 3, 4, 5, 123456),
    ]
    with pytest.raises(ValueError, match=r"\$\.ts: 'noon' is not"):
        schema.deserialize(b'{"ts":"noon"}')


def test_csv_writes_timestamps_times_and_doubles_as_flinks_schema_does() -> None:
    row_type = Types.ROW_NAMED(
        ["ts", "ts0", "t", "big", "small", "xs"],
        [Types.SQL_TIMESTAMP(), Types.SQL_TIMESTAMP(), Types.SQL_TIME(), Types.DOUBLE(),
         Types.FLOAT(), Types.BASIC_ARRAY(Types.DOUBLE())],
    )  # fmt: skip
    row = Row(datetime.datetime(2020, 1, 2, 3, 4, 5, 123000), datetime.datetime(2020, 1, 2),
              datetime.time(12, 0, 1, 500), 1e20, 0.5, [1.0, 1e-5])  # fmt: skip
    data = CsvRowSerializationSchema.Builder(row_type).build().serialize(row)
    assert data == b"2020-01-02 03:04:05.123,2020-01-02 00:00:00.0,12:00:01,1.0E20,0.5,1.0;1.0E-5\n"
    back = CsvRowDeserializationSchema.Builder(row_type).build().deserialize(data)
    assert back == Row(row[0], row[1], datetime.time(12, 0, 1), 1e20, 0.5, [1.0, 1e-5])
