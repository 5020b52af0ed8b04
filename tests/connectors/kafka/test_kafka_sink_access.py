"""The exactly-once Kafka sink's start when its principal may not create the progress topic.

A broker with an authorizer answers CreateTopics with ``TOPIC_AUTHORIZATION_FAILED`` (or,
from some, ``CLUSTER_AUTHORIZATION_FAILED``) to a principal without CREATE, whether or not the
topic exists. The test broker has no authorizer, so the sink's admin client is replaced by one
whose CreateTopics futures fail as such a broker's do (everything else goes to the test
broker): a progress topic created for the sink is used; a missing one, or one the principal
may not describe either, fails the start at once naming the operator, subtask, topic, servers,
the broker's error and what to grant; a CreateTopics nobody answers fails naming the timeout.
A progress topic it may not read (librdkafka's mock cluster refusing the fetches) fails the
read at once, saying so.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from tests.connectors.kafka.test_kafka_sink_runs import NamedContext
from tests.connectors.kafka.test_kafka_sink_writer import checkpoint, make_topic, sink, values

from undertow.connectors.kafka import producer_io
from undertow.connectors.kafka.sink_protocol import KafkaSinkError, MarkerKey
from undertow.testing.kafka_mock import FETCH_API, MockKafkaCluster

DENIALS = [KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED]
DENIAL_TEXT = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "Broker: Topic authorization failed",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "Broker: Cluster authorization failed",
}


class RefusingAdmin:
    """An AdminClient of a principal the broker refuses: ``create_topics`` futures fail with
    ``create`` (``None``: they never complete); ``list_topics`` of one topic answers
    ``describe`` as that topic's error if set; the rest goes to the real broker."""

    def __init__(self, config: dict[str, Any], create: int | None, describe: int | None) -> None:
        self.real = AdminClient(config)
        self.create, self.describe = create, describe

    def create_topics(self, topics: list[NewTopic], **_: Any) -> dict[str, Future[None]]:
        futures: dict[str, Future[None]] = {}
        for topic in topics:
            futures[topic.topic] = Future()
            if self.create is not None:
                futures[topic.topic].set_exception(KafkaException(KafkaError(self.create)))
        return futures

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        if self.describe is not None and topic is not None:
            refused = SimpleNamespace(error=KafkaError(self.describe), partitions={})
            return SimpleNamespace(topics={topic: refused})
        return self.real.list_topics(topic=topic, timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def refuse(
    monkeypatch: pytest.MonkeyPatch, create: int | None, describe: int | None = None
) -> None:
    monkeypatch.setattr(
        producer_io, "AdminClient", lambda config: RefusingAdmin(config, create, describe)
    )


def progress_topic(bootstrap: str, create: bool) -> str:
    name = f"progress-{uuid.uuid4().hex[:10]}"
    if create:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        new = NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})
        admin.create_topics([new])[name].result(30)
    return name


@pytest.mark.parametrize("code", DENIALS)
def test_a_progress_topic_created_for_the_sink_is_used_without_create_rights(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    topic = make_topic(kafka_bootstrap)
    progress = progress_topic(kafka_bootstrap, create=True)
    refuse(monkeypatch, code)
    the_sink = sink(kafka_bootstrap, topic, properties={"undertow.sink.progress-topic": progress})
    writer = the_sink.create_writer(NamedContext())
    checkpoint(writer, 1, ["a", "b"])
    writer.notify_checkpoint_complete(1)
    assert values(kafka_bootstrap, topic) == ["a", "b"]


def where_and_topic(progress: str, servers: str, code: int) -> str:
    return (
        rf"operator 'counts to kafka' \(KafkaSink\('[^']+', EXACTLY_ONCE\)\) subtask 0: may not "
        rf"create the progress topic '{progress}' on the Kafka cluster at {servers} "
        rf"\({DENIAL_TEXT[code]}\), and "
    )


WHAT_TO_GRANT = (
    r"\. Create the topic for the sink \(one partition, cleanup\.policy=compact\) and grant its "
    r"principal DESCRIBE, READ and WRITE on it, or grant it CREATE on the topic or the "
    r"cluster, or set undertow\.sink\.progress-topic to a topic it may use$"
)


@pytest.mark.parametrize("code", DENIALS)
def test_a_missing_progress_topic_the_principal_may_not_create_fails_saying_what_to_grant(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    topic = make_topic(kafka_bootstrap)
    progress = progress_topic(kafka_bootstrap, create=False)
    refuse(monkeypatch, code)
    properties = {"undertow.sink.progress-topic": progress,
                  "topic.metadata.propagation.max.ms": "300"}  # fmt: skip
    the_sink = sink(kafka_bootstrap, topic, properties=properties)
    expected = where_and_topic(progress, kafka_bootstrap, code) + "the topic does not exist"
    with pytest.raises(KafkaSinkError, match=expected + WHAT_TO_GRANT):
        the_sink.create_writer(NamedContext())


def test_a_progress_topic_the_principal_may_not_describe_fails_saying_what_to_grant(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = make_topic(kafka_bootstrap)
    progress = progress_topic(kafka_bootstrap, create=True)
    denied = KafkaError.TOPIC_AUTHORIZATION_FAILED
    refuse(monkeypatch, denied, describe=denied)
    the_sink = sink(kafka_bootstrap, topic, properties={"undertow.sink.progress-topic": progress})
    expected = where_and_topic(progress, kafka_bootstrap, denied) + (
        r"may not describe it either \(Broker: Topic authorization failed\)"
    )
    with pytest.raises(KafkaSinkError, match=expected + WHAT_TO_GRANT):
        the_sink.create_writer(NamedContext())


def test_a_creation_nobody_answers_fails_naming_servers_and_timeout(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = make_topic(kafka_bootstrap)
    refuse(monkeypatch, None)
    the_sink = sink(kafka_bootstrap, topic, properties={"undertow.sink.startup-timeout.ms": "3000"})
    with pytest.raises(
        KafkaSinkError,
        match=rf"subtask 0: the Kafka cluster at {kafka_bootstrap} did not answer the creation "
        r"of the progress topic 'undertow-sink-progress' within 3 s$",
    ):
        the_sink.create_writer(NamedContext())


def progress_topic_on_mock(cluster: MockKafkaCluster) -> str:
    """The mock cluster's topic ``progress`` holding one record; returns the servers."""
    cluster.create_topic("progress", 1)
    servers = cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": servers})
    producer.produce("progress", key=b"k", value=b"1")
    producer.flush(10)
    return servers


def test_a_progress_topic_the_principal_may_not_read_fails_at_once_saying_what_to_grant() -> None:
    """librdkafka reports a refused fetch once and backs off: the read must not wait out its
    timeout and then blame an open transaction."""
    with MockKafkaCluster() as cluster:
        servers = progress_topic_on_mock(cluster)
        cluster.fail_next_requests(FETCH_API, *[KafkaError.TOPIC_AUTHORIZATION_FAILED] * 50)
        started = time.monotonic()
        with pytest.raises(
            KafkaSinkError,
            match=rf"^subtask 0 of the sink: may not read the progress topic 'progress' on the "
            rf"Kafka cluster at {servers}: Fetch from broker 1 failed: Broker: Topic "
            r"authorization failed; grant the sink's principal READ and DESCRIBE on it, or set "
            r"undertow\.sink\.progress-topic to a topic it may read$",
        ):
            producer_io.read_id_uses(
                {"bootstrap.servers": servers}, "progress", "p", "subtask 0 of the sink", 20
            )
        assert time.monotonic() - started < 10


def test_a_progress_read_that_times_out_names_the_last_fetch_error() -> None:
    with MockKafkaCluster() as cluster:
        servers = progress_topic_on_mock(cluster)
        cluster.fail_next_requests(FETCH_API, *[KafkaError.UNKNOWN] * 200)
        with pytest.raises(
            KafkaSinkError,
            match=rf"^subtask 0: progress topic 'progress' at {servers}: read up to offset "
            r"-1001 of 1 within 2 s; an open transaction may hold it back \(last error: Fetch "
            r"from broker 1 failed at offset 0 \(leader epoch -1\): Unknown broker error\)$",
        ):
            producer_io.read_markers(
                {"bootstrap.servers": servers},
                "progress",
                {MarkerKey("p", "t", 0)},
                "subtask 0",
                2,
            )
