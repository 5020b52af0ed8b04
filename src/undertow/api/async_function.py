"""Async I/O user contracts: ``AsyncFunction`` and retry strategies (PyFlink 2.2+).

PyFlink spreads these over ``pyflink.datastream.functions`` (the abstract classes),
``pyflink.datastream.async_retry_strategies`` (the built-in strategies) and
``pyflink.datastream.async_retry_predicates`` (predicate helpers); undertow keeps them in this
one module and re-exports them under those paths. Names, signatures and the strategies'
arithmetic are PyFlink 2.3's.

Threading: ``async_invoke`` is a coroutine that runs on the worker's asyncio loop (see
:mod:`undertow.runtime.task.async_wait_operator`); ``open``, ``close`` and ``timeout`` run on
the task's mailbox, like every other user function method. Strategies and predicates are
pure and may be called from anywhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from undertow.api.functions import Function

IN = TypeVar("IN")
OUT = TypeVar("OUT")

ResultPredicate = Callable[[list[Any]], bool]
ExceptionPredicate = Callable[[Exception], bool]


@runtime_checkable
class AsyncInvokeLike(Protocol):
    """What the async wait operator calls per record: ``async_invoke`` (an
    :class:`AsyncFunction`, or an object shaped like one); that it is a coroutine function is
    checked apart, since a Protocol cannot say so."""

    async def async_invoke(self, value: Any) -> list[Any]: ...


class AsyncFunction(Function, Generic[IN, OUT]):
    """Issues one asynchronous request per input record.

    ``async_invoke`` must be declared ``async def`` and return a list of results (emitted with
    the input record's timestamp); raising fails the job unless the retry strategy's exception
    predicate asks for another attempt.
    """

    @abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """Start the request for ``value`` and return its results (a list, maybe empty)."""

    def timeout(self, value: IN) -> list[OUT]:
        """Called when the request for ``value`` did not complete in time (all attempts
        included). Default: fail the job with a ``TimeoutError``; return a list to emit it
        instead."""
        raise TimeoutError("Async function call has timed out for input: " + str(value))


class AsyncRetryPredicate(ABC, Generic[OUT]):
    """When to retry: on a result (``result_predicate``) or an exception."""

    @abstractmethod
    def result_predicate(self) -> ResultPredicate | None:
        """A predicate on a completed attempt's results; True asks for another attempt."""

    @abstractmethod
    def exception_predicate(self) -> ExceptionPredicate | None:
        """A predicate on a failed attempt's exception; True asks for another attempt."""


class AsyncRetryStrategy(ABC, Generic[OUT]):
    """How often and after which delay a request is attempted again."""

    @abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow ``current_attempts`` attempts."""

    @abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The delay before the attempt after ``current_attempts`` attempts."""

    @abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """The predicates that decide whether an attempt's outcome is retried."""

    @staticmethod
    def no_restart() -> AsyncRetryStrategy[Any]:
        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> FixedDelayRetryStrategy[Any]:
        return FixedDelayRetryStrategy(
            max_attempts, backoff_time_millis, result_predicate, exception_predicate
        )

    @staticmethod
    def exponential_backoff(
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> ExponentialBackoffDelayRetryStrategy[Any]:
        return ExponentialBackoffDelayRetryStrategy(
            max_attempts, initial_delay, max_retry_delay, multiplier,
            result_predicate, exception_predicate,
        )  # fmt: skip


# -- built-in strategies (pyflink.datastream.async_retry_strategies) -----------------------------
class RetryPredicate(AsyncRetryPredicate[OUT]):
    def __init__(
        self,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate | None:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate | None:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy[OUT]):
    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise ValueError(f"{name} should be greater than zero, got {value!r}")


class FixedDelayRetryStrategy(AsyncRetryStrategy[OUT]):
    """Up to ``max_attempts`` retries, ``backoff_time_millis`` apart."""

    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        _positive("max_attempts", max_attempts)
        _positive("backoff_time_millis", backoff_time_millis)
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._predicate: RetryPredicate[OUT] = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy[OUT]):
    """Up to ``max_attempts`` retries; the first after ``initial_delay`` ms, each next one
    ``multiplier`` times later (truncated to whole ms), at most ``max_retry_delay`` ms.

    PyFlink keeps the last delay in the strategy object, shared by every request of a subtask;
    here the delay is a function of the attempt count alone (the same numbers for a single
    request), so concurrent requests do not disturb each other's backoff.
    """

    def __init__(
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        _positive("max_attempts", max_attempts)
        _positive("initial_delay", initial_delay)
        _positive("max_retry_delay", max_retry_delay)
        _positive("multiplier", multiplier)
        self._max_attempts = max_attempts
        self._initial_delay = initial_delay
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._predicate: RetryPredicate[OUT] = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        delay = self._initial_delay
        for _ in range(1, current_attempts):
            delay = int(min(delay * self._multiplier, self._max_retry_delay))
        return delay

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


NO_RETRY_STRATEGY: AsyncRetryStrategy[Any] = NoRetryStrategy()


# -- predicate helpers (pyflink.datastream.async_retry_predicates) ------------------------------
def empty_result_predicate(result: list[Any] | None) -> bool:
    return result is None or len(result) == 0


def has_exception_predicate(error: BaseException | None) -> bool:
    return error is not None


def exception_type_predicate(error: BaseException | None, expected_error_type: type) -> bool:
    return isinstance(error, expected_error_type)


# -- the retry decision (pure; used by the async wait operator) ---------------------------------
def retry_delay_ms(
    strategy: AsyncRetryStrategy[Any],
    attempts: int,
    results: list[Any] | None,
    error: BaseException | None,
) -> int | None:
    """The delay before another attempt, or ``None`` if the outcome stands.

    ``attempts`` attempts were made; the last one returned ``results`` or raised ``error``.
    Retried iff a predicate of the strategy holds for the outcome and the strategy allows
    another attempt (PyFlink's ``RetryableResultHandler``); the caller's timeout bounds all
    attempts together.
    """
    predicate = strategy.get_retry_predicate()
    if error is None:
        check = predicate.result_predicate()
        wanted = check is not None and results is not None and bool(check(results))
    else:
        on_error = predicate.exception_predicate()
        wanted = on_error is not None and isinstance(error, Exception) and bool(on_error(error))
    if not wanted or not strategy.can_retry(attempts):
        return None
    return max(0, int(strategy.get_backoff_time_millis(attempts)))
