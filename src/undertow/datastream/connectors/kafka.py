"""PyFlink's ``pyflink.datastream.connectors.kafka``: ``KafkaSource`` and friends.

Re-exports only; the implementation is :mod:`undertow.connectors.kafka`.
"""

from undertow.connectors.kafka.admin import KafkaSourceError
from undertow.connectors.kafka.offsets import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
)
from undertow.connectors.kafka.reader import KafkaBadRecord
from undertow.connectors.kafka.source import KafkaSource, KafkaSourceBuilder
from undertow.connectors.kafka.split import KafkaPartitionSplit

__all__ = [
    "KafkaBadRecord",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaPartitionSplit",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaSourceError",
    "KafkaTopicPartition",
]
