"""Routing rows to two topics with a topic selector, then reading both back with a topic
pattern, and one partition from a given offset with set_partitions."""

import os

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from pyflink.datastream.formats.json import JsonRowSerializationSchema

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
PREFIX = os.environ.get("TOPIC_PREFIX", "")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)

row_type = Types.ROW_NAMED(["region", "amount"], [Types.STRING(), Types.INT()])
sales = env.from_collection(
    [("eu", 10), ("us", 20), ("eu", 30), ("us", 40), ("eu", 50)], type_info=row_type
)

serializer = (
    KafkaRecordSerializationSchema.builder()
    .set_topic_selector(lambda row: PREFIX + "sales-" + row.region)
    .set_value_serialization_schema(
        JsonRowSerializationSchema.builder().with_type_info(row_type).build()
    )
    .build()
)
sales.sink_to(
    KafkaSink.builder().set_bootstrap_servers(BOOTSTRAP).set_record_serializer(serializer).build()
)
env.execute("route")

everything = (
    KafkaSource.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_topic_pattern(PREFIX + "sales-.*")
    .set_group_id("all-sales")
    .set_starting_offsets(KafkaOffsetsInitializer.earliest())
    .set_bounded(KafkaOffsetsInitializer.latest())
    .set_value_only_deserializer(SimpleStringSchema())
    .build()
)
env.from_source(everything, WatermarkStrategy.no_watermarks(), "all sales").print()
env.execute("read by pattern")

eu = KafkaTopicPartition(PREFIX + "sales-eu", 0)
from_second = (
    KafkaSource.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_partitions({eu})
    .set_starting_offsets(KafkaOffsetsInitializer.offsets({eu: 1}))
    .set_bounded(KafkaOffsetsInitializer.latest())
    .set_value_only_deserializer(SimpleStringSchema())
    .build()
)
env.from_source(from_second, WatermarkStrategy.no_watermarks(), "eu from 1").map(
    lambda s: "eu after the first: " + s
).print()
env.execute("read one partition")
