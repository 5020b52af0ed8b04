"""Oracle counts after a kill (issue 28): the benchmark job on undertow, one worker killed.

The source topic is filled first with ``records`` records of benchmarks/kafka_load.py's format
(``KEYS`` keys round robin); the job (Kafka -> parse -> key_by -> running count -> Kafka, the
latency section's) counts them while a worker process is killed (``kill -9``) once a
checkpoint completed. It restarts from its last checkpoint. The
output topic is then read (``read_committed`` for EXACTLY_ONCE, ``read_uncommitted``
otherwise) until every key's count reached its number of records, or a time-out passed, and
then on until every partition was read to its end (read_committed: its last stable offset,
once no transaction is open), looked up after that (:func:`count_output`):

* ``lost``: counts ``1..n`` of a key that never appeared;
* ``duplicated``: counts that appeared more than once (AT_LEAST_ONCE may repeat what the
  restarted job writes again; EXACTLY_ONCE must not).

Threading: the caller's thread; the engine runs its job in worker processes of this process
(so the kill chooses among them only). Lifecycle: :func:`oracle_after_kill` builds, runs and
stops one engine per guarantee.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import kafka_engines
import kafka_load as load
from confluent_kafka import Consumer, IsolationLevel, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from undertow.datastream.connectors.kafka import DeliveryGuarantee
from undertow.testing.oracle import kill_worker_process

#: the job restarts at once, from its last checkpoint
RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "3",
    "restart-strategy.fixed-delay.delay": "0 ms",
}
COMPLETED = re.compile(r"checkpoint \d+ completed")


@dataclass(frozen=True, slots=True)
class KillFigures:
    name: str
    records: int
    lost: int
    duplicated: int
    restarts: int
    #: why the figures are incomplete ("" if they are not)
    note: str = ""


def end_offsets(bootstrap: str, topic: str, isolation: str, timeout_s: float) -> dict[int, int]:
    """Each partition's end as a consumer of ``isolation`` sees it: the high watermark for
    read_uncommitted, the last stable offset for read_committed. For read_committed it waits
    (up to ``timeout_s``) until no transaction is open on the topic, the last stable offset
    reaching the high watermark: a sink subtask's commit returns before the broker wrote its
    markers to every partition, so one partition can still hide a committed transaction's
    records when another already shows them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = sorted(admin.list_topics(topic, timeout=timeout_s).topics[topic].partitions)

    def latest(level: IsolationLevel) -> dict[int, int]:
        request = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
        futures = admin.list_offsets(request, isolation_level=level, request_timeout=timeout_s)
        return {tp.partition: int(f.result().offset) for tp, f in futures.items()}

    high = latest(IsolationLevel.READ_UNCOMMITTED)
    if isolation != "read_committed":
        return high
    deadline = time.monotonic() + timeout_s
    while True:
        stable = latest(IsolationLevel.READ_COMMITTED)
        if stable == high or time.monotonic() > deadline:
            return stable
        time.sleep(0.1)
        high = latest(IsolationLevel.READ_UNCOMMITTED)


def count_output(
    bootstrap: str, topic: str, isolation: str, expected: dict[str, int], timeout_s: float
) -> tuple[int, int, str]:
    """Read ``topic`` from its start until every key's count reached ``expected[key]`` (the
    job got through its input), then on until every partition's position reached its end
    (:func:`end_offsets`, looked up after that) before judging; returns (lost, duplicated,
    note). Counts of one key may be on several partitions (the sink writes without a key),
    so a key's highest count seen on one partition says nothing of the others: judging
    there read "lost 140" of records that came later on the other partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kill-{uuid.uuid4().hex}",
                         "isolation.level": isolation, **load.CONSUMER,
                         "enable.partition.eof": True})  # fmt: skip
    partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    seen: Counter[tuple[str, int]] = Counter()
    highest: dict[str, int] = {}
    position = dict.fromkeys(partitions, 0)
    deadline = time.monotonic() + timeout_s
    note = ""

    def take() -> None:
        for message in consumer.consume(10_000, timeout=0.2):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    position[message.partition()] = max(position[message.partition()],
                                                        message.offset())  # fmt: skip
                continue
            position[message.partition()] = message.offset() + 1
            key, count = message.value().decode().split(",")
            seen[(key, int(count))] += 1
            highest[key] = max(highest.get(key, 0), int(count))
        for tp in consumer.position([TopicPartition(topic, p) for p in partitions]):
            position[tp.partition] = max(position[tp.partition], tp.offset)  # past markers

    try:
        while any(highest.get(k, 0) < n for k, n in expected.items()):
            if time.monotonic() > deadline:
                note = f"not all counts visible within {timeout_s:.0f} s"
                break
            take()
        ends = end_offsets(bootstrap, topic, isolation, max(5.0, deadline - time.monotonic()))
        while any(position[p] < end for p, end in ends.items()):
            if time.monotonic() > deadline + 30:
                short = {p: (position[p], e) for p, e in ends.items() if position[p] < e}
                note = note or f"partitions (position, end) {short} not read to their end"
                break
            take()
    finally:
        consumer.close()
    lost = sum(1 for k, n in expected.items() for c in range(1, n + 1) if (k, c) not in seen)
    duplicated = sum(times - 1 for times in seen.values())
    return lost, duplicated, note


def oracle_after_kill(
    bootstrap: str,
    records: int,
    interval_ms: int,
    seed: int,
    fill: Callable[[str, str], None],
    timeout_s: float = 180.0,
) -> list[KillFigures]:
    """One run per guarantee (AT_LEAST_ONCE, EXACTLY_ONCE), each killing one worker;
    ``fill(source, sink)`` creates both topics and writes ``records`` records to ``source``."""
    figures = []
    for guarantee in (DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.EXACTLY_ONCE):
        source, sink = f"kill-in-{uuid.uuid4().hex[:8]}", f"kill-out-{uuid.uuid4().hex[:8]}"
        fill(source, sink)
        expected = Counter(str(i % load.KEYS) for i in range(records))
        engine = kafka_engines.UndertowEngine(guarantee, interval_ms, RESTARTS)
        engine.start(bootstrap, source, sink)
        note = ""
        try:
            deadline = time.monotonic() + 60
            while not COMPLETED.search(engine.console()):
                if time.monotonic() > deadline:
                    note = "no checkpoint completed within 60 s: nothing killed"
                    break
                time.sleep(0.05)
            if not note and kill_worker_process(seed) is None:
                note = "no worker process to kill"
            lost, duplicated, late = count_output(
                bootstrap, sink, engine.isolation, dict(expected), timeout_s
            )
            restarts = engine.console().count("; restarting")
        finally:
            engine.stop()
        figures.append(KillFigures(engine.name, records, lost, duplicated, restarts,
                                   note or late))  # fmt: skip
    return figures


def print_kill(rows: list[KillFigures]) -> None:
    print(f"{'job':<34} {'records':>8} {'lost':>6} {'duplicated':>10} {'restarts':>8}")
    for row in rows:
        print(f"{row.name:<34} {row.records:>8} {row.lost:>6} {row.duplicated:>10} "
              f"{row.restarts:>8}{'  ' + row.note if row.note else ''}")  # fmt: skip
