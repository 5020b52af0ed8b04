"""The REST API against a running job: Flink's endpoints, field names and units.

One unbounded job (a generator, keyed map, checkpoints every 100 ms, metrics every 100 ms) runs
for the whole module on ``local-threads``; the tests query it with ``urllib`` the way a script
or dashboard would. The port is always 0 (any free port), so the suite never touches 8081.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from tests.rest_client import Job, fetch, wait_for

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.config import Options
from undertow.core.errors import ConfigurationError, JobCancelledError
from undertow.datastream import JobClient, JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.runtime.master.settings import RestSettings

HEX32 = re.compile(r"[0-9a-f]{32}")
HISTORY_FIELDS = {
    "id", "status", "checkpoint_type", "is_unaligned", "trigger_timestamp",
    "end_to_end_duration", "state_size", "checkpointed_size", "processed_data", "persisted_data",
    "num_subtasks", "num_acknowledged_subtasks",
}  # fmt: skip


def environment(**settings: Any) -> StreamExecutionEnvironment:
    config = {"execution.target": "local-threads", "rest.port": 0}
    config.update(settings)
    return StreamExecutionEnvironment.get_execution_environment(Configuration(config))


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    env = environment(**{
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path_factory.mktemp("checkpoints")),
        "undertow.metrics.report-interval": "100 ms",
    })  # fmt: skip
    env.set_parallelism(2)
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    )
    numbers.key_by(lambda n: n % 8).map(lambda n: n * 2).name("double").filter(
        lambda n: n < 0
    ).print()
    client = env.execute_async("rest test job")
    url = client.get_rest_address()
    assert url is not None and re.fullmatch(r"http://127\.0\.0\.1:\d+", url), url
    try:
        yield Job(client, url)
    finally:
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)


def test_job_overview_and_details(job: Job) -> None:
    wait_for(lambda: job.client.get_job_status().result() is JobStatus.RUNNING, "RUNNING")
    [summary] = job.get("/jobs/overview")["jobs"]
    assert summary["jid"] == job.jid and summary["name"] == "rest test job"
    assert summary["state"] == "RUNNING" and summary["end-time"] == -1
    assert summary["start-time"] > 0 and summary["duration"] >= 0
    assert summary["last-modification"] >= summary["start-time"]
    assert summary["tasks"]["total"] == 4
    assert job.get("/jobs") == {"jobs": [{"id": job.jid, "status": "RUNNING"}]}
    overview = job.get("/overview")
    assert overview["jobs-running"] == 1 and overview["taskmanagers"] >= 1
    assert {"refresh-interval", "flink-version", "features"} <= set(job.get("/config"))

    def details_with_metrics() -> Any:
        details = job.get(f"/jobs/{job.jid}")
        vertices = details["vertices"]
        if all(
            v["metrics"]["write-records"] + v["metrics"]["read-records"]
            and v["metrics"]["read-records-complete"]  # every subtask reported
            for v in vertices
        ):
            return details
        return None

    details = wait_for(details_with_metrics, "record metrics")
    assert details["jid"] == job.jid and details["state"] == "RUNNING"
    assert details["job-type"] == "STREAMING" and details["end-time"] == -1
    assert details["timestamps"]["RUNNING"] >= details["timestamps"]["INITIALIZING"] > 0
    assert details["now"] >= details["start-time"]
    source, double = details["vertices"]
    for vertex in (source, double):
        assert HEX32.fullmatch(vertex["id"])
        assert vertex["parallelism"] == 2 and vertex["status"] == "RUNNING"
        assert vertex["tasks"]["RUNNING"] == 2
        assert vertex["start-time"] > 0 and vertex["end-time"] == -1
    assert source["name"] == "Source: numbers"
    assert double["name"].startswith("double")
    assert source["metrics"]["read-records"] == 0
    assert source["metrics"]["write-records"] > 0 and source["metrics"]["write-bytes"] > 0
    assert double["metrics"]["read-records"] > 0
    assert double["metrics"]["write-records"] == 0  # the chain ends in a sink
    assert double["metrics"]["read-records-complete"] is True
    assert {"accumulated-busy-time", "accumulated-idle-time",
            "accumulated-backpressured-time"} <= set(double["metrics"])  # fmt: skip
    node_double = details["plan"]["nodes"][1]
    assert node_double["inputs"][0]["id"] == source["id"]
    assert node_double["inputs"][0]["ship_strategy"] == "HASH"
    assert details["status-counts"]["RUNNING"] == 2


def test_checkpoints_appear_with_flink_fields(job: Job) -> None:
    path = f"/jobs/{job.jid}/checkpoints"
    stats = wait_for(
        lambda: (s := job.get(path))["counts"]["completed"] >= 2 and s, "two checkpoints"
    )
    counts = stats["counts"]
    assert set(counts) == {"restored", "total", "in_progress", "completed", "failed"}
    assert counts["total"] >= counts["completed"] + counts["failed"]
    assert counts["restored"] == 0
    for name in ("state_size", "checkpointed_size", "end_to_end_duration", "processed_data",
                 "persisted_data"):  # fmt: skip
        assert set(stats["summary"][name]) >= {"min", "max", "avg", "p50", "p99"}
    assert stats["summary"]["state_size"]["max"] > 0
    latest = stats["latest"]["completed"]
    assert latest["status"] == "COMPLETED" and latest["className"] == "completed"
    assert latest["checkpoint_type"] == "CHECKPOINT" and latest["is_unaligned"] is False
    assert latest["is_savepoint"] is False and latest["discarded"] is False
    assert latest["num_subtasks"] == latest["num_acknowledged_subtasks"] == 4
    assert latest["state_size"] > 0 and latest["checkpointed_size"] == latest["state_size"]
    assert latest["end_to_end_duration"] >= 0
    assert latest["latest_ack_timestamp"] >= latest["trigger_timestamp"] > 0
    assert latest["external_path"].endswith(f"{job.jid}/chk-{latest['id']}")
    assert stats["latest"]["savepoint"] is None and stats["latest"]["restored"] is None
    history = stats["history"]
    assert 2 <= len(history) <= 10
    assert [h["id"] for h in history] == sorted((h["id"] for h in history), reverse=True)
    for entry in history:
        assert set(entry) >= HISTORY_FIELDS
        assert entry["status"] in ("COMPLETED", "IN_PROGRESS", "FAILED")

    details = job.get(f"{path}/details/{latest['id']}")
    assert details["id"] == latest["id"] and details["status"] == "COMPLETED"
    vertex_ids = [v["id"] for v in job.get(f"/jobs/{job.jid}")["vertices"]]
    assert sorted(details["tasks"]) == sorted(vertex_ids)
    for vertex_id, task in details["tasks"].items():
        assert task["num_subtasks"] == task["num_acknowledged_subtasks"] == 2
        assert set(task["summary"]["checkpoint_duration"]) == {"sync", "async"}
        assert [s["index"] for s in task["subtasks"]] == [0, 1]
        for subtask in task["subtasks"]:
            assert subtask["status"] == "completed"
            assert subtask["ack_timestamp"] >= details["trigger_timestamp"]
            assert subtask["start_delay"] >= 0
            assert subtask["alignment"]["duration"] >= 0
            assert subtask["checkpoint"]["sync"] >= 0 and subtask["checkpoint"]["async"] >= 0
            assert subtask["unaligned_checkpoint"] is False
        single = job.get(f"{path}/details/{latest['id']}/subtasks/{vertex_id}")
        assert single == task

    config = job.get(f"{path}/config")
    assert config["mode"] == "exactly_once" and config["interval"] == 100
    assert config["externalization"] == {"enabled": False, "delete_on_cancellation": False}


def test_backpressure_ratios_per_subtask(job: Job) -> None:
    for vertex in job.get(f"/jobs/{job.jid}")["vertices"]:
        path = f"/jobs/{job.jid}/vertices/{vertex['id']}/backpressure"
        info = wait_for(
            lambda p=path: (b := job.get(p))["status"] == "ok" and len(b["subtasks"]) == 2 and b,
            f"backpressure of {vertex['name']}",
        )
        assert info["backpressure-level"] in ("ok", "low", "high")
        assert info["end-timestamp"] > 0
        for index, subtask in enumerate(info["subtasks"]):
            assert subtask["subtask"] == index
            assert subtask["backpressure-level"] in ("ok", "low", "high")
            ratios = (subtask["ratio"], subtask["idleRatio"], subtask["busyRatio"])
            assert all(0.0 <= r <= 1.0 for r in ratios), subtask
            assert sum(ratios) == pytest.approx(1.0, abs=0.005), subtask
        worst = max(s["ratio"] for s in info["subtasks"])
        level = "ok" if worst <= 0.1 else "low" if worst <= 0.5 else "high"
        assert info["backpressure-level"] == level


def test_unknown_paths_and_ids_answer_404_with_errors(job: Job) -> None:
    some_vertex = job.get(f"/jobs/{job.jid}")["vertices"][0]["id"]
    for path in ("/nope", "/jobs/0123456789abcdef0123456789abcdef",
                 f"/jobs/{job.jid}/vertices/{'f' * 32}/backpressure",
                 f"/jobs/{job.jid}/checkpoints/details/987654",
                 f"/jobs/{job.jid}/vertices/{some_vertex}/flamegraph"):  # fmt: skip
        status, body = fetch(job.url + path)
        assert status == 404, path
        assert isinstance(body["errors"], list) and body["errors"], body
    assert fetch(job.url + "/nope")[1] == {"errors": ["Not found: /nope"]}
    assert fetch(job.url + "/v1/jobs/overview")[0] == 200  # Flink's versioned prefix


def test_read_only_and_only_for_loopback_names(job: Job) -> None:
    host, port = job.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", "/jobs/overview", body=b"{}")
    response = conn.getresponse()
    assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"
    assert "errors" in json.loads(response.read())
    conn.close()

    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest("GET", "/jobs/overview", skip_host=True)
    conn.putheader("Host", f"attacker.example:{port}")  # DNS rebinding
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 403 and "attacker.example" in json.loads(response.read())["errors"][0]
    assert response.getheader("Access-Control-Allow-Origin") is None
    conn.close()
    assert fetch(f"http://localhost:{port}/jobs")[0] == 200


# -- port configuration ----------------------------------------------------------------------
def port_of(options: dict[str, Any] | None = None) -> int:
    """The REST port as the JobMaster's settings resolve it from ``options``."""
    return RestSettings.of(Configuration(options or {})).port


def test_default_port_is_flinks_and_local_targets_pick_a_free_one() -> None:
    assert Options.REST_PORT.default == 8081
    assert Options.REST_BIND_ADDRESS.default == "127.0.0.1"
    assert port_of({"execution.target": "spark"}) == 8081
    assert port_of({"execution.target": "local"}) == 0
    assert port_of({"execution.target": "local-threads"}) == 0
    # The default target is spark; deploy.executor sets rest.port 0 for a local Spark master.
    assert port_of() == 8081
    assert port_of({"execution.target": "local", "rest.port": 8081}) == 8081
    assert port_of({"rest.port": "-1"}) == -1
    with pytest.raises(ConfigurationError, match=r"rest\.port"):
        Configuration({"rest.port": "-2"}).get(Options.REST_PORT)


def test_a_taken_port_fails_the_job_at_its_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = environment(**{"rest.port": port})
        env.from_collection([1, 2, 3]).print()
        with pytest.raises(ConfigurationError) as caught:
            env.execute_async("blocked")
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "'rest.port'" in message and "-1" in message


def run_small_job(port: int) -> tuple[str | None, JobClient]:
    env = environment(**{"rest.port": port})
    env.from_collection([1, 2, 3]).map(lambda x: x * 2).print()
    client = env.execute_async("small")
    address = client.get_rest_address()
    client.get_job_execution_result(30)
    return address, client


def test_rest_api_is_printed_and_closes_when_the_job_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    address, _ = run_small_job(0)
    assert address is not None
    assert f"REST API at {address}" in capsys.readouterr().err
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(address + "/jobs", timeout=5)


def test_port_minus_one_disables_the_rest_api(capsys: pytest.CaptureFixture[str]) -> None:
    address, client = run_small_job(-1)
    assert address is None and client.get_rest_address() is None
    assert "REST API" not in capsys.readouterr().err


def test_two_jobs_in_a_row_can_use_the_same_port() -> None:
    """The endpoint lives as long as its job: the next job may take the same fixed port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first, _ = run_small_job(port)
    second, _ = run_small_job(port)
    assert first == second == f"http://127.0.0.1:{port}"
