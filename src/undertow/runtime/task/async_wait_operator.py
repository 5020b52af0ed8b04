"""The async wait operator: one asyncio request per record, results emitted from the mailbox.

Flink's ``AsyncWaitOperator`` on undertow's task model. Where requests run: every subtask of a
worker already runs on one asyncio loop, so ``async_invoke`` coroutines run there as asyncio
tasks, between the task's slices (the task yields to the loop after each one): no thread, no
lock, no second loop. A request only reports its outcome; emitting happens in a mail of the
operator's task (posted through its processing-time service), so results follow the same path
as timer output, and nothing runs after the operator was quiesced or closed. The cost: a
coroutine that blocks (CPU work, a synchronous client) stalls every subtask of its worker.

Checkpoints: every queued record (in flight, completed but held back, or not started) is the
operator's state; after a restore they are re-issued before any new input (exactly-once output;
the service sees those requests again). ``counters["async_requests_restored"]`` counts them.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
from typing import Any

from undertow.api.async_function import retry_delay_ms
from undertow.core.errors import StateError
from undertow.runtime.network.buffer import serialize_object
from undertow.runtime.task.async_queue import AsyncWaitQueue, EmitRecords
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.udf_hooks import ForwardsCheckpointHooks, UdfHooks

RESTORED_COUNTER = "async_requests_restored"


class AsyncFunctionError(RuntimeError):
    """``async_invoke`` or ``timeout`` failed, or returned something that is not a list."""


class _TimedOut:
    """The outcome of a request whose time ran out (``timeout()`` decides on the mailbox)."""


_TIMED_OUT = _TimedOut()


class _Failed:
    """The outcome of a request whose last attempt raised ``error`` (not retried)."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


class AsyncWaitOperator(ForwardsCheckpointHooks, OneInputStreamOperator):
    """``AsyncDataStream.ordered_wait``/``unordered_wait``: see the module docstring.

    Lifecycle: ``restore_custom_state`` (optional) -> ``open`` (re-issues restored records)
    -> ``process_batch``/``process_watermark``* -> ``finish`` (queue empty) -> ``close``
    (cancels requests still running after a failure). All methods run on the task's loop.
    """

    def __init__(
        self,
        function: Any,
        timeout_ms: int,
        capacity: int,
        retry_strategy: Any,
        ordered: bool,
    ) -> None:
        self.function = function
        self.hooks = UdfHooks.of(function)
        self.timeout_ms = timeout_ms
        self.capacity = capacity
        self.retry_strategy = retry_strategy
        self.ordered = ordered
        self._restored: list[tuple[Any, int | None]] = []
        #: Requests running, by sequence number (empty until ``open``; ``close`` may come
        #: without an ``open`` after a failure).
        self._requests: dict[int, asyncio.Task[Any]] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue = AsyncWaitQueue(self.capacity, self.ordered)
        self._requests = {}
        self._outcomes: list[tuple[int, asyncio.Task[Any]]] = []
        self._mail_pending = False
        self._closed = False
        self.hooks.open(self.ctx.runtime_context)
        restored, self._restored = self._restored, []
        self.ctx.counters[RESTORED_COUNTER] = len(restored)
        for value, timestamp in restored:
            self._queue.add(value, timestamp)
        self._start_requests()

    def finish(self) -> None:
        if not self._queue.is_empty():  # the task waits for the queue before finish()
            raise AsyncFunctionError(
                f"{self._where()}: finish() with {len(self._queue)} records still in flight"
            )

    def close(self) -> None:
        self._closed = True
        for request in self._requests.values():
            request.cancel()
        self.hooks.close()

    # -- task hooks ------------------------------------------------------------------------
    def input_room(self) -> int:
        """How many more records the task may hand this operator (``capacity`` minus the
        records queued; negative after a restore that brought more)."""
        return self.capacity - len(self._queue)

    def has_pending_work(self) -> bool:
        """Records or watermarks are still queued: the task must not finish yet."""
        return not self._queue.is_empty()

    # -- input -----------------------------------------------------------------------------
    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if len(values) > self.input_room():
            raise StateError(
                f"{self._where()}: handed {len(values)} records with room for "
                f"{self.input_room()} (capacity {self.capacity}): the task must cut its "
                "input to the operator's room"
            )
        add = self._queue.add
        if timestamps is None:
            for value in values:
                add(value, None)
        else:
            for value, timestamp in zip(values, timestamps):
                add(value, timestamp)
        self._start_requests()

    def process_watermark(self, watermark: int) -> None:
        self._queue.add_watermark(watermark)
        self._emit()

    # -- checkpoints -----------------------------------------------------------------------
    def snapshot_custom_state(self, checkpoint_id: int) -> bytes | None:
        in_flight = self._queue.in_flight()
        return serialize_object(in_flight) if in_flight else None

    def restore_custom_state(self, blobs: list[bytes], rescaled: bool) -> None:
        records = [r for blob in blobs for r in pickle.loads(blob)]
        if rescaled:  # every new subtask sees every old subtask's records and takes its share
            index, n = self.ctx.subtask_index, self.ctx.parallelism
            records = [r for i, r in enumerate(records) if i % n == index]
        self._restored = records

    # -- requests --------------------------------------------------------------------------
    def _start_requests(self) -> None:
        for entry in self._queue.to_start():
            request = self._loop.create_task(self._request(entry.value))
            self._requests[entry.seq] = request
            request.add_done_callback(functools.partial(self._on_done, entry.seq))

    async def _request(self, value: Any) -> Any:
        """All attempts for ``value`` within the timeout: results, an exception, or
        ``_TIMED_OUT``. Never raises (but when cancelled): a ``TimeoutError`` of the user's
        code must not be mistaken for the operator's timeout."""
        attempts = self._attempts(value)
        if self.timeout_ms <= 0:
            return await attempts
        try:
            return await asyncio.wait_for(attempts, self.timeout_ms / 1000.0)
        except TimeoutError:
            return _TIMED_OUT

    async def _attempts(self, value: Any) -> Any:
        attempts = 1
        while True:
            results: Any = None
            error: Exception | None = None
            try:
                results = await self.function.async_invoke(value)
            except Exception as err:
                error = err
            checked = results if isinstance(results, list) else None
            delay = retry_delay_ms(self.retry_strategy, attempts, checked, error)
            if delay is None:
                return _Failed(error) if error is not None else results
            await asyncio.sleep(delay / 1000.0)
            attempts += 1

    def _on_done(self, seq: int, request: asyncio.Task[Any]) -> None:
        """A request ended (on the loop, outside the mailbox): handle it in a mail."""
        if self._closed:
            return  # cancelled by close(), or ended after it
        self._outcomes.append((seq, request))
        if not self._mail_pending:
            self._mail_pending = True
            pts = self.ctx.processing_time_service
            pts.register_timer(pts.current_processing_time(), self._on_outcomes)

    def _on_outcomes(self, _timestamp: int) -> None:
        """Mail: record the outcomes, emit what may go, start what waits for room."""
        self._mail_pending = False
        outcomes, self._outcomes = self._outcomes, []
        for seq, request in outcomes:
            del self._requests[seq]
            value = self._queue.value_of(seq)
            if request.cancelled():  # not by us: cancellation must not end the task silently
                raise AsyncFunctionError(
                    f"{self._where()}: the request for input {value!r} was cancelled"
                )
            outcome = request.result()
            if outcome is _TIMED_OUT:
                outcome = self._call_timeout(value)
            elif isinstance(outcome, _Failed):
                error = outcome.error
                raise AsyncFunctionError(
                    f"{self._where()}: {type(self.function).__name__}.async_invoke failed "
                    f"for input {value!r}: {type(error).__name__}: {error}"
                ) from error
            self._queue.complete(seq, self._check_results(outcome, value))
        self._emit()
        self._start_requests()

    def _call_timeout(self, value: Any) -> Any:
        try:
            return self.function.timeout(value)
        except Exception as err:
            raise AsyncFunctionError(
                f"{self._where()}: the request for input {value!r} timed out after "
                f"{self.timeout_ms} ms and {type(self.function).__name__}.timeout raised "
                f"{type(err).__name__}: {err}"
            ) from err

    def _check_results(self, results: Any, value: Any) -> list[Any]:
        if isinstance(results, (str, bytes)) or results is None:
            ok = False
        else:
            try:
                results = list(results)
                ok = True
            except TypeError:
                ok = False
        if not ok:
            raise AsyncFunctionError(
                f"{self._where()}: {type(self.function).__name__}.async_invoke/timeout must "
                f"return a list of results, got {results!r} for input {value!r}"
            )
        return list(results)

    def _emit(self) -> None:
        output = self.output
        for emission in self._queue.drain():
            if isinstance(emission, EmitRecords):
                output.collect_batch(emission.values, emission.stamps)
            else:
                output.emit_watermark(emission.watermark)

    def _where(self) -> str:
        ctx = self.ctx
        return f"operator '{ctx.name}' (subtask {ctx.subtask_index + 1}/{ctx.parallelism})"
