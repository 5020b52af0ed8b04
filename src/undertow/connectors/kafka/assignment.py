"""Which reader subtask owns a topic-partition: deterministic, balanced per topic.

The rule is Flink's (``KafkaSourceEnumerator.getSplitOwner``): a topic's partitions go round
robin over the readers, starting at a reader chosen by the topic name's hash, so the
partitions of one topic spread evenly and different topics do not all start at reader 0.
The hash is Java's ``String.hashCode`` (Python's ``hash`` of a str changes per process), so
the owner of a partition is the same in every process and run, and the same as Flink's.
"""

from __future__ import annotations

from undertow.connectors.kafka.offsets import KafkaTopicPartition


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def split_owner(tp: KafkaTopicPartition, parallelism: int) -> int:
    """The reader subtask (``0 <= owner < parallelism``) that reads ``tp``."""
    if parallelism < 1:
        raise ValueError(f"split_owner(): parallelism must be >= 1, got {parallelism}")
    start = ((java_string_hash(tp.topic) * 31) & 0x7FFFFFFF) % parallelism
    return (start + tp.partition) % parallelism
