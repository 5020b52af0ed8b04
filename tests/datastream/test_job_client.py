"""JobClient's PyFlink-shaped futures (get_job_status, get_job_execution_result, cancel,
get_accumulators), of PyFlink's ``CompletableFuture`` type."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from undertow.common import CompletableFuture, Configuration, JobStatus, completable_future
from undertow.core.errors import UndertowError
from undertow.datastream import JobExecutionResult, StreamExecutionEnvironment
from undertow.datastream.job_client import JobClient


def _env() -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment(Configuration({"execution.target": "local-threads"}))


def test_get_job_execution_result_is_a_future_of_the_result() -> None:
    env = _env()
    env.from_collection([1, 2]).map(lambda x: x).print()
    client = env.execute_async("future")
    assert isinstance(client, JobClient)
    future = client.get_job_execution_result()
    assert isinstance(future, Future)
    assert client.get_job_execution_result() is future
    result = future.result(timeout=60)
    assert isinstance(future, CompletableFuture)
    assert isinstance(result, JobExecutionResult)
    assert result.get_job_id() == client.get_job_id()
    assert client.get_accumulators().result(timeout=5) == result.get_all_accumulator_results()


def test_the_future_carries_the_jobs_failure() -> None:
    def boom(value: int) -> int:
        raise ValueError(f"bad value {value}")

    env = _env()
    env.from_collection([1]).map(boom).print()
    future = env.execute_async("failing").get_job_execution_result()
    with pytest.raises(UndertowError, match="bad value 1"):
        future.result(timeout=60)
    assert isinstance(future.exception(), UndertowError)


def test_get_job_status_is_a_done_future_of_the_status_now() -> None:
    env = _env()
    env.from_collection([1, 2]).map(lambda x: x).print()
    client = env.execute_async("status")
    client.get_job_execution_result().result(timeout=60)
    status = client.get_job_status()
    assert isinstance(status, CompletableFuture) and status.done()
    assert completable_future.CompletableFuture is CompletableFuture is Future
    assert status.result() is JobStatus.FINISHED


@pytest.mark.timeout(60)
def test_collecting_a_job_that_failed_before_its_first_record_raises_its_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """execute_and_collect asks for its sink's records after the job started: a job that
    failed before any record reached the sink (a refused restore) may have ended by then.
    The iterator must still end with the failure; a queue made after the end used to wait
    forever (tests/storage/test_legacy_layout.py hung so in CI, 2026-11-30)."""

    def boom(value: int) -> int:
        raise ValueError(f"bad value {value}")

    execute_async = StreamExecutionEnvironment.execute_async

    def ended_first(self: StreamExecutionEnvironment, name: str | None = None) -> JobClient:
        client = execute_async(self, name)
        with pytest.raises(UndertowError):
            client.get_job_execution_result().result(timeout=30)
        return client

    monkeypatch.setattr(StreamExecutionEnvironment, "execute_async", ended_first)
    env = _env()
    with pytest.raises(UndertowError, match="bad value 1"):
        list(env.from_collection([1]).map(boom).execute_and_collect())
