"""KafkaSource's builder (PyFlink's names): what it needs, and what it refuses, by name."""

from __future__ import annotations

import pytest

from undertow.common.serialization import SimpleStringSchema
from undertow.connectors.kafka.source import KafkaSource
from undertow.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaTopicPartition


def test_the_builder_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"set_bootstrap_servers\(\) is required"):
        KafkaSource.builder().set_topics("t").build()
    with pytest.raises(ValueError, match=r"set_topics\(\), set_topic_pattern\(\) or"):
        KafkaSource.builder().set_bootstrap_servers("h:9092").build()
    with pytest.raises(ValueError, match=r"set_value_only_deserializer\(\) is required"):
        KafkaSource.builder().set_bootstrap_servers("h:9092").set_topics("t").build()


def test_one_subscription_only_and_bad_values_are_refused() -> None:
    builder = KafkaSource.builder().set_topics("a")
    with pytest.raises(ValueError, match="already reading"):
        builder.set_topic_pattern("b.*")
    with pytest.raises(ValueError, match="not a regular expression"):
        KafkaSource.builder().set_topic_pattern("(")
    with pytest.raises(ValueError, match="expected topic names"):
        KafkaSource.builder().set_topics("")
    with pytest.raises(ValueError, match="expected KafkaTopicPartitions"):
        KafkaSource.builder().set_partitions([("t", 0)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a KafkaOffsetsInitializer"):
        KafkaSource.builder().set_starting_offsets("earliest")  # type: ignore[arg-type]


def test_a_complete_builder_gives_a_source() -> None:
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("h:9092")
        .set_group_id("g")
        .set_partitions([KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)])
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    assert isinstance(source, KafkaSource)
