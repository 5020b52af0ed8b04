"""The thread that owns a Kafka source reader's consumer (Flink's split fetcher).

confluent-kafka's ``consume`` blocks, a reader must not: one :class:`SplitFetcher` thread per
reader owns an ``assign``-ed ``Consumer`` and hands :class:`FetchedRecords`,
:class:`PartitionEnd` and :class:`FetchFailed` to the reader through a bounded queue (a full
queue stops fetching: backpressure). A partition ends when the consumer's *position* reaches
its stopping offset, never by waiting for a record at ``stopping - 1`` (FLINK-34470). Each
fetch takes what the consumer holds (up to ``max_batch``) without waiting for a fuller batch;
only a consumer holding nothing is waited on, up to ``wait_s``, for its first record.
Offset commits go one at a time (:mod:`.offset_commits`).
Threading: the reader calls :meth:`SplitFetcher.add_splits`, ``commit``, ``poll`` and
``close`` from the task's thread (they only enqueue or dequeue); ``on_available`` is called
from the fetcher thread and must be thread-safe. The longer story: docs/design.md, "Module
notes", under this module's name.
"""

from __future__ import annotations

import bisect
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from confluent_kafka import Consumer, KafkaError, TopicPartition

from undertow.connectors.kafka.client_log import logged
from undertow.connectors.kafka.offset_commits import CommitSequence
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.connectors.kafka.split import KafkaPartitionSplit

log = logging.getLogger(__name__)

#: How long a closing fetcher waits for the broker to answer its last commits.
CLOSE_COMMIT_WAIT_S = 5.0


@dataclass(frozen=True, slots=True)
class FetchedRecords:
    topic_partition: KafkaTopicPartition
    offsets: list[int]
    values: list[bytes | None]
    timestamps: list[int | None]


@dataclass(frozen=True, slots=True)
class PartitionEnd:
    topic_partition: KafkaTopicPartition


@dataclass(frozen=True, slots=True)
class FetchFailed:
    error: str


Fetched = FetchedRecords | PartitionEnd | FetchFailed

#: The timestamp confluent-kafka gives a message whose timestamp type is not available.
_NO_TIMESTAMP = -1

_FATAL_CODES = frozenset(
    {
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.OFFSET_OUT_OF_RANGE,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._AUTO_OFFSET_RESET,
    }
)


class ConsumerLike(Protocol):
    """What the fetcher uses of confluent-kafka's ``Consumer`` (tests script one)."""

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]: ...

    def poll(self, timeout: float = -1) -> Any: ...

    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None: ...

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]: ...

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> Any: ...

    def close(self) -> None: ...


def new_consumer(config: dict[str, Any]) -> ConsumerLike:
    """confluent-kafka's consumer (its stubs type it loosely, hence the cast)."""
    return cast(ConsumerLike, Consumer(config))


@dataclass(frozen=True, slots=True)
class _Add:
    splits: tuple[KafkaPartitionSplit, ...]


@dataclass(frozen=True, slots=True)
class _Commit:
    offsets: tuple[tuple[KafkaTopicPartition, int], ...]


class SplitFetcher:
    """One consumer on one thread (module doc). Start with :meth:`start`, end with
    :meth:`close` (joins the thread and closes the consumer)."""

    def __init__(
        self,
        config: dict[str, Any],
        on_available: Callable[[], None],
        name: str,
        max_batch: int = 500,
        queue_batches: int = 16,
        wait_s: float = 0.1,
        consumer_factory: Callable[[dict[str, Any]], ConsumerLike] = new_consumer,
    ) -> None:
        self._config = config
        self._wait_s = wait_s
        self._consumer_factory = consumer_factory
        self._on_available = on_available
        self._max_batch = max_batch
        self._out: queue.Queue[Fetched] = queue.Queue(queue_batches)
        self._commands: queue.Queue[_Add | _Commit] = queue.Queue()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._stops: dict[KafkaTopicPartition, int | None] = {}
        #: next offset per assigned partition (last fetched + 1), or the partition-EOF offset
        self._reached: dict[KafkaTopicPartition, int] = {}
        #: every partition ever assigned, by the ``(topic, partition)`` a message names
        self._partitions: dict[tuple[str, int], KafkaTopicPartition] = {}
        #: The reader found the queue empty and waits to be told (:meth:`poll`): only then
        #: does a put wake its task (a wake per batch would cost a syscall each).
        self._reader_waits = True
        #: one commit in flight at a time (librdkafka may reorder concurrent ones)
        self._commits = CommitSequence()
        #: set by the consumer's ``on_commit`` (served on this thread, in its calls)
        self._commit_answered = False

    def start(self) -> None:
        self._thread.start()

    def add_splits(self, splits: list[KafkaPartitionSplit]) -> None:
        self._commands.put(_Add(tuple(splits)))

    def commit(self, offsets: dict[KafkaTopicPartition, int]) -> None:
        """Commit ``offsets`` to the consumer group, asynchronously (monitoring only)."""
        self._commands.put(_Commit(tuple(offsets.items())))

    def poll(self) -> Fetched | None:
        """The next fetched item, or ``None``: then the next put wakes the reader's task."""
        try:
            return self._out.get_nowait()
        except queue.Empty:
            pass
        self._reader_waits = True  # before looking again: a put in between sees it
        try:
            item = self._out.get_nowait()
        except queue.Empty:
            return None
        self._reader_waits = False
        return item

    def close(self) -> None:
        self._closed.set()
        self._thread.join(10)

    # the fetcher thread ---------------------------------------------------------------------
    def _put(self, item: Fetched) -> bool:
        while not self._closed.is_set():
            try:
                self._out.put(item, timeout=0.1)
            except queue.Full:
                continue
            if self._reader_waits:
                self._reader_waits = False
                self._on_available()
            return True
        return False

    def _run(self) -> None:
        try:
            # librdkafka's own log lines (a broker that went away, ...) go to Python logging,
            # not to the process's stderr
            consumer = self._consumer_factory({**logged(self._config),
                                               "on_commit": self._on_commit})  # fmt: skip
        except Exception as err:
            self._put(FetchFailed(f"cannot create the consumer: {err}"))
            return
        try:
            self._loop(consumer)
        except Exception as err:  # anything unexpected ends the reader, loudly
            log.exception("Kafka split fetcher failed")
            self._put(FetchFailed(f"{type(err).__name__}: {err}"))
        finally:
            self._commit_the_rest(consumer)
            consumer.close()

    def _commit_the_rest(self, consumer: Any) -> None:
        """Make the commits still queued or waiting when the loop ended, one after the other,
        and wait for their answers (up to :data:`CLOSE_COMMIT_WAIT_S`): a bounded job commits
        its end offsets at its final checkpoint and closes its reader right after, while
        this thread may still be waiting in a fetch or on an earlier commit's answer. Splits
        still queued are dropped, as are records a poll here returns (the reader is closing)."""
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                break
            if isinstance(command, _Commit):
                self._apply(consumer, command)
        deadline = time.monotonic() + CLOSE_COMMIT_WAIT_S
        while True:
            self._serve_commits(consumer)
            if not self._commits.in_flight:
                return
            if time.monotonic() >= deadline:
                waiting = ", ".join(f"{tp.topic}-{tp.partition} at {offset}"
                                    for tp, offset in self._commits.waiting.items())  # fmt: skip
                log.warning("KafkaSource: closing the consumer with offsets not committed (%s): "
                            "the broker did not answer the commit before them within %s s",
                            waiting or "none waiting", CLOSE_COMMIT_WAIT_S)  # fmt: skip
                return
            self._dropped(consumer.poll(0.05))  # serves ``on_commit``

    def _on_commit(self, err: Any, partitions: list[TopicPartition]) -> None:
        """The consumer's answer to the commit in flight (on this thread, inside a consumer
        call): logged when it failed; the next commit is sent by :meth:`_serve_commits`."""
        self._commit_answered = True
        failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in partitions or ()
                  if tp.error is not None]  # fmt: skip
        if err is not None or failed:
            log.warning("KafkaSource: committing offsets failed: %s", err or "; ".join(failed))

    @staticmethod
    def _dropped(message: Any) -> None:
        """A poll made only to serve ``on_commit`` (nothing assigned, or the reader closing)
        returned ``message``: a client event is logged; a record is dropped."""
        if message is not None and message.error() is not None:
            log.info("KafkaSource: consumer event while waiting for a commit's answer: %s",
                     message.error())  # fmt: skip

    def _serve_commits(self, consumer: Any) -> None:
        """After an answer, send what waited for it."""
        if self._commit_answered:
            self._commit_answered = False
            self._send(consumer, self._commits.answered())

    def _send(self, consumer: Any, offsets: Mapping[KafkaTopicPartition, int] | None) -> None:
        if not offsets:
            return
        try:
            listed = [TopicPartition(tp.topic, tp.partition, off) for tp, off in offsets.items()]
            consumer.commit(offsets=listed, asynchronous=True)
        except Exception as err:  # monitoring only: never fails the job
            log.warning("KafkaSource: committing offsets failed: %s", err)
            self._commit_answered = True  # no answer will come: the next may go

    def _apply(self, consumer: Any, command: _Add | _Commit) -> None:
        if isinstance(command, _Add):
            new = [s for s in command.splits if s.topic_partition not in self._stops]
            for split in new:
                tp = split.topic_partition
                self._stops[tp] = split.stopping_offset
                self._reached[tp] = split.starting_offset
                self._partitions[(tp.topic, tp.partition)] = tp
            consumer.incremental_assign(
                [
                    TopicPartition(
                        s.topic_partition.topic, s.topic_partition.partition, s.starting_offset
                    )
                    for s in new
                ]
            )
        else:
            self._send(consumer, self._commits.ask(dict(command.offsets)))

    def _loop(self, consumer: Any) -> None:
        while not self._closed.is_set():
            self._serve_commits(consumer)
            try:
                command = self._commands.get(timeout=0 if self._stops else 0.1)
                self._apply(consumer, command)
                continue
            except queue.Empty:
                pass
            if not self._stops:
                if self._commits.in_flight:  # nothing assigned: no record comes, only answers
                    self._dropped(consumer.poll(0))
                continue
            if self._out.full():
                self._closed.wait(0.005)
                continue
            messages = self._take(consumer)
            batches = self._batches(messages)
            if batches is None:
                return
            for batch in batches:
                if not self._put(batch):
                    return
            self._check_stops(consumer)

    def _batches(self, messages: list[Any]) -> list[FetchedRecords] | None:
        """``messages`` as one batch per partition, in arrival order, records at or past a
        partition's stopping offset left out; ``None`` after a fatal error (reported). The
        fetcher's hot loop: per message only its error, partition, offset, value and
        timestamp are read (topic-partitions are looked up by ``(topic, partition)``)."""
        batches: dict[tuple[str, int], FetchedRecords] = {}
        partitions = self._partitions
        fast = self._one_partition(messages)
        if fast is not None:
            batches[(fast.topic_partition.topic, fast.topic_partition.partition)] = fast
            messages = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                where = f"{msg.topic()}-{msg.partition()}"
                if err.code() == KafkaError._PARTITION_EOF:
                    tp = partitions.get((msg.topic(), msg.partition()))
                    if tp is not None:
                        self._reached[tp] = max(self._reached.get(tp, 0), msg.offset())
                elif err.fatal() or err.code() in _FATAL_CODES:
                    self._put(FetchFailed(f"partition {where}: {err}"))
                    return None
                else:  # transient (broker down, leader moving): librdkafka retries
                    log.info("KafkaSource: consumer error on %s (retrying): %s", where, err)
                continue
            key = (msg.topic(), msg.partition())
            batch = batches.get(key)
            if batch is None:
                tp = partitions.get(key)
                if tp is None or tp not in self._stops:
                    continue  # unassigned meanwhile
                batch = batches[key] = FetchedRecords(tp, [], [], [])
            kind, stamp = msg.timestamp()
            batch.offsets.append(msg.offset())
            batch.values.append(msg.value())
            batch.timestamps.append(stamp if kind else None)
        result = []
        for batch in batches.values():
            tp, offsets = batch.topic_partition, batch.offsets
            self._reached[tp] = offsets[-1] + 1
            stop = self._stops[tp]
            if stop is not None and offsets[-1] >= stop:  # past the end: cut the tail
                keep = bisect.bisect_left(offsets, stop)
                if not keep:
                    continue
                batch = FetchedRecords(tp, offsets[:keep], batch.values[:keep],
                                       batch.timestamps[:keep])  # fmt: skip
            result.append(batch)
        return result

    def _one_partition(self, messages: list[Any]) -> FetchedRecords | None:
        """The usual fetch, one batch of one assigned partition without errors, read a
        field at a time (a comprehension per field is several times faster than a loop
        over the messages); ``None`` for anything else."""
        if not messages:
            return None
        first = messages[0]
        partition, topic = first.partition(), first.topic()
        n = len(messages)
        # a consumer that was only ever given one partition hands over no other's records
        several = len(self._partitions) > 1
        if several and [m.partition() for m in messages].count(partition) != n:
            return None
        if several and [m.topic() for m in messages].count(topic) != n:
            return None
        tp = self._partitions.get((topic, partition))
        # ``is None``: a KafkaError's == raises when compared with None
        if tp is None or tp not in self._stops or False in [m.error() is None for m in messages]:
            return None
        stamps: list[int | None] = [m.timestamp()[1] for m in messages]
        if _NO_TIMESTAMP in stamps:  # the client's value when the type is "not available"
            stamps = [None if t == _NO_TIMESTAMP else t for t in stamps]
        return FetchedRecords(
            tp, [m.offset() for m in messages], [m.value() for m in messages], stamps
        )

    def _take(self, consumer: ConsumerLike) -> list[Any]:
        """What the consumer holds now, up to ``max_batch``, without waiting for more; only
        when it holds nothing, wait up to ``wait_s`` for the first record (then take what
        came with it). ``consume(n, timeout)`` alone would wait until ``n`` records are there
        or the timeout passed: at a low rate every record would wait the whole timeout."""
        messages = consumer.consume(self._max_batch, timeout=0)
        if messages:
            return messages
        first = consumer.poll(self._wait_s)
        if first is None:
            return []
        return [first, *consumer.consume(self._max_batch - 1, timeout=0)]

    def _check_stops(self, consumer: Any) -> None:
        bounded = [tp for tp, stop in self._stops.items() if stop is not None]
        if not bounded:
            return
        positions = consumer.position([TopicPartition(tp.topic, tp.partition) for tp in bounded])
        for tp, position in zip(bounded, positions):
            reached = max(self._reached.get(tp, 0), position.offset)
            stop = self._stops[tp]
            assert stop is not None
            if reached >= stop:
                del self._stops[tp]
                consumer.incremental_unassign([TopicPartition(tp.topic, tp.partition)])
                if not self._put(PartitionEnd(tp)):
                    return
