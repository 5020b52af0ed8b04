"""Kafka to Kafka exactly once: checkpointing, a transactional sink, read_committed reading."""

import os

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment
from pyflink.datastream.connectors import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
PREFIX = os.environ.get("TOPIC_PREFIX", "")
IN, OUT = PREFIX + "words-in", PREFIX + "words-out"


def fill_sink(topic):
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(BOOTSTRAP)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .build()
    )


def bounded_source(topic, group):
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(BOOTSTRAP)
        .set_topics(topic)
        .set_group_id(group)
        .set_property("isolation.level", "read_committed")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection(["to be", "or not", "to be"], type_info=Types.STRING()).sink_to(fill_sink(IN))
env.execute("fill")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(300, CheckpointingMode.EXACTLY_ONCE)
env.from_source(bounded_source(IN, "upper"), WatermarkStrategy.no_watermarks(), "in").flat_map(
    lambda line: line.split(), output_type=Types.STRING()
).map(lambda word: word.upper(), output_type=Types.STRING()).sink_to(
    KafkaSink.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_record_serializer(
        KafkaRecordSerializationSchema.builder()
        .set_topic(OUT)
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
    .set_transactional_id_prefix("upper-words")
    .set_property("transaction.timeout.ms", str(15 * 60 * 1000))
    .build()
)
env.execute("upper")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_source(bounded_source(OUT, "check"), WatermarkStrategy.no_watermarks(), "out").print()
env.execute("check")
