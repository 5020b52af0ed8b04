"""Failure visibility: ``GET /jobs/:jobid/exceptions`` in Flink's shape, and the console report
of a job started with ``execute_async`` that fails.

Flink's fields (REST API reference, ``JobExceptionsInfoWithHistory``): the legacy top level
``root-exception``, ``timestamp``, ``all-exceptions``, ``truncated``, and ``exceptionHistory``
with ``entries`` and ``truncated``; an entry (``RootExceptionInfo``) has ``exceptionName``,
``stacktrace``, ``timestamp``, ``failureLabels``, ``concurrentExceptions`` and, when the failure
came from a task, ``taskName``, ``location``, ``endpoint``, ``taskManagerId``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.rest_client import fetch, wait_for

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.errors import JobCancelledError, JobExecutionError, RestoreError
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.runtime.master.exception_history import (
    ExceptionHistory,
    TaskOrigin,
    failure_record,
)
from undertow.runtime.master.rest import responses

FLINK_TOP_LEVEL = {"root-exception", "timestamp", "all-exceptions", "truncated",
                   "exceptionHistory"}  # fmt: skip
FLINK_HISTORY = {"entries", "truncated"}
FLINK_ENTRY_ALWAYS = {"exceptionName", "stacktrace", "timestamp", "failureLabels",
                      "concurrentExceptions"}  # fmt: skip
FLINK_ENTRY_OF_A_TASK = {"taskName", "location", "endpoint", "taskManagerId"}
#: Flink 1.x ``ExecutionExceptionInfo`` (the legacy ``all-exceptions`` items)
FLINK_LEGACY_ITEM = {"exception", "task", "location", "timestamp", "taskManagerId"}


def _fetch(url: str) -> Any:
    status, body = fetch(url)
    assert status == 200, (url, status, body)
    return body


class FailTwice:
    """A map that fails in its first two attempts (counted in a file), then passes."""

    def __init__(self, counter: Path) -> None:
        self.counter = counter

    def __call__(self, value: int) -> int:
        failures = int(self.counter.read_text()) if self.counter.exists() else 0
        if failures < 2:
            self.counter.write_text(str(failures + 1))
            # a message whose last line reads like ``Name: message``: the history must name
            # the class raised, not parse it from the traceback's text
            raise ValueError(f"attempt-bound failure number {failures + 1}\nDetail: retry")
        return value


def test_every_failed_attempt_is_served_in_flinks_shape(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": 0,
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": 5,
        "restart-strategy.fixed-delay.delay": "10 ms",
    }))  # fmt: skip
    env.set_parallelism(1)
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, count=None, records_per_second=200),
        WatermarkStrategy.no_watermarks(),
        "numbers",
    )
    numbers.map(FailTwice(tmp_path / "failures")).name("picky").filter(lambda n: n < 0).print()
    client = env.execute_async("failing twice")
    url = client.get_rest_address()
    assert url is not None
    try:
        path = f"{url}/jobs/{client.get_job_id()}/exceptions"
        body = wait_for(
            lambda: (b := _fetch(path))["exceptionHistory"]["entries"][1:] and b,
            "two failures in the history", timeout=30,
        )  # fmt: skip
        assert set(body) == FLINK_TOP_LEVEL
        history = body["exceptionHistory"]
        assert set(history) == FLINK_HISTORY and history["truncated"] is False
        newest, oldest = history["entries"]
        for entry, number in ((newest, 2), (oldest, 1)):
            assert set(entry) == FLINK_ENTRY_ALWAYS | FLINK_ENTRY_OF_A_TASK
            assert entry["exceptionName"] == "ValueError"
            assert f"attempt-bound failure number {number}" in entry["stacktrace"]
            assert "Traceback (most recent call last)" in entry["stacktrace"]
            assert entry["taskName"].endswith("(1/1)") and "picky" in entry["taskName"]
            assert entry["location"].startswith("worker 0 (")
            assert entry["failureLabels"] == {} and entry["concurrentExceptions"] == []
        assert newest["timestamp"] >= oldest["timestamp"] > 0
        assert body["root-exception"] == newest["stacktrace"]
        assert body["timestamp"] == newest["timestamp"] and body["truncated"] is False
        [legacy] = body["all-exceptions"]
        assert set(legacy) == FLINK_LEGACY_ITEM and legacy["task"] == newest["taskName"]
        # the failed attempt's workers shut down (the job is FAILING meanwhile, as Flink's is
        # while it cancels the tasks; under load long enough to be seen), then it restarts
        wait_for(lambda: client.get_job_status().result() is JobStatus.RUNNING, "the third attempt",
                 timeout=30)  # fmt: skip
    finally:
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)


def test_a_failing_execute_async_job_prints_its_root_cause_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads", "rest.port": -1})
    )
    env.set_parallelism(2)

    def explode(value: int) -> int:
        if value == 5:
            raise KeyError(f"no price for item {value}")
        return value

    env.from_collection(list(range(10))).map(explode).name("pricing").print()
    client = env.execute_async("pricing job")
    # nobody waits on the result: the report must come without it
    wait_for(lambda: client.get_job_status().result() is JobStatus.FAILED, "FAILED", timeout=30)
    err = capsys.readouterr().err
    header = next(line for line in err.splitlines() if "attempt 0 failed" in line)
    assert header.startswith(f"[undertow] job {client.get_job_id()[:8]} attempt 0 failed on ")
    assert "operator 'pricing' (subtask " in header and "/2 of " in header, header
    assert "KeyError" in header and "no price for item 5" in header
    assert "Traceback (most recent call last)" in err
    assert "in explode" in err, "the user's frame is in the printed traceback"
    with pytest.raises(JobExecutionError):
        client.get_job_execution_result(10)


def test_no_failure_no_exceptions_and_a_failure_outside_tasks() -> None:
    """Before any failure Flink answers nulls and empty lists; a failure that came from no task
    (a worker that died) leaves out ``taskName`` and ``location``."""
    empty = responses.job_exceptions(_view(ExceptionHistory()))
    assert empty == {"root-exception": None, "timestamp": None, "all-exceptions": [],
                     "truncated": False,
                     "exceptionHistory": {"entries": [], "truncated": False}}  # fmt: skip
    history = ExceptionHistory(size=2)
    for attempt in range(3):
        history.record(failure_record(
            JobExecutionError(f"worker 0 exited unexpectedly (exit code {attempt})"), attempt,
            1000 + attempt,
        ))  # fmt: skip
    body = responses.job_exceptions(_view(history))
    entries = body["exceptionHistory"]["entries"]
    assert [e["timestamp"] for e in entries] == [1002, 1001]
    assert body["exceptionHistory"]["truncated"] is True
    assert set(entries[0]) == FLINK_ENTRY_ALWAYS
    assert entries[0]["exceptionName"] == "JobExecutionError"
    assert body["all-exceptions"] == []


def test_a_task_failure_is_recorded_under_the_class_the_worker_raised() -> None:
    remote = ('Traceback (most recent call last):\n  File "job.py", line 3, in f\n'
              "    raise mod.sub.ParseError('x: y')\nmod.sub.ParseError: x: y\n")  # fmt: skip
    record = failure_record(
        JobExecutionError("job failed: operator 'parse' raised ParseError: x: y",
                          remote_traceback=remote, exception_name="ParseError"), 0, 5,
        TaskOrigin.of("parse", 2, 4, "worker 1 (h:1)"),
    )  # fmt: skip
    assert record.exception_name == "ParseError"
    assert record.origin is not None and record.origin.task_name == "parse (3/4)"
    assert record.stacktrace.startswith("job failed: operator 'parse'")
    assert record.stacktrace.endswith("mod.sub.ParseError: x: y")


def test_a_workers_restore_refusal_is_recorded_with_its_path_and_the_workers_traceback() -> None:
    remote = ('Traceback (most recent call last):\n  File "builder.py", line 9, in restore\n'
              "undertow.core.errors.RestoreError: checkpoint 4 has state of 'gen'\n")  # fmt: skip
    refused = RestoreError(
        "checkpoint 4 has state of 'gen'", path="/chk-4", remote_traceback=remote
    )
    record = failure_record(refused, 0, 5)
    assert record.exception_name == "RestoreError"
    assert record.message == "cannot restore from /chk-4: checkpoint 4 has state of 'gen'"
    assert record.stacktrace.endswith("RestoreError: checkpoint 4 has state of 'gen'")
    assert 'File "builder.py"' in record.stacktrace


def _view(history: ExceptionHistory) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(exceptions=history.entries(), exceptions_truncated=history.truncated)


def test_max_exceptions_limits_the_history_as_in_flink() -> None:
    from undertow.runtime.master.rest.server import RestEndpoint

    history = ExceptionHistory()
    for attempt in range(3):
        history.record(failure_record(JobExecutionError(f"failure {attempt}"), attempt, attempt))
    view = _view(history)
    view.job_id = "d" * 32
    endpoint = RestEndpoint(lambda: view, "127.0.0.1", 0)
    path = f"/jobs/{'d' * 32}/exceptions"
    status, body = endpoint.route(path, "maxExceptions=2")
    assert status == 200 and body["exceptionHistory"]["truncated"] is True
    assert [e["timestamp"] for e in body["exceptionHistory"]["entries"]] == [2, 1]
    status, body = endpoint.route(path)
    assert len(body["exceptionHistory"]["entries"]) == 3
    assert body["exceptionHistory"]["truncated"] is False
    assert endpoint.route(path, "maxExceptions=many")[0] == 400
    assert endpoint.route(f"/jobs/{'e' * 32}/exceptions")[0] == 404
