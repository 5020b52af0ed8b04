"""pyflink/examples/datastream/connectors/kafka_row_field_extractor_example.py: a row's byte
fields as the record's key and value (RowFieldExtractorSchema), read back by a plain consumer
source."""

import json
import os

from pyflink.common import Row, WatermarkStrategy
from pyflink.common.serialization import RowFieldExtractorSchema, SimpleStringSchema
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = os.environ.get("TOPIC_PREFIX", "") + "row-extractor-example"

events = [
    {"user_id": "user-001", "event": {"type": "purchase", "item": "laptop", "price": 999.99}},
    {"user_id": "user-002", "event": {"type": "view", "item": "phone"}},
    {"user_id": "user-001", "event": {"type": "add_to_cart", "item": "mouse", "quantity": 2}},
]
rows = [Row(e["user_id"].encode("utf-8"), json.dumps(e["event"]).encode("utf-8")) for e in events]

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
ds = env.from_collection(
    rows,
    type_info=Types.ROW(
        [
            Types.PRIMITIVE_ARRAY(Types.BYTE()),
            Types.PRIMITIVE_ARRAY(Types.BYTE()),
        ]
    ),
)
ds.sink_to(
    KafkaSink.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_record_serializer(
        KafkaRecordSerializationSchema.builder()
        .set_topic(TOPIC)
        .set_key_serialization_schema(RowFieldExtractorSchema(0))
        .set_value_serialization_schema(RowFieldExtractorSchema(1))
        .build()
    )
    .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
    .build()
)
env.execute("Kafka RowFieldExtractorSchema Example")

source = (
    KafkaSource.builder()
    .set_bootstrap_servers(BOOTSTRAP)
    .set_topics(TOPIC)
    .set_value_only_deserializer(SimpleStringSchema())
    .set_starting_offsets(KafkaOffsetsInitializer.earliest())
    .set_bounded(KafkaOffsetsInitializer.latest())
    .build()
)
env.from_source(source, WatermarkStrategy.no_watermarks(), "values").print()
env.execute("read back")
