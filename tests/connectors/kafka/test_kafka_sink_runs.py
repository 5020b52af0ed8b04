"""What one run of the exactly-once Kafka sink leaves to the next, against the test broker.

A writer's checkpointed state records the transactional id prefix and the progress topic it
used: a restore reads the markers under that prefix (a changed prefix writes nothing twice)
and refuses a changed progress topic, naming the sink, subtask, checkpoint and both topics.

Every subtask records on the progress topic that it started with its transactional id, so
subtask 0 of a later run of lower parallelism aborts the transactions those ids left open,
also when no restored state names them (a restore of an older checkpoint, a new job).
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from tests.connectors.kafka.test_kafka_sink_writer import (
    Context,
    checkpoint,
    make_topic,
    sink,
    values,
)

from undertow.connectors.kafka.producer_io import DEFAULT_PROGRESS_TOPIC
from undertow.connectors.kafka.sink_protocol import IdUseKey, KafkaSinkError
from undertow.connectors.kafka.writer import DURING_COMMIT


class NamedContext(Context):
    """A writer context inside a job: the sink's operator has a name."""

    def operator_name(self) -> str | None:
        return "counts to kafka"


def test_a_restore_with_a_changed_progress_topic_is_refused(kafka_bootstrap: str) -> None:
    topic = make_topic(kafka_bootstrap)
    first = sink(kafka_bootstrap, topic, prefix="moved")
    writer = first.create_writer(Context())
    state = checkpoint(writer, 1, ["a"])
    assert state[0].progress_topic == "undertow-sink-progress"
    assert state[0].prefix == "moved"
    moved = sink(kafka_bootstrap, topic, prefix="moved",
                 properties={"undertow.sink.progress-topic": "elsewhere"})  # fmt: skip
    with pytest.raises(
        KafkaSinkError,
        match=r"operator 'counts to kafka' \(KafkaSink\('moved', EXACTLY_ONCE\)\) subtask 0: "
        r"the state restored from checkpoint 1 has its progress markers on topic "
        r"'undertow-sink-progress', but undertow\.sink\.progress-topic is now 'elsewhere'",
    ):
        moved.restore_writer(NamedContext(attempt=1, restored=1), state)


def test_a_restore_under_a_changed_prefix_reads_the_markers_of_the_old_one(
    kafka_bootstrap: str,
) -> None:
    """Checkpoint 1 completed and was committed under prefix ``before``; the job is restored
    from it with prefix ``after``: its batch is committed already and is not written again."""
    topic = make_topic(kafka_bootstrap)
    writer = sink(kafka_bootstrap, topic, prefix="before").create_writer(Context())
    state = checkpoint(writer, 1, ["a"])
    writer.notify_checkpoint_complete(1)
    renamed = sink(kafka_bootstrap, topic, prefix="after")
    restored = renamed.restore_writer(Context(attempt=1, restored=1), state)
    checkpoint(restored, 2, ["b"])
    restored.notify_checkpoint_complete(2)
    assert values(kafka_bootstrap, topic) == ["a", "b"]


class Crashed(Exception):
    pass


class CrashDuringCommit:
    """Crash injector: subtask ``subtask`` fails in its commit after producing its records
    and marker and before committing, so its transaction stays open on the broker (the test
    keeps the producer alive: nothing aborts it but a fence or the transaction timeout)."""

    def __init__(self, subtask: int) -> None:
        self.subtask = subtask

    def reached(self, point: str, checkpoint_id: int, attempt: int, subtask: int) -> None:
        if point == DURING_COMMIT and subtask == self.subtask:
            raise Crashed(f"subtask {subtask} during the commit of checkpoint {checkpoint_id}")


def id_uses(bootstrap: str, prefix: str) -> dict[int, bytes | None]:
    """The id-use records of ``prefix`` on the progress topic, latest per subtask."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "t"})
    tp = TopicPartition(DEFAULT_PROGRESS_TOPIC, 0, 0)
    high = consumer.get_watermark_offsets(tp, timeout=10)[1]
    consumer.assign([tp])
    found: dict[int, bytes | None] = {}
    while consumer.position([tp])[0].offset < high:
        message = consumer.poll(1)
        if message is None or message.error() is not None:
            continue
        key = IdUseKey.decode(message.key() or b"")
        if key is not None and key.prefix == prefix:
            found[key.subtask] = message.value()
    consumer.close()
    return found


def test_a_transaction_left_open_by_a_run_of_higher_parallelism_is_aborted(
    kafka_bootstrap: str,
) -> None:
    """A job ran at p=2 and completed checkpoint 1 (committed). It was restored at p=3; its
    checkpoint 2 completed, subtasks 0 and 1 died before their commits and subtask 2 during
    its commit, leaving its transaction (record b2 and its marker) open. The job is restored
    at p=2 from checkpoint 1, which holds no state of subtask 2, and the input after it is
    replayed. Unless subtask 0 aborts that transaction, the last stable offsets of the output
    and the progress topic stay below it until transaction.timeout.ms: the restore's read of
    the markers fails, and no read_committed consumer gets past it."""
    topic = make_topic(kafka_bootstrap)
    slow_timeout = {"transaction.timeout.ms": "120000"}  # longer than this test
    the_sink = sink(kafka_bootstrap, topic, properties=slow_timeout)
    prefix = the_sink.transactional_id_prefix
    first = [the_sink.create_writer(Context(i, 2)) for i in range(2)]
    state_1 = [s for i, w in enumerate(first) for s in checkpoint(w, 1, [f"a{i}"])]
    for w in first:
        w.notify_checkpoint_complete(1)
    crashing = the_sink.with_crash_injector(CrashDuringCommit(subtask=2))
    second: list[Any] = [
        crashing.restore_writer(Context(i, 3, 1, 1), [s for s in state_1 if s.subtask % 3 == i])
        for i in range(3)
    ]
    for i, w in enumerate(second):
        checkpoint(w, 2, [f"b{i}"])
    with pytest.raises(Crashed):
        second[2].notify_checkpoint_complete(2)
    assert set(id_uses(kafka_bootstrap, prefix)) == {0, 1, 2}
    third = [
        the_sink.restore_writer(Context(i, 2, 2, 1), [s for s in state_1 if s.subtask % 2 == i])
        for i in range(2)
    ]
    for w, replayed in zip(third, [["b0", "b2"], ["b1"]]):
        checkpoint(w, 2, replayed)
        w.notify_checkpoint_complete(2)
    assert values(kafka_bootstrap, topic) == ["a0", "a1", "b0", "b1", "b2"]
    assert set(id_uses(kafka_bootstrap, prefix)) == {0, 1, 2}
    assert id_uses(kafka_bootstrap, prefix)[2] is None  # fenced: its record deleted


def end_of_input(writer: Any, records: list[str]) -> None:
    """Write ``records``, then what the sink operator does at the end of input before the
    writer's commit (flush, prepare_commit)."""
    for r in records:
        writer.write(r, None)
    writer.flush(True)
    writer.prepare_commit()


def test_a_new_job_aborts_what_a_crashed_end_of_input_commit_left_open(
    kafka_bootstrap: str,
) -> None:
    """A bounded job without checkpoints ran at p=3; at the end of its input subtasks 0 and 1
    committed, subtask 2 died during its commit. A new job of the same sink at p=2, with no
    checkpoint to restore, must not leave read_committed consumers of the topic stuck behind
    that transaction."""
    topic = make_topic(kafka_bootstrap)
    slow_timeout = {"transaction.timeout.ms": "120000"}
    the_sink = sink(kafka_bootstrap, topic, properties=slow_timeout)
    crashing = the_sink.with_crash_injector(CrashDuringCommit(subtask=2))
    first: list[Any] = [crashing.create_writer(Context(i, 3)) for i in range(3)]
    for i, w in enumerate(first):
        end_of_input(w, [f"x{i}"])
    for w in first[:2]:
        w.commit_at_end_of_input()
    with pytest.raises(Crashed):
        first[2].commit_at_end_of_input()
    second = [the_sink.create_writer(Context(i, 2)) for i in range(2)]
    for i, w in enumerate(second):
        end_of_input(w, [f"y{i}"])
        w.commit_at_end_of_input()
    assert values(kafka_bootstrap, topic) == ["x0", "x1", "y0", "y1"]
