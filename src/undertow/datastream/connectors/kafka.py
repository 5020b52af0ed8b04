"""PyFlink's ``pyflink.datastream.connectors.kafka``: ``KafkaSource``, ``KafkaSink`` and
friends.

Re-exports only; the implementation is :mod:`undertow.connectors.kafka`.
"""

from undertow.connectors.kafka.admin import KafkaSourceError
from undertow.connectors.kafka.batch_deserializer import (
    JsonBatchDeserializationSchema,
    KafkaBatchDeserializationSchema,
    RowBatchDeserializationSchema,
)
from undertow.connectors.kafka.offsets import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
)
from undertow.connectors.kafka.reader import KafkaBadRecord
from undertow.connectors.kafka.record_serializer import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaTopicSelector,
)
from undertow.connectors.kafka.sink import KafkaSink, KafkaSinkBuilder
from undertow.connectors.kafka.sink_protocol import KafkaSinkError
from undertow.connectors.kafka.source import KafkaSource, KafkaSourceBuilder
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.connectors.sink import DeliveryGuarantee

__all__ = [
    "DeliveryGuarantee",
    "JsonBatchDeserializationSchema",
    "KafkaBadRecord",
    "KafkaBatchDeserializationSchema",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaPartitionSplit",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSinkError",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaSourceError",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "RowBatchDeserializationSchema",
]
