"""The Kafka sink's writers against the real test broker, driven step by step as the sink
operator drives them (prepare_commit, snapshot_state, notify_checkpoint_complete, restore).

Each crash point of the exactly-once protocol is replayed here by stopping the writer where
the crash would, and restoring a new writer from the state the last completed checkpoint held;
a read_committed consumer must then see every record exactly once. The faults (no broker, a
missing topic, a record too large, a transaction timeout the broker refuses) must fail with
errors that name what is wrong.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from undertow.common.serialization import SimpleStringSchema
from undertow.connectors.kafka import producer_io
from undertow.connectors.kafka.producer_io import DEFAULT_PROGRESS_TOPIC, DeliveryErrors
from undertow.connectors.kafka.sink_protocol import KafkaSinkError, KafkaWriterState, MarkerKey
from undertow.connectors.kafka.writer import ExactlyOnceKafkaWriter, KafkaWriter
from undertow.connectors.sink import DeliveryGuarantee, SinkWriterContext
from undertow.core.config import Configuration
from undertow.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from undertow.testing.kafka_mock import NOT_LEADER_OR_FOLLOWER, PRODUCE_API, MockKafkaCluster
from undertow.testing.kafka_oracle import read_committed
from undertow.testing.kafka_topics import read_partition


class Context(SinkWriterContext):
    def __init__(
        self,
        subtask: int = 0,
        parallelism: int = 1,
        attempt: int = 0,
        restored: int | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self._subtask, self._parallelism, self._attempt = subtask, parallelism, attempt
        self._restored = restored
        self._config = Configuration(config or {"execution.checkpointing.timeout": "10 s"})

    def subtask_index(self) -> int:
        return self._subtask

    def parallelism(self) -> int:
        return self._parallelism

    def attempt_number(self) -> int:
        return self._attempt

    def restored_checkpoint_id(self) -> int | None:
        return self._restored

    def configuration(self) -> Configuration:
        return self._config


def make_topic(bootstrap: str, partitions: int = 2, config: dict[str, str] | None = None) -> str:
    topic = f"sink-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([new])[topic].result(timeout=30)
    return topic


def sink(
    bootstrap: str,
    topic: str,
    guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE,
    prefix: str | None = None,
    properties: dict[str, str] | None = None,
    keys: bool = True,
) -> KafkaSink:
    """A sink of strings to ``topic`` (each also its record's key, unless ``keys`` is
    false); the transactional id prefix a fresh one unless given."""
    schema = KafkaRecordSerializationSchema.builder().set_topic(topic)
    if keys:
        schema = schema.set_key_serialization_schema(SimpleStringSchema())
    serializer = schema.set_value_serialization_schema(SimpleStringSchema()).build()
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(prefix or f"tx-{uuid.uuid4().hex[:8]}")
        .set_property("undertow.sink.startup-timeout.ms", "20000")
    )
    for key, value in (properties or {}).items():
        builder.set_property(key, value)
    return builder.build()


def values(bootstrap: str, topic: str) -> list[str]:
    return sorted((v or b"").decode() for _, v in read_committed(bootstrap, topic))


def markers(bootstrap: str) -> dict[MarkerKey, int]:
    """The live markers of the progress topic (tombstones remove keys)."""
    live: dict[MarkerKey, int] = {}
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "t", "enable.partition.eof": True}
    )
    tp = TopicPartition(DEFAULT_PROGRESS_TOPIC, 0, 0)
    high = consumer.get_watermark_offsets(tp, timeout=10)[1]
    consumer.assign([tp])
    while consumer.position([tp])[0].offset < high:
        message = consumer.poll(1)
        if message is None or message.error() is not None:
            continue
        key = MarkerKey.decode(message.key() or b"")
        if key is not None and message.value() is None:
            live.pop(key, None)
        elif key is not None:
            live[key] = int(message.value() or b"0")
    consumer.close()
    return live


def checkpoint(writer: Any, cid: int, records: list[str]) -> list[KafkaWriterState]:
    """Write ``records``, then the checkpoint's synchronous part; returns the writer state."""
    for r in records:
        writer.write(r, None)
    writer.flush(False)
    writer.prepare_commit()
    return writer.snapshot_state(cid)


def test_exactly_once_commits_only_completed_checkpoints(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    the_sink = sink(kafka_bootstrap, topic)
    writer = the_sink.create_writer(Context())
    assert isinstance(writer, ExactlyOnceKafkaWriter)
    checkpoint(writer, 1, ["a", "b"])
    checkpoint(writer, 2, ["c"])
    assert values(kafka_bootstrap, topic) == []  # nothing before a checkpoint completed
    writer.notify_checkpoint_complete(1)
    assert values(kafka_bootstrap, topic) == ["a", "b"]
    checkpoint(writer, 3, ["d"])
    writer.notify_checkpoint_complete(3)  # subsumes 2
    assert values(kafka_bootstrap, topic) == ["a", "b", "c", "d"]
    writer.close()


@pytest.mark.parametrize(
    "crash", ["after-pre-commit", "after-checkpoint-complete", "during-commit", "after-commit"]
)
def test_a_restore_after_each_crash_point_writes_each_record_once(
    kafka_bootstrap: str, crash: str
) -> None:
    """Checkpoint 1 completed and committed; checkpoint 2 holds b, c. The writer crashes at
    ``crash`` around checkpoint 2; the new attempt restores the latest completed checkpoint
    (1 if 2 never completed) and the input after it is replayed."""
    topic = make_topic(kafka_bootstrap)
    the_sink = sink(kafka_bootstrap, topic)
    writer = the_sink.create_writer(Context())
    state_1 = checkpoint(writer, 1, ["a"])
    writer.notify_checkpoint_complete(1)
    state_2 = checkpoint(writer, 2, ["b", "c"])
    restored, cid, replay = state_2, 2, ["d"]
    if crash == "after-pre-commit":  # checkpoint 2 never completes: replay b, c
        restored, cid, replay = state_1, 1, ["b", "c", "d"]
    elif crash == "during-commit":  # the transaction is left open, as by a crash
        writer.producer.begin_transaction()
        for r in ["b", "c"]:
            writer.producer.produce(topic, value=r.encode())
        writer.producer.flush(10)
    elif crash == "after-commit":
        writer.notify_checkpoint_complete(2)
    zombie = writer.producer  # no close: a crashed writer does nothing more
    restarted = the_sink.restore_writer(Context(attempt=1, restored=cid), restored)
    checkpoint(restarted, 3, replay)
    restarted.notify_checkpoint_complete(3)
    if crash == "during-commit":  # the old attempt's producer is fenced: it cannot commit
        with pytest.raises(KafkaException):
            zombie.commit_transaction(10)
    assert values(kafka_bootstrap, topic) == ["a", "b", "c", "d"]


def test_rescaled_down_state_is_restored_by_its_new_owner(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    the_sink = sink(kafka_bootstrap, topic)
    old = [the_sink.create_writer(Context(i, 3)) for i in range(3)]
    states = [s for i, w in enumerate(old) for s in checkpoint(w, 1, [f"r{i}"])]
    old[2].notify_checkpoint_complete(1)  # only subtask 2 committed before the failure
    new = [
        the_sink.restore_writer(Context(i, 2, 1, 1), [s for s in states if s.subtask % 2 == i])
        for i in range(2)
    ]
    assert values(kafka_bootstrap, topic) == ["r0", "r1", "r2"]
    dead = {s.key(the_sink.transactional_id_prefix) for s in states}
    assert dead <= set(markers(kafka_bootstrap))
    for w in new:
        checkpoint(w, 2, [])
        w.notify_checkpoint_complete(2)  # deletes the dead markers; writes nothing
    assert values(kafka_bootstrap, topic) == ["r0", "r1", "r2"]
    assert not dead & set(markers(kafka_bootstrap)), "dead markers were not deleted"


def test_rescaled_up_state_stays_with_its_owner(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    the_sink = sink(kafka_bootstrap, topic)
    old = [the_sink.create_writer(Context(i, 2)) for i in range(2)]
    states = [s for i, w in enumerate(old) for s in checkpoint(w, 1, [f"r{i}"])]
    new = [
        the_sink.restore_writer(Context(i, 3, 1, 1), [s for s in states if s.subtask % 3 == i])
        for i in range(3)
    ]
    assert values(kafka_bootstrap, topic) == ["r0", "r1"]
    for i, w in enumerate(new):
        checkpoint(w, 2, [f"n{i}"])
        w.notify_checkpoint_complete(2)
    assert values(kafka_bootstrap, topic) == ["n0", "n1", "n2", "r0", "r1"]


def test_a_new_job_from_an_older_checkpoint_does_not_take_its_ids_for_committed(
    kafka_bootstrap: str,
) -> None:
    """Checkpoint ids start again after the restored one in a new job: the earlier job's
    markers (up to 3) must not hide the new job's checkpoints 2 and 3."""
    topic = make_topic(kafka_bootstrap)
    the_sink = sink(kafka_bootstrap, topic)
    first = the_sink.create_writer(Context())
    state_1 = checkpoint(first, 1, ["a"])
    first.notify_checkpoint_complete(1)
    for cid, record in [(2, "b"), (3, "c")]:
        checkpoint(first, cid, [record])
        first.notify_checkpoint_complete(cid)
    second = the_sink.restore_writer(Context(restored=1), state_1)
    state_2 = checkpoint(second, 2, ["b2"])
    # the second job crashes after its checkpoint 2 completed, before the commit
    third = the_sink.restore_writer(Context(attempt=1, restored=2), state_2)
    checkpoint(third, 3, ["c2"])
    third.notify_checkpoint_complete(3)
    assert values(kafka_bootstrap, topic) == ["a", "b", "b2", "c", "c2"]


def test_at_least_once_flushes_before_the_snapshot(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    lingering = {"linger.ms": "20000"}  # unflushed records would wait 20 s in the producer
    writer = sink(kafka_bootstrap, topic, DeliveryGuarantee.AT_LEAST_ONCE, properties=lingering)
    writer = writer.create_writer(Context())
    assert type(writer) is KafkaWriter  # no transactions below EXACTLY_ONCE
    for r in ["x", "y"]:
        writer.write(r, None)
    writer.flush(False)  # the barrier's flush: acknowledged once it returns
    assert values(kafka_bootstrap, topic) == ["x", "y"]


@pytest.mark.parametrize("guarantee", [DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.NONE])
def test_a_retried_produce_request_keeps_the_order(guarantee: DeliveryGuarantee) -> None:
    """The broker fails the first produce request while later ones are in flight (the
    mock cluster answers 30 ms late): the writer's records still land in order."""
    with MockKafkaCluster() as cluster:
        cluster.create_topic("out", 1)
        cluster.set_round_trip(1, 30)
        cluster.fail_next_requests(PRODUCE_API, NOT_LEADER_OR_FOLLOWER)
        servers = cluster.bootstrap_servers
        the_sink = sink(servers, "out", guarantee, properties={"batch.num.messages": "50"})
        writer = the_sink.create_writer(Context())
        for i in range(300):
            writer.write(str(i), None)
        writer.flush(True)
        del writer  # its producer goes before the cluster
        got = [int(m.value()) for m in read_partition(servers, "out", 0, 300)]
    assert got == list(range(300))


@pytest.mark.parametrize("guarantee", [DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.NONE])
def test_a_queue_the_brokers_do_not_drain_fails_the_write_naming_them(
    guarantee: DeliveryGuarantee,
) -> None:
    """The broker stops answering (the mock cluster answers 20 s late) while the writer's
    queue (5 records) is full: the write fails after the startup timeout (2 s) naming the
    servers, instead of blocking its worker until librdkafka expires the records (5 min)."""
    with MockKafkaCluster() as cluster:
        cluster.create_topic("out", 1)
        servers = cluster.bootstrap_servers
        properties = {"queue.buffering.max.messages": "5",
                      "undertow.sink.startup-timeout.ms": "2000"}  # fmt: skip
        writer = sink(servers, "out", guarantee, properties=properties).create_writer(Context())
        cluster.set_round_trip(1, 20_000)
        started = time.monotonic()
        with pytest.raises(
            KafkaSinkError,
            match=r"^KafkaSink\('out', [A-Z_]+\) subtask 0: cannot produce a record of 4 bytes "
            r"to topic 'out': the producer's queue stayed full for 2 s: the brokers at "
            rf"{servers} took none of its records \(gone or unreachable\?\)$",
        ):
            for i in range(10, 100):
                writer.write(str(i), None)
        assert time.monotonic() - started < 10
        cluster.set_round_trip(1, 0)
        del writer  # its producer goes before the cluster


def test_a_commit_whose_queue_the_brokers_do_not_drain_fails_naming_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As above, in an EXACTLY_ONCE commit: the commit fails, naming checkpoint, transactional
    id, servers and the full queue (the progress topic is made on the mock cluster, which
    does not answer CreateTopics)."""
    monkeypatch.setattr(producer_io, "ensure_progress_topic", lambda *args: None)
    with MockKafkaCluster() as cluster:
        cluster.create_topic("out", 1)
        cluster.create_topic(DEFAULT_PROGRESS_TOPIC, 1)
        servers = cluster.bootstrap_servers
        properties = {"queue.buffering.max.messages": "5",
                      "undertow.sink.startup-timeout.ms": "2000"}  # fmt: skip
        the_sink = sink(servers, "out", prefix="full", properties=properties)
        writer = the_sink.create_writer(Context())
        checkpoint(writer, 1, [str(i) for i in range(10, 100)])
        cluster.set_round_trip(1, 20_000)
        started = time.monotonic()
        with pytest.raises(
            KafkaSinkError,
            match=r"^KafkaSink\('full', EXACTLY_ONCE\) subtask 0: the commit of checkpoint 1 "
            r"\(transactional id 'full-0'\) failed: the producer's queue stayed full for 2 s: "
            rf"the brokers at {servers} took none of its records \(gone or unreachable\?\)$",
        ):
            writer.notify_checkpoint_complete(1)
        assert time.monotonic() - started < 10
        cluster.set_round_trip(1, 0)
        del writer  # its producer goes before the cluster


class _CountingProducer:
    """The writer's producer, counting ``poll`` calls (everything else passes through)."""

    def __init__(self, producer: Any) -> None:
        self.producer, self.polls = producer, 0

    def poll(self, timeout: float = -1) -> int:
        self.polls += 1
        return int(self.producer.poll(timeout))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.producer, name)


class _CountingErrors(DeliveryErrors):
    """Delivery reports, counted."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.reports = 0

    def callback(self, err: Any, message: Any) -> None:
        self.reports += 1
        super().callback(err, message)


def test_at_least_once_serves_the_producer_once_per_batch_and_only_failures() -> None:
    """A paced record costs each hop its per-call price: the writer polls the producer once
    per batch the sink operator hands it (not per record), and librdkafka reports only
    failed deliveries (a report per acknowledged record was a Python callback each); a
    rejected record still fails the flush (the test above)."""
    with MockKafkaCluster() as cluster:
        cluster.create_topic("out", 1)
        servers = cluster.bootstrap_servers
        writer = sink(servers, "out", DeliveryGuarantee.AT_LEAST_ONCE).create_writer(Context())
        assert isinstance(writer, KafkaWriter)
        counting = _CountingProducer(writer.producer)
        writer.producer = counting  # type: ignore[assignment]
        writer.errors = errors = _CountingErrors(writer.where)
        writer.write_batch([str(i) for i in range(50)], None)
        assert counting.polls == 1
        writer.write_batch(["50", "51"], [1_000, 2_000])
        assert counting.polls == 2
        writer.flush(False)
        assert errors.reports == 0
        del writer, counting  # its producer goes before the cluster
        got = [int(m.value()) for m in read_partition(servers, "out", 0, 52)]
    assert got == list(range(52))


def test_no_broker_names_the_servers_and_the_timeout() -> None:
    bad = sink(
        "127.0.0.1:1",
        "t",
        DeliveryGuarantee.AT_LEAST_ONCE,
        properties={"undertow.sink.startup-timeout.ms": "1000"},
    )
    with pytest.raises(
        KafkaSinkError,
        match=r"no Kafka broker at 127\.0\.0\.1:1 answered "
        r"within 1 s",
    ):
        bad.create_writer(Context())


def test_a_missing_topic_is_named_once_the_propagation_window_has_passed(
    kafka_bootstrap: str,
) -> None:
    """A topic created a moment ago may not be known to the broker yet (module
    ``metadata``): the sink looks for it during the window before it calls it missing."""
    window = {"topic.metadata.propagation.max.ms": "400"}
    missing = sink(kafka_bootstrap, "no-such-topic", DeliveryGuarantee.NONE, properties=window)
    started = time.monotonic()
    with pytest.raises(
        KafkaSinkError,
        match=r"topic 'no-such-topic' does not exist on the Kafka cluster at \S+ \(looked for "
        r"0\.4 s, topic\.metadata\.propagation\.max\.ms\); create it first$",
    ):
        missing.create_writer(Context())
    assert time.monotonic() - started >= 0.4


def test_a_record_too_large_names_sink_subtask_topic_and_size(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    writer = sink(
        kafka_bootstrap, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix="big"
    ).create_writer(Context(subtask=0))
    with pytest.raises(
        KafkaSinkError,
        match=rf"KafkaSink\('big', EXACTLY_ONCE\) subtask 0: a "
        rf"record of 4000000 bytes for topic '{topic}'",
    ):
        writer.write("x" * 2_000_000, None)  # key and value: 4 MB


def test_a_record_the_broker_rejects_fails_the_flush_naming_topic_and_size(
    kafka_bootstrap: str,
) -> None:
    topic = make_topic(kafka_bootstrap, config={"max.message.bytes": "1000"})
    writer = sink(kafka_bootstrap, topic, DeliveryGuarantee.AT_LEAST_ONCE).create_writer(Context())
    writer.write("y" * 5000, None)  # key and value: 10000 bytes
    with pytest.raises(
        KafkaSinkError,
        match=rf"subtask 0: record of 10000 bytes to topic '{topic}' was "
        "rejected",
    ):
        writer.flush(False)


def test_transaction_timeout_above_the_brokers_maximum_is_refused(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    too_long = sink(kafka_bootstrap, topic, properties={"transaction.timeout.ms": "3600000"})
    with pytest.raises(
        KafkaSinkError,
        match=r"transaction\.timeout\.ms = 3600000 exceeds the "
        r"broker's transaction\.max\.timeout\.ms = 900000",
    ):
        too_long.create_writer(Context())
    too_short = sink(kafka_bootstrap, topic, properties={"transaction.timeout.ms": "5000"})
    with pytest.raises(KafkaSinkError, match=r"below execution\.checkpointing\.timeout = 10000"):
        too_short.create_writer(Context())
