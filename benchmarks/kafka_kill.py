"""Oracle counts after a kill (issue 28): the benchmark job on undertow, one worker killed.

The source topic is filled first with ``records`` records of benchmarks/kafka_load.py's format
(``KEYS`` keys round robin); the job (Kafka -> parse -> key_by -> running count -> Kafka, the
latency section's) counts them while a worker process is killed (``kill -9``) once a
checkpoint completed. It restarts from its last checkpoint. The
output topic is then read (``read_committed`` for EXACTLY_ONCE, ``read_uncommitted``
otherwise) until every key's count reached its number of records, or a time-out passed:

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
from confluent_kafka import Consumer, TopicPartition

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


def count_output(
    bootstrap: str, topic: str, isolation: str, expected: dict[str, int], timeout_s: float
) -> tuple[int, int, str]:
    """Read ``topic`` from its start until every key's count reached ``expected[key]``;
    returns (lost, duplicated, note)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kill-{uuid.uuid4().hex}",
                         "isolation.level": isolation, **load.CONSUMER})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    seen: Counter[tuple[str, int]] = Counter()
    highest: dict[str, int] = {}
    deadline = time.monotonic() + timeout_s
    note = ""
    try:
        while any(highest.get(k, 0) < n for k, n in expected.items()):
            if time.monotonic() > deadline:
                note = f"not all counts visible within {timeout_s:.0f} s"
                break
            for message in consumer.consume(10_000, timeout=0.2):
                if message.error() is not None:
                    continue
                key, count = message.value().decode().split(",")
                seen[(key, int(count))] += 1
                highest[key] = max(highest.get(key, 0), int(count))
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
