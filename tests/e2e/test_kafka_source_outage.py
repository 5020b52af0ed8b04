"""A Kafka broker that goes away while a job with periodic partition discovery runs, or does
not answer at the job's start: the JobMaster's loop, which hosts the source's enumerator, goes
on completing checkpoints and serving REST and a cancel while the enumerator's listing waits
for the broker (docs/kafka.md, "After a failure"). Until 2026-12-02 the listings ran on the
loop and held it up to ``default.api.timeout.ms`` each time."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Configuration
from undertow.common.serialization import SimpleStringSchema
from undertow.common.watermark_strategy import WatermarkStrategy
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.datastream.connectors.kafka import KafkaSource
from undertow.testing.kafka_topics import produce


def _completed(client: Any) -> int:
    url = f"{client.get_rest_address()}/jobs/{client.get_job_id()}/checkpoints"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return int(json.load(answer)["counts"]["completed"])


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.1)


@pytest.mark.timeout(120)
def test_checkpoints_and_a_cancel_go_on_while_discovery_waits_for_a_gone_broker(
    kafka_broker: Any, kafka_bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    """Discovery every 300 ms, each listing allowed 30 s (``default.api.timeout.ms``); the
    broker is killed for 5 s: checkpoints every 100 ms go on completing meanwhile (the
    enumerator's state needs no broker), and after the broker is back the job is still
    running and a cancel ends it at once."""
    if kafka_broker is None:
        pytest.skip("needs the test session's own broker (UNDERTOW_KAFKA_BOOTSTRAP is set)")
    topic = new_topic(2)
    produce(kafka_bootstrap, topic, [(i % 2, None, f"r{i}".encode()) for i in range(20)])
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "0",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path),
    }))  # fmt: skip
    env.set_parallelism(2)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_bootstrap)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_property("partition.discovery.interval.ms", "300")
        .set_property("default.api.timeout.ms", "30000")
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").sink_to(DiscardingSink())
    client = env.execute_async("discovery through an outage")
    try:
        _wait_for(lambda: _completed(client) >= 3, "3 checkpoints before the outage", 60)
        kafka_broker.kill()
        try:
            time.sleep(1.0)  # readers ask every 300 ms: a discovery is waiting for the broker
            before = _completed(client)
            time.sleep(4.0)
            during = _completed(client) - before
        finally:
            kafka_broker.restart()
        assert during >= 5, f"{during} checkpoints completed in 4 s while the broker was gone"
        assert client.get_job_status().result() is JobStatus.RUNNING
    finally:
        started = time.monotonic()
        client.cancel()
        _wait_for(lambda: client.get_job_status().result() is JobStatus.CANCELED, "cancel", 30)
    assert time.monotonic() - started < 10, "the cancel waited for the broker"


def _job_state(client: Any) -> str:
    url = f"{client.get_rest_address()}/jobs/{client.get_job_id()}"
    with urllib.request.urlopen(url, timeout=3) as answer:
        return str(json.load(answer)["state"])


@pytest.mark.timeout(120)
def test_rest_and_a_cancel_answer_while_the_first_discovery_waits_for_the_broker() -> None:
    """Nothing answers at the bootstrap address and a listing may wait 20 s for it: the job
    deploys at once, REST answers within its 3 s time-out while the first discovery waits,
    and a cancel ends the job within 10 s. (With the first discovery on the loop, the job did
    not deploy and REST did not answer until the 20 s had passed, and then the job failed.)"""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "0",
        "restart-strategy.type": "none",
    }))  # fmt: skip
    env.set_parallelism(2)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("127.0.0.1:9")
        .set_topics("anything")
        .set_value_only_deserializer(SimpleStringSchema())
        .set_property("default.api.timeout.ms", "20000")
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").sink_to(DiscardingSink())
    client = env.execute_async("first discovery waits for the broker")
    try:
        _wait_for(lambda: client.get_job_status().result() is JobStatus.RUNNING, "deploy", 10)
        started = time.monotonic()
        for _ in range(5):  # every answer while the listing waits (20 s) for the broker
            assert _job_state(client) == "RUNNING"
            time.sleep(0.2)
        assert time.monotonic() - started < 10, "REST waited for the broker"
    finally:
        started = time.monotonic()
        client.cancel()
        _wait_for(lambda: client.get_job_status().result().is_globally_terminal_state(),
                  "the job's end", 30)  # fmt: skip
    assert client.get_job_status().result() is JobStatus.CANCELED
    assert time.monotonic() - started < 10, "the cancel waited for the broker"
