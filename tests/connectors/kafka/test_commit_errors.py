"""undertow.connectors.kafka.commit_errors: a failed commit or flush says what happened.

The writers run here against :class:`ScriptedProducer`, shaped like confluent-kafka's
``Producer`` (delivery reports served by ``poll``, ``flush`` and ``commit_transaction``; a
fatal error raised again by every ``poll``), whose broker answers are scripted as
``KafkaError``s the way librdkafka 2.x reports them (seen against the test broker,
2026-12-02: a fenced commit raises ``_FENCED``, fatal; a record too large fails its delivery
report with ``MSG_SIZE_TOO_LARGE`` and the commit with an abortable error; the abort then
reports the records still queued as ``_PURGE_QUEUE``). No broker is needed.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from tests.connectors.kafka.test_kafka_sink_writer import make_topic
from tests.connectors.kafka.test_kafka_sink_writer import sink as string_sink

from undertow.connectors.kafka import producer_io
from undertow.connectors.kafka import writer as writer_module
from undertow.connectors.kafka.commit_errors import (
    CommitFailure,
    commit_failure,
    is_fenced,
    is_follow_on,
)
from undertow.connectors.kafka.producer_io import DeliveryErrors
from undertow.connectors.kafka.sink_protocol import END_OF_INPUT, KafkaSinkError
from undertow.connectors.kafka.writer import ExactlyOnceKafkaWriter, KafkaWriter
from undertow.connectors.sink import DeliveryGuarantee, SinkWriterContext
from undertow.datastream.connectors.kafka import KafkaSink
from undertow.testing.kafka_oracle import read_committed


class Message:
    """A delivered (or failed) record, as a delivery report hands it over."""

    def __init__(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        self._topic, self._key, self._value = topic, key, value

    def topic(self) -> str:
        return self._topic

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value


class ScriptedProducer:
    """confluent-kafka's ``Producer`` interface with scripted outcomes.

    ``reports[i]`` is the delivery error of the i-th record produced (``None``: delivered);
    ``commit_error`` is raised by ``commit_transaction`` after the reports were served, and
    ``abort_error`` by ``abort_transaction``. An abort reports every record not reported yet
    as ``_PURGE_QUEUE``. After a fatal error every ``poll`` raises it again."""

    def __init__(self, reports: list[KafkaError | None] | None = None) -> None:
        self.reports = list(reports or [])
        self.commit_error: KafkaError | None = None
        self.abort_error: KafkaError | None = None
        self.queued: list[tuple[Message, Any]] = []
        self.served: list[tuple[KafkaError | None, Message, Any]] = []
        self.fatal: KafkaError | None = None
        self.calls: list[str] = []

    # -- what the writers call ------------------------------------------------------------------
    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init_transactions")

    def begin_transaction(self) -> None:
        self.calls.append("begin_transaction")

    def produce(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> None:
        if self.fatal is not None:  # as librdkafka: a producer with a fatal error takes nothing
            raise KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message"))
        message = Message(topic, key, value)
        self.queued.append((message, kwargs.get("on_delivery")))

    def poll(self, timeout: float = -1) -> int:
        served = self._serve()
        if self.fatal is not None:
            raise KafkaException(self.fatal)
        return served

    def flush(self, timeout: float = -1) -> int:
        self._send()
        self._serve()
        return 0

    def commit_transaction(self, timeout: float = -1) -> None:
        self.calls.append("commit_transaction")
        self._send()
        self._serve()
        if self.commit_error is not None:
            if self.commit_error.fatal():
                self.fatal = self.commit_error
            raise KafkaException(self.commit_error)

    def abort_transaction(self, timeout: float = -1) -> None:
        self.calls.append("abort_transaction")
        purged = KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue")
        self.served += [(purged, m, cb) for m, cb in self.queued]
        self.queued = []
        if self.abort_error is not None:
            raise KafkaException(self.abort_error)

    # -- the script ------------------------------------------------------------------------------
    def _send(self) -> None:
        """The brokers answer the queued records that have a scripted report."""
        answered = min(len(self.queued), len(self.reports))
        self.served += [(self.reports.pop(0), m, cb) for m, cb in self.queued[:answered]]
        self.queued = self.queued[answered:]

    def _serve(self) -> int:
        served, self.served = self.served, []
        for err, message, callback in served:
            if callback is not None:
                callback(err, message)
        return len(served)


class Context(SinkWriterContext):
    def __init__(self, subtask: int = 1) -> None:
        self._subtask = subtask

    def subtask_index(self) -> int:
        return self._subtask

    def parallelism(self) -> int:
        return 2

    def attempt_number(self) -> int:
        return 0

    def operator_name(self) -> str:
        return "orders to kafka"


def _sink(guarantee: DeliveryGuarantee) -> KafkaSink:
    """The scripted producer's sink (its broker is never reached)."""
    return string_sink("broker-a:9092", "orders", guarantee, prefix="orders-tx", keys=False)


@pytest.fixture
def producer(monkeypatch: pytest.MonkeyPatch) -> ScriptedProducer:
    """The producer the next writer gets; the start-up checks against a broker pass."""
    scripted = ScriptedProducer()
    monkeypatch.setattr(writer_module, "Producer", lambda config: scripted)
    monkeypatch.setattr(producer_io, "check_topics", lambda *args: None)
    monkeypatch.setattr(producer_io, "ensure_progress_topic", lambda *args: None)
    monkeypatch.setattr(producer_io, "broker_transaction_max_timeout", lambda *args: None)
    monkeypatch.setattr(producer_io, "record_id_use", lambda *args: None)
    monkeypatch.setattr(producer_io, "read_id_uses", lambda *args: {})
    return scripted


def _committing_writer(producer: ScriptedProducer, records: int) -> ExactlyOnceKafkaWriter:
    """An exactly-once writer (subtask 1) with ``records`` records filed under checkpoint 3."""
    writer = _sink(DeliveryGuarantee.EXACTLY_ONCE).create_writer(Context())
    assert isinstance(writer, ExactlyOnceKafkaWriter)
    for i in range(records):
        writer.write(f"r{i}", None)
    writer.prepare_commit()
    writer.snapshot_state(3)
    return writer


FENCED_MESSAGE = (
    "Failed to end transaction: Local: This instance has been fenced by a newer instance"
)


@pytest.mark.parametrize(
    "code", [KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH]
)
def test_a_fenced_commit_names_the_id_and_the_other_writer(
    producer: ScriptedProducer, code: int
) -> None:
    writer = _committing_writer(producer, 2)
    producer.reports = [None, None]
    producer.commit_error = KafkaError(code, FENCED_MESSAGE, fatal=True)
    with pytest.raises(KafkaSinkError) as raised:
        writer.notify_checkpoint_complete(3)
    message = str(raised.value)
    assert message.startswith(
        "operator 'orders to kafka' (KafkaSink('orders-tx', EXACTLY_ONCE)) subtask 1: the "
        "commit of checkpoint 3 (transactional id 'orders-tx-1') failed: this producer was "
        "fenced: another writer with the transactional id 'orders-tx-1' initialized it"
    ), message
    assert "same transactional-id prefix 'orders-tx'" in message
    assert "open longer than transaction.timeout.ms = 900000 and the broker aborted it" in message
    assert "abort_transaction" not in producer.calls  # a fenced producer cannot abort
    assert isinstance(raised.value.__cause__, KafkaException)
    writer.close()  # the fatal error that every poll raises again does not escape close


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large"),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed"),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, "Broker: Unknown topic or partition"),
    ],
)
def test_an_abortable_commit_is_aborted_and_names_the_rejected_record(
    producer: ScriptedProducer, code: int, text: str
) -> None:
    """The first report is a purge (another partition's records), the second the broker's
    rejection: the rejection is what the error says, after the abort."""
    writer = _committing_writer(producer, 3)
    producer.reports = [KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue"),
                        KafkaError(code, text)]  # fmt: skip
    producer.commit_error = KafkaError(
        code, f"ProduceRequest failed: {text}: current transaction must be aborted",
        txn_requires_abort=True,
    )  # fmt: skip
    with pytest.raises(KafkaSinkError) as raised:
        writer.notify_checkpoint_complete(3)
    message = str(raised.value)
    assert producer.calls[-2:] == ["commit_transaction", "abort_transaction"]
    assert (
        "subtask 1: the commit of checkpoint 3 (transactional id 'orders-tx-1') failed and "
        f"was aborted: record of 2 bytes to topic 'orders' was rejected: {text}"
    ) in message, message
    assert "Purged in queue" not in message
    assert 3 in writer.pending, "a failed commit must keep its batch for the restore"


def test_a_commit_error_is_not_hidden_behind_purged_records(producer: ScriptedProducer) -> None:
    """Only follow-on failures were reported (the abort purged every record): the error is
    the commit's own."""
    writer = _committing_writer(producer, 2)
    producer.commit_error = KafkaError(
        KafkaError._TIMED_OUT, "Failed to flush all outstanding messages within the timeout",
        txn_requires_abort=True,
    )  # fmt: skip
    with pytest.raises(KafkaSinkError) as raised:
        writer.notify_checkpoint_complete(3)
    message = str(raised.value)
    assert "abort_transaction" in producer.calls
    assert message.endswith(
        "failed and was aborted: Failed to flush all outstanding messages within the timeout"
    ), message
    assert "Purged" not in message


def test_a_failed_abort_is_named_with_the_commit_error(producer: ScriptedProducer) -> None:
    writer = _committing_writer(producer, 1)
    producer.commit_error = KafkaError(KafkaError._STATE, "commit failed", txn_requires_abort=True)
    producer.abort_error = KafkaError(KafkaError._TIMED_OUT, "abort timed out")
    with pytest.raises(KafkaSinkError, match=r"commit failed; aborting the transaction failed "
                       r"too: .*abort timed out"):  # fmt: skip
        writer.notify_checkpoint_complete(3)


def test_a_commit_the_brokers_did_not_answer_names_them(producer: ScriptedProducer) -> None:
    """A commit that timed out (a broker that went away) names the brokers that did not
    answer, where the message said only librdkafka's 'Failed to flush'."""
    writer = _committing_writer(producer, 1)
    producer.commit_error = KafkaError(
        KafkaError._TIMED_OUT, "Failed to flush all outstanding messages within the API timeout"
    )
    with pytest.raises(KafkaSinkError) as raised:
        writer.notify_checkpoint_complete(3)
    message = str(raised.value)
    assert message.endswith(
        "within the API timeout; the brokers at broker-a:9092 did not answer in time (gone "
        "away, or overloaded?)"
    ), message


def test_a_commit_at_the_end_of_input_says_so(producer: ScriptedProducer) -> None:
    writer = _sink(DeliveryGuarantee.EXACTLY_ONCE).create_writer(Context(subtask=0))
    assert isinstance(writer, ExactlyOnceKafkaWriter)
    writer.write("last", None)
    writer.prepare_commit()
    producer.commit_error = KafkaError(KafkaError._FENCED, FENCED_MESSAGE, fatal=True)
    expected = (
        r"subtask 0: the commit at the end of input \(transactional id 'orders-tx-0'\) "
        "failed: this producer was fenced"
    )
    with pytest.raises(KafkaSinkError, match=expected):
        writer.commit_at_end_of_input()


def test_a_producer_fenced_while_producing_says_it_was_fenced(producer: ScriptedProducer) -> None:
    """The fencing is learnt while the records go out (the broker refuses to add a partition
    to the transaction): ``produce`` then only says ``_FATAL``; the error names the fencing."""
    writer = _committing_writer(producer, 2)
    producer.fatal = KafkaError(KafkaError._FENCED, FENCED_MESSAGE, fatal=True)
    with pytest.raises(KafkaSinkError) as raised:
        writer.notify_checkpoint_complete(3)
    assert "checkpoint 3 (transactional id 'orders-tx-1') failed: this producer was fenced" in str(
        raised.value
    ), str(raised.value)


@pytest.mark.parametrize("guarantee", [DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.NONE])
def test_a_broken_idempotent_producer_is_named_not_raised_raw(
    producer: ScriptedProducer, guarantee: DeliveryGuarantee
) -> None:
    writer = _sink(guarantee).create_writer(Context())
    assert isinstance(writer, KafkaWriter)
    writer.write("a", None)
    producer.fatal = KafkaError(
        KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "skipped sequence numbers", fatal=True
    )
    with pytest.raises(KafkaSinkError) as raised:
        writer.write_batch(["b"], None)
    assert str(raised.value) == (
        f"operator 'orders to kafka' (KafkaSink('orders', {guarantee.name})) subtask 1: the "
        "producer failed for good (a restart starts a new one): skipped sequence numbers"
    )
    producer.fatal = KafkaError(KafkaError._FATAL, "gone", fatal=True)
    producer.produce, producer.queued = (lambda *a, **k: None), []  # type: ignore[method-assign]
    with pytest.raises(KafkaSinkError, match=r"subtask 1: the producer failed for good .*: gone"):
        writer.write_batch(["c"], None)
    with pytest.raises(KafkaSinkError, match=r"subtask 1: the producer failed for good .*: gone"):
        writer.flush(True)


def test_a_flush_names_the_rejected_record_not_the_purged_ones(
    producer: ScriptedProducer,
) -> None:
    writer = _sink(DeliveryGuarantee.AT_LEAST_ONCE).create_writer(Context())
    assert isinstance(writer, KafkaWriter)
    purged = KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue")
    producer.reports = [None, purged, KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large")]
    for record in ["a", "bb", "ccc"]:
        writer.write(record, None)
    with pytest.raises(KafkaSinkError) as raised:
        writer.flush(False)
    assert str(raised.value).endswith(
        "subtask 1: record of 3 bytes to topic 'orders' was rejected: too large"
    ), str(raised.value)


def test_delivery_errors_report_a_follow_on_failure_only_when_nothing_else_is_known() -> None:
    errors = DeliveryErrors("w")
    purged = KafkaError(KafkaError._PURGE_INFLIGHT, "Local: Purged in flight")
    errors.callback(purged, Message("t", None, b"xy"))
    errors.callback(None, Message("t", None, b"ok"))
    assert errors.take() == "record of 2 bytes to topic 't' was rejected: Local: Purged in flight"
    assert errors.take() is None
    errors.callback(purged, Message("t", None, b"xy"))
    assert errors.take_rejection() is None  # a commit's error outranks a follow-on failure
    assert errors.take() is None  # and taking forgets it


def test_of_records_too_large_the_largest_is_named() -> None:
    """The broker fails a whole produce request with ``MSG_SIZE_TOO_LARGE``; other codes keep
    their first record."""
    errors = DeliveryErrors("w")
    too_large = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large")
    for value in [b"a", b"b" * 50, b"c" * 5]:
        errors.callback(too_large, Message("t", None, value))
    assert errors.take() == (
        "record of 50 bytes to topic 't' was rejected: too large (the largest of 3 records "
        "rejected)"
    )
    denied = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied")
    for value in [b"a", b"b" * 50]:
        errors.callback(denied, Message("t", None, value))
    assert (
        errors.take() == "record of 1 bytes to topic 't' was rejected: denied (and 1 more records)"
    )


def test_the_kinds_of_failure() -> None:
    assert is_fenced(KafkaError(KafkaError.PRODUCER_FENCED))
    assert not is_fenced(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    assert is_follow_on(KafkaError(KafkaError._PURGE_QUEUE))
    assert not is_follow_on(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    fenced = KafkaError(KafkaError._FENCED, "fenced", fatal=True, txn_requires_abort=True)
    decision = commit_failure("w", 7, "p-0", "p", fenced, None, 60_000)
    assert not decision.abort, "a fenced producer's transaction cannot be aborted"
    timed_out = KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True)
    assert commit_failure("w", 7, "p-0", "p", timed_out, None, 60_000) == CommitFailure(
        False, "w: the commit of checkpoint 7 (transactional id 'p-0') failed: timed out"
    )
    assert commit_failure("w", END_OF_INPUT, "p-0", "p", timed_out, "record x", 1).message == (
        "w: the commit at the end of input (transactional id 'p-0') failed: record x (timed out)"
    )


def test_a_writer_fenced_by_another_job_with_its_prefix_says_so(
    kafka_bootstrap: str, new_topic: Any
) -> None:
    """Against the test broker: a second job's writer with the same prefix starts (its
    ``init_transactions`` fences the first); the first's next commit fails naming why."""
    topic = new_topic(1)
    sink = string_sink(kafka_bootstrap, topic, prefix=f"fenced-{topic}", keys=False)
    first = sink.create_writer(Context(subtask=0))
    assert isinstance(first, ExactlyOnceKafkaWriter)
    first.write("a", None)
    first.prepare_commit()
    first.snapshot_state(1)
    first.notify_checkpoint_complete(1)  # one commit, so the producer has a live epoch
    first.write("b", None)
    first.prepare_commit()
    first.snapshot_state(2)
    second = sink.create_writer(Context(subtask=0))  # the other job: same prefix, same id
    with pytest.raises(KafkaSinkError) as raised:
        first.notify_checkpoint_complete(2)
    message = str(raised.value)
    assert (
        f"subtask 0: the commit of checkpoint 2 (transactional id 'fenced-{topic}-0') "
        "failed: this producer was fenced"
    ) in message, message
    first.close()
    second.close()


def test_a_record_the_broker_rejects_aborts_the_commit_and_is_named(
    kafka_bootstrap: str,
) -> None:
    """Against the test broker: a topic that takes at most 1000 bytes per record; the
    checkpoint's second record is larger. The commit fails naming that record, the
    transaction is aborted (read_committed consumers see none of it), and the batch stays."""
    topic = make_topic(kafka_bootstrap, 1, {"max.message.bytes": "1000"})
    sink = string_sink(kafka_bootstrap, topic, prefix=f"rejected-{topic}", keys=False)
    writer = sink.create_writer(Context(subtask=0))
    assert isinstance(writer, ExactlyOnceKafkaWriter)
    for record in ["small", "x" * 5000, "after"]:
        writer.write(record, None)
    writer.prepare_commit()
    writer.snapshot_state(1)
    with pytest.raises(KafkaSinkError) as raised:
        writer.notify_checkpoint_complete(1)
    message = str(raised.value)
    assert (
        f"subtask 0: the commit of checkpoint 1 (transactional id 'rejected-{topic}-0') failed "
        f"and was aborted: record of 5000 bytes to topic '{topic}' was rejected: Broker: "
        "Message size too large (the largest of 3 records rejected)"
    ) in message, message
    assert "Purged" not in message
    assert read_committed(kafka_bootstrap, topic) == []
    assert 1 in writer.pending
    writer.close()
