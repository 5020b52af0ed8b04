"""What each KafkaSink delivery guarantee costs a sink subtask, in records per second.

Drives one sink writer as the sink operator does (records, then per checkpoint the flush,
``prepare_commit``, ``snapshot_state`` and, for ``EXACTLY_ONCE``, the commit when the checkpoint
completed) against a real broker, with a bare confluent-kafka producer loop (produce, then one
flush) measured in the same run as the baseline. Rounds interleave the rows. Usage::

    UNDERTOW_KAFKA_BOOTSTRAP=host:port python benchmarks/kafka_sink_writer.py [--records N]

(``make kafka`` prints a broker's address.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from undertow.common.serialization import SimpleStringSchema
from undertow.connectors.sink import SinkWriterContext
from undertow.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaRecordSerializationSchema,
    KafkaSink,
)

RECORD = "x" * 100


class _Context(SinkWriterContext):
    def subtask_index(self) -> int:
        return 0

    def parallelism(self) -> int:
        return 1

    def attempt_number(self) -> int:
        return 0


def _topic(bootstrap: str) -> str:
    name = f"bench-sink-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(60)
    return name


def bare_producer(bootstrap: str, records: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap})
    topic = _topic(bootstrap)
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, RECORD.encode())
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(60)
    return time.perf_counter() - start


def sink_writer(
    bootstrap: str, records: int, checkpoints: int, guarantee: DeliveryGuarantee
) -> float:
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(_topic(bootstrap))
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(f"bench-{uuid.uuid4().hex[:8]}")
        .build()
    )
    writer: Any = sink.create_writer(_Context())
    start = time.perf_counter()
    for cid in range(1, checkpoints + 1):
        for _ in range(records // checkpoints):
            writer.write(RECORD, None)
        writer.flush(False)
        writer.prepare_commit()
        writer.snapshot_state(cid)
        if guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            writer.notify_checkpoint_complete(cid)
    writer.flush(True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bootstrap = os.environ.get("UNDERTOW_KAFKA_BOOTSTRAP")
    if not bootstrap:
        parser.error("set UNDERTOW_KAFKA_BOOTSTRAP (make kafka prints it)")
    rows = {"bare confluent-kafka producer": lambda: bare_producer(bootstrap, args.records)}
    for g in (DeliveryGuarantee.NONE, DeliveryGuarantee.AT_LEAST_ONCE,
              DeliveryGuarantee.EXACTLY_ONCE):  # fmt: skip
        rows[f"KafkaSink {g.name}"] = lambda g=g: sink_writer(
            bootstrap, args.records, args.checkpoints, g
        )
    seconds: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, run in rows.items():
            seconds[name].append(run())
    print(f"{args.records} records of {len(RECORD)} B, {args.checkpoints} checkpoints, "
          f"median of {args.rounds} rounds")  # fmt: skip
    base = args.records / statistics.median(seconds["bare confluent-kafka producer"])
    for name, times in seconds.items():
        rate = args.records / statistics.median(times)
        print(f"{name:32s} {rate:>12,.0f} records/s  {rate / base:5.2f}x bare")


if __name__ == "__main__":
    main()
