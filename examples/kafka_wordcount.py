"""Word count from Kafka to Kafka, exactly once.

Writes a small text into topic ``lines``, then runs KafkaSource (bounded: up to the offsets at
start) -> words -> key_by -> running count -> KafkaSink (EXACTLY_ONCE), one ``word count``
record per update, and finally reads topic ``word-counts`` back with a read_committed consumer
and prints each word's last count. Start a broker first (``make kafka`` prints its address)::

    UNDERTOW_KAFKA_BOOTSTRAP=127.0.0.1:<port> python examples/kafka_wordcount.py
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from undertow.common import Configuration, Types, WatermarkStrategy
from undertow.common.serialization import SerializationSchema, SimpleStringSchema
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

TEXT = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune,",
    "Or to take arms against a sea of troubles",
    "And by opposing end them.",
]


class WordKey(SerializationSchema):
    """The message key of a ``word count`` record: the word, so each word's counts go to one
    partition, in order."""

    def serialize(self, element: str) -> bytes:
        return element.split(" ", 1)[0].encode()


def words(line: str) -> list[str]:
    return [w for w in (w.strip(",.:'").lower() for w in line.split()) if w]


def paced(line: str, pace_s: float) -> str:
    if pace_s:
        time.sleep(pace_s)
    return line


def build(
    env: StreamExecutionEnvironment, bootstrap: str, lines: str, counts: str, pace_s: float = 0.0
) -> None:
    """The job: Kafka lines -> words -> running count per word -> Kafka, exactly once.
    ``pace_s`` sleeps that long per line (to watch it, or to kill a worker meanwhile)."""
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(lines)
        .set_group_id("kafka-wordcount")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(counts)
            .set_key_serialization_schema(WordKey())
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"wordcount-{counts}")
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
        .uid("lines")
        .map(lambda line: paced(line, pace_s), output_type=Types.STRING())
        .uid("paced")
        .flat_map(words, output_type=Types.STRING())
        .uid("words")
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .uid("ones")
        .key_by(lambda pair: pair[0])
        .sum(1)
        .uid("count")
        .map(lambda pair: f"{pair[0]} {pair[1]}", output_type=Types.STRING())
        .uid("format")
        .sink_to(sink)
        .uid("counts")
    )


def prepare(bootstrap: str, text: list[str], suffix: str) -> tuple[str, str]:
    """Create the two topics (names end in ``suffix``) and write ``text`` into the first."""
    lines, counts = f"lines-{suffix}", f"word-counts-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(t, 2, 1) for t in (lines, counts)])
    for future in created.values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for line in text:
        producer.produce(lines, line.encode())
    if producer.flush(60):
        raise RuntimeError(f"could not write the text to {lines} at {bootstrap}")
    return lines, counts


def read_counts(bootstrap: str, counts: str) -> list[tuple[str, int]]:
    """Every committed ``word count`` record of ``counts``, partition by partition."""
    config = {"bootstrap.servers": bootstrap, "group.id": "kafka-wordcount-reader"}
    partitions = [TopicPartition(counts, p, 0) for p in (0, 1)]
    # the high watermarks: a commit returns before its markers are written, and until then a
    # read_committed consumer is told a lower end
    ends_reader = Consumer({**config, "isolation.level": "read_uncommitted"})
    ends = {tp.partition: ends_reader.get_watermark_offsets(tp, timeout=30)[1] for tp in partitions}
    ends_reader.close()
    partitions = [tp for tp in partitions if ends[tp.partition] > 0]
    consumer = Consumer({**config, "isolation.level": "read_committed"})
    consumer.assign(partitions)
    out: list[tuple[str, int]] = []
    while any(tp.offset < ends[tp.partition] for tp in consumer.position(partitions)):
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            word, count = (message.value() or b"").decode().split(" ")
            out.append((word, int(count)))
    consumer.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", default=os.environ.get("UNDERTOW_KAFKA_BOOTSTRAP"))
    parser.add_argument("--target", default="local-threads")
    args = parser.parse_args(argv)
    if not args.bootstrap_servers:
        parser.error("set --bootstrap-servers or UNDERTOW_KAFKA_BOOTSTRAP (make kafka prints it)")
    lines, counts = prepare(args.bootstrap_servers, TEXT, uuid.uuid4().hex[:8])
    config = {"execution.target": args.target, "execution.checkpointing.interval": "200 ms"}
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(config))
    env.set_parallelism(2)
    build(env, args.bootstrap_servers, lines, counts)
    env.execute("kafka wordcount")
    final = dict(read_counts(args.bootstrap_servers, counts))
    for word in sorted(final):
        print(f"{word} {final[word]}")
    return final


if __name__ == "__main__":
    main()
