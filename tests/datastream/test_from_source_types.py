"""``from_source`` without a ``type_info`` gives its stream the type the source produces, as
Flink's ``fromSource`` takes it from the source (``ResultTypeQueryable``): ``print()`` then
writes ``+I[1,hi]`` for a Kafka source with a JSON row schema, as PyFlink does."""

from __future__ import annotations

from pathlib import Path

from undertow.common import ByteArraySchema, SimpleStringSchema, Types, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.file_system import FileSource, StreamFormat
from undertow.datastream.connectors.kafka import KafkaSource
from undertow.datastream.connectors.number_seq import NumberSequenceSource
from undertow.datastream.formats.csv import (
    CsvReaderFormat,
    CsvRowDeserializationSchema,
    CsvSchema,
)
from undertow.datastream.formats.json import JsonRowDeserializationSchema

ROW = Types.ROW([Types.INT(), Types.STRING()])
NO_WATERMARKS = WatermarkStrategy.no_watermarks()


def _kafka(schema: object) -> KafkaSource:
    return (
        KafkaSource.builder()
        .set_bootstrap_servers("localhost:9092")
        .set_topics("t")
        .set_value_only_deserializer(schema)  # type: ignore[arg-type]
        .build()
    )


def test_a_kafka_source_stream_has_its_deserializers_type() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    json_rows = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    csv_rows = CsvRowDeserializationSchema.Builder(ROW).build()
    assert env.from_source(_kafka(json_rows), NO_WATERMARKS, "json").get_type() == ROW
    assert env.from_source(_kafka(csv_rows), NO_WATERMARKS, "csv").get_type() == ROW
    strings = env.from_source(_kafka(SimpleStringSchema()), NO_WATERMARKS, "strings")
    assert strings.get_type() == Types.STRING()
    raw = env.from_source(_kafka(ByteArraySchema()), NO_WATERMARKS, "bytes")
    assert raw.get_type() == Types.PRIMITIVE_ARRAY(Types.BYTE())


def test_a_file_source_stream_has_its_formats_type(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    lines = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
    assert env.from_source(lines.build(), NO_WATERMARKS, "lines").get_type() == Types.STRING()
    schema = CsvSchema.builder().add_number_column("id", Types.INT()).add_string_column("n").build()
    csv = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(tmp_path))
    produced = env.from_source(csv.build(), NO_WATERMARKS, "csv").get_type()
    assert produced == Types.ROW_NAMED(["id", "n"], [Types.INT(), Types.STRING()])


def test_a_type_given_to_from_source_wins_and_sources_without_one_stay_untyped() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    given = env.from_source(_kafka(SimpleStringSchema()), NO_WATERMARKS, "s", Types.STRING())
    assert given.get_type() == Types.STRING()
    json_rows = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    as_objects = env.from_source(_kafka(json_rows), NO_WATERMARKS, "o", Types.PICKLED_BYTE_ARRAY())
    assert as_objects.get_type() == Types.PICKLED_BYTE_ARRAY()
    numbers = env.from_source(NumberSequenceSource(1, 3), NO_WATERMARKS, "numbers")
    assert numbers.get_type() is None
