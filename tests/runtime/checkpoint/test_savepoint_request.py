"""The savepoint request and the pure decision whether one may start."""

from __future__ import annotations

import pytest

from undertow.common import SavepointFormatType
from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.savepoint import (
    SavepointRequest,
    refuse_restore,
    refuse_savepoint,
    savepoint_directory,
    savepoint_properties,
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


def test_format_type_is_flinks_enum_and_parses_names_only() -> None:
    assert [f.name for f in SavepointFormatType] == ["CANONICAL", "NATIVE"]
    assert SavepointFormatType.DEFAULT is SavepointFormatType.CANONICAL  # Java's alias
    assert SavepointFormatType.parse("native", "x") is SavepointFormatType.NATIVE
    assert SavepointFormatType.parse(SavepointFormatType.NATIVE, "x") is SavepointFormatType.NATIVE
    with pytest.raises(ValueError, match=r"trigger_savepoint\(format_type\): 'binary'"):
        SavepointFormatType.parse("binary", "trigger_savepoint(format_type)")
    assert SavepointRequest("/sp").format_type is SavepointFormatType.CANONICAL
    native = SavepointRequest("/sp", stop=True, format_type=SavepointFormatType.NATIVE)
    assert native.kind == "native stop-with-savepoint"


@pytest.mark.parametrize(
    ("fmt", "taken_by", "restored_into", "refused"),
    [
        (SavepointFormatType.CANONICAL, "rocksdb", "hashmap", False),
        (SavepointFormatType.CANONICAL, "hashmap", "rocksdb", False),
        (SavepointFormatType.NATIVE, "rocksdb", "rocksdb", False),
        (SavepointFormatType.NATIVE, "hashmap", "hashmap", False),
        (SavepointFormatType.NATIVE, "rocksdb", "hashmap", True),
        (SavepointFormatType.NATIVE, "hashmap", "rocksdb", True),
    ],
)
def test_a_native_savepoint_restores_only_into_its_backend(
    fmt: SavepointFormatType, taken_by: str, restored_into: str, refused: bool
) -> None:
    properties = savepoint_properties(SavepointRequest("/sp", format_type=fmt), taken_by)
    why = refuse_restore(properties, "/sp/savepoint-abc123-4", restored_into)
    assert (why is not None) == refused, why
    if why is not None:
        for part in ("/sp/savepoint-abc123-4", "NATIVE", repr(taken_by), repr(restored_into)):
            assert part in why, (part, why)
    assert refuse_restore({}, "/chk/job/chk-3", restored_into) is None  # a checkpoint
