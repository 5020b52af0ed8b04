"""SplitFetcher's fetch loop with a scripted consumer (no broker): how long a record waits.

The scripted consumer keeps librdkafka's ``consume(n, timeout)`` rule: with fewer than ``n``
messages queued it waits the whole timeout before it returns them. It counts that wait on
a clock of its own (no real sleeping), so a test sees exactly how long the fetcher let
records that were already there wait.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from confluent_kafka import TopicPartition

from undertow.connectors.kafka.fetcher import FetchedRecords, SplitFetcher
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.kafka.split import KafkaPartitionSplit

TP = KafkaTopicPartition("t", 0)


class Message:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def topic(self) -> str:
        return TP.topic

    def partition(self) -> int:
        return TP.partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> None:
        return None

    def value(self) -> bytes:
        return str(self._offset).encode()

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000 + self._offset)


class ScriptedConsumer:
    """Holds ``queued`` messages; ``waited_s`` is what its callers waited while it held some."""

    def __init__(self, queued: int) -> None:
        self.queue: deque[Message] = deque(Message(o) for o in range(queued))
        self.waited_s = 0.0

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        if self.queue and len(self.queue) < num_messages and timeout > 0:
            self.waited_s += timeout  # librdkafka waits for a full batch until the timeout
        if not self.queue and timeout > 0:
            time.sleep(0.001)  # nothing there: a real wait, shortened
        return [self.queue.popleft() for _ in range(min(num_messages, len(self.queue)))]

    def poll(self, timeout: float = -1) -> Message | None:
        if self.queue:
            return self.queue.popleft()
        time.sleep(0.001)
        return None

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        pass

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        pass

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return partitions

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> Any:
        return None

    def close(self) -> None:
        pass


def fetch_first_batch(consumer: ScriptedConsumer, max_batch: int = 500) -> FetchedRecords:
    fetcher = SplitFetcher({}, lambda: None, "fetcher-test", max_batch=max_batch,
                           consumer_factory=lambda config: consumer)  # fmt: skip
    fetcher.start()
    try:
        fetcher.add_splits([KafkaPartitionSplit(TP, 0)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            item = fetcher.poll()
            if item is not None:
                assert isinstance(item, FetchedRecords), item
                return item
            time.sleep(0.001)
        raise AssertionError("the fetcher handed over nothing within 10 s")
    finally:
        fetcher.close()


def test_records_already_there_are_handed_over_without_waiting_for_a_fuller_batch() -> None:
    consumer = ScriptedConsumer(queued=3)
    batch = fetch_first_batch(consumer)
    assert batch.offsets == [0, 1, 2]
    assert consumer.waited_s == 0.0, f"3 records waited {consumer.waited_s} s for a fuller batch"


def test_a_backlog_is_taken_in_batches_of_max_batch() -> None:
    consumer = ScriptedConsumer(queued=1200)
    batch = fetch_first_batch(consumer)
    assert batch.offsets == list(range(500))
    assert batch.timestamps[:2] == [1000, 1001]
