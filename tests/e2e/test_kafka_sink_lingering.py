"""A transaction an EXACTLY_ONCE KafkaSink run left open is aborted by the next run of the sink
at a lower parallelism, though no checkpoint names it: through the public API, on ``local``.

Run 1, sink parallelism 2, checkpointing off (the writers commit at the end of input): sink
subtask 1 produces its records and marker, waits until the broker holds its records, and its
worker process ends before the commit (``os._exit``, like a kill); no restart. Its transaction stays
open on the broker until ``transaction.timeout.ms`` (15 minutes), and with it the last stable
offset of its partitions: a read_committed consumer gets nothing past its first record. Run 2 is
a new job of the same sink (same transactional id prefix) at parallelism 1, so no subtask of it
uses the id of subtask 1; its subtask 0 must abort that transaction (the id-use records on the
progress topic). Checked: a read_committed consumer reaches the end of the topic within 30 s,
and what run 2 committed (read from run 1's high watermarks on) is exact by the oracle.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter, defaultdict
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from undertow.common import WatermarkStrategy
from undertow.core.errors import JobExecutionError
from undertow.datastream import MapFunction, RuntimeContext
from undertow.testing.kafka_oracle import (
    decode,
    read_committed,
    verdict,
)
from undertow.testing.kafka_oracle_job import oracle_sink
from undertow.testing.oracle import OracleSource, OracleStatefulFunction, oracle_key

from .conftest import EnvFactory

KEYS, RECORDS_PER_KEY = 8, 50
PARTITIONS = 3
#: How long the broker may take to write the abort markers once the id is fenced.
READ_TIMEOUT_S = 30.0


#: Per sink subtask of this worker process: oracle key -> records handed to the sink
#: (:class:`NoteKeys`, chained to the sink, so in the same process as its subtask).
HANDED: dict[int, Counter[int]] = defaultdict(Counter)


class NoteKeys(MapFunction):
    """Identity, chained before the sink, that counts per oracle key what its subtask hands
    to the sink (``HANDED``): the crash injector of that subtask then knows its own records."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.handed = HANDED[runtime_context.get_index_of_this_subtask()]

    def map(self, value: Any) -> Any:
        self.handed[value.record.key] += 1
        return value


class DieWithTransactionOpen:
    """Crash injector: sink subtask ``subtask``, in its commit at the end of input (records
    and marker produced, not committed), waits until the broker holds every record it produced
    (read_uncommitted; its keys are its own: ``key_by``), so that its transaction is open on
    the broker, then ends its worker process. It waits for nothing of the other subtask, whose
    records may need this worker's loop, which the wait blocks."""

    def __init__(self, bootstrap: str, topic: str, subtask: int) -> None:
        self.bootstrap, self.topic, self.subtask = bootstrap, topic, subtask

    def reached(self, point: str, checkpoint_id: int, attempt: int, subtask: int) -> None:
        if point != "during-commit" or subtask != self.subtask:
            return
        own = HANDED[subtask]
        _wait_for_records(self.bootstrap, self.topic, own)
        print(
            f"[oracle] sink subtask {subtask} ends its process with its transaction open "
            f"({own.total()} records of keys {sorted(own)} on the broker)",
            flush=True,
        )
        os._exit(86)


def _wait_for_records(bootstrap: str, topic: str, expected: Counter[int]) -> None:
    """Until the broker holds (read_uncommitted) at least ``expected`` records per key."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lingering-check",
                         "isolation.level": "read_uncommitted"})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: Counter[int] = Counter()
    deadline = time.monotonic() + 30
    try:
        while any(seen[k] < n for k, n in expected.items()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: the broker holds {seen} of {expected}")
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                decoded = decode(message.value() or b"")
                if decoded is not None:
                    seen[decoded[0].key] += 1
    finally:
        consumer.close()


def _topic(bootstrap: str) -> str:
    topic = f"lingering-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)
    admin.create_topics([new])[topic].result(30)
    return topic


def _run(env: Any, bootstrap: str, topic: str, crash: DieWithTransactionOpen | None) -> None:
    source = OracleSource(KEYS, RECORDS_PER_KEY)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle")
    counted = stream.key_by(oracle_key).process(OracleStatefulFunction()).map(NoteKeys())
    # its own progress topic: a failing run's marker left open holds back no other test
    progress = {"undertow.sink.progress-topic": f"progress-{topic}"}
    sink = oracle_sink(bootstrap, topic, f"lingering-{topic}", properties=progress)
    counted.sink_to(sink.with_crash_injector(crash)).name("to kafka")
    env.execute(f"{topic} at parallelism {env.get_parallelism()}")


def _offsets(bootstrap: str, topic: str, isolation: str) -> dict[int, int]:
    """Per partition: the high watermark (read_uncommitted) or last stable offset
    (read_committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lingering-check",
                         "isolation.level": isolation})  # fmt: skip
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


@pytest.mark.parametrize("target", ["local"])
def test_a_new_job_at_lower_parallelism_aborts_what_a_killed_subtask_left_open(
    make_env: EnvFactory, kafka_bootstrap: str
) -> None:
    topic = _topic(kafka_bootstrap)
    crash = DieWithTransactionOpen(kafka_bootstrap, topic, subtask=1)
    first = make_env(parallelism=2, config={"restart-strategy.type": "none"})
    with pytest.raises(JobExecutionError):
        _run(first, kafka_bootstrap, topic, crash)
    high = _offsets(kafka_bootstrap, topic, "read_uncommitted")
    stable = _offsets(kafka_bootstrap, topic, "read_committed")
    held = [p for p in range(PARTITIONS) if stable[p] < high[p]]
    assert held, f"run 1 left no transaction open: stable {stable}, high {high}"

    _run(make_env(parallelism=1), kafka_bootstrap, topic, None)
    read_committed(kafka_bootstrap, topic, READ_TIMEOUT_S)  # fails unless it reaches the end
    second = read_committed(kafka_bootstrap, topic, READ_TIMEOUT_S, start=high)
    found = verdict(second, KEYS, RECORDS_PER_KEY)
    assert not any(found.counts().values()), found
