"""benchmarks/kafka_kill.py: the verifying reader judges only after every partition of the
output topic was read to its end.

The kill benchmark's sink writes without a key, so one key's counts land on both partitions,
and with EXACTLY_ONCE each sink subtask's commit reaches the partitions' last stable offsets
one after the other. A reader that stops once it has seen every key's highest count reported
counts as lost that were only later visible on the other partition (the "lost 140" of an
earlier run). Here a key's last count is committed on partition 0 while its first counts wait
in an open transaction on partition 1 that commits a moment later.
"""

from __future__ import annotations

import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kafka_kill


def _transactional(bootstrap: str) -> Any:
    producer = Producer({"bootstrap.servers": bootstrap,
                         "transactional.id": f"kill-test-{uuid.uuid4().hex[:8]}"})  # fmt: skip
    producer.init_transactions(30)
    return producer


def test_counts_on_a_partition_committed_later_are_not_lost(
    kafka_bootstrap: str, new_topic: Any
) -> None:
    topic = new_topic(2)
    late = _transactional(kafka_bootstrap)
    late.begin_transaction()
    for count in (1, 2):
        late.produce(topic, value=f"k,{count}".encode(), partition=1)
    late.flush(30)  # on the broker, behind the partition's last stable offset
    early = _transactional(kafka_bootstrap)
    early.begin_transaction()
    early.produce(topic, value=b"k,3", partition=0)
    early.commit_transaction(30)
    # the reader sees k,3 at once; the first two counts only once this commit lands
    committer = threading.Timer(1.5, late.commit_transaction, args=(30,))
    committer.start()
    try:
        lost, duplicated, note = kafka_kill.count_output(
            kafka_bootstrap, topic, "read_committed", {"k": 3}, timeout_s=30
        )
    finally:
        committer.join()
    assert (lost, duplicated, note) == (0, 0, "")


def test_a_count_never_written_is_lost_after_reading_to_the_end(
    kafka_bootstrap: str, new_topic: Any
) -> None:
    topic = new_topic(2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for partition, value in [(0, "a,1"), (1, "a,1"), (1, "a,3")]:
        producer.produce(topic, value=value.encode(), partition=partition)
    producer.flush(30)
    lost, duplicated, _ = kafka_kill.count_output(
        kafka_bootstrap, topic, "read_uncommitted", {"a": 3}, timeout_s=30
    )
    assert (lost, duplicated) == (1, 1)  # a,2 never came; a,1 came twice
