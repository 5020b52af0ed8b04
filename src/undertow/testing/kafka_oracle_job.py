"""The Kafka -> keyed operator -> Kafka oracle job's parts, shared by the tests that run it on
a deployment target (tests/e2e/test_kafka_to_kafka.py) and across hosts (tests/cluster).

:func:`fill` writes each key's oracle records, seq 1..N in order, into partition
``key % partitions`` (so the topic keeps each key's order); :func:`oracle_source` reads them
back, bounded to the offsets the topic held at start; :class:`SpinningOracleFunction` is the
oracle's stateful operator busy a fixed time per record (the job's bottleneck: backpressure);
:func:`oracle_sink` writes its outputs EXACTLY_ONCE, keyed by the oracle key, for
:mod:`undertow.testing.kafka_oracle` to count.

Records are msgpack ``[magic, key, seq, payload]`` with 16-200 byte payloads. Nothing here
holds state between calls; the function and the schemas are pickled to the workers.
"""

from __future__ import annotations

import time
from typing import Any

import msgpack  # type: ignore[import-untyped]

from undertow.common.serialization import DeserializationSchema, SerializationSchema
from undertow.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from undertow.testing.kafka_oracle import OracleKeySchema, OracleOutputSchema
from undertow.testing.kafka_topics import produce
from undertow.testing.oracle import OracleRecord, OracleStatefulFunction, SizeClass, make_record

#: The records' payload sizes: all small.
SMALL = (SizeClass(1.0, 16, 200),)


class OracleRecordSchema(DeserializationSchema):
    """An oracle record from msgpack ``[magic, key, seq, payload]``."""

    def deserialize(self, message: bytes) -> OracleRecord:
        return OracleRecord(*msgpack.unpackb(message))


class SpinningOracleFunction(OracleStatefulFunction):
    """The oracle's stateful operator, spinning ``spin_s`` per record before it handles it."""

    def __init__(self, spin_s: float) -> None:
        super().__init__()
        self.spin_s = spin_s

    def process_element(self, value: Any, ctx: Any) -> Any:
        until = time.perf_counter() + self.spin_s
        while time.perf_counter() < until:
            pass
        return super().process_element(value, ctx)


def fill(bootstrap: str, topic: str, keys: int, records_per_key: int, partitions: int) -> None:
    """Each of ``keys`` keys' records, seq 1..``records_per_key`` in order, into partition
    ``key % partitions`` of ``topic`` (which must have that many partitions)."""
    produce(
        bootstrap,
        topic,
        [
            (key % partitions, None, msgpack.packb(list(make_record(key, seq, SMALL))))
            for seq in range(1, records_per_key + 1)
            for key in range(keys)
        ],
    )


def oracle_source(bootstrap: str, topic: str) -> KafkaSource:
    """``topic``'s oracle records from the earliest offsets to those it held at start."""
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_group_id(f"{topic}-group")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(OracleRecordSchema())
        .build()
    )


def oracle_sink(
    bootstrap: str,
    topic: str,
    transactional_id_prefix: str,
    key_schema: SerializationSchema | None = None,
    value_schema: SerializationSchema | None = None,
    guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE,
    properties: dict[str, str] | None = None,
) -> KafkaSink:
    """The stateful operator's outputs into ``topic``, with ``guarantee`` (EXACTLY_ONCE by
    default) and the sink ``properties`` given, keyed by oracle key (or written with the
    ``key_schema`` and ``value_schema`` given, for jobs whose outputs are not the oracle
    operator's)."""
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_key_serialization_schema(key_schema or OracleKeySchema())
        .set_value_serialization_schema(value_schema or OracleOutputSchema())
        .build()
    )
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(transactional_id_prefix)
    )
    for key, value in (properties or {}).items():
        builder = builder.set_property(key, value)
    return builder.build()
