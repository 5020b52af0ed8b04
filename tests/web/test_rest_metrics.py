"""The plan, metrics and watermark endpoints, checked against Flink's REST documentation.

Flink's shapes (flink docs/static/generated/rest_v1_dispatcher.yml and the metric REST docs):
``JobPlanInfo`` is ``{"plan": ...}``; ``MetricCollectionResponseBody`` is serialized as a list of
``{"id"}`` (no ``get``) or ``{"id", "value"}`` with string values; the aggregated subtask
metrics are ``{"id", "min", "max", "avg", "sum"}``; vertex metric ids are
``<subtask>.<name>``; the watermarks endpoint lists ``<subtask>.currentInputWatermark``.
"""

from __future__ import annotations

from typing import Any

from tests.rest_client import Job, fetch, wait_for

JOB_METRICS = {
    "numRestarts", "lastCheckpointDuration", "lastCheckpointSize",
    "numberOfCompletedCheckpoints", "numberOfFailedCheckpoints",
    "numberOfInProgressCheckpoints", "totalNumberOfCheckpoints",
}  # fmt: skip
TASK_METRICS = {
    "numRecordsIn", "numRecordsOut", "numRecordsInPerSecond", "numRecordsOutPerSecond",
    "busyTimeMsPerSecond", "backPressuredTimeMsPerSecond", "idleTimeMsPerSecond",
    "currentInputWatermark",
}  # fmt: skip


def test_plan_is_flinks_job_plan_info(job: Job) -> None:
    body = job.get(f"/jobs/{job.jid}/plan")
    assert set(body) == {"plan"}
    plan = body["plan"]
    assert {"jid", "name", "type", "nodes"} <= set(plan) and plan["jid"] == job.jid
    vertices = job.get(f"/jobs/{job.jid}")["vertices"]
    assert [n["id"] for n in plan["nodes"]] == [v["id"] for v in vertices]
    node = plan["nodes"][1]
    assert {"id", "parallelism", "operator", "operator_strategy", "description", "inputs",
            "optimizer_properties"} <= set(node)  # fmt: skip
    assert node["inputs"][0]["ship_strategy"] == "HASH"
    assert node["description"].startswith("doubles each number -> ")  # set_description
    assert {"num", "id", "ship_strategy", "exchange"} <= set(node["inputs"][0])


def test_job_metrics_list_and_get(job: Job) -> None:
    names = {m["id"] for m in job.get(f"/jobs/{job.jid}/metrics")}
    assert names >= JOB_METRICS

    def completed() -> dict[str, str] | None:
        body = job.get(f"/jobs/{job.jid}/metrics?get=numberOfCompletedCheckpoints,numRestarts,"
                       "lastCheckpointSize,nosuchmetric")  # fmt: skip
        values = {m["id"]: m["value"] for m in body}
        return values if int(values["numberOfCompletedCheckpoints"]) >= 1 else None

    values = wait_for(completed, "a completed checkpoint")
    assert set(values) == {"numberOfCompletedCheckpoints", "numRestarts", "lastCheckpointSize"}
    assert all(isinstance(v, str) for v in values.values())
    assert values["numRestarts"] == "0" and int(values["lastCheckpointSize"]) > 0


def test_vertex_subtask_and_aggregated_metrics(job: Job) -> None:
    source = job.get(f"/jobs/{job.jid}")["vertices"][0]["id"]
    base = f"/jobs/{job.jid}/vertices/{source}"

    def emitted() -> list[dict[str, str]] | None:
        body = job.get(f"{base}/metrics?get=0.numRecordsOut,1.numRecordsOut")
        return body if len(body) == 2 and all(int(m["value"]) > 0 for m in body) else None

    wait_for(emitted, "both source subtasks reporting records")
    ids = {m["id"] for m in job.get(f"{base}/metrics")}
    assert {f"{i}.{name}" for i in (0, 1) for name in TASK_METRICS} <= ids
    subtask = job.get(f"{base}/subtasks/1/metrics?get=numRecordsOutPerSecond,busyTimeMsPerSecond")
    assert [m["id"] for m in subtask] == ["numRecordsOutPerSecond", "busyTimeMsPerSecond"]
    assert 0 <= float(subtask[1]["value"]) <= 1000
    aggregated = job.get(f"{base}/subtasks/metrics?get=numRecordsOut&agg=min,sum&subtasks=0-1")
    assert len(aggregated) == 1 and set(aggregated[0]) == {"id", "min", "sum"}
    assert aggregated[0]["sum"] >= 2 * aggregated[0]["min"] > 0
    every = job.get(f"{base}/subtasks/metrics?get=numRecordsOut")[0]
    assert set(every) == {"id", "min", "max", "avg", "sum"}
    status, errors = fetch(f"{job.url}{base}/subtasks/metrics?get=numRecordsOut&agg=median")
    assert status == 400 and "median" in errors["errors"][0]
    status, errors = fetch(f"{job.url}{base}/subtasks/7/metrics")
    assert status == 404 and "Subtask 7" in errors["errors"][0]


def test_watermarks_per_subtask(job: Job) -> None:
    vertices = job.get(f"/jobs/{job.jid}")["vertices"]
    for vertex in vertices:
        path = f"/jobs/{job.jid}/vertices/{vertex['id']}/watermarks"

        def advanced(path: str = path, n: int = vertex["parallelism"]) -> list[Any] | None:
            body = job.get(path)
            done = len(body) == n
            return body if done and all(int(m["value"]) > 1_700_000_000_000 for m in body) else None

        marks = wait_for(advanced, f"watermarks of {vertex['name']}")
        assert sorted(m["id"] for m in marks) == [
            f"{i}.currentInputWatermark" for i in range(vertex["parallelism"])
        ]


def test_dashboard_files_are_served_and_nothing_else(job: Job) -> None:
    import urllib.request

    with urllib.request.urlopen(job.url + "/", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/html")
        assert b"/static/app.js" in response.read()
    with urllib.request.urlopen(job.url + "/static/app.js", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/javascript")
    for path in ("/static/../__init__.py", "/static/nothing.js", "/static/__init__.py"):
        status, _ = fetch(job.url + path)
        assert status == 404, path
