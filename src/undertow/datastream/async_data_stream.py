"""``AsyncDataStream``: apply an :class:`AsyncFunction` to a stream (PyFlink 2.2+'s API).

Builds one "async wait operator" (:mod:`undertow.runtime.task.async_wait_operator`) that
starts a new chain, so that its task can stop taking input at capacity. Checked when the job
is declared, as PyFlink does: ``async_invoke`` must be a coroutine function, a retry strategy
needs a timeout, and its retry predicate must not be None.
"""

from __future__ import annotations

import inspect
from typing import Any

from undertow.api.async_function import (
    NO_RETRY_STRATEGY,
    AsyncFunction,
    AsyncInvokeLike,
    AsyncRetryStrategy,
)
from undertow.common.time import to_millis
from undertow.core.errors import GraphBuildError
from undertow.datastream.data_stream import DataStream, key_selector_of
from undertow.runtime.task.async_wait_operator import AsyncWaitOperator

_NAME = "async wait operator"


class AsyncDataStream:
    """Static helpers, as PyFlink's: ``unordered_wait``, ``ordered_wait`` and their
    ``*_with_retry`` variants. ``timeout`` bounds all attempts of one record together
    (0 or less: no timeout, only without retries); ``capacity`` bounds in-flight requests."""

    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Any,
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        """Results are emitted as they complete, but never across a watermark."""
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def unordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Any,
        async_retry_strategy: AsyncRetryStrategy[Any],
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        return _async_wait(
            data_stream, async_function, timeout, async_retry_strategy, capacity, output_type,
            ordered=False,
        )  # fmt: skip

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Any,
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        """Results are emitted in the order of their input records."""
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def ordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: Any,
        async_retry_strategy: AsyncRetryStrategy[Any],
        capacity: int = 100,
        output_type: Any = None,
    ) -> DataStream:
        return _async_wait(
            data_stream, async_function, timeout, async_retry_strategy, capacity, output_type,
            ordered=True,
        )  # fmt: skip


def _timeout_ms(timeout: Any) -> int:
    """:func:`to_millis`, and a float of milliseconds too (cut to whole ones)."""
    if isinstance(timeout, float):
        return int(timeout)
    try:
        return to_millis(timeout, "timeout")
    except TypeError as err:
        raise GraphBuildError(f"{_NAME}: {err}") from err


def _async_wait(
    data_stream: DataStream,
    async_function: AsyncFunction[Any, Any],
    timeout: Any,
    retry_strategy: AsyncRetryStrategy[Any] | None,
    capacity: int,
    output_type: Any,
    ordered: bool,
) -> DataStream:
    what = f"{_NAME} with {type(async_function).__name__}"
    if not (
        isinstance(async_function, AsyncInvokeLike)
        and inspect.iscoroutinefunction(async_function.async_invoke)
    ):
        raise GraphBuildError(
            f"{what}: method 'async_invoke' of class '{type(async_function).__name__}' "
            "should be declared as 'async def'"
        )
    if retry_strategy is None:
        raise GraphBuildError(f"{what}: the async retry strategy should not be None")
    timeout_ms = _timeout_ms(timeout)
    if retry_strategy is not NO_RETRY_STRATEGY and timeout_ms <= 0:
        raise GraphBuildError(
            f"{what}: a timeout (> 0, got {timeout_ms} ms) must be set to retry requests"
        )
    if retry_strategy.get_retry_predicate() is None:
        raise GraphBuildError(
            f"{what}: the retry predicate of {type(retry_strategy).__name__} is None"
        )
    if not isinstance(capacity, int) or capacity < 1:
        raise GraphBuildError(f"{what}: capacity must be a positive int, got {capacity!r}")
    operator = AsyncWaitOperator(async_function, timeout_ms, capacity, retry_strategy, ordered)
    key_selector = key_selector_of(data_stream)
    stream = data_stream._one_input(_NAME, operator, output_type, key_selector=key_selector)
    return stream.start_new_chain()
