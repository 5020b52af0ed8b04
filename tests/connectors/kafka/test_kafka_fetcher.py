"""SplitFetcher's fetch loop with a scripted consumer (no broker): how long a record waits,
how fetched messages become batches, and when the reader's task is woken.

The scripted consumer keeps librdkafka's ``consume(n, timeout)`` rule: with fewer than ``n``
messages queued it waits the whole timeout before it returns them. It counts that wait on
a clock of its own (no real sleeping), so a test sees exactly how long the fetcher let
records that were already there wait.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from undertow.connectors.kafka import fetcher as fetcher_module
from undertow.connectors.kafka.fetcher import FetchedRecords, SplitFetcher, _Add
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.kafka.split import KafkaPartitionSplit

TP = KafkaTopicPartition("t", 0)


class Message:
    def __init__(self, offset: int, partition: int = 0, stamped: bool = True,
                 error: Any = None) -> None:  # fmt: skip
        self._offset, self._partition, self._stamped = offset, partition, stamped
        self._error = error

    def topic(self) -> str:
        return TP.topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> Any:
        return self._error

    def value(self) -> bytes:
        return f"{self._partition}:{self._offset}".encode()

    def timestamp(self) -> tuple[int, int]:
        # confluent-kafka: (TIMESTAMP_NOT_AVAILABLE, -1) when the type is not available
        return (1, 1000 + self._offset) if self._stamped else (0, -1)


#: what the consumer hands over at a partition's end (enable.partition.eof); a real
#: KafkaError: its == raises when compared with None
PARTITION_EOF = KafkaError(KafkaError._PARTITION_EOF)


class ScriptedConsumer:
    """Holds ``queued`` messages; ``waited_s`` is what its callers waited while it held some.
    Answers each commit at its next ``consume``, ``poll`` or ``close`` (where librdkafka serves
    ``on_commit``), with the callback its factory was given (:meth:`configured`)."""

    def __init__(self, queued: int) -> None:
        self.queue: deque[Message] = deque(Message(o) for o in range(queued))
        self.waited_s = 0.0
        self.on_commit: Any = None
        self.unanswered: list[list[TopicPartition]] = []

    def configured(self, config: dict[str, Any]) -> ScriptedConsumer:
        self.on_commit = config.get("on_commit")
        return self

    def answer(self) -> None:
        answering, self.unanswered = self.unanswered, []
        for offsets in answering:
            if self.on_commit is not None:
                self.on_commit(None, offsets)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self.answer()
        if self.queue and len(self.queue) < num_messages and timeout > 0:
            self.waited_s += timeout  # librdkafka waits for a full batch until the timeout
        if not self.queue and timeout > 0:
            time.sleep(0.001)  # nothing there: a real wait, shortened
        return [self.queue.popleft() for _ in range(min(num_messages, len(self.queue)))]

    def poll(self, timeout: float = -1) -> Message | None:
        self.answer()
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
        self.unanswered.append(offsets)

    def close(self) -> None:
        self.answer()


def fetch_first_batch(consumer: ScriptedConsumer, max_batch: int = 500) -> FetchedRecords:
    fetcher = SplitFetcher({}, lambda: None, "fetcher-test", max_batch=max_batch,
                           consumer_factory=consumer.configured)  # fmt: skip
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


def batches_of(messages: list[Message], stops: dict[int, int | None]) -> list[tuple[Any, ...]]:
    """What an unstarted fetcher assigned ``stops`` (partition -> stopping offset) makes of
    one fetch: (partition, offsets, values, timestamps) per batch."""
    fetcher = SplitFetcher({}, lambda: None, "fetcher-test")
    splits = tuple(KafkaPartitionSplit(KafkaTopicPartition("t", p), 0, stop)
                   for p, stop in stops.items())  # fmt: skip
    fetcher._apply(ScriptedConsumer(0), _Add(splits))
    found = fetcher._batches(list(messages))
    assert found is not None
    return [(b.topic_partition.partition, b.offsets, b.values, b.timestamps) for b in found]


def test_a_fetch_becomes_one_batch_per_partition_cut_at_its_stop() -> None:
    """One partition's fetch (read a field at a time) and a mixed one (read message by
    message) give the same batches: records past a stopping offset left out, timestamps the
    client does not have as None, partitions not assigned skipped."""
    one = [Message(o, stamped=o != 2) for o in range(6)]
    expected = [(0, [0, 1, 2, 3], [b"0:0", b"0:1", b"0:2", b"0:3"], [1000, 1001, None, 1003])]
    assert batches_of(one, {0: 4}) == expected
    assert batches_of([*one, Message(6, error=PARTITION_EOF)], {0: 4}) == expected
    mixed = [*one[:3], Message(0, partition=1), Message(9, error=PARTITION_EOF), *one[3:],
             Message(1, partition=1), Message(0, partition=7)]  # fmt: skip
    assert batches_of(mixed, {0: 4, 1: None}) == [
        *expected,
        (1, [0, 1], [b"1:0", b"1:1"], [1000, 1001]),
    ]
    assert batches_of(one, {0: 0}) == []


def test_the_task_is_woken_only_when_its_reader_waits() -> None:
    """A put wakes the task if the reader found the queue empty since the last wake (the
    flag is set before the reader's last look, so a put in between is not missed)."""
    wakes: list[int] = []
    fetcher = SplitFetcher({}, lambda: wakes.append(1), "fetcher-test")
    batch = FetchedRecords(TP, [0], [b"x"], [None])
    fetcher._put(batch)  # the reader has not looked yet: it waits
    fetcher._put(batch)  # it has not taken the first: no second wake
    assert len(wakes) == 1
    assert fetcher.poll() is batch and fetcher.poll() is batch
    fetcher._put(batch)  # the reader took everything but has not found the queue empty
    assert len(wakes) == 1
    assert fetcher.poll() is batch
    assert fetcher.poll() is None  # found empty: the next put wakes
    fetcher._put(batch)
    assert len(wakes) == 2


class CommitRecordingConsumer(ScriptedConsumer):
    """Holds nothing (each consume waits its whole timeout, as librdkafka's does on a
    partition with nothing new) and records the commits handed to it."""

    def __init__(self) -> None:
        super().__init__(0)
        self.commits: list[list[tuple[str, int, int]]] = []

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self.answer()
        time.sleep(max(timeout, 0))
        return []

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> Any:
        super().commit(offsets=offsets, asynchronous=asynchronous)
        self.commits.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])


def test_a_commit_asked_for_just_before_close_reaches_the_consumer() -> None:
    """A bounded job commits its end offsets at its final checkpoint and closes its reader
    at once: the commit still queued behind a fetch must be made before the consumer closes
    (librdkafka's close then waits for it), or the next run of the group reads them again."""
    for _ in range(5):
        consumer = CommitRecordingConsumer()
        fetcher = SplitFetcher({}, lambda: None, "fetcher-test", wait_s=0.05,
                               consumer_factory=consumer.configured)  # fmt: skip
        fetcher.start()
        fetcher.add_splits([KafkaPartitionSplit(TP, 0)])
        time.sleep(0.02)  # the fetcher waits in consume
        fetcher.commit({TP: 7})
        fetcher.close()
        assert consumer.commits == [[("t", 0, 7)]]


class ReorderingConsumer(CommitRecordingConsumer):
    """Writes the commits in flight at an answer to the group newest first, as librdkafka
    and the broker did (CI, 2026-12-03): of two in flight, the older one is kept."""

    def __init__(self) -> None:
        super().__init__()
        self.group: dict[int, int] = {}
        self.most_in_flight = 0

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> Any:
        super().commit(offsets=offsets, asynchronous=asynchronous)
        self.most_in_flight = max(self.most_in_flight, len(self.unanswered))

    def answer(self) -> None:
        for offsets in reversed(self.unanswered):
            self.group.update((tp.partition, tp.offset) for tp in offsets)
        super().answer()


def commit_in_a_row(close_at_once: bool) -> ReorderingConsumer:
    """Three commits asked for before the fetcher's thread starts (so all are queued when
    it looks), then closed at once or after the thread made them."""
    consumer = ReorderingConsumer()
    fetcher = SplitFetcher({}, lambda: None, "fetcher-test", wait_s=0.01,
                           consumer_factory=consumer.configured)  # fmt: skip
    fetcher.add_splits([KafkaPartitionSplit(TP, 0)])
    fetcher.commit({TP: 0, KafkaTopicPartition("t", 1): 5})
    fetcher.commit({TP: 2})
    fetcher.commit({TP: 4})
    fetcher.start()
    deadline = time.monotonic() + 10
    while not close_at_once and consumer.group.get(0) != 4 and time.monotonic() < deadline:
        time.sleep(0.005)
    fetcher.close()
    return consumer


def test_commits_go_one_at_a_time_so_the_newest_offsets_stay() -> None:
    """A commit asked for while another is in flight waits for its answer, merged with any
    other waiting one (a partition's later offset replaces its earlier one): the group ends
    with the newest offsets, also when the reader closes with commits still queued."""
    for close_at_once in (False, True):
        consumer = commit_in_a_row(close_at_once)
        assert consumer.group == {0: 4, 1: 5}, close_at_once
        assert consumer.most_in_flight == 1
        assert consumer.commits[0] == [("t", 0, 0), ("t", 1, 5)]
        assert consumer.commits[-1] == [("t", 0, 4)]


class SilentConsumer(CommitRecordingConsumer):
    """A broker that never answers a commit."""

    def answer(self) -> None:
        pass


def test_a_closing_fetcher_waits_for_an_unanswered_commit_only_so_long(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fetcher_module, "CLOSE_COMMIT_WAIT_S", 0.2)
    consumer = SilentConsumer()
    fetcher = SplitFetcher({}, lambda: None, "fetcher-test", wait_s=0.01,
                           consumer_factory=consumer.configured)  # fmt: skip
    fetcher.commit({TP: 3})
    fetcher.commit({TP: 9})
    fetcher.start()
    started = time.monotonic()
    fetcher.close()
    assert time.monotonic() - started < 5
    assert consumer.commits == [[("t", 0, 3)]]
    assert "offsets not committed (t-0 at 9)" in caplog.text
