"""The broker lookups of a ``KafkaSource``'s enumerator: which partitions exist, and offsets.

:class:`KafkaAdmin` wraps one confluent-kafka ``AdminClient``. Every call blocks for at most
``timeout_s`` and raises :class:`KafkaSourceError` naming the bootstrap servers, the time-out
and what was asked (a broker that is down, a topic that does not exist), never a bare client
exception. An offset lookup that fails for a partition whose leader is not known yet (a
topic created a moment ago) is asked again until the time-out. Threading: one caller at a
time (the JobMaster's loop thread).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from undertow.connectors.kafka.client_log import logged
from undertow.connectors.kafka.metadata import PROPAGATION_KEY, propagation_s, settled_metadata
from undertow.connectors.kafka.offsets import KafkaTopicPartition
from undertow.core.errors import UndertowError

#: A partition's leader that is not known yet (a topic created a moment ago, a broker
#: restarting): the lookup is asked again, after this pause, until the time-out.
RETRY_BACKOFF_S = 0.1
_T = TypeVar("_T")
_TRANSIENT_CODES = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
        # a group's committed offsets: its coordinator moving or loading them, or a
        # transaction's offset commit not settled yet
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.UNSTABLE_OFFSET_COMMIT,
    }
)


def _transient(err: KafkaException) -> bool:
    """Whether a failed lookup may succeed if asked again: the client says so, or it is a
    leadership error of a partition whose leader is being elected (librdkafka returns
    ``NOT_LEADER_FOR_PARTITION`` of a just-created topic's ``ListOffsets`` as is, not
    retriable: 2026-11-30, the first job on a fresh benchmark broker failed on it)."""
    error = err.args[0] if err.args else None
    if not isinstance(error, KafkaError):
        return False
    return bool(error.retriable()) or error.code() in _TRANSIENT_CODES


class KafkaSourceError(UndertowError, RuntimeError):
    """The Kafka source cannot go on: the broker is unreachable, a topic is missing, a record
    cannot be deserialized. The message names the bootstrap servers or the record's topic,
    partition and offset."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a source reads: a list of topics, a topic pattern (a regular expression that must
    match a whole topic name; internal topics starting with ``__`` never match) or a fixed set
    of partitions. Exactly one is set."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: frozenset[KafkaTopicPartition] = frozenset()

    def describe(self) -> str:
        if self.topics:
            return f"topics {list(self.topics)}"
        if self.pattern is not None:
            return f"topic pattern {self.pattern!r}"
        return f"partitions {sorted(map(str, self.partitions))}"


class KafkaAdmin:
    def __init__(self, config: dict[str, Any], timeout_s: float) -> None:
        self.bootstrap = config.get("bootstrap.servers", "?")
        self.timeout_s = timeout_s
        self.propagation_s = propagation_s(config)
        self._client = AdminClient(logged(config))

    def _fail(self, what: str, err: BaseException) -> KafkaSourceError:
        return KafkaSourceError(
            f"KafkaSource: {what} at bootstrap servers {self.bootstrap} failed within "
            f"{self.timeout_s:g} s: {err}"
        )

    def partitions(self, subscription: Subscription) -> list[KafkaTopicPartition]:
        """The subscribed partitions that exist now, sorted. A listed topic or partition that
        does not exist (after the propagation window, module ``metadata``) is an error naming
        it; a pattern matching nothing gives none."""
        named = {*subscription.topics, *(tp.topic for tp in subscription.partitions)}
        try:
            metadata = settled_metadata(
                lambda: self._client.list_topics(timeout=self.timeout_s), named, self.propagation_s
            )
        except KafkaException as err:
            raise self._fail("listing topics", err) from err
        topics = {name: meta for name, meta in metadata.topics.items() if meta.error is None}
        found: list[KafkaTopicPartition] = []
        if subscription.topics:
            missing = [t for t in subscription.topics if t not in topics]
            if missing:
                raise KafkaSourceError(
                    f"KafkaSource: topic(s) {missing} do not exist at bootstrap servers "
                    f"{self.bootstrap} (looked for {self.propagation_s:g} s, {PROPAGATION_KEY}; "
                    f"existing topics: {sorted(topics)[:20]})"
                )
            for name in subscription.topics:
                found.extend(KafkaTopicPartition(name, p) for p in topics[name].partitions)
        elif subscription.pattern is not None:
            regex = re.compile(subscription.pattern)
            for name, meta in topics.items():
                if not name.startswith("__") and regex.fullmatch(name):
                    found.extend(KafkaTopicPartition(name, p) for p in meta.partitions)
        else:
            missing_tps = [
                tp
                for tp in subscription.partitions
                if tp.topic not in topics or tp.partition not in topics[tp.topic].partitions
            ]
            if missing_tps:
                raise KafkaSourceError(
                    f"KafkaSource: partition(s) {sorted(map(str, missing_tps))} do not exist at "
                    f"bootstrap servers {self.bootstrap}"
                )
            found = list(subscription.partitions)
        return sorted(set(found))

    def _list_offsets(
        self, partitions: Sequence[KafkaTopicPartition], spec: Any, what: str
    ) -> dict[KafkaTopicPartition, int]:
        if not partitions:
            return {}
        request = {TopicPartition(tp.topic, tp.partition): spec for tp in partitions}

        def ask(timeout_s: float) -> dict[KafkaTopicPartition, int]:
            futures = self._client.list_offsets(
                request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout_s
            )
            return {
                KafkaTopicPartition(tp.topic, tp.partition): int(f.result().offset)
                for tp, f in futures.items()
            }

        return self._asking_again(f"looking up the {what} offsets of {len(partitions)} "
                                  "partitions", ask)  # fmt: skip

    def _asking_again(self, what: str, ask: Callable[[float], _T]) -> _T:
        """``ask(seconds left)``, asked again after a transient error (:func:`_transient`)
        until the time-out; any other error, or the last, fails naming ``what``."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return ask(max(0.1, deadline - time.monotonic()))
            except KafkaException as err:
                if not _transient(err) or time.monotonic() + RETRY_BACKOFF_S >= deadline:
                    raise self._fail(what, err) from err
                time.sleep(RETRY_BACKOFF_S)

    def earliest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return self._list_offsets(partitions, OffsetSpec.earliest(), "earliest")

    def latest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return self._list_offsets(partitions, OffsetSpec.latest(), "latest")

    def for_timestamp(
        self, partitions: Sequence[KafkaTopicPartition], timestamp_ms: int
    ) -> dict[KafkaTopicPartition, int]:
        return self._list_offsets(partitions, OffsetSpec.for_timestamp(timestamp_ms), "timestamp")

    def committed_for(
        self, group_id: str, partitions: Sequence[KafkaTopicPartition]
    ) -> dict[KafkaTopicPartition, int | None]:
        """The group's committed offset of each partition, ``None`` where it has none. A
        partition answered with an error is no "none": the lookup is asked again while the
        error is transient (the group's coordinator still loading its offsets, a commit of
        a transaction not yet settled), else fails naming the partition and the error."""
        request = [ConsumerGroupTopicPartitions(
            group_id, [TopicPartition(tp.topic, tp.partition) for tp in partitions])]  # fmt: skip

        def ask(timeout_s: float) -> dict[KafkaTopicPartition, int | None]:
            futures = self._client.list_consumer_group_offsets(request, request_timeout=timeout_s)
            answer = futures[group_id].result()
            for tp in answer.topic_partitions:
                if tp.error is not None:
                    raise KafkaException(KafkaError(
                        tp.error.code(), f"partition {tp.topic}-{tp.partition}: {tp.error.str()}",
                        retriable=tp.error.retriable()))  # fmt: skip
            return {
                KafkaTopicPartition(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None)
                for tp in answer.topic_partitions
            }

        return self._asking_again(f"reading the committed offsets of group {group_id!r}", ask)


class GroupOffsetLookup:
    """:class:`~.offsets.OffsetLookup` of one consumer group on a :class:`KafkaAdmin`."""

    def __init__(self, admin: KafkaAdmin, group_id: str | None) -> None:
        self.admin = admin
        self.group_id = group_id

    def earliest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return self.admin.earliest(partitions)

    def latest(self, partitions: Sequence[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return self.admin.latest(partitions)

    def for_timestamp(
        self, partitions: Sequence[KafkaTopicPartition], timestamp_ms: int
    ) -> dict[KafkaTopicPartition, int]:
        return self.admin.for_timestamp(partitions, timestamp_ms)

    def committed(
        self, partitions: Sequence[KafkaTopicPartition]
    ) -> dict[KafkaTopicPartition, int | None]:
        if self.group_id is None:
            raise KafkaSourceError(
                "KafkaSource: committed offsets need a consumer group (set_group_id)"
            )
        return self.admin.committed_for(self.group_id, partitions)
