"""What one run of the exactly-once Kafka sink leaves to the next, against the test broker.

A writer's checkpointed state records the transactional id prefix and the progress topic it
used: a restore reads the markers under that prefix (a changed prefix writes nothing twice)
and refuses a changed progress topic, naming the sink, subtask, checkpoint and both topics.
"""

from __future__ import annotations

import pytest
from tests.connectors.kafka.test_kafka_sink_writer import (
    Context,
    checkpoint,
    make_topic,
    sink,
    values,
)

from undertow.connectors.kafka.sink_protocol import KafkaSinkError


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
        match=r"KafkaSink\('moved', EXACTLY_ONCE\) subtask 0: the state restored from "
        r"checkpoint 1 has its progress markers on topic 'undertow-sink-progress', but "
        r"undertow\.sink\.progress-topic is now 'elsewhere'",
    ):
        moved.restore_writer(Context(attempt=1, restored=1), state)


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
