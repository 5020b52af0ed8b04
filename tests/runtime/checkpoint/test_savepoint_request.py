"""The savepoint request and the pure decision whether one may start."""

from __future__ import annotations

import pytest

from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.savepoint import (
    SavepointRequest,
    refuse_savepoint,
    savepoint_directory,
)


def test_kinds_and_drain_only_with_stop() -> None:
    assert SavepointRequest("/sp").kind == "savepoint"
    assert SavepointRequest("/sp", stop=True).kind == "stop-with-savepoint"
    assert SavepointRequest("/sp", stop=True, drain=True).kind == "stop-with-savepoint (drain)"
    with pytest.raises(ValueError, match="drain applies to stop-with-savepoint only"):
        SavepointRequest("/sp", drain=True)


@pytest.mark.parametrize(
    ("request_", "batch", "stopping", "why"),
    [
        (SavepointRequest(""), False, False, "execution.checkpointing.savepoint-dir"),
        (SavepointRequest("/sp"), True, False, "BATCH"),
        (SavepointRequest("/sp", stop=True), False, True, "already stopping"),
        (SavepointRequest("/sp"), False, True, "already stopping"),
    ],
)
def test_refusals_name_the_job_and_the_reason(
    request_: SavepointRequest, batch: bool, stopping: bool, why: str
) -> None:
    problem = refuse_savepoint(request_, batch=batch, stopping=stopping, job_id="job-7")
    assert problem is not None and "job-7" in problem and why in problem


def test_a_running_streaming_job_takes_it_with_or_without_periodic_checkpoints() -> None:
    request = SavepointRequest("/sp", stop=True)
    assert refuse_savepoint(request, batch=False, stopping=False, job_id="j") is None


def test_the_directory_is_the_requested_one_else_the_configured_one() -> None:
    assert savepoint_directory("/asked", "/configured", "j", "savepoint") == "/asked"
    assert savepoint_directory("", "/configured", "j", "savepoint") == "/configured"
    assert savepoint_directory(None, "/configured", "j", "savepoint") == "/configured"


def test_without_any_directory_the_error_names_the_option_and_the_job() -> None:
    with pytest.raises(ConfigurationError, match=r"stop-with-savepoint of job job-7: .*"
                       r"execution\.checkpointing\.savepoint-dir"):  # fmt: skip
        savepoint_directory(None, "", "job-7", "stop-with-savepoint")
