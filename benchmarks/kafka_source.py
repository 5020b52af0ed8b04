"""Section 1 of benchmarks/kafka.py: KafkaSource's read throughput against a bare
confluent-kafka consumer loop, per core (issue 28's target: >= 0.8x).

A pre-filled topic is read by undertow's KafkaSource (bounded at the latest offsets, into a
discarding sink, ``local`` target: two worker processes) and by a bare confluent-kafka consumer
loop in two processes, one partition each (``consume`` in batches, values decoded as
SimpleStringSchema does). Each side is timed from its first record to its end, in its own
processes (undertow: a map chained to the source notes the time and the worker's CPU time at
the first record and at the end of input). "Per core" is records per CPU-second: user +
system time of the side's reading processes (the broker, and undertow's driver, not counted).
Runs the bare loop and undertow alternately over one topic; the target takes the median ratio.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import kafka_load as load
import unaligned
from confluent_kafka import Consumer, TopicPartition

from undertow.common import Configuration, WatermarkStrategy
from undertow.common.serialization import SimpleStringSchema
from undertow.datastream import MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

SPAWN = multiprocessing.get_context("spawn")


def bare_partition(bootstrap: str, topic: str, partition: int, results: object) -> None:
    """One bare consumer process: reads ``partition`` to its end; sends (records, seconds,
    CPU seconds) from its first record to its last."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-bare",
                         "enable.auto.commit": False})  # fmt: skip
    end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    consumer.assign([TopicPartition(topic, partition, 0)])
    records, position = 0, 0
    started = cpu = 0.0
    while position < end:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                if records == 0:
                    started, cpu = time.time(), time.process_time()
                (message.value() or b"").decode()
                records += 1
                position = message.offset() + 1
    elapsed, cpu = time.time() - started, time.process_time() - cpu
    consumer.close()
    results.put((records, elapsed, cpu))  # type: ignore[attr-defined]


def bare_loop(bootstrap: str, topic: str) -> tuple[int, float, float]:
    results = SPAWN.Queue()
    processes = [SPAWN.Process(target=bare_partition, args=(bootstrap, topic, p, results))
                 for p in range(load.PARTITIONS)]  # fmt: skip
    for process in processes:
        process.start()
    parts = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(60)
    return sum(p[0] for p in parts), max(p[1] for p in parts), sum(p[2] for p in parts)


class Stopwatch(MapFunction):
    """Chained to the source: notes the wall clock and the worker process's CPU time at its
    subtask's first record and again at ``close`` (end of input), and writes them, with the
    count, to ``<directory>/<subtask>``. Costs one integer increment per record."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, runtime_context: Any) -> None:
        self.index = runtime_context.get_index_of_this_subtask()
        self.count = 0
        self.first = (0.0, 0.0)

    def map(self, value: Any) -> Any:
        if self.count == 0:
            self.first = (time.time(), time.process_time())
        self.count += 1
        return value

    def close(self) -> None:
        wall, cpu = time.time() - self.first[0], time.process_time() - self.first[1]
        Path(self.directory, str(self.index)).write_text(
            f"{self.count} {self.first[0]} {wall} {cpu}"
        )


def backlog_source(bootstrap: str, topic: str) -> KafkaSource:
    """A KafkaSource reading ``topic``'s backlog: from the earliest offsets to the latest at
    the job's start (bounded), values as strings."""
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )


def undertow_source(bootstrap: str, topic: str) -> tuple[int, float, float, float]:
    """KafkaSource (bounded at the latest offsets) -> stopwatch -> discard, p=2: records, and
    wall and CPU seconds from the first record to the end (summed over the two workers), and
    the whole job's wall seconds."""
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local", "rest.port": "-1"})
    )
    env.set_parallelism(2)
    source = backlog_source(bootstrap, topic)
    with tempfile.TemporaryDirectory() as directory:
        stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
        stream.map(Stopwatch(directory)).sink_to(DiscardingSink())
        started = time.perf_counter()
        unaligned.execute(env, f"kafka source throughput {topic}")
        job = time.perf_counter() - started
        notes = [Path(directory, n).read_text().split() for n in sorted(os.listdir(directory))]
    records = sum(int(n[0]) for n in notes)
    first = min(float(n[1]) for n in notes if int(n[0]))
    last = max(float(n[1]) + float(n[2]) for n in notes if int(n[0]))
    return records, last - first, sum(float(n[3]) for n in notes), job


def source_throughput(bootstrap: str, records: int, runs: int) -> float:
    """``runs`` pairs (bare loop, then undertow) over one filled topic; the median ratio per
    CPU-second (one pair moves by +-0.1x on a shared machine)."""
    topic = f"bench-src-{uuid.uuid4().hex[:8]}"
    load.create_topics(bootstrap, topic)
    load.fill(bootstrap, topic, records)
    print(f"{records:,} records of ~{len(f'{999},{time.time_ns()}')} B in {load.PARTITIONS} "
          f"partitions; each side timed from its first record to its end; {runs} runs of "
          f"both sides")  # fmt: skip
    print(f"{'run':<5}{'side':<40}{'wall s':>8}{'CPU s':>8}{'records/s':>12}{'per CPU-s':>12}"
          f"{'ratio':>8}")  # fmt: skip
    ratios = []
    for run in range(1, runs + 1):
        bare_n, bare_wall, bare_cpu = bare_loop(bootstrap, topic)
        ours_n, wall, cpu, job = undertow_source(bootstrap, topic)
        for side, n in (("the bare consumers", bare_n), ("undertow", ours_n)):
            if n != records:
                raise RuntimeError(f"{side} read {n} records of {records} in {topic}")
        bare_per_cpu, ours_per_cpu = bare_n / bare_cpu, records / cpu
        ratios.append(ours_per_cpu / bare_per_cpu)
        print(f"{run:<5}{'bare confluent-kafka loop, 2 processes':<40}{bare_wall:>8.2f}"
              f"{bare_cpu:>8.2f}{bare_n / bare_wall:>12,.0f}{bare_per_cpu:>12,.0f}")  # fmt: skip
        print(f"{run:<5}{'undertow KafkaSource p=2, 2 workers':<40}{wall:>8.2f}{cpu:>8.2f}"
              f"{records / wall:>12,.0f}{ours_per_cpu:>12,.0f}{ratios[-1]:>7.2f}x"
              f"   (whole job {job:.2f} s)")  # fmt: skip
    ratio = statistics.median(ratios)
    print(f"undertow / bare per CPU-second: median {ratio:.2f}x of "
          f"{', '.join(f'{r:.2f}x' for r in ratios)}")  # fmt: skip
    return ratio
