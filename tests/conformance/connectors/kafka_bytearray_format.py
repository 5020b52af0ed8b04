"""pyflink/examples/datastream/connectors/kafka_bytearray_format.py: raw bytes both ways."""

import json
import os

from pyflink.common import ByteArraySchema, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = os.environ.get("TOPIC_PREFIX", "") + "test_bytearray_topic"


def write_to_kafka(env):
    data = [
        (json.dumps({"id": 1, "country": "USA"}).encode("utf-8"),),
        (json.dumps({"id": 2, "country": "Canada"}).encode("utf-8"),),
        (json.dumps({"id": 3, "country": "Germany"}).encode("utf-8"),),
    ]
    type_info = Types.ROW([Types.PRIMITIVE_ARRAY(Types.BYTE())])
    ds = env.from_collection(data, type_info=type_info)
    ds = ds.map(lambda x: x[0], output_type=Types.PRIMITIVE_ARRAY(Types.BYTE()))

    record_serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(TOPIC)
        .set_value_serialization_schema(ByteArraySchema())
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
    kafka_source = (
        KafkaSource.builder()
        .set_topics(TOPIC)
        .set_value_only_deserializer(ByteArraySchema())
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
    ds.map(lambda data: data.decode("utf-8")).print()
    env.execute()


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    print("start writing data to kafka")
    write_to_kafka(env)
    print("start reading data from kafka")
    read_from_kafka(env)
