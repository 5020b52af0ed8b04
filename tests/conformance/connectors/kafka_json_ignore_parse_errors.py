"""JSON rows from Kafka where some messages are not JSON of the row type: ignore_parse_errors()
drops them (Flink's DeserializationSchema collects nothing for a null result)."""

import os

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from pyflink.datastream.formats.json import JsonRowDeserializationSchema

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = os.environ.get("TOPIC_PREFIX", "") + "raw-events"

messages = [
    '{"id": 1, "name": "ann"}',
    "not json at all",
    '{"id": "two", "name": "bob"}',
    '{"id": 3, "name": "cid"}',
]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection(messages, type_info=Types.STRING()).sink_to(
    KafkaSink.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_record_serializer(
        KafkaRecordSerializationSchema.builder()
        .set_topic(TOPIC)
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    .build()
)
env.execute("write")

rows = (
    JsonRowDeserializationSchema.builder()
    .type_info(Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]))
    .ignore_parse_errors()
    .build()
)
source = (
    KafkaSource.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_topics(TOPIC)
    .set_group_id("raw-readers")
    .set_starting_offsets(KafkaOffsetsInitializer.earliest())
    .set_bounded(KafkaOffsetsInitializer.latest())
    .set_value_only_deserializer(rows)
    .build()
)
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_source(source, WatermarkStrategy.no_watermarks(), "events").map(
    lambda row: f"{row.id}: {row.name}", output_type=Types.STRING()
).print()
env.execute("read")
