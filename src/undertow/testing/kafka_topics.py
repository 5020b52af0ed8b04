"""Kafka topics for tests: create one, fill it, read it back (confluent-kafka, a real broker).

Used by undertow's own Kafka tests and meant for users testing their Kafka jobs. Every call
blocks until the broker confirmed it; errors name the topic and the bootstrap servers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

#: (partition or None for the producer's choice, key, value)
ProducedRecord = tuple[int | None, bytes | None, bytes]


def create_topic(bootstrap: str, name: str, partitions: int, timeout_s: float = 60.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=timeout_s)
    futures[name].result(timeout=timeout_s)


def add_partitions(bootstrap: str, name: str, total: int, timeout_s: float = 60.0) -> None:
    """Grow topic ``name`` to ``total`` partitions."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_partitions([NewPartitions(name, total)], operation_timeout=timeout_s)
    futures[name].result(timeout=timeout_s)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[ProducedRecord],
    config: dict[str, Any] | None = None,
    timeout_s: float = 60.0,
) -> None:
    """Write ``records`` to ``topic`` and wait until the broker acknowledged every one. Each
    partition gets its records once and in the order given: the producer is idempotent, so a
    request the broker failed (``NOT_LEADER_OR_FOLLOWER`` from a broker that has just
    created the topic) is retried before any later one lands, where librdkafka's default
    would let a later request already in flight land first (issue 28)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "enable.idempotence": True, **(config or {})})  # fmt: skip
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for partition, key, value in records:
        if partition is None:
            producer.produce(topic, value, key, on_delivery=delivered)
        else:
            producer.produce(topic, value, key, partition=partition, on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(timeout_s)
    if remaining or errors:
        raise RuntimeError(
            f"producing to {topic!r} at {bootstrap}: {remaining} records undelivered after "
            f"{timeout_s:.0f} s, errors: {errors[:5]}"
        )


def read_partition(
    bootstrap: str, topic: str, partition: int, end_offset: int, timeout_s: float = 60.0
) -> list[Any]:
    """The committed messages of one partition below ``end_offset`` (read_committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "undertow-testing",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed"})  # fmt: skip
    messages: list[Any] = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            position = consumer.position([TopicPartition(topic, partition)])[0].offset
            if position is not None and position >= end_offset:
                return messages
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            offset = msg.offset()
            if offset is not None and offset < end_offset:
                messages.append(msg)
        raise TimeoutError(
            f"reading {topic!r} partition {partition} at {bootstrap}: not at offset "
            f"{end_offset} after {timeout_s:.0f} s ({len(messages)} messages read)"
        )
    finally:
        consumer.close()
