"""The Kafka source enumerator (undertow.connectors.kafka.enumerator): the pure assignment
under Hypothesis, and the enumerator against the test broker (discovery, bounded end)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.connectors.kafka.admin import GroupOffsetLookup, KafkaAdmin, Subscription
from undertow.connectors.kafka.assignment import split_owner
from undertow.connectors.kafka.enumerator import (
    EnumeratorSettings,
    KafkaSourceEnumerator,
    SplitAssignment,
)
from undertow.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.testing.kafka_topics import add_partitions, produce
from undertow.testing.source_reader import StandaloneEnumeratorContext

partitions = st.lists(
    st.builds(KafkaTopicPartition, st.sampled_from(["a", "b", "orders"]), st.integers(0, 20)),
    unique=True,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(partitions, min_size=1, max_size=4),
    parallelism=st.integers(1, 6),
    new_parallelism=st.integers(1, 6),
    takers=st.lists(st.integers(0, 5), max_size=8),
)
def test_every_split_reaches_its_owner_exactly_once_across_restores_and_rescales(
    batches: list[list[KafkaTopicPartition]],
    parallelism: int,
    new_parallelism: int,
    takers: list[int],
) -> None:
    """Splits are discovered in batches; some readers take theirs; the state is snapshotted
    and restored under another parallelism; then every reader takes what is left."""
    assignment = SplitAssignment(parallelism)
    delivered: list[tuple[int, KafkaPartitionSplit]] = []
    for batch in batches:
        new = assignment.unknown(batch)
        assignment.add(KafkaPartitionSplit(tp, 0) for tp in new)
        for subtask in takers:
            if subtask < parallelism:
                delivered += [(subtask, s) for s in assignment.take(subtask)]
    for subtask, split in delivered:
        assert subtask == split_owner(split.topic_partition, parallelism)
    restored = SplitAssignment(new_parallelism, assignment.snapshot())
    later = [(i, s) for i in range(new_parallelism) for s in restored.take(i)]
    for subtask, split in later:
        assert subtask == split_owner(split.topic_partition, new_parallelism)
    everything = sorted(s.topic_partition for _, s in delivered + later)
    assert everything == sorted({tp for batch in batches for tp in batch})
    assert restored.unknown(everything) == []


def enumerator(
    bootstrap: str,
    topic: str,
    context: StandaloneEnumeratorContext[KafkaPartitionSplit],
    bounded: bool,
    clock: Any,
) -> KafkaSourceEnumerator:
    settings_ = EnumeratorSettings(
        Subscription(topics=(topic,)),
        KafkaOffsetsInitializer.latest(),
        KafkaOffsetsInitializer.latest() if bounded else None,
        bounded,
        -1 if bounded else 1000,
    )
    return KafkaSourceEnumerator(
        context,
        settings_,
        lambda: KafkaAdmin({"bootstrap.servers": bootstrap}, 30.0),
        lambda admin: GroupOffsetLookup(admin, None),
        clock=clock,
    )


def test_discovery_hands_a_new_partition_to_its_owner_from_its_earliest_offset(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    produce(kafka_bootstrap, topic, [(0, None, b"x")] * 3 + [(1, None, b"y")] * 2)
    now = [0.0]
    context = StandaloneEnumeratorContext[KafkaPartitionSplit](parallelism=2)
    enum = enumerator(kafka_bootstrap, topic, context, bounded=False, clock=lambda: now[0])
    enum.start()
    for subtask in (0, 1):
        enum.handle_split_request(subtask, None)
    first = {s.topic_partition.partition: (i, s.starting_offset) for i, s in context.assigned}
    owner = {p: split_owner(KafkaTopicPartition(topic, p), 2) for p in range(3)}
    # the first discovery starts at the starting offsets (latest here)
    assert first == {0: (owner[0], 3), 1: (owner[1], 2)}
    assert context.no_more == []  # unbounded: never "no more splits"

    add_partitions(kafka_bootstrap, topic, 3)
    produce(kafka_bootstrap, topic, [(2, None, b"z")] * 4)
    enum.handle_split_request(owner[2], None)  # the interval has not passed: nothing new
    assert len(context.assigned) == 2
    now[0] = 1.0
    enum.handle_split_request(owner[2], None)
    [(subtask, split)] = context.assigned[2:]
    # found later: from its earliest offset, so the 4 records are read
    assert (subtask, split.topic_partition.partition, split.starting_offset) == (owner[2], 2, 0)


def test_a_bounded_enumerator_stops_at_the_latest_offsets_and_says_no_more(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    produce(kafka_bootstrap, topic, [(0, None, b"x")] * 3)
    context = StandaloneEnumeratorContext[KafkaPartitionSplit](parallelism=3)
    enum = enumerator(kafka_bootstrap, topic, context, bounded=True, clock=lambda: 0.0)
    enum.start()
    for subtask in range(3):
        enum.handle_split_request(subtask, None)
    stops = sorted((s.topic_partition.partition, s.stopping_offset) for _, s in context.assigned)
    assert stops == [(0, 3), (1, 0)]
    assert context.no_more == [0, 1, 2]
