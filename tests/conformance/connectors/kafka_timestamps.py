"""Event timestamps go to Kafka as record timestamps; a source started at a timestamp skips the
older records and its records carry their Kafka timestamps."""

import os

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import ProcessFunction, StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = os.environ.get("TOPIC_PREFIX", "") + "clicks"


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class WithTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield f"{value} @ {ctx.timestamp()}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
clicks = env.from_collection(
    [("home", 1_000), ("cart", 2_000), ("pay", 3_000), ("done", 4_000)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG()]),
)
clicks.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(
        SecondField()
    )
).map(lambda click: click[0], output_type=Types.STRING()).sink_to(
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
env.execute("write clicks")

source = (
    KafkaSource.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_topics(TOPIC)
    .set_starting_offsets(KafkaOffsetsInitializer.timestamp(2_500))
    .set_bounded(KafkaOffsetsInitializer.latest())
    .set_value_only_deserializer(SimpleStringSchema())
    .build()
)
env.from_source(source, WatermarkStrategy.for_monotonous_timestamps(), "clicks").process(
    WithTimestamp(), output_type=Types.STRING()
).print()
env.execute("read from 2.5 s")
