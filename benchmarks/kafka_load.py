"""The load and the stopwatch of benchmarks/kafka.py, the same for every engine.

The job under test (undertow, Spark, PyFlink) reads topic ``in`` whose values are
``"<key>,<producer timestamp ns>"`` (Kafka message key ``<key>``, so one key stays in one
partition, in order), keeps a running count per key and writes ``"<key>,<count>"`` to topic
``out``. A count ``c`` for key ``k`` means the first ``c`` records of ``k`` were processed and are
visible, so one output record covers every record of its key up to ``c``, whatever the engine
batches: Spark's micro-batch writes one count per key per batch, undertow one per record.

* :func:`produce` (a process of its own) writes ``in``: a trickle while the job warms up, then
  a burst of N records as fast as it can (saturation) or a paced stream at a fixed rate
  (latency), as the coordinator commands; it logs ``(key, send ns)`` of every record.
* :func:`observe` (a process of its own) reads ``out`` with the isolation level given
  (``read_committed`` for exactly-once sinks) and logs ``(key, count, visible ns, append
  ms)``, the last the broker's append time (``out`` is made with ``LogAppendTime``); it
  publishes how many input records are covered so far, so the coordinator knows when a
  phase is fully visible. Visible minus append is the measuring consumer's own share of a
  latency (plus, for a read_committed consumer, the wait for the commit): a consumer that
  cannot keep up shows there (:func:`append_to_visible`).
* :func:`record_latencies` joins the two logs afterwards: each input record's latency is the
  time from its send to the first output that covers it. Pure; tested in
  tests/benchmarks/test_kafka_load.py.

Both processes use wall-clock ``time.time_ns()`` on one host. Threading: each process is
single-threaded apart from librdkafka's own threads; they talk to the coordinator through a
``multiprocessing`` pipe and shared values only.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from typing import Any

from percentiles import percentile

#: Distinct keys in the input.
KEYS = 1000
#: Partitions of every topic the benchmark makes.
PARTITIONS = 2
#: The producer's settings: librdkafka's default 5 ms linger (the Java client's since Kafka
#: 4.0), as a producer upstream of a job would have it. Its wait is part of every latency
#: measured (a record's clock starts at its send). Until 2026-11-30 it was 1 ms, so that the
#: producer added little to the latency; but then one producer sent about 1,000 produce
#: requests a second at any rate, each answered by a fetch of a few records that paid every
#: hop's per-request cost: at 4,000 records/s the broker took 183 us of CPU per record with
#: 1 ms against 104 us with 5 ms, the job 206 against 135 us (docs/kafka.md, "Fifth session").
PRODUCER = {"linger.ms": 5, "queue.buffering.max.messages": 1_000_000}
#: The measuring consumer's settings: fetches return within 10 ms when nothing new arrived.
CONSUMER = {"fetch.wait.max.ms": 10, "enable.auto.commit": False, "enable.partition.eof": False}
#: The output topic's settings: the broker stamps each record with its append time, so the
#: measuring consumer's share of a latency can be told from the job's (:func:`observe`).
OUTPUT_TOPIC_CONFIG = {"message.timestamp.type": "LogAppendTime"}


@dataclass(frozen=True, slots=True)
class Phase:
    """One command to the producer: ``trickle`` (``rate`` records/s until the next command),
    ``burst`` (``count`` records, as fast as possible), ``paced`` (``rate`` records/s for
    ``seconds``) or ``stop`` (reply with the send log and end)."""

    kind: str
    rate: float = 0.0
    count: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class SendLog:
    """Every record the producer wrote, in send order: key, send time (ns), phase index."""

    keys: list[int]
    sent_ns: list[int]
    phases: list[int]


def produce(bootstrap: str, topic: str, commands: Connection, sent: Synchronized[int]) -> None:
    """The producer process: runs the commanded phases until ``stop``, then sends the
    :class:`SendLog` back over ``commands``. ``sent`` counts records handed to the client."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    keys: list[int] = []
    sent_ns: list[int] = []
    phases: list[int] = []
    index = 0

    def one() -> None:
        key = len(keys) % KEYS
        now = time.time_ns()
        send(producer, topic, key, now, 0.001)
        keys.append(key)
        sent_ns.append(now)
        phases.append(index)

    phase = commands.recv()
    while phase.kind != "stop":
        if phase.kind == "trickle":
            while not commands.poll(1 / phase.rate):
                one()
                producer.poll(0)
        elif phase.kind == "burst":
            for i in range(phase.count):
                one()
                if i % 1000 == 0:
                    producer.poll(0)
                    sent.value = len(keys)
        elif phase.kind == "paced":
            began = time.perf_counter()
            total = int(phase.rate * phase.seconds)
            done = 0
            while done < total:
                due = min(total, int((time.perf_counter() - began) * phase.rate) + 1)
                while done < due:
                    one()
                    done += 1
                producer.poll(0)
                sent.value = len(keys)
                wait = began + done / phase.rate - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
        else:
            raise ValueError(f"the producer got an unknown phase {phase.kind!r}")
        producer.flush(60)
        sent.value = len(keys)
        index += 1
        commands.send(("done", index - 1))
        phase = commands.recv()
    producer.flush(60)
    commands.send(SendLog(keys, sent_ns, phases))


def send(producer: Any, topic: str, key: int, now_ns: int, wait_s: float) -> None:
    """One record of the load's format, ``"<key>,<now_ns>"`` keyed by ``key``; a full client
    queue is served (``poll(wait_s)``) until the record fits."""
    while True:
        try:
            producer.produce(topic, f"{key},{now_ns}".encode(), str(key).encode())
            return
        except BufferError:
            producer.poll(wait_s)


def create_topics(bootstrap: str, *names: str, config: dict[str, str] | None = None) -> None:
    """Topics of :data:`PARTITIONS` partitions, replication 1, with ``config``."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(n, PARTITIONS, 1, config=config or {})
                                   for n in names])  # fmt: skip
    for future in futures.values():
        future.result(60)


def fill(bootstrap: str, topic: str, records: int) -> None:
    """``records`` records of the load's format, keys round robin, as fast as possible (a
    backlog for a job to read; every record has the same send time)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER, "linger.ms": 20})
    now = time.time_ns()
    for i in range(records):
        send(producer, topic, i % KEYS, now, 0.01)
    if producer.flush(120):
        raise RuntimeError(f"could not write {records} records to {topic} at {bootstrap}")


def observe(
    bootstrap: str,
    topic: str,
    partitions: int,
    isolation: str,
    covered: Synchronized[int],
    first: Event,
    stop: Event,
    results: Connection,
) -> None:
    """The measuring consumer process: reads ``topic`` from its start until ``stop`` is set,
    then sends its log ``[(key, count, visible ns, append ms, stamps)]`` over ``results``
    (append ms is the record's Kafka timestamp: the broker's append time on a
    ``LogAppendTime`` topic; stamps are the per-hop times an instrumented job adds after the
    count, benchmarks/kafka_hops.py, else empty).
    ``covered`` is the sum over keys of the highest count seen (the input records visible so
    far); ``first`` is set at the first output record."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "undertow-bench-observer",
                         "isolation.level": isolation, **CONSUMER})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    highest: dict[int, int] = defaultdict(int)
    log: list[tuple[int, int, int, int, tuple[int, ...]]] = []
    total = 0
    while not stop.is_set():
        messages = take(consumer)
        now = time.time_ns()
        for message in messages:
            if message.error() is not None:
                continue
            fields = (message.value() or b"").decode().split(",")
            key, count = int(fields[0]), int(fields[1])
            log.append((key, count, now, message.timestamp()[1], tuple(map(int, fields[2:]))))
            if count > highest[key]:
                total += count - highest[key]
                highest[key] = count
        if messages:
            covered.value = total
            first.set()
    consumer.close()
    results.send(log)


def take(consumer: Any, most: int = 1000, wait_s: float = 0.05) -> list[Any]:
    """What ``consumer`` holds now (up to ``most``), waiting up to ``wait_s`` only when it holds
    nothing. ``consume(most, wait_s)`` alone returns when ``most`` records are there or
    ``wait_s`` passed: below ``most`` records per ``wait_s`` every record would be seen up to
    ``wait_s`` late, and its measured latency with it (the source's fetcher reads the same way,
    src/undertow/connectors/kafka/fetcher.py)."""
    messages: list[Any] = consumer.consume(most, timeout=0)
    if messages:
        return messages
    first = consumer.poll(wait_s)
    if first is None:
        return []
    return [first, *consumer.consume(most - 1, timeout=0)]


def record_latencies(
    keys: Sequence[int], sent_ns: Sequence[int], seen: Sequence[tuple[int, ...]]
) -> tuple[list[int | None], int]:
    """Each sent record's latency in ns (``None`` if no output covered it) and how many
    output records claimed more records of a key than were sent (a wrong count, or
    duplicates; 0 in a correct run without failures).

    ``keys``/``sent_ns`` are the send log in send order (a key's records were sent, and so
    are counted, in that order); ``seen`` is ``(key, count, visible ns, ...)`` per output
    record."""
    indices: dict[int, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        indices[key].append(i)
    latencies: list[int | None] = [None] * len(keys)
    covered: dict[int, int] = defaultdict(int)
    overcounts = 0
    for key, count, visible, *_ in sorted(seen, key=lambda s: s[2]):
        mine = indices.get(key, [])
        if count > len(mine):
            overcounts += 1
            count = len(mine)
        for i in mine[covered[key] : count]:
            latencies[i] = visible - sent_ns[i]
        covered[key] = max(covered[key], count)
    return latencies, overcounts


def append_to_visible(
    seen: Sequence[tuple[int, int, int, int, tuple[int, ...]]], since_ns: int, until_ns: int
) -> list[float]:
    """Milliseconds from the broker's append to the measuring consumer's sight, per output
    record seen in ``[since_ns, until_ns)``: the consumer's own share of the latencies (for a
    read_committed consumer, with the wait for the transaction's commit)."""
    return [visible / 1e6 - append for _, _, visible, append, _ in seen
            if since_ns <= visible < until_ns]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Latency:
    """Latency figures of one paced phase, in milliseconds."""

    p50_ms: float
    p99_ms: float
    mean_ms: float
    measured: int
    missing: int


def summarize(latencies: Sequence[int | None]) -> Latency:
    """p50/p99/mean of the records that became visible; ``missing`` never did."""
    found = [v / 1e6 for v in latencies if v is not None]
    missing = len(latencies) - len(found)
    if not found:
        return Latency(float("nan"), float("nan"), float("nan"), 0, missing)
    return Latency(percentile(found, 0.5, "nearest-rank"), percentile(found, 0.99, "nearest-rank"),
                   statistics.fmean(found), len(found), missing)  # fmt: skip


def saturation(
    sent_ns: Sequence[int], latencies: Sequence[int | None], indices: Sequence[int]
) -> tuple[float, float] | None:
    """Records per second through the job over a burst (the records at ``indices``): their
    count over first send to last visible; and the producer's own rate over the burst, to
    show whether the producer bounded it. None if a record of the burst never became visible."""
    if not indices or any(latencies[i] is None for i in indices):
        return None
    first = sent_ns[indices[0]]
    last_visible = max(sent_ns[i] + latencies[i] for i in indices)  # type: ignore[operator]
    last_sent = sent_ns[indices[-1]]
    through = len(indices) / max(1e-9, (last_visible - first) / 1e9)
    producer = len(indices) / max(1e-9, (last_sent - first) / 1e9)
    return through, producer


def wait_until(predicate: Any, timeout: float, poll: float = 0.02) -> bool:
    """Poll ``predicate()`` until true (True) or ``timeout`` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True
