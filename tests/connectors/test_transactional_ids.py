"""undertow.connectors.transactional_ids: a job with two EXACTLY_ONCE Kafka sinks that would
fence each other (one transactional-id prefix on one cluster) is refused when its graph is
built, naming both operators, the prefix, the servers and the topics; other pairs run.

Built through the public API only; no broker is needed (the graph is refused before any
writer starts, and the graphs that pass are not run).
"""

from __future__ import annotations

import pytest

from undertow.common.serialization import SimpleStringSchema
from undertow.connectors.transactional_ids import (
    ClaimedBy,
    ClaimsTransactionalIds,
    TransactionalIdClaim,
    conflicts,
)
from undertow.core.errors import GraphBuildError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaRecordSerializationSchema,
    KafkaSink,
)


def kafka_sink(
    prefix: str,
    servers: str = "broker-a:9092",
    topic: str | None = "out",
    guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE,
) -> KafkaSink:
    serializer = KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
        SimpleStringSchema()
    )
    if topic is None:
        serializer.set_topic_selector(lambda record: f"out-{record}")
    else:
        serializer.set_topic(topic)
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(serializer.build())
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(prefix)
        .build()
    )


def job(*sinks: tuple[KafkaSink, str, str]) -> StreamExecutionEnvironment:
    """One source, then each sink as ``(sink, name, uid)``."""
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection(["a", "b"])
    for sink, name, uid in sinks:
        stream.sink_to(sink).name(name).uid(uid)
    return env


def test_two_sinks_with_one_prefix_on_one_cluster_are_refused_naming_both() -> None:
    env = job(
        (kafka_sink("orders"), "orders out", "orders-sink"),
        (kafka_sink("orders", "BROKER-B:9092, broker-a:9092", topic="audit"), "audit", "audit"),
    )
    with pytest.raises(GraphBuildError) as raised:
        env.get_stream_graph()
    assert str(raised.value) == (
        "two EXACTLY_ONCE Kafka sinks use the transactional-id prefix 'orders' on the cluster "
        "at 'broker-a:9092' (and 'BROKER-B:9092, broker-a:9092'): operator 'orders out' (uid "
        "'orders-sink', writing to topic 'out') and operator 'audit' (uid 'audit', writing to "
        "topic 'audit'); their writers would fence each other's transactions at every "
        "commit; give each sink its own prefix (set_transactional_id_prefix)"
    )
    with pytest.raises(GraphBuildError, match="transactional-id prefix 'orders'"):
        env.execute("refused")  # the same check stops the job before it is submitted


def test_one_sink_added_twice_is_refused() -> None:
    """Its two operators would be two sets of writers with the same ids."""
    sink = kafka_sink("twice", topic=None)
    env = job((sink, "first", "first"), (sink, "second", "second"))
    with pytest.raises(GraphBuildError, match=r"operator 'second' \(uid 'second', writing to "
                       r"topics chosen per record\)"):  # fmt: skip
        env.get_execution_plan()


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (kafka_sink("orders", "broker-b:9092"), "another cluster"),
        (kafka_sink("orders-2"), "another prefix"),
        (kafka_sink("orders", guarantee=DeliveryGuarantee.AT_LEAST_ONCE), "no transactions"),
    ],
)
def test_sinks_that_cannot_fence_each_other_are_allowed(other: KafkaSink, why: str) -> None:
    env = job((kafka_sink("orders"), "one", "one"), (other, "two", "two"))
    graph = env.get_stream_graph()
    assert len(graph.nodes) == 3, why


def test_the_sink_and_its_operator_claim_the_ids() -> None:
    sink = kafka_sink("p", "h:1", topic="t")
    assert isinstance(sink, ClaimsTransactionalIds)
    assert sink.transactional_id_claim() == TransactionalIdClaim("Kafka", "p", "h:1", ("t",))
    plain = kafka_sink("p", guarantee=DeliveryGuarantee.NONE)
    assert plain.transactional_id_claim() is None


def test_claims_overlap_on_a_common_server_of_one_system_only() -> None:
    def claim(system: str, servers: str) -> ClaimedBy:
        return ClaimedBy("op", "uid", TransactionalIdClaim(system, "p", servers, ()))

    assert conflicts([claim("Kafka", "a:1,b:2"), claim("Kafka", " B:2 ")])
    assert not conflicts([claim("Kafka", "a:1,b:2"), claim("Kafka", "c:3")])
    assert not conflicts([claim("Kafka", "a:1"), claim("Pulsar", "a:1")])
    three = [claim("Kafka", "a:1")] * 3
    assert len(conflicts(three)) == 3  # every pair
