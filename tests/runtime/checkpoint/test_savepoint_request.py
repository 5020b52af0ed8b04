"""The savepoint request and the pure decision whether one may start."""

from __future__ import annotations

import pytest

from undertow.runtime.checkpoint.savepoint import SavepointRequest, refuse_savepoint


def test_kinds_and_drain_only_with_stop() -> None:
    assert SavepointRequest("/sp").kind == "savepoint"
    assert SavepointRequest("/sp", stop=True).kind == "stop-with-savepoint"
    assert SavepointRequest("/sp", stop=True, drain=True).kind == "stop-with-savepoint (drain)"
    with pytest.raises(ValueError, match="drain applies to stop-with-savepoint only"):
        SavepointRequest("/sp", drain=True)


@pytest.mark.parametrize(
    ("request_", "enabled", "stopping", "why"),
    [
        (SavepointRequest(""), True, False, "needs a target directory"),
        (SavepointRequest("/sp"), False, False, "execution.checkpointing.interval"),
        (SavepointRequest("/sp", stop=True), True, True, "already stopping"),
        (SavepointRequest("/sp"), True, True, "already stopping"),
    ],
)
def test_refusals_name_the_job_and_the_reason(
    request_: SavepointRequest, enabled: bool, stopping: bool, why: str
) -> None:
    problem = refuse_savepoint(
        request_, checkpointing_enabled=enabled, stopping=stopping, job_id="job-7"
    )
    assert problem is not None and "job-7" in problem and why in problem


def test_a_running_job_with_checkpoints_takes_it() -> None:
    request = SavepointRequest("/sp", stop=True)
    assert refuse_savepoint(request, checkpointing_enabled=True, stopping=False,
                            job_id="j") is None  # fmt: skip
