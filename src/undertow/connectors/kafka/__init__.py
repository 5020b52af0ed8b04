"""Kafka connector: the Kafka sink (:mod:`.sink`); see :mod:`undertow.datastream.connectors.kafka`
for the public names."""

from undertow.connectors.kafka.record_serializer import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaTopicSelector,
)
from undertow.connectors.kafka.sink import KafkaSink, KafkaSinkBuilder
from undertow.connectors.kafka.sink_protocol import KafkaSinkError

__all__ = [
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSinkError",
    "KafkaTopicSelector",
]
