"""The Kafka source enumerator (undertow.connectors.kafka.enumerator): the pure assignment
under Hypothesis, and the enumerator against the test broker (discovery, bounded end)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.connectors.kafka.admin import (
    GroupOffsetLookup,
    KafkaAdmin,
    KafkaSourceError,
    Subscription,
)
from undertow.connectors.kafka.assignment import split_owner
from undertow.connectors.kafka.enumerator import (
    EnumeratorSettings,
    KafkaEnumeratorState,
    KafkaSourceEnumerator,
    SplitAssignment,
    restore_state,
)
from undertow.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.runtime.control.messages import AddSplits
from undertow.runtime.master.enumerators import EnumeratorContext
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


async def _until(condition: Callable[[], bool]) -> None:
    """Lets the loop run (a ``call_async`` handler) until ``condition`` holds, at most 10 s."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not hold within 10 s")


class _SlowBroker:
    """An admin whose first partition listing blocks until ``answer`` is set (a broker slow
    to answer at the job's start), then finds partitions 0..3; earliest offsets are 0, the
    latest 10. ``failure``: what the listing raises instead."""

    def __init__(self, failure: BaseException | None = None) -> None:
        self.answer = threading.Event()
        self.failure = failure

    def partitions(self, subscription: Any) -> list[KafkaTopicPartition]:
        assert self.answer.wait(30), "the test never let the broker answer"
        if self.failure is not None:
            raise self.failure
        return [KafkaTopicPartition("t", p) for p in (3, 1, 0, 2)]

    def earliest(self, partitions: Any) -> dict[KafkaTopicPartition, int]:
        return dict.fromkeys(partitions, 0)

    def latest(self, partitions: Any) -> dict[KafkaTopicPartition, int]:
        return dict.fromkeys(partitions, 10)


def _on_the_master(
    admin: Any, sent: list[tuple[int, Any]], failures: list[BaseException], **state: Any
) -> KafkaSourceEnumerator:
    """A bounded enumerator of topic ``t`` at parallelism 2 on the JobMaster's context (call
    on its loop), starting at the earliest offsets."""
    context = EnumeratorContext(
        lambda subtask, msg: sent.append((subtask, msg)), 0, 7, 2, fail=failures.append
    )
    settings_ = EnumeratorSettings(
        Subscription(topics=("t",)),
        KafkaOffsetsInitializer.earliest(),
        KafkaOffsetsInitializer.latest(),
        True,
        -1,
    )
    return KafkaSourceEnumerator(context, settings_, lambda: admin, lambda a: a, **state)


def test_the_first_discovery_waiting_for_the_broker_leaves_the_jobmasters_loop_free() -> None:
    """At the job's start the first discovery runs off the loop too: ``start`` and the
    readers' split requests return at once while the broker does not answer (the loop serves
    REST, checkpoint triggers and a cancel meanwhile), a checkpoint then says the discovery
    has not ended, and when it ends each reader that asked gets its splits, by partition,
    and then "no more splits". (On the loop, ``start`` waited for the broker.)"""
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []
    admin = _SlowBroker()

    async def scenario() -> KafkaEnumeratorState:
        enum = _on_the_master(admin, sent, failures)
        started = time.monotonic()
        enum.start()
        enum.handle_split_request(1, None)
        enum.handle_split_request(0, None)
        enum.handle_split_request(1, None)  # asked twice: answered once
        assert time.monotonic() - started < 1.0, "start waited for the broker"
        ticks = 0
        for _ in range(10):  # the loop is free while the listing waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 10 and sent == []
        during = enum.snapshot_state(1)
        admin.answer.set()
        await _until(lambda: len(sent) == 6)
        enum.close()
        return during

    during = asyncio.run(scenario())
    assert failures == []
    owner = {p: split_owner(KafkaTopicPartition("t", p), 2) for p in range(4)}
    expected: list[tuple[int, Any]] = []
    for subtask in (1, 0):  # in the order they asked; each one's splits by partition
        mine = [p for p in range(4) if owner[p] == subtask]
        expected += [(subtask, ("split", p, 0, 10)) for p in mine] + [(subtask, "no more")]
    got = [
        (s, ("split", m.splits[0].topic_partition.partition, m.splits[0].starting_offset,
             m.splits[0].stopping_offset) if isinstance(m, AddSplits) else "no more")
        for s, m in sent
    ]  # fmt: skip
    assert got == expected
    # a checkpoint taken while the first discovery ran: the restored enumerator runs it again
    assert during == KafkaEnumeratorState(2, frozenset(), (), False)
    context = StandaloneEnumeratorContext[KafkaPartitionSplit](parallelism=2)
    settings_ = EnumeratorSettings(
        Subscription(topics=("t",)), KafkaOffsetsInitializer.earliest(), None, True, -1
    )
    again = KafkaSourceEnumerator(context, settings_, lambda: admin, lambda a: a,  # type: ignore[arg-type,return-value]
                                  restore_state(during, "t"))  # fmt: skip
    again.start()
    for subtask in (0, 1):
        again.handle_split_request(subtask, None)
    assert sorted(s.topic_partition.partition for _, s in context.assigned) == [0, 1, 2, 3]


def test_a_checkpoint_of_format_1_restores_as_one_whose_first_discovery_ended() -> None:
    split = KafkaPartitionSplit(KafkaTopicPartition("t", 0), 5)
    old = KafkaEnumeratorState.__new__(KafkaEnumeratorState)
    for name, value in (("version", 1), ("discovered", frozenset({split.topic_partition})),
                        ("pending", (split,))):  # fmt: skip
        object.__setattr__(old, name, value)  # as a pickle of format 1 unpickles: 3 fields
    restored = restore_state(old, "KafkaSource (topics ['t'])")
    assert restored == KafkaEnumeratorState(2, frozenset({split.topic_partition}), (split,), True)


def test_a_first_discovery_that_cannot_reach_the_broker_fails_the_job_naming_it() -> None:
    """A broker that never answers (nothing listens on the port): the failure reaches the
    JobMaster's ``fail`` naming the bootstrap servers and the time-out, and the readers that
    asked meanwhile were told nothing (no "no more splits": the job fails instead)."""
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []

    async def scenario() -> None:
        admin = KafkaAdmin({"bootstrap.servers": "127.0.0.1:9"}, 1.0)
        enum = _on_the_master(admin, sent, failures)
        started = time.monotonic()
        enum.start()
        enum.handle_split_request(0, None)
        assert time.monotonic() - started < 0.5, "start waited for the broker"
        await _until(lambda: bool(failures))
        enum.close()

    asyncio.run(scenario())
    [failure] = failures
    assert isinstance(failure, KafkaSourceError)
    assert re.search(
        r"KafkaSource \(topics \['t'\]\): the first partition discovery failed: .*"
        r"bootstrap servers 127\.0\.0\.1:9 failed within 1 s",
        str(failure),
    ), failure
    assert sent == []


def test_a_first_discovery_that_fails_otherwise_fails_the_job_naming_the_source() -> None:
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []
    admin = _SlowBroker(failure=ValueError("bad answer"))
    admin.answer.set()

    async def scenario() -> None:
        enum = _on_the_master(admin, sent, failures)
        enum.start()
        await _until(lambda: bool(failures))

    asyncio.run(scenario())
    [failure] = failures
    assert isinstance(failure, KafkaSourceError) and isinstance(failure.__cause__, ValueError)
    assert "KafkaSource (topics ['t']): the first partition discovery failed" in str(failure)
    assert sent == []


class _BrokerGoneAway:
    """An admin whose partition listing blocks, after the first, until ``back`` is set (a
    broker that went away: librdkafka waits up to ``default.api.timeout.ms``), then finds a
    third partition; it also serves the earliest offsets (0)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.calls = 0
        self.back = threading.Event()

    def partitions(self, subscription: Any) -> list[KafkaTopicPartition]:
        self.calls += 1
        if self.calls > 1:
            assert self.back.wait(30), "the test never let the broker come back"
            return [KafkaTopicPartition(self.topic, p) for p in range(3)]
        return [KafkaTopicPartition(self.topic, p) for p in range(2)]

    def earliest(self, partitions: Any) -> dict[KafkaTopicPartition, int]:
        return dict.fromkeys(partitions, 0)

    latest = earliest


def test_a_periodic_discovery_waiting_for_a_gone_broker_leaves_the_jobmasters_loop_free() -> None:
    """On the JobMaster's context, a later discovery runs off the loop: while the broker does
    not answer, a split request returns at once and the loop runs other work (heartbeats,
    checkpoint triggers, a cancel); when the listing comes back, the new partition's split goes
    to its owner without waiting for another request. (Discovering on the loop, a gone broker
    held it for up to 60 s per listing: no checkpoint for 150 s, no cancel; docs/kafka.md.)"""
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []
    admin = _BrokerGoneAway("t")
    now = [0.0]

    async def scenario() -> None:
        context = EnumeratorContext(
            lambda subtask, msg: sent.append((subtask, msg)), 0, 7, 2, fail=failures.append
        )
        settings_ = EnumeratorSettings(
            Subscription(topics=("t",)), KafkaOffsetsInitializer.earliest(), None, False, 1000
        )
        enum = KafkaSourceEnumerator(
            context,
            settings_,
            lambda: admin,
            lambda a: a,
            clock=lambda: now[0],  # type: ignore[arg-type,return-value]
        )
        enum.start()
        await _until(lambda: enum.snapshot_state(0).initial_discovery_done)
        now[0] = 5.0  # the interval has passed: the next request discovers
        started = time.monotonic()
        enum.handle_split_request(0, None)
        assert time.monotonic() - started < 1.0, "the split request waited for the broker"
        ticks = 0
        for _ in range(10):  # the loop is free while the listing waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert (
            ticks == 10
            and admin.calls == 2
            and not any(
                m.splits[0].topic_partition.partition == 2
                for _, m in sent
                if isinstance(m, AddSplits)
            )
        )
        admin.back.set()
        owner = split_owner(KafkaTopicPartition("t", 2), 2)
        for _ in range(500):
            found = [(s, m) for s, m in sent if isinstance(m, AddSplits)
                     and m.splits[0].topic_partition.partition == 2]  # fmt: skip
            if found:
                break
            await asyncio.sleep(0.01)
        assert [s for s, _ in found] == [owner], sent
        assert found[0][1].splits[0].starting_offset == 0
        enum.close()

    asyncio.run(scenario())
    assert failures == []


class _ListingFailsLater:
    """An admin that lists partitions 0 and 1 first, then raises each of ``failures`` in turn
    (earliest offsets 0)."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def partitions(self, subscription: Any) -> list[KafkaTopicPartition]:
        self.calls += 1
        if self.calls > 1:
            raise self.failures.pop(0)
        return [KafkaTopicPartition("t", p) for p in range(2)]

    def earliest(self, partitions: Any) -> dict[KafkaTopicPartition, int]:
        return dict.fromkeys(partitions, 0)

    latest = earliest


def test_a_periodic_discovery_that_fails_not_by_the_broker_fails_the_job_at_once() -> None:
    """On the JobMaster's context: a periodic discovery the broker failed (its time-out) is
    logged and the job goes on; one that failed otherwise (a bug, a topic pattern's listing
    raising) fails the attempt from its handler, naming the source, without waiting for
    another split request (a reader that has its splits may not ask for minutes). (Stored,
    it failed the job only at the next request.)"""
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []
    admin = _ListingFailsLater(KafkaSourceError("broker gone"), LookupError("pattern broke"))
    now = [0.0]

    async def scenario() -> None:
        context = EnumeratorContext(
            lambda subtask, msg: sent.append((subtask, msg)), 0, 7, 2, fail=failures.append
        )
        settings_ = EnumeratorSettings(
            Subscription(topics=("t",)), KafkaOffsetsInitializer.earliest(), None, False, 1000
        )
        enum = KafkaSourceEnumerator(context, settings_, lambda: admin, lambda a: a,  # type: ignore[arg-type,return-value]
                                     clock=lambda: now[0])  # fmt: skip
        enum.start()
        await _until(lambda: enum.snapshot_state(0).initial_discovery_done)
        now[0] = 5.0
        enum.handle_split_request(0, None)  # the broker's failure: logged
        await _until(lambda: admin.calls == 2 and not enum._discovering)
        await asyncio.sleep(0.05)
        assert failures == []
        now[0] = 10.0
        enum.handle_split_request(1, None)  # another failure: fails the attempt at once
        await _until(lambda: bool(failures))
        enum.close()

    asyncio.run(scenario())
    [failure] = failures
    assert isinstance(failure, KafkaSourceError) and isinstance(failure.__cause__, LookupError)
    assert str(failure) == (
        "KafkaSource (topics ['t']): partition discovery failed: LookupError('pattern broke')"
    )
