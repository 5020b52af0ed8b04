"""``POST /jobs/:jobid/stop`` and ``GET /jobs/:jobid/savepoints/:triggerid`` against a fake
JobMaster: what is accepted, what is refused and why, and what the status answers."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from undertow.core.errors import ConfigurationError
from undertow.core.modes import SavepointFormatType
from undertow.runtime.master.rest.server import RestEndpoint

JOB = "c" * 32
#: the stop endpoints only read the job id of the view
VIEW: Any = SimpleNamespace(job_id=JOB)


class FakeJobMaster:
    def __init__(self, configured_directory: str | None = None) -> None:
        self.stops: list[tuple[str | None, bool]] = []
        self.unaligned: list[bool] = []
        self.formats: list[SavepointFormatType] = []
        self.configured_directory = configured_directory

    def stop_with_savepoint_trigger(
        self, target_directory: str | None, drain: bool, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        self.unaligned.append(unaligned)
        self.formats.append(format_type)
        if target_directory is None and self.configured_directory is None:
            raise ConfigurationError("stop-with-savepoint of job x: no savepoint directory: "
                                     "set execution.checkpointing.savepoint-dir")  # fmt: skip
        self.stops.append((target_directory, drain))
        return "t1"

    def savepoint_operation(self, trigger_id: str) -> dict[str, Any] | None:
        if trigger_id != "t1":
            return None
        return {"status": {"id": "COMPLETED"}, "operation": {"location": "/sp/savepoint-x-3"}}


def post(endpoint: RestEndpoint, path: str, body: bytes, content_type: str) -> Any:
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    return endpoint.respond(head, body, len(body))


def test_stop_starts_a_savepoint_and_its_status_is_served() -> None:
    master = FakeJobMaster()
    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0, master)
    body = json.dumps({"targetDirectory": "/sp", "drain": True}).encode()

    response = post(endpoint, f"/jobs/{JOB}/stop", body, "application/json")

    assert (response.status, response.body) == (202, {"request-id": "t1"})
    assert master.stops == [("/sp", True)]
    status, answer = endpoint.route(f"/jobs/{JOB}/savepoints/t1")
    assert status == 200 and answer["operation"]["location"] == "/sp/savepoint-x-3"
    assert endpoint.route(f"/jobs/{JOB}/savepoints/nope")[0] == 404


def test_stop_is_refused_without_json_a_directory_or_the_right_job() -> None:
    master = FakeJobMaster()
    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0, master)
    good = json.dumps({"targetDirectory": "/sp"}).encode()
    assert post(endpoint, f"/jobs/{JOB}/stop", good, "text/plain").status == 415
    assert post(endpoint, f"/jobs/{JOB}/stop", b"{nope", "application/json").status == 400
    empty_dir = json.dumps({"targetDirectory": "", "drain": False}).encode()
    assert post(endpoint, f"/jobs/{JOB}/stop", empty_dir, "application/json").status == 400
    assert post(endpoint, f"/jobs/{JOB}/stop", b"[]", "application/json").status == 400
    assert post(endpoint, f"/jobs/{'d' * 32}/stop", good, "application/json").status == 404
    assert post(endpoint, f"/jobs/{JOB}/checkpoints", good, "application/json").status == 405
    assert master.stops == []


def test_a_read_only_endpoint_refuses_the_stop() -> None:
    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0)
    body = json.dumps({"targetDirectory": "/sp"}).encode()
    assert post(endpoint, f"/jobs/{JOB}/stop", body, "application/json").status == 405


def test_stop_without_a_directory_uses_the_configured_one_or_names_the_option() -> None:
    no_dir = json.dumps({"drain": False}).encode()
    configured = FakeJobMaster(configured_directory="/configured")
    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0, configured)
    assert post(endpoint, f"/jobs/{JOB}/stop", no_dir, "application/json").status == 202
    assert configured.stops == [(None, False)]

    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0, FakeJobMaster())
    response = post(endpoint, f"/jobs/{JOB}/stop", no_dir, "application/json")
    assert response.status == 400
    assert "execution.checkpointing.savepoint-dir" in response.body["errors"][0]


def test_stop_passes_unaligned_on_and_refuses_a_non_boolean() -> None:
    master = FakeJobMaster()
    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0, master)
    body = json.dumps({"targetDirectory": "/sp", "unaligned": True}).encode()

    assert post(endpoint, f"/jobs/{JOB}/stop", body, "application/json").status == 202
    assert master.stops == [("/sp", False)] and master.unaligned == [True]
    bad = json.dumps({"targetDirectory": "/sp", "unaligned": "yes"}).encode()
    response = post(endpoint, f"/jobs/{JOB}/stop", bad, "application/json")
    assert response.status == 400 and "unaligned" in response.body["errors"][0]
    assert master.unaligned == [True], "nothing started"


def test_stop_passes_flinks_format_type_on_and_refuses_another_value() -> None:
    master = FakeJobMaster()
    endpoint = RestEndpoint(lambda: VIEW, "127.0.0.1", 0, master)
    native = json.dumps({"targetDirectory": "/sp", "formatType": "NATIVE"}).encode()
    plain = json.dumps({"targetDirectory": "/sp"}).encode()

    assert post(endpoint, f"/jobs/{JOB}/stop", native, "application/json").status == 202
    assert post(endpoint, f"/jobs/{JOB}/stop", plain, "application/json").status == 202
    assert master.formats == [SavepointFormatType.NATIVE, SavepointFormatType.CANONICAL]
    for bad in ("native", "BINARY", 1, None):
        body = json.dumps({"targetDirectory": "/sp", "formatType": bad}).encode()
        response = post(endpoint, f"/jobs/{JOB}/stop", body, "application/json")
        assert response.status == 400 and "formatType" in response.body["errors"][0], bad
    assert len(master.formats) == 2, "nothing started"
