"""Which reader owns a partition (undertow.connectors.kafka.assignment): deterministic,
in range, and a topic's partitions spread evenly over the readers."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.connectors.kafka.assignment import java_string_hash, split_owner
from undertow.connectors.kafka.offsets import KafkaTopicPartition

topics = st.text(min_size=1, max_size=30)


def test_java_string_hash_matches_java() -> None:
    # "...".hashCode(), printed by Java 17
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Hello World") == -862545276
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair: two UTF-16 units
    assert java_string_hash("orders-topic") == -392051641


@settings(max_examples=200, deadline=None)
@given(topic=topics, partitions=st.integers(1, 64), parallelism=st.integers(1, 16))
def test_a_topics_partitions_spread_evenly(topic: str, partitions: int, parallelism: int) -> None:
    owners = [split_owner(KafkaTopicPartition(topic, p), parallelism) for p in range(partitions)]
    assert all(0 <= o < parallelism for o in owners)
    counts = Counter(owners)
    loads = [counts.get(subtask, 0) for subtask in range(parallelism)]
    assert max(loads) - min(loads) <= 1, loads


@settings(max_examples=100, deadline=None)
@given(topic=topics, partition=st.integers(0, 1000), parallelism=st.integers(1, 16))
def test_consecutive_partitions_go_to_consecutive_readers(
    topic: str, partition: int, parallelism: int
) -> None:
    here = split_owner(KafkaTopicPartition(topic, partition), parallelism)
    after = split_owner(KafkaTopicPartition(topic, partition + 1), parallelism)
    assert after == (here + 1) % parallelism
