"""The Kafka sink's I/O with confluent-kafka: client configuration, start-up checks, producing a
run of records, and the progress topic of the exactly-once writer.

Everything here blocks the calling (task) thread; nothing keeps state across calls except the
producer handed in. Errors are :class:`KafkaSinkError` naming the sink and subtask (``where``),
the bootstrap servers, topic, size or timeout involved.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from undertow.connectors.kafka.client_log import logged
from undertow.connectors.kafka.commit_errors import is_follow_on
from undertow.connectors.kafka.metadata import PROPAGATION_KEY, propagation_s, settled_metadata
from undertow.connectors.kafka.sink_protocol import (
    IdUseKey,
    KafkaSinkError,
    MarkerKey,
    ProducedRecord,
)

#: Sink options that are undertow's, not librdkafka's (removed from the client configuration).
PROGRESS_TOPIC = "undertow.sink.progress-topic"
STARTUP_TIMEOUT = "undertow.sink.startup-timeout.ms"
SINK_OPTIONS = (PROGRESS_TOPIC, STARTUP_TIMEOUT)
DEFAULT_PROGRESS_TOPIC = "undertow-sink-progress"
DEFAULT_STARTUP_TIMEOUT_MS = 30_000
#: The progress topic: compacted, with segments rolled every 10 minutes so that compaction
#: keeps what a restore reads to about the markers of the last 10 minutes.
PROGRESS_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": "600000",
                         "min.cleanable.dirty.ratio": "0.1"}  # fmt: skip
#: librdkafka's default ``message.max.bytes``.
DEFAULT_MESSAGE_MAX_BYTES = 1_000_000


def client_config(bootstrap_servers: str, properties: dict[str, str]) -> dict[str, Any]:
    """librdkafka settings: the user's properties without undertow's own options, with
    librdkafka's log lines going to Python logging (module ``client_log``)."""
    config: dict[str, Any] = {k: v for k, v in properties.items() if k not in SINK_OPTIONS}
    config["bootstrap.servers"] = bootstrap_servers
    return logged(config)


def keep_partition_order(config: dict[str, Any]) -> None:
    """Make a non-transactional producer idempotent unless the user chose otherwise.

    librdkafka's producer is not idempotent by default: a request the broker failed (say
    ``NOT_LEADER_OR_FOLLOWER`` while a partition moves) is retried after later requests
    already in flight landed, so a partition gets its records out of order, and each key's
    order with it. Kafka's Java producer (under Flink's KafkaSink) has been idempotent by
    default since Kafka 3.0. Left alone when the user set ``enable.idempotence``, ``acks``
    other than all, or more than 5 requests in flight (both conflict with idempotence)."""
    if "enable.idempotence" in config:
        return
    acks = str(config.get("acks", config.get("request.required.acks", "all"))).lower()
    in_flight = config.get("max.in.flight.requests.per.connection", config.get("max.in.flight"))
    if acks not in ("all", "-1") or (in_flight is not None and int(in_flight) > 5):
        return
    config["enable.idempotence"] = True


def report_failures_only(config: dict[str, Any]) -> None:
    """Ask librdkafka for delivery reports of failed records only, unless the user chose.

    The non-transactional writers read a report only to fail on a rejected record
    (:class:`DeliveryErrors`); a successful one cost a report event and a Python callback per
    record, served by ``poll``. ``flush`` waits for the acknowledgements either way (it
    waits for the producer's queue to empty, not for reports). Not for a transactional
    producer: its commit reports a failed record itself."""
    config.setdefault("delivery.report.only.error", True)


def check_topics(
    producer: Producer,
    topics: Collection[str],
    where: str,
    bootstrap: str,
    timeout_s: float,
    window_s: float,
) -> None:
    """Fail unless a broker answers within ``timeout_s`` and every topic in ``topics`` exists
    (a topic not known yet is looked for again for ``window_s``: a topic created a moment
    ago is still propagating, module ``metadata``)."""
    try:
        metadata = settled_metadata(
            lambda: producer.list_topics(timeout=timeout_s), topics, window_s
        )
    except KafkaException as err:
        raise KafkaSinkError(
            f"{where}: no Kafka broker at {bootstrap} answered within "
            f"{timeout_s:g} s: {err.args[0]}"
        ) from err
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            raise KafkaSinkError(
                f"{where}: topic {topic!r} does not exist on the Kafka cluster at {bootstrap}"
                f"{'' if found is None else f' ({found.error})'} (looked for {window_s:g} s, "
                f"{PROPAGATION_KEY}); create it first"
            )


def broker_transaction_max_timeout(
    config: dict[str, Any], producer: Producer, timeout_s: float
) -> int | None:
    """The broker's ``transaction.max.timeout.ms`` (``None`` if it cannot be read)."""
    try:
        brokers = sorted(producer.list_topics(timeout=timeout_s).brokers)
        admin = AdminClient({k: v for k, v in config.items() if not k.startswith("transaction")})
        resource = ConfigResource("BROKER", str(brokers[0]))
        entries = admin.describe_configs([resource])[resource].result(timeout=timeout_s)
        return int(entries["transaction.max.timeout.ms"].value)
    except Exception:  # permissions or an old broker: the producer's init reports it then
        return None


#: The errors of a principal the broker's authorizer refuses (CreateTopics answers
#: ``TOPIC_AUTHORIZATION_FAILED`` without CREATE on the topic or the cluster).
AUTHORIZATION_ERRORS = (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                        KafkaError.CLUSTER_AUTHORIZATION_FAILED)  # fmt: skip
UNKNOWN_TOPIC = KafkaError.UNKNOWN_TOPIC_OR_PART


def ensure_progress_topic(config: dict[str, Any], topic: str, where: str, timeout_s: float) -> None:
    """Create the compacted one-partition progress topic unless it exists.

    A principal without CREATE gets ``TOPIC_AUTHORIZATION_FAILED`` from the broker whether
    or not the topic exists (the authorizer answers before the topic is looked up), so then
    the topic's metadata decides: a topic created for the sink is used; one that does not
    exist, or that the principal may not describe either, fails the start naming the topic,
    the servers, the broker's error and what to grant. Never retries: an authorization
    error does not go away by waiting."""
    admin = AdminClient({k: v for k, v in config.items() if not k.startswith("transaction")})
    servers = config["bootstrap.servers"]
    new = NewTopic(topic, num_partitions=1, replication_factor=-1, config=PROGRESS_TOPIC_CONFIG)
    try:
        admin.create_topics([new], operation_timeout=timeout_s)[topic].result(timeout=timeout_s)
        return
    except KafkaException as err:
        error = reason(err)
    except TimeoutError as err:  # the future's own timeout: no answer at all
        raise KafkaSinkError(
            f"{where}: the Kafka cluster at {servers} did not answer the creation of the "
            f"progress topic {topic!r} within {timeout_s:g} s"
        ) from err
    if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
        return
    if error.code() not in AUTHORIZATION_ERRORS:
        raise KafkaSinkError(
            f"{where}: cannot create the progress topic {topic!r} on the Kafka cluster at "
            f"{servers}: {error.str()}"
        )
    problem = _progress_topic_problem(admin, topic, timeout_s, propagation_s(config))
    if problem is not None:
        raise KafkaSinkError(
            f"{where}: may not create the progress topic {topic!r} on the Kafka cluster at "
            f"{servers} ({error.str()}), and {problem}. Create the topic for the sink (one "
            "partition, cleanup.policy=compact) and grant its principal DESCRIBE, READ and "
            "WRITE on it, or grant it CREATE on the topic or the cluster, or set "
            f"{PROGRESS_TOPIC} to a topic it may use"
        )


def _progress_topic_problem(
    admin: AdminClient, topic: str, timeout_s: float, window_s: float
) -> str | None:
    """Why the sink cannot use ``topic`` as it is, or ``None`` if it exists and may be
    described (one created a moment ago is looked for again for ``window_s``)."""
    try:
        metadata = settled_metadata(
            lambda: admin.list_topics(topic=topic, timeout=timeout_s), [topic], window_s
        )
        found = metadata.topics.get(topic)
    except KafkaException as err:
        return f"its metadata could not be read either: {reason(err).str()}"
    if found is None or (found.error is not None and found.error.code() == UNKNOWN_TOPIC):
        return "the topic does not exist"
    if found.error is None:
        return None
    if found.error.code() in AUTHORIZATION_ERRORS:
        return f"may not describe it either ({found.error.str()})"
    return f"its metadata could not be read either: {found.error.str()}"


def read_markers(
    config: dict[str, Any], topic: str, keys: set[MarkerKey], where: str, timeout_s: float
) -> dict[MarkerKey, int]:
    """The committed markers of ``keys`` (read_committed, to the end of the progress topic as
    it is now); a deleted or never written key is absent. Call after fencing the ids that
    could still write these keys."""
    if not keys:
        return {}
    markers: dict[MarkerKey, int] = {}
    for raw, value in _progress_records(config, topic, "read_committed", where, timeout_s):
        key = MarkerKey.decode(raw)
        if key in keys:
            if value is None:
                markers.pop(key, None)
            else:
                markers[key] = int(value)
    return markers


def _progress_records(
    config: dict[str, Any], topic: str, isolation: str, where: str, timeout_s: float
) -> Iterator[tuple[bytes, bytes | None]]:
    """(key, value) of every record of the progress topic, from its start to its high
    watermark as it is now, read with ``isolation``. A read_committed read waits for a
    transaction open below the high watermark (until ``timeout_s``, then fails saying so,
    with the consumer's last error). A fetch the broker refuses (no READ on the topic) fails
    at once: librdkafka reports it once and then backs off, so waiting only hides it."""
    consumer_config = {
        k: v
        for k, v in config.items()
        if not k.startswith(("transaction", "enable.idempotence", "acks"))
    }
    reader = {
        **consumer_config,
        "group.id": "undertow-sink-progress-reader",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    }
    partition = TopicPartition(topic, 0)
    servers = config["bootstrap.servers"]
    consumer = Consumer({**reader, "isolation.level": isolation})
    try:
        low, high = end_offsets(reader, topic, [0], timeout_s)[0]
        if high <= low:
            return
        consumer.assign([TopicPartition(topic, 0, low)])
        deadline = time.monotonic() + timeout_s
        last_error: KafkaError | None = None
        while True:
            message = consumer.poll(0.1)
            error = None if message is None else message.error()
            if message is not None and error is None:
                yield message.key() or b"", message.value()
            elif error is not None and error.code() in AUTHORIZATION_ERRORS:
                raise KafkaSinkError(
                    f"{where}: may not read the progress topic {topic!r} on the Kafka cluster "
                    f"at {servers}: {error.str()}; grant the sink's principal READ and "
                    f"DESCRIBE on it, or set {PROGRESS_TOPIC} to a topic it may read"
                )
            elif error is not None and error.code() != KafkaError._PARTITION_EOF:
                last_error = error
            position = consumer.position([partition])[0].offset
            if position >= high:
                return
            if time.monotonic() > deadline:
                held = (
                    "; an open transaction may hold it back"
                    if isolation == "read_committed"
                    else ""
                )
                last = "" if last_error is None else f" (last error: {last_error.str()})"
                raise KafkaSinkError(
                    f"{where}: progress topic {topic!r} at {servers}: read up to offset "
                    f"{position} of {high} within {timeout_s:g} s{held}{last}"
                )
    except KafkaException as err:
        raise KafkaSinkError(
            f"{where}: cannot read the progress topic {topic!r} at {servers}: {err.args[0]}"
        ) from err
    finally:
        consumer.close()


def end_offsets(
    config: dict[str, Any], topic: str, partitions: list[int], timeout_s: float
) -> dict[int, tuple[int, int]]:
    """(low, high watermark) per partition. The high watermark, not the last stable offset
    that a read_committed consumer is told: a transaction's commit returns before the broker
    wrote its commit markers, and until then the last stable offset stays below its records."""
    consumer = Consumer({**config, "isolation.level": "read_uncommitted"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            for p in partitions
        }
    finally:
        consumer.close()


@dataclass(frozen=True, slots=True)
class FailedDelivery:
    """One record's failed delivery report: its size (key and value), topic and error."""

    size: int
    topic: str
    code: int
    reason: str

    def describe(self) -> str:
        return f"record of {self.size} bytes to topic {self.topic!r} was rejected: {self.reason}"


class DeliveryErrors:
    """Collects the delivery failures of produced records (librdkafka's callback, served by
    ``poll``, ``flush`` and a commit on the task thread) until they are taken.

    It keeps the first rejection of a record by the broker (too large, not authorized, an
    unknown topic), and apart from it the first follow-on failure (``Purged in queue`` after
    an abort: :data:`.commit_errors.FOLLOW_ON`); the rejection is the one reported, whichever
    came first, as it says what went wrong. The broker rejects a whole produce request for
    one record too large, so of ``MSG_SIZE_TOO_LARGE`` rejections the largest record is kept."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.rejection: FailedDelivery | None = None
        self.rejected = 0
        self.follow_on: FailedDelivery | None = None

    def callback(self, err: KafkaError | None, message: Any) -> None:
        if err is None:
            return
        size = len(message.key() or b"") + len(message.value() or b"")
        failed = FailedDelivery(size, message.topic(), err.code(), err.str())
        if is_follow_on(err):
            self.follow_on = self.follow_on or failed
            return
        self.rejected += 1
        first = self.rejection
        too_large = KafkaError.MSG_SIZE_TOO_LARGE
        if first is None or (first.code == failed.code == too_large and failed.size > first.size):
            self.rejection = failed

    def take(self) -> str | None:
        """The failure to report (the rejection, else the follow-on one), forgetting both."""
        follow_on = self.follow_on
        rejection = self.take_rejection()
        if rejection is not None or follow_on is None:
            return rejection
        return follow_on.describe()

    def take_rejection(self) -> str | None:
        """The rejection only, forgetting both (a commit's own error outranks a follow-on)."""
        found, count = self.rejection, self.rejected
        self.rejection, self.rejected, self.follow_on = None, 0, None
        if found is None:
            return None
        if count == 1:
            return found.describe()
        if found.code == KafkaError.MSG_SIZE_TOO_LARGE:
            return f"{found.describe()} (the largest of {count} records rejected)"
        return f"{found.describe()} (and {count - 1} more records)"

    def raise_if_any(self) -> None:
        found = self.take()
        if found is not None:
            raise KafkaSinkError(f"{self.where}: {found}")


def serve_reports(producer: Producer) -> None:
    """Serve the producer's pending delivery reports (``poll(0)``). A producer that hit a fatal
    error (it was fenced) raises that error from every ``poll``: ignored here, as the caller
    reports the error itself or is closing."""
    fatal_error(producer)


def fatal_error(producer: Producer) -> KafkaError | None:
    """Serve the pending delivery reports and return the producer's fatal error, if it hit one
    (confluent-kafka raises it from every ``poll``; ``produce`` then only says ``_FATAL``)."""
    try:
        producer.poll(0)
    except KafkaException as err:
        return reason(err)
    return None


def reason(err: KafkaException) -> KafkaError:
    """The ``KafkaError`` confluent-kafka raised ``err`` with."""
    if err.args and isinstance(err.args[0], KafkaError):
        return err.args[0]
    return KafkaError(KafkaError._FAIL, str(err))


class ProduceError(KafkaSinkError):
    """``produce`` refused a record; ``error`` is the client's reason (``_FATAL`` once the
    producer hit a fatal error: :func:`fatal_error` tells which)."""

    def __init__(self, message: str, error: KafkaError) -> None:
        super().__init__(message)
        self.error = error


def produce(
    producer: Producer,
    record: ProducedRecord,
    errors: DeliveryErrors,
    timeout_s: float,
    servers: str,
) -> None:
    """Hand one record to the producer, waiting for queue space when it is full, at most
    ``timeout_s``. A queue that stays full that long means the brokers take no records (gone
    or unreachable); librdkafka would free space only when ``message.timeout.ms`` (5 minutes)
    expires them, and meanwhile the task's worker, blocked here, misses its heartbeats and is
    reported as hanging. Raises :class:`ProduceError` (``_TIMED_OUT``) saying so instead."""
    deadline: float | None = None
    while True:
        try:
            try:
                producer.produce(
                    record.topic,
                    value=record.value,
                    key=record.key,
                    timestamp=record.timestamp or 0,
                    on_delivery=errors.callback,
                )
                return
            except BufferError:
                now = time.monotonic()
                deadline = now + timeout_s if deadline is None else deadline
                if now > deadline:
                    raise _queue_stayed_full(record, errors.where, timeout_s, servers) from None
                producer.poll(0.05)  # the local queue is full: serve deliveries, then retry
        except KafkaException as err:
            raise ProduceError(
                f"{errors.where}: cannot produce a record of {record.size} "
                f"bytes to topic {record.topic!r}: {err.args[0]}",
                reason(err),
            ) from err


def _queue_stayed_full(
    record: ProducedRecord, where: str, timeout_s: float, servers: str
) -> ProduceError:
    why = (
        f"the producer's queue stayed full for {timeout_s:g} s: the brokers at {servers} "
        "took none of its records (gone or unreachable?)"
    )
    return ProduceError(
        f"{where}: cannot produce a record of {record.size} bytes to topic {record.topic!r}: {why}",
        KafkaError(KafkaError._QUEUE_FULL, why),  # names the brokers itself
    )


def check_size(record: ProducedRecord, limit: int, where: str) -> None:
    """Fail on a record larger than the client's ``message.max.bytes``."""
    if record.size > limit:
        raise KafkaSinkError(
            f"{where}: a record of {record.size} bytes for topic "
            f"{record.topic!r} is larger than message.max.bytes = {limit}; "
            "raise it (set_property) and the topic's max.message.bytes, or "
            "write smaller records"
        )


# -- id-use records ------------------------------------------------------------------------------
def record_id_use(
    config: dict[str, Any],
    topic: str,
    key: IdUseKey,
    parallelism: int | None,
    where: str,
    timeout_s: float,
) -> None:
    """Write the id-use record ``key`` (value: the run's parallelism), or with ``parallelism``
    ``None`` its tombstone, to the progress topic, and wait for the broker's acknowledgement.
    Written by a plain producer, outside any transaction, so a reader never waits for one
    (:func:`read_id_uses`). Not idempotent: a retry can only repeat the same record, and an
    idempotent producer's first write waits about 500 ms for its producer id (2026-12-02,
    the test broker: 506-1,015 ms against 3-65 ms)."""
    plain = {k: v for k, v in config.items() if not k.startswith("transaction")}
    plain.update({"enable.idempotence": False, "acks": "all"})
    failures: list[str] = []

    def delivered(err: KafkaError | None, _message: Any) -> None:
        if err is not None:
            failures.append(err.str())

    value = None if parallelism is None else str(parallelism).encode()
    producer = Producer(plain)
    try:
        producer.produce(topic, key=key.encode(), value=value, on_delivery=delivered)
        left = producer.flush(timeout_s)
    except KafkaException as err:
        failures.append(str(err.args[0]))
        left = 0
    if left or failures:
        what = "the use" if parallelism is not None else "the end of the use"
        raise KafkaSinkError(
            f"{where}: cannot record {what} of transactional id {key.prefix}-{key.subtask} "
            f"on the progress topic {topic!r} within {timeout_s:g} s: "
            f"{failures[0] if failures else 'not acknowledged'}"
        )


def read_id_uses(
    config: dict[str, Any], topic: str, prefix: str, where: str, timeout_s: float
) -> dict[int, int]:
    """Subtask index -> the parallelism of the run that recorded it, for every live id-use
    record of ``prefix`` on the progress topic (read_uncommitted: these records are in no
    transaction, and a transaction left open must not hold the read back)."""
    uses: dict[int, int] = {}
    for raw, value in _progress_records(config, topic, "read_uncommitted", where, timeout_s):
        key = IdUseKey.decode(raw)
        if key is None or key.prefix != prefix:
            continue
        if value is None:
            uses.pop(key.subtask, None)
        else:
            uses[key.subtask] = int(value)
    return uses
