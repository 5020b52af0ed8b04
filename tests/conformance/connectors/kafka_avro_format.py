"""pyflink/examples/datastream/connectors/kafka_avro_format.py: Avro rows to Kafka and back."""

import os

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from pyflink.datastream.formats.avro import AvroRowDeserializationSchema, AvroRowSerializationSchema

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = os.environ.get("TOPIC_PREFIX", "") + "test_avro_topic"

SCHEMA = """
    {
        "type": "record",
        "name": "TestRecord",
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "name", "type": "string"}
        ]
    }"""


def write_to_kafka(env):
    ds = env.from_collection(
        [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")],
        type_info=Types.ROW([Types.INT(), Types.STRING()]),
    )

    serialization_schema = AvroRowSerializationSchema(avro_schema_string=SCHEMA)
    record_serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(TOPIC)
        .set_value_serialization_schema(serialization_schema)
        .build()
    )
    kafka_sink = (
        KafkaSink.builder()
        .set_record_serializer(record_serializer)
        .set_bootstrap_servers(BOOTSTRAP)
        .set_property("group.id", "test_group")
        .build()
    )
    ds.sink_to(kafka_sink)
    env.execute()


def read_from_kafka(env):
    deserialization_schema = AvroRowDeserializationSchema(avro_schema_string=SCHEMA)
    kafka_source = (
        KafkaSource.builder()
        .set_topics(TOPIC)
        .set_value_only_deserializer(deserialization_schema)
        .set_properties({"bootstrap.servers": BOOTSTRAP, "group.id": "test_group_1"})
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    ds = env.from_source(
        kafka_source,
        watermark_strategy=WatermarkStrategy.no_watermarks(),
        source_name="kafka source",
    )
    ds.print()
    env.execute()


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    print("start writing data to kafka")
    write_to_kafka(env)
    print("start reading data from kafka")
    read_from_kafka(env)
