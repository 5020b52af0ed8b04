"""The oracle for a Kafka sink: encode the stateful operator's outputs as Kafka records, read
a topic back with a read_committed consumer, and count.

:class:`OracleOutputSchema` writes an :class:`~undertow.testing.oracle.OracleOutput` as
``magic, key, seq, inputs, fold`` and the payload; :class:`OracleKeySchema` writes the key
(one key, one partition, so the topic keeps each key's order). :func:`read_committed_verdict`
reads every partition to its end and returns :class:`KafkaOracleVerdict`, whose counts must all
be 0: ``lost`` (seqs never seen), ``duplicated``, ``out_of_order`` (per key, in partition
order), ``corrupt`` (magic or payload check failed) and ``state_mismatch`` (the operator's
state after seq ``s`` is not ``s`` inputs folded over ``1..s``).
"""

from __future__ import annotations

import itertools
import struct
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from undertow.common.serialization import SerializationSchema
from undertow.connectors.kafka.producer_io import end_offsets
from undertow.testing._oracle_records import (
    MAGIC,
    OracleRecord,
    expected_fold,
    verify_record,
)

_HEADER = struct.Struct(">IIIIQ")  # magic, key, seq, inputs, fold


class OracleOutputSchema(SerializationSchema):
    """``OracleOutput`` -> bytes (see the module doc)."""

    def serialize(self, element: Any) -> bytes:
        record = element.record
        return _HEADER.pack(
            record.magic, record.key, record.seq, element.inputs, element.fold
        ) + bytes(record.payload)


class OracleKeySchema(SerializationSchema):
    """``OracleOutput`` -> its key as decimal bytes (the Kafka message key)."""

    def serialize(self, element: Any) -> bytes:
        return str(element.record.key).encode()


def decode(value: bytes) -> tuple[OracleRecord, int, int] | None:
    """(record, inputs, fold) of an encoded output, or ``None`` if it is too short."""
    if len(value) < _HEADER.size:
        return None
    magic, key, seq, inputs, fold = _HEADER.unpack_from(value)
    return OracleRecord(magic, key, seq, bytes(value[_HEADER.size :])), inputs, fold


@dataclass(frozen=True)
class KafkaOracleVerdict:
    keys: int
    records_per_key: int
    received: int
    lost: int
    duplicated: int
    out_of_order: int
    corrupt: int
    state_mismatch: int

    def counts(self) -> dict[str, int]:
        return {
            "lost": self.lost,
            "duplicated": self.duplicated,
            "out_of_order": self.out_of_order,
            "corrupt": self.corrupt,
            "state_mismatch": self.state_mismatch,
        }

    def assert_exactly_once(self) -> None:
        if any(self.counts().values()):
            raise AssertionError(f"oracle (Kafka read_committed): not exactly-once: {self}")


def read_committed(
    bootstrap: str,
    topic: str,
    timeout_s: float = 30.0,
    isolation: str = "read_committed",
    start: dict[int, int] | None = None,
) -> list[tuple[int, bytes | None]]:
    """Every record of ``topic`` (partition, value), partition by partition in offset order,
    read up to each partition's high watermark as of the call (so this waits for the commit
    markers of transactions committed before it, and fails after ``timeout_s`` if a
    transaction left open holds the last stable offset back). ``start``: partition -> the
    offset to read from (default: the partition's first)."""
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": "undertow-oracle-reader",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    }
    consumer = Consumer({**config, "isolation.level": isolation})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        ends = end_offsets(config, topic, sorted(partitions), timeout_s)
        ends = {p: (max(low, (start or {}).get(p, low)), high) for p, (low, high) in ends.items()}
        ends = {p: (low, high) for p, (low, high) in ends.items() if high > low}
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        out: dict[int, list[bytes | None]] = defaultdict(list)
        deadline = time.monotonic() + timeout_s
        while True:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                out[message.partition() or 0].append(message.value())
            positions = consumer.position([TopicPartition(topic, p) for p in ends])
            if all(tp.offset >= ends[tp.partition][1] for tp in positions):
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"reading {topic} did not reach its end offsets {ends} "
                    f"within {timeout_s} s (at {positions})"
                )
    finally:
        consumer.close()
    return [(p, v) for p in sorted(out) for v in out[p]]


def verdict(
    records: list[tuple[int, bytes | None]], keys: int, records_per_key: int
) -> KafkaOracleVerdict:
    """The counts over records read back (see the module doc)."""
    seen: dict[int, list[int]] = defaultdict(list)
    corrupt = state_mismatch = 0
    for _, value in records:
        decoded = None if value is None else decode(value)
        if decoded is None or decoded[0].magic != MAGIC or not verify_record(decoded[0]):
            corrupt += 1
            continue
        record, inputs, fold = decoded
        seen[record.key].append(record.seq)
        if inputs != record.seq or fold != expected_fold(range(1, record.seq + 1)):
            state_mismatch += 1
    lost = duplicated = out_of_order = 0
    for key in range(keys):
        seqs = seen.get(key, [])
        distinct = set(seqs)
        lost += len(set(range(1, records_per_key + 1)) - distinct)
        duplicated += len(seqs) - len(distinct)
        out_of_order += sum(1 for a, b in itertools.pairwise(seqs) if b < a)
    corrupt += sum(len(v) for k, v in seen.items() if not 0 <= k < keys)
    return KafkaOracleVerdict(
        keys, records_per_key, len(records), lost, duplicated, out_of_order, corrupt, state_mismatch
    )


def read_committed_verdict(
    bootstrap: str, topic: str, keys: int, records_per_key: int, timeout_s: float = 30.0
) -> KafkaOracleVerdict:
    return verdict(read_committed(bootstrap, topic, timeout_s), keys, records_per_key)
