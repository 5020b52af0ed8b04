"""Savepoint trigger and cancel over REST (:mod:`undertow.runtime.master.rest.job_actions`),
against a recording control: what reaches the JobMaster, and what is refused before."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from undertow.core.errors import ConfigurationError
from undertow.core.modes import SavepointFormatType
from undertow.runtime.master.rest.access import RestAccess
from undertow.runtime.master.rest.job_actions import answer, rest_format_type

JOB = "c" * 32
VIEW: Any = SimpleNamespace(job_id=JOB)
JSON = {"content-type": "application/json"}


class Control:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[Any] = []
        self.fail = fail

    def savepoint_trigger(
        self, target_directory: str | None, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        if self.fail:
            raise ConfigurationError("option 'execution.checkpointing.savepoint-dir' is unset")
        self.calls.append(("savepoint", target_directory, unaligned, format_type))
        return "trigger-1"

    def cancel(self) -> None:
        self.calls.append("cancel")


def post(control: Any, body: bytes, headers: dict[str, str] = JSON,
         access: RestAccess | None = None) -> tuple[int, Any]:  # fmt: skip
    response = answer("POST", f"/jobs/{JOB}/savepoints", headers, body, len(body),
                      lambda: VIEW, control, access)  # fmt: skip
    assert response is not None
    return response.status, json.loads(response.payload)


def test_a_savepoint_trigger_reaches_the_job_with_its_fields() -> None:
    control = Control()
    body = b'{"target-directory": "/tmp/sp", "formatType": "NATIVE", "unaligned": true}'
    assert post(control, body) == (202, {"request-id": "trigger-1"})
    assert control.calls == [("savepoint", "/tmp/sp", True, SavepointFormatType.NATIVE)]


def test_refusals_answer_before_the_job_is_asked() -> None:
    control = Control()
    assert post(control, b"{}", headers={"content-type": "text/plain"})[0] == 415
    assert post(control, b'{"cancel-job": true}')[0] == 400
    assert post(control, b'{"formatType": "ZIP"}')[0] == 400
    assert post(control, b"not json")[0] == 400
    outside = RestAccess("token", False, "/tmp/allowed")
    assert post(control, b'{"target-directory": "/etc"}', access=outside)[0] == 403
    assert control.calls == []
    status, errors = post(Control(fail=True), b"{}")
    assert status == 400 and "savepoint-dir" in errors["errors"][0]


def test_cancel_and_what_is_not_served_here() -> None:
    control = Control()
    response = answer("PATCH", f"/jobs/{JOB}?mode=cancel", {}, b"", 0, lambda: VIEW, control)
    assert response is not None and response.status == 202 and control.calls == ["cancel"]
    other = answer("PATCH", f"/jobs/{JOB}?mode=stop", {}, b"", 0, lambda: VIEW, control)
    assert other is not None and other.status == 400
    assert answer("GET", f"/jobs/{JOB}", {}, b"", 0, lambda: VIEW, control) is None
    assert answer("PATCH", f"/jobs/{JOB}", {}, b"", 0, lambda: VIEW, object()) is None
    assert rest_format_type({}) is SavepointFormatType.CANONICAL
