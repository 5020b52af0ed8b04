"""undertow.testing.kafka_topics against librdkafka's mock cluster (undertow.testing.kafka_mock).

The kill test of tests/e2e/test_kafka_source.py failed twice with records out of order and
nothing lost or duplicated (issue 28): the topic it had filled was itself out of order. A
broker that has just created a topic may answer the first produce request with
NOT_LEADER_OR_FOLLOWER; librdkafka retries those records, and without idempotence a later
request already in flight lands first. Here the mock broker fails the first produce request
on purpose, answering slowly so that later requests are in flight.
"""

from __future__ import annotations

from undertow.testing.kafka_mock import (
    NOT_LEADER_OR_FOLLOWER,
    PRODUCE_API,
    MockKafkaCluster,
)
from undertow.testing.kafka_topics import produce, read_partition

RECORDS = 600


def test_a_retried_produce_request_keeps_the_partition_in_order() -> None:
    with MockKafkaCluster() as cluster:
        cluster.create_topic("ordered", 1)
        cluster.set_round_trip(1, 30)  # several requests in flight before the first answer
        cluster.fail_next_requests(PRODUCE_API, NOT_LEADER_OR_FOLLOWER)
        records = [(0, None, str(i).encode()) for i in range(RECORDS)]
        produce(cluster.bootstrap_servers, "ordered", records, {"batch.num.messages": 100})
        values = [int(m.value()) for m in read_partition(cluster.bootstrap_servers, "ordered",
                                                         0, RECORDS)]  # fmt: skip
    assert values == list(range(RECORDS))
