"""PyFlink's ``pyflink.datastream.connectors.kafka``.

Re-exports only; the implementation is :mod:`undertow.connectors.kafka`.
"""

from undertow.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaSink,
    KafkaSinkBuilder,
    KafkaSinkError,
    KafkaTopicSelector,
)
from undertow.connectors.sink import DeliveryGuarantee

__all__ = [
    "DeliveryGuarantee",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSinkError",
    "KafkaTopicSelector",
]
