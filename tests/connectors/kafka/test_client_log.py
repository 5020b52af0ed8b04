"""librdkafka's log lines go to Python logging, not to the process's stderr.

A client without a ``logger`` writes lines such as ``%3|...|FAIL|rdkafka#producer-1| ...
Connect to ipv4#127.0.0.1:1 failed`` straight to file descriptor 2, where they mix with a
job's output. Each test starts a client of the sink or the source against a port nobody
listens on (librdkafka then logs the refused connections) and reads fd 2.
"""

from __future__ import annotations

import pytest
from tests.connectors.kafka.test_kafka_sink_writer import Context, sink

from undertow.connectors.kafka.admin import KafkaAdmin, KafkaSourceError, Subscription
from undertow.connectors.kafka.client_log import CLIENT_LOG, logged
from undertow.connectors.kafka.producer_io import client_config
from undertow.connectors.kafka.sink_protocol import KafkaSinkError
from undertow.connectors.sink import DeliveryGuarantee

NOBODY = "127.0.0.1:1"


def test_the_sinks_clients_log_to_python_logging(capfd: pytest.CaptureFixture[str]) -> None:
    assert client_config(NOBODY, {})["logger"] is CLIENT_LOG
    down = sink(NOBODY, "t", DeliveryGuarantee.AT_LEAST_ONCE,
                properties={"undertow.sink.startup-timeout.ms": "1000"})  # fmt: skip
    with pytest.raises(KafkaSinkError, match="no Kafka broker"):
        down.create_writer(Context())
    assert "rdkafka" not in capfd.readouterr().err


def test_the_sources_admin_client_logs_to_python_logging(
    capfd: pytest.CaptureFixture[str],
) -> None:
    admin = KafkaAdmin({"bootstrap.servers": NOBODY}, timeout_s=1.0)
    with pytest.raises(KafkaSourceError, match="failed within 1 s"):
        admin.partitions(Subscription(topics=("t",)))
    del admin
    assert "rdkafka" not in capfd.readouterr().err


def test_logged_leaves_the_callers_configuration_alone() -> None:
    config = {"bootstrap.servers": NOBODY}
    assert logged(config) == {"bootstrap.servers": NOBODY, "logger": CLIENT_LOG}
    assert config == {"bootstrap.servers": NOBODY}
