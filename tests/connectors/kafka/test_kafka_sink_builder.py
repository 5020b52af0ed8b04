"""KafkaSink's and KafkaRecordSerializationSchema's builders (PyFlink 2.x names): what they
build and the errors for what is missing or wrong. No broker needed."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.common.serialization import SimpleStringSchema
from undertow.connectors.kafka.record_serializer import (
    KafkaRecordSerializationSchema,
    KafkaTopicSelector,
)
from undertow.connectors.kafka.sink import KafkaSink
from undertow.datastream.connectors.kafka import DeliveryGuarantee


def serializer() -> KafkaRecordSerializationSchema:
    return (
        KafkaRecordSerializationSchema.builder()
        .set_topic("t")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )


def test_a_record_becomes_topic_key_value_and_timestamp() -> None:
    schema = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(lambda word: f"words-{len(word)}")
        .set_key_serialization_schema(SimpleStringSchema())
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    record = schema.to_record("kafka", 42)
    assert (record.topic, record.key, record.value, record.timestamp) == (
        "words-5",
        b"kafka",
        b"kafka",
        42,
    )
    assert schema.serialize("v") == b"v"


def test_a_topic_selector_class_and_the_last_topic_call_win() -> None:
    class Fixed(KafkaTopicSelector):
        def apply(self, data: Any) -> str:
            return "chosen"

    builder = KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
        SimpleStringSchema()
    )
    assert builder.set_topic("a").set_topic_selector(Fixed()).build().topic_of("x") == "chosen"
    assert builder.set_topic("b").build().topic_of("x") == "b"


def test_serialization_schema_errors_name_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"set_topic\(\) or set_topic_selector\(\)"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
            SimpleStringSchema()
        ).build()
    with pytest.raises(ValueError, match=r"set_value_serialization_schema\(\)"):
        KafkaRecordSerializationSchema.builder().set_topic("t").build()
    with pytest.raises(TypeError, match="KafkaTopicSelector or a callable"):
        KafkaRecordSerializationSchema.builder().set_topic_selector("t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the value schema must be a SerializationSchema"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(str)  # type: ignore[arg-type]
    bad_topic = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(lambda v: "")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    with pytest.raises(ValueError, match="topic selector returned '' for record 'x'"):
        bad_topic.topic_of("x")


def test_the_sink_builder_keeps_what_it_was_given() -> None:
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("h:9092")
        .set_record_serializer(serializer())
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("p")
        .set_property("linger.ms", 5)  # type: ignore[arg-type]
        .build()
    )
    assert (sink.bootstrap_servers, sink.delivery_guarantee, sink.transactional_id_prefix) == (
        "h:9092",
        DeliveryGuarantee.EXACTLY_ONCE,
        "p",
    )
    assert sink.properties == {"linger.ms": "5"}
    assert repr(sink) == "KafkaSink('p', EXACTLY_ONCE)"
    default = KafkaSink.builder().set_bootstrap_servers("h:1").set_record_serializer(serializer())
    assert default.build().delivery_guarantee is DeliveryGuarantee.NONE  # Flink's default


def test_sink_builder_errors() -> None:
    with pytest.raises(ValueError, match=r"call set_bootstrap_servers\(\)"):
        KafkaSink.builder().set_record_serializer(serializer()).build()
    with pytest.raises(ValueError, match=r"call set_record_serializer\(\)"):
        KafkaSink.builder().set_bootstrap_servers("h:1").build()
    with pytest.raises(ValueError, match="EXACTLY_ONCE needs set_transactional_id_prefix"):
        (
            KafkaSink.builder()
            .set_bootstrap_servers("h:1")
            .set_record_serializer(serializer())
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .build()
        )
    with pytest.raises(ValueError, match=r"transactional\.id is derived from the prefix"):
        KafkaSink.builder().set_property("transactional.id", "x")
    with pytest.raises(ValueError, match="64001 UTF-8 bytes, at most 64000"):
        KafkaSink.builder().set_transactional_id_prefix("p" * 64_001)
    with pytest.raises(TypeError, match="takes a KafkaRecordSerializationSchema"):
        KafkaSink.builder().set_record_serializer(SimpleStringSchema())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bootstrap servers must be a non-empty string"):
        KafkaSink.builder().set_bootstrap_servers(" ")
