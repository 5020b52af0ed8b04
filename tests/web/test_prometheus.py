"""The Prometheus endpoint, scraped and parsed with prometheus-client's own parser, agrees with
the REST API; it is off by default and a bad port names its key."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.rest_client import Job, wait_for
from tests.web.conftest import start_job

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError, JobCancelledError
from undertow.runtime.master.prometheus import start_exporter
from undertow.runtime.master.settings import RestSettings, prometheus_ports

TASK_LABELS = {"job_id", "job_name", "task_id", "task_name", "subtask_index", "task_attempt_num"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def prom_job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Job, str]]:
    port = _free_port()
    client = start_job(str(tmp_path_factory.mktemp("checkpoints")), "prometheus job",
                       **{"metrics.reporter.prom.port": str(port)})  # fmt: skip
    url = client.get_rest_address()
    assert url is not None
    try:
        yield Job(client, url), f"http://127.0.0.1:{port}/metrics"
    finally:
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)


def scrape(url: str) -> dict[str, list[Any]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode("utf-8")
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_scrape_agrees_with_rest(prom_job: tuple[Job, str]) -> None:
    job, url = prom_job
    wait_for(lambda: job.get(f"/jobs/{job.jid}/checkpoints")["counts"]["completed"] >= 2,
             "two completed checkpoints")  # fmt: skip
    vertices = job.get(f"/jobs/{job.jid}")["vertices"]
    source = vertices[0]

    def rest_state() -> tuple[int, int]:
        completed = job.get(f"/jobs/{job.jid}/metrics?get=numberOfCompletedCheckpoints")
        out = job.get(f"/jobs/{job.jid}/vertices/{source['id']}/metrics?get=0.numRecordsOut")
        return int(completed[0]["value"]), int(out[0]["value"])

    before = rest_state()
    families = scrape(url)
    after = rest_state()

    restarts = families["flink_jobmanager_job_numRestarts"]
    assert [(s.labels, s.value) for s in restarts] == [
        ({"job_id": job.jid, "job_name": "prometheus job"}, 0.0)
    ]
    completed = families["flink_jobmanager_job_numberOfCompletedCheckpoints"][0].value
    assert before[0] <= completed <= after[0]
    out = {s.labels["subtask_index"]: s.value
           for s in families["flink_taskmanager_job_task_numRecordsOut"]
           if s.labels["task_id"] == source["id"]}  # fmt: skip
    assert before[1] <= out["0"] <= after[1] and out["0"] > 0
    for name in ("numRecordsInPerSecond", "numRecordsOutPerSecond", "busyTimeMsPerSecond",
                 "backPressuredTimeMsPerSecond", "currentInputWatermark"):  # fmt: skip
        samples = families[f"flink_taskmanager_job_task_{name}"]
        assert {s.labels["task_name"] for s in samples} == {v["name"] for v in vertices}
        assert all(set(s.labels) == TASK_LABELS for s in samples)
        assert len(samples) == sum(v["parallelism"] for v in vertices)
    for name in ("lastCheckpointDuration", "lastCheckpointSize", "numberOfFailedCheckpoints"):
        assert f"flink_jobmanager_job_{name}" in families
    busy = families["flink_taskmanager_job_task_busyTimeMsPerSecond"]
    assert all(0 <= s.value <= 1000 for s in busy)
    marks = families["flink_taskmanager_job_task_currentInputWatermark"]
    assert all(s.value > 1.7e12 for s in marks if s.labels["task_id"] == source["id"])


def test_off_by_default_and_flinks_keys() -> None:
    assert prometheus_ports(Configuration()) is None
    assert prometheus_ports(Configuration({"metrics.reporter.prom.port": "9250-9252"})) == (
        9250, 9251, 9252
    )  # fmt: skip
    factory = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
    assert prometheus_ports(Configuration({"metrics.reporter.prom.factory.class": factory})) == (
        9249,
    )
    with pytest.raises(ConfigurationError, match=r"metrics\.reporter\.prom\.port.*'nine'"):
        prometheus_ports(Configuration({"metrics.reporter.prom.port": "nine"}))
    with pytest.raises(ConfigurationError, match=r"factory\.class"):
        prometheus_ports(Configuration({"metrics.reporter.prom.factory.class": "x.Other"}))


def test_a_taken_port_fails_the_job_naming_the_key(tmp_path: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError, match=r"metrics\.reporter\.prom\.port"):
            start_job(str(tmp_path), "taken", **{"metrics.reporter.prom.port": str(port)})


def test_the_exporter_starts_only_when_configured_and_names_the_key_when_no_port_is_free() -> None:
    assert start_exporter(RestSettings(), _no_view) is None  # the reporter is off

    async def scenario() -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
            with pytest.raises(
                ConfigurationError, match=rf"\({port}: .*'metrics\.reporter\.prom\.port'"
            ):
                start_exporter(RestSettings(prometheus_ports=(port,)), _no_view)
        exporter = start_exporter(RestSettings(prometheus_ports=(0,)), _no_view)
        assert exporter is not None and exporter.port > 0
        exporter.close()

    asyncio.run(scenario())


def _no_view() -> Any:
    raise AssertionError("nothing scrapes in this test")


def _fail_once(marker: str) -> Any:
    def check(n: int) -> int:
        import os

        if n == 50 and not os.path.exists(marker):
            open(marker, "w").close()
            raise ValueError("failing once")
        return n

    return check


def test_restarts_agree_with_rest(tmp_path: Path) -> None:
    from undertow.common import Configuration as Config
    from undertow.common import WatermarkStrategy
    from undertow.datastream import StreamExecutionEnvironment
    from undertow.datastream.connectors.datagen import DataGeneratorSource

    port = _free_port()
    env = StreamExecutionEnvironment.get_execution_environment(Config({
        "execution.target": "local-threads", "rest.port": 0,
        "metrics.reporter.prom.port": str(port), "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2", "restart-strategy.fixed-delay.delay": "50 ms",
        "undertow.metrics.report-interval": "100 ms",
    }))  # fmt: skip
    env.from_source(DataGeneratorSource(lambda i: i, count=None),
                    WatermarkStrategy.no_watermarks(), "numbers").map(
        _fail_once(str(tmp_path / "failed"))
    ).filter(lambda n: n < 0).print()  # fmt: skip
    client = env.execute_async("restarting job")
    url = client.get_rest_address()
    job = Job(client, str(url))
    try:
        wait_for(lambda: job.get(f"/jobs/{job.jid}/metrics?get=numRestarts")[0]["value"] == "1"
                 and job.get(f"/jobs/{job.jid}")["state"] == "RUNNING", "one restart")  # fmt: skip
        families = scrape(f"http://127.0.0.1:{port}/metrics")
        assert families["flink_jobmanager_job_numRestarts"][0].value == 1.0

        def reporting() -> Any:
            families = scrape(f"http://127.0.0.1:{port}/metrics")
            return families.get("flink_taskmanager_job_task_busyTimeMsPerSecond")

        samples = wait_for(reporting, "the restarted attempt's tasks reporting")
        assert {s.labels["task_attempt_num"] for s in samples} == {"1"}
    finally:
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)
