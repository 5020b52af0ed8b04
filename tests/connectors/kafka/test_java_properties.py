"""Java Kafka client properties in a ported PyFlink program: the builders drop the
(de)serializer classes Flink overwrites and rename what librdkafka spells otherwise, so
``set_property`` calls that work in PyFlink do not fail the job when the client starts."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer

from undertow.common import SimpleStringSchema
from undertow.connectors.kafka.java_properties import librdkafka_property
from undertow.datastream.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

JAVA = {
    "key.deserializer": "org.apache.kafka.common.serialization.StringDeserializer",
    "value.serializer": "org.apache.kafka.common.serialization.StringSerializer",
    "fetch.max.wait.ms": "200",
    "max.request.size": "2097152",
    "buffer.memory": "33554433",
}


def test_java_names_become_librdkafkas() -> None:
    got = {k: librdkafka_property(k, v) for k, v in JAVA.items()}
    assert got == {
        "key.deserializer": None,
        "value.serializer": None,
        "fetch.max.wait.ms": ("fetch.wait.max.ms", "200"),
        "max.request.size": ("message.max.bytes", "2097152"),
        "buffer.memory": ("queue.buffering.max.kbytes", "32769"),
    }
    assert librdkafka_property("acks", "all") == ("acks", "all")
    with pytest.raises(ValueError, match=r"buffer\.memory must be a number of bytes, got '32m'"):
        librdkafka_property("buffer.memory", "32m")


def test_the_builders_hand_librdkafka_a_configuration_it_takes() -> None:
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("127.0.0.1:9")
        .set_topics("t")
        .set_properties({k: JAVA[k] for k in ("key.deserializer", "fetch.max.wait.ms")})
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    config = source.client_config()
    assert "key.deserializer" not in config and config["fetch.wait.max.ms"] == "200"
    Consumer(config).close()  # librdkafka refuses an unknown property here
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("t")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    builder = KafkaSink.builder().set_bootstrap_servers("127.0.0.1:9")
    for key in ("value.serializer", "max.request.size", "buffer.memory"):
        builder = builder.set_property(key, JAVA[key])
    sink = builder.set_record_serializer(serializer).build()
    assert sink.properties == {
        "message.max.bytes": "2097152",
        "queue.buffering.max.kbytes": "32769",
    }
    Producer({"bootstrap.servers": "127.0.0.1:9", **sink.properties}).flush(0)
