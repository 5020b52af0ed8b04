"""Async I/O through the public API: ``AsyncDataStream`` with asyncio ``AsyncFunction`` s.

Retry arithmetic and declaration checks are pure; the behaviour (order, capacity, retries,
timeouts, failures) runs real jobs on the ``local-threads`` target, where a job takes well
under a second. The function under test reports what it saw (attempt numbers, concurrency) in
its results, since each subtask runs its own copy of it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import runpy
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.api.async_function import retry_delay_ms
from undertow.common import Configuration, Time, WatermarkStrategy
from undertow.common.watermark_strategy import TimestampAssigner
from undertow.core.errors import GraphBuildError, JobExecutionError
from undertow.datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    MapFunction,
    ProcessAllWindowFunction,
    StreamExecutionEnvironment,
    async_retry_predicates,
    async_retry_strategies,
)
from undertow.datastream.async_data_stream import _NAME
from undertow.datastream.window import TumblingEventTimeWindows

N = 60


def env(parallelism: int = 2) -> StreamExecutionEnvironment:
    e = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    e.set_parallelism(parallelism)
    return e


class Jittery(AsyncFunction[int, Any]):
    """Answers ``value * 10`` after a random delay; reports how many requests ran at once."""

    def __init__(self, delay_s: float = 0.005) -> None:
        self.delay_s = delay_s
        self.running = 0

    async def async_invoke(self, value: int) -> list[Any]:
        self.running += 1
        concurrent = self.running
        try:
            await asyncio.sleep(random.random() * self.delay_s)
        finally:
            self.running -= 1
        return [(value * 10, concurrent)]


# -- retry strategies (pure) --------------------------------------------------------------------
@given(
    initial=st.integers(1, 1000),
    maximum=st.integers(1, 10_000),
    multiplier=st.floats(0.5, 4.0),
    attempts=st.integers(1, 12),
)
def test_exponential_backoff_matches_pyflinks_sequence(
    initial: int, maximum: int, multiplier: float, attempts: int
) -> None:
    strategy = AsyncRetryStrategy.exponential_backoff(10, initial, maximum, multiplier, None, None)
    # PyFlink 2.3: attempt 1 -> initial; then last = int(min(last * multiplier, max))
    last = initial
    for _ in range(2, attempts + 1):
        last = int(min(last * multiplier, maximum))
    assert strategy.get_backoff_time_millis(attempts) == (initial if attempts == 1 else last)


def test_retry_decision_follows_predicates_and_attempt_limit() -> None:
    on_timeout = functools.partial(
        async_retry_predicates.exception_type_predicate, expected_error_type=TimeoutError
    )
    strategy = AsyncRetryStrategy.fixed_delay(
        2, 30, async_retry_predicates.empty_result_predicate, on_timeout
    )
    assert retry_delay_ms(strategy, 1, [], None) == 30  # empty result: retry
    assert retry_delay_ms(strategy, 1, ["x"], None) is None  # a result stands
    assert retry_delay_ms(strategy, 2, None, TimeoutError()) == 30
    assert retry_delay_ms(strategy, 3, None, TimeoutError()) is None  # max_attempts retries
    assert retry_delay_ms(strategy, 1, None, ValueError()) is None  # not retried: fails
    no_retry = async_retry_strategies.NO_RETRY_STRATEGY
    assert retry_delay_ms(no_retry, 1, [], ValueError()) is None
    assert AsyncRetryStrategy.no_restart() is no_retry
    with pytest.raises(ValueError, match="max_attempts"):
        AsyncRetryStrategy.fixed_delay(0, 10, None, None)


def test_a_users_strategy_retries_as_its_retry_predicate_says() -> None:
    """PyFlink's ``RetryPredicate`` in a strategy of the user's own: its result predicate sees
    each attempt's results, it has no exception predicate (an error stands), and the
    strategy's own limit and back-off apply."""

    class RetryOnZero(AsyncRetryStrategy[int]):
        def can_retry(self, current_attempts: int) -> bool:
            return current_attempts <= 3

        def get_backoff_time_millis(self, current_attempts: int) -> int:
            return 5 * current_attempts

        def get_retry_predicate(self) -> async_retry_strategies.RetryPredicate[int]:
            return async_retry_strategies.RetryPredicate(lambda results: results == [0], None)

    strategy = RetryOnZero()
    assert retry_delay_ms(strategy, 1, [0], None) == 5
    assert retry_delay_ms(strategy, 3, [0], None) == 15
    assert retry_delay_ms(strategy, 4, [0], None) is None, "past the strategy's limit"
    assert retry_delay_ms(strategy, 1, [1], None) is None, "a result the predicate accepts"
    assert retry_delay_ms(strategy, 1, None, TimeoutError()) is None, "no exception predicate"


def test_declaration_checks_name_the_operator_and_the_problem() -> None:
    class NotAsync(AsyncFunction[int, int]):
        def async_invoke(self, value: int) -> list[int]:  # type: ignore[override]
            return [value]

    class ShapedLikeOne:  # not an AsyncFunction: an async_invoke coroutine is what counts
        async def async_invoke(self, value: int) -> list[int]:
            return [value]

    ds = env().from_collection([1])
    with pytest.raises(GraphBuildError, match=r"'async_invoke' of class 'NotAsync'.*async def"):
        AsyncDataStream.ordered_wait(ds, NotAsync(), Time.seconds(1))
    with pytest.raises(GraphBuildError, match=r"'async_invoke' of class 'object'.*async def"):
        AsyncDataStream.ordered_wait(ds, object(), Time.seconds(1))  # type: ignore[arg-type]
    AsyncDataStream.ordered_wait(ds, ShapedLikeOne(), Time.seconds(1))  # type: ignore[arg-type]
    on_error = async_retry_predicates.has_exception_predicate
    retry = AsyncRetryStrategy.fixed_delay(3, 10, None, on_error)
    with pytest.raises(GraphBuildError, match=f"{_NAME} with Jittery: a timeout"):
        AsyncDataStream.unordered_wait_with_retry(ds, Jittery(), Time.milliseconds(0), retry)
    with pytest.raises(GraphBuildError, match="capacity must be a positive int, got 0"):
        AsyncDataStream.unordered_wait(ds, Jittery(), Time.seconds(1), capacity=0)


# -- jobs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])
def test_every_record_is_answered_once_within_capacity(ordered: bool) -> None:
    e = env()
    ds = e.from_collection(list(range(N)))
    wait = AsyncDataStream.ordered_wait if ordered else AsyncDataStream.unordered_wait
    out = list(wait(ds, Jittery(), Time.seconds(10), capacity=4).execute_and_collect())

    assert sorted(v for v, _ in out) == [v * 10 for v in range(N)]
    assert max(c for _, c in out) <= 4  # capacity bounds the requests in flight
    assert max(c for _, c in out) > 1  # and they do run concurrently


def test_ordered_wait_keeps_input_order_and_unordered_does_not_wait() -> None:
    class Slower(AsyncFunction[int, int]):
        async def async_invoke(self, value: int) -> list[int]:
            await asyncio.sleep(0.03 if value % 5 == 0 else 0.001)
            return [value]

    e = env(parallelism=1)
    ordered = AsyncDataStream.ordered_wait(
        e.from_collection(list(range(N))), Slower(), Time.seconds(10), capacity=10
    )
    assert list(ordered.execute_and_collect()) == list(range(N))
    e = env(parallelism=1)
    unordered = AsyncDataStream.unordered_wait(
        e.from_collection(list(range(N))), Slower(), Time.seconds(10), capacity=10
    )
    out = list(unordered.execute_and_collect())
    assert sorted(out) == list(range(N)) and out != list(range(N))


class Flaky(AsyncFunction[int, Any]):
    """Fails the first ``failures`` attempts of every record (a timeout, or an empty answer)."""

    def __init__(self, failures: int, empty: bool = False) -> None:
        self.failures = failures
        self.empty = empty
        self.attempts: dict[int, int] = {}

    async def async_invoke(self, value: int) -> list[Any]:
        attempt = self.attempts[value] = self.attempts.get(value, 0) + 1
        await asyncio.sleep(0)
        if attempt <= self.failures:
            if self.empty:
                return []
            raise TimeoutError(f"service busy for {value}")
        return [(value, attempt)]


def test_retry_on_exception_and_on_result_until_the_service_answers() -> None:
    on_timeout = functools.partial(
        async_retry_predicates.exception_type_predicate, expected_error_type=TimeoutError
    )
    e = env()
    ds = e.from_collection(list(range(N)))
    strategy = AsyncRetryStrategy.fixed_delay(5, 1, None, on_timeout)
    out = list(
        AsyncDataStream.unordered_wait_with_retry(
            ds, Flaky(2), Time.seconds(10), strategy
        ).execute_and_collect()
    )
    assert sorted(out) == [(v, 3) for v in range(N)]

    e = env(parallelism=1)  # one subtask: collect sees ordered output in input order
    ds = e.from_collection(list(range(N)))
    strategy = AsyncRetryStrategy.exponential_backoff(
        5, 1, 4, 2.0, async_retry_predicates.empty_result_predicate, None
    )
    out = list(
        AsyncDataStream.ordered_wait_with_retry(
            ds, Flaky(3, empty=True), Time.seconds(10), strategy
        ).execute_and_collect()
    )
    assert out == [(v, 4) for v in range(N)]


class Hanging(AsyncFunction[int, str]):
    """Never answers odd records in time; ``timeout`` answers for them (if overridden)."""

    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(30 if value % 2 else 0)
        return [f"ok {value}"]


class HangingWithDefault(Hanging):
    def timeout(self, value: int) -> list[str]:
        return [f"timeout {value}"]


def test_timeout_override_answers_for_requests_that_took_too_long() -> None:
    e = env()
    ds = e.from_collection(list(range(10)))
    out = AsyncDataStream.ordered_wait(ds, HangingWithDefault(), Time.milliseconds(100))
    expected = [f"timeout {v}" if v % 2 else f"ok {v}" for v in range(10)]
    assert sorted(out.execute_and_collect()) == sorted(expected)


def test_default_timeout_and_a_failing_request_fail_the_job_naming_operator_and_input() -> None:
    e = env(parallelism=1)
    ds = e.from_collection([2, 1])
    AsyncDataStream.ordered_wait(ds, Hanging(), Time.milliseconds(100)).print()
    with pytest.raises(JobExecutionError) as failure:
        e.execute("hanging")
    text = str(failure.value)
    assert "async wait operator" in text and "input 1 timed out after 100 ms" in text

    e = env(parallelism=1)
    ds = e.from_collection([7])
    AsyncDataStream.unordered_wait(ds, Flaky(1), Time.seconds(5)).print()
    with pytest.raises(JobExecutionError) as failure:
        e.execute("flaky")
    assert "Flaky.async_invoke failed for input 7: TimeoutError: service busy for 7" in str(
        failure.value
    )


def test_a_result_that_is_not_a_list_fails_the_job() -> None:
    class Scalar(AsyncFunction[int, int]):
        async def async_invoke(self, value: int) -> list[int]:
            return value  # type: ignore[return-value]

    e = env(parallelism=1)
    AsyncDataStream.ordered_wait(e.from_collection([5]), Scalar(), Time.seconds(5)).print()
    with pytest.raises(JobExecutionError, match="must return a list of results, got 5 for input 5"):
        e.execute("scalar")


def test_example_program_scores_every_review_exactly_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``examples/async_model_inference.py`` (on local threads instead of Spark)."""
    from undertow.datastream import stream_execution_environment as environment

    example = Path(__file__).parents[2] / "examples" / "async_model_inference.py"
    monkeypatch.setattr(
        environment, "CLI_DEFAULTS", Configuration({"execution.target": "local-threads"})
    )
    namespace = runpy.run_path(str(example), run_name="example")
    capsys.readouterr()
    namespace["main"]()

    lines = capsys.readouterr().out.splitlines()
    scored = [json.loads(line.split("> ", 1)[1]) for line in lines]
    reviews = sorted((s["user_id"], s["comments"]) for s in scored)
    assert reviews == sorted(namespace["REVIEWS"])
    assert {s["analysis_result"] for s in scored} <= {"positive", "negative", None}


def test_unordered_results_never_cross_a_watermark_so_event_time_windows_lose_nothing() -> None:
    """Records arrive with increasing timestamps and periodic watermarks (every 5 ms); the
    async service answers in random order. A result emitted after a later watermark would be
    late for its event-time window and dropped: every window must count all its records."""

    class Slowly(MapFunction):
        def map(self, value: int) -> int:
            time.sleep(0.0002)  # the source spreads over ~0.4 s: many watermarks pass
            return value

    class Stamp(TimestampAssigner):
        def extract_timestamp(self, value: int, record_timestamp: int) -> int:
            return value

    class Count(ProcessAllWindowFunction):
        def process(self, context: Any, elements: Any) -> list[Any]:
            return [(context.window().start, len(list(elements)))]

    e = StreamExecutionEnvironment.get_execution_environment(
        Configuration(
            {"execution.target": "local-threads", "pipeline.auto-watermark-interval": "5 ms"}
        )
    )
    e.set_parallelism(1)
    n = 2000
    stamped = (
        e.from_collection(list(range(n)))
        .map(Slowly())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp())
        )
    )
    answered = AsyncDataStream.unordered_wait(
        stamped, Jittery(delay_s=0.01), Time.seconds(10), capacity=20
    ).map(lambda pair: pair[0] // 10)
    counts = answered.window_all(TumblingEventTimeWindows.of(Time.milliseconds(100))).process(
        Count()
    )
    assert sorted(counts.execute_and_collect()) == [(start, 100) for start in range(0, n, 100)]


def test_a_request_cancelled_by_user_code_fails_the_job_instead_of_hanging() -> None:
    class Cancelling(AsyncFunction[int, int]):
        async def async_invoke(self, value: int) -> list[int]:
            raise asyncio.CancelledError()

    e = env(parallelism=1)
    AsyncDataStream.unordered_wait(e.from_collection([3]), Cancelling(), Time.seconds(5)).print()
    client = e.execute_async("cancelling")
    try:
        with pytest.raises(JobExecutionError, match="the request for input 3 was cancelled"):
            client.get_job_execution_result(timeout=30)
    finally:
        client.cancel()
