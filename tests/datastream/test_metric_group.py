"""``RuntimeContext.get_metrics_group()``: PyFlink's metric kinds, and their values in the REST
API under Flink's ``/jobs/:jobid/vertices/:vertexid/metrics``."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from typing import Any

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.common.metrics import Meter, MetricGroup
from undertow.core.errors import JobCancelledError
from undertow.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource


def test_metric_kinds_and_identifiers() -> None:
    group = MetricGroup()
    counter = group.add_group("io").counter("records")
    counter.inc()
    counter.inc(4)
    counter.dec()
    group.gauge("depth", lambda: 7)
    group.gauge("broken", lambda: 1 / 0)
    distribution = group.add_group("sizes", "bytes").distribution("record")
    for value in (3, 9, 6):
        distribution.update(value)
    values = group.metric_values()
    assert values["io.records"] == 4
    assert values["depth"] == 7 and "broken" not in values
    kinds = ("count", "sum", "min", "max", "mean")
    assert {k: values[f"sizes.bytes.record_{k}"] for k in kinds} == {
        "count": 3, "sum": 18, "min": 3, "max": 9, "mean": 6.0
    }  # fmt: skip
    assert group.add_group("io").counter("records") is counter
    with pytest.raises(ValueError, match=r"'io\.records' is already a Counter"):
        group.add_group("io").meter("records")


def test_meter_rate_over_its_span() -> None:
    now = [0.0]
    meter = Meter(10, clock=lambda: now[0])
    meter.mark_event(30)
    now[0] = 3.0
    assert meter.get_rate() == 10.0
    meter.mark_event(20)
    now[0] = 13.0  # the sample at t=0 left the 10 s span; the one at t=3 starts it
    assert meter.get_rate() == pytest.approx(20 / 10)
    assert meter.get_count() == 50


class Measured(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        group = runtime_context.get_metrics_group().add_group("user")
        self.seen = group.counter("seen")
        self.sizes = group.distribution("value")
        group.gauge("answer", lambda: 42)

    def map(self, value: int) -> int:
        self.seen.inc()
        self.sizes.update(value % 10)
        return value


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_user_metrics_appear_in_the_rest_api() -> None:
    env = StreamExecutionEnvironment(Configuration({
        "execution.target": "local-threads", "rest.port": "0",
        "undertow.metrics.report-interval": "100 ms",
    }))  # fmt: skip
    env.set_parallelism(1)
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    )
    numbers.map(Measured()).name("measured").filter(lambda n: n < 0).print()
    client = env.execute_async("metrics")
    try:
        rest, jid = client.get_rest_address(), client.get_job_id()
        deadline = time.monotonic() + 30
        metrics: dict[str, str] = {}
        while time.monotonic() < deadline:
            for vertex in _get(f"{rest}/jobs/{jid}")["vertices"]:
                url = f"{rest}/jobs/{jid}/vertices/{vertex['id']}/metrics"
                ids = [m["id"] for m in _get(url)]  # Flink lists ids; ?get= gives values
                found = _get(f"{url}?get={','.join(ids)}") if ids else []
                metrics.update((m["id"], m["value"]) for m in found)
            if int(metrics.get("0.measured.user.seen", "0")) > 0:
                break
            time.sleep(0.1)
        assert int(metrics["0.measured.user.seen"]) > 0, metrics
        assert metrics["0.measured.user.answer"] == "42"
        assert metrics["0.measured.user.value_max"] == "9"
    finally:
        client.cancel()
    with pytest.raises(JobCancelledError):
        client.wait(60)


def test_user_metrics_appear_in_the_prometheus_scrape() -> None:
    """Flink's reporter names a user metric by its operator scope:
    ``flink_taskmanager_job_task_operator_<group>_<name>`` with an ``operator_name`` label."""
    from prometheus_client.parser import text_string_to_metric_families

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = StreamExecutionEnvironment(Configuration({
        "execution.target": "local-threads", "rest.port": "0",
        "undertow.metrics.report-interval": "100 ms", "metrics.reporter.prom.port": str(port),
    }))  # fmt: skip
    env.set_parallelism(1)
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    )
    numbers.map(Measured()).name("measured").filter(lambda n: n < 0).print()
    client = env.execute_async("prometheus user metrics")
    try:
        deadline, seen = time.monotonic() + 30, 0.0
        while time.monotonic() < deadline and seen <= 0:
            time.sleep(0.1)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                text = r.read().decode()
            families = {f.name: f.samples for f in text_string_to_metric_families(text)}
            samples = families.get("flink_taskmanager_job_task_operator_user_seen", [])
            seen = max((s.value for s in samples), default=0.0)
        assert seen > 0, sorted(families)
        [answer] = families["flink_taskmanager_job_task_operator_user_answer"]
        assert answer.value == 42 and answer.labels["operator_name"] == "measured"
    finally:
        client.cancel()
    with pytest.raises(JobCancelledError):
        client.wait(60)
