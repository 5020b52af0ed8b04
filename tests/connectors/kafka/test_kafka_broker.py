"""The test broker itself (tools/kafka_broker.py): one record goes in and comes back out."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from undertow.testing.kafka_topics import create_topic, produce, read_partition


def test_a_record_round_trips_through_the_broker(
    kafka_bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, b"k", b"hello")])
    [msg] = read_partition(kafka_bootstrap, topic, 0, end_offset=1)
    assert (msg.key(), msg.value(), msg.offset()) == (b"k", b"hello", 0)


def test_the_broker_runs_the_jvm_options_it_was_given() -> None:
    # the benchmark's production-like broker (--broker-jvm server) must really get them
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
    from kafka_broker import JVM_OPTIONS, SERVER_JVM_OPTIONS, KafkaBroker

    default = KafkaBroker()._java(Path("/libs"), "kafka.Kafka")
    server = KafkaBroker(jvm_options=SERVER_JVM_OPTIONS)._java(Path("/libs"), "kafka.Kafka")
    assert default[1 : 1 + len(JVM_OPTIONS)] == list(JVM_OPTIONS)
    assert server[1 : 1 + len(SERVER_JVM_OPTIONS)] == list(SERVER_JVM_OPTIONS)
    assert "-XX:TieredStopAtLevel=1" in default and "-XX:TieredStopAtLevel=1" not in server


def test_a_broker_whose_chosen_port_was_taken_starts_on_new_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the race: a port free when chosen is taken by another process before the JVM binds it
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
    import kafka_broker

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = taken.getsockname()[1]
        ports = iter([taken_port])
        chosen = kafka_broker.free_port
        monkeypatch.setattr(kafka_broker, "free_port", lambda: next(ports, None) or chosen())
        broker = kafka_broker.KafkaBroker().start()
        try:
            assert broker.port != taken_port
            create_topic(broker.bootstrap_servers, "t", 1)
            produce(broker.bootstrap_servers, "t", [(0, b"k", b"v")])
        finally:
            broker.stop()
