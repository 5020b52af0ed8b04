"""The test broker itself (tools/kafka_broker.py): one record goes in and comes back out."""

from __future__ import annotations

from collections.abc import Callable

from undertow.testing.kafka_topics import produce, read_partition


def test_a_record_round_trips_through_the_broker(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, b"k", b"hello")])
    [msg] = read_partition(kafka_bootstrap, topic, 0, end_offset=1)
    assert (msg.key(), msg.value(), msg.offset()) == (b"k", b"hello", 0)
