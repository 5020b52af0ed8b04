"""The dashboard and metric routes (:mod:`undertow.runtime.master.rest.ui_routes`) on a fake
job view: what they serve, and Flink's error bodies for an unknown job, vertex or query."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from undertow.runtime.master.rest.ui_routes import RawResponse, answer, responses_errors

JOB = "a" * 32
VERTEX: Any = SimpleNamespace(parallelism=2, metrics=[None, None])
VIEW: Any = SimpleNamespace(job_id=JOB, vertex=lambda vid: VERTEX if vid == "v1" else None)


def get(target: str, method: str = "GET") -> RawResponse | None:
    return answer(method, target, lambda: VIEW)


def body(response: RawResponse | None) -> Any:
    assert response is not None
    return json.loads(response.payload)


def test_the_dashboard_is_served_and_head_has_no_body() -> None:
    page = get("/")
    assert page is not None and page.status == 200 and b"<html" in page.payload.lower()
    head = get("/v1/index.html", "HEAD")
    assert head is not None and head.head_only and head.status == 200
    missing = get("/static/nothing.js")
    assert missing is not None and missing.status == 404


def test_unknown_job_vertex_and_subtask_answer_404_in_flinks_shape() -> None:
    assert body(get(f"/jobs/{'b' * 32}/metrics")) == responses_errors(f"Job {'b' * 32} not found")
    assert get(f"/jobs/{JOB}/vertices/v9/watermarks").status == 404  # type: ignore[union-attr]
    gone = get(f"/jobs/{JOB}/vertices/v1/subtasks/5/metrics")
    assert gone is not None and gone.status == 404
    assert "parallelism 2" in body(gone)["errors"][0]


def test_a_bad_query_answers_400_and_other_requests_are_not_served_here() -> None:
    bad = get(f"/jobs/{JOB}/vertices/v1/subtasks/metrics?get=x&subtasks=7")
    assert bad is not None and bad.status == 400 and "outside 0-1" in body(bad)["errors"][0]
    assert body(get(f"/jobs/{JOB}/vertices/v1/watermarks")) == []  # no samples yet
    assert get(f"/jobs/{JOB}", "POST") is None and get("/overview") is None
