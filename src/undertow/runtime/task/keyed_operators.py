"""Keyed one-input operators: keyed process functions with timers, and rolling reductions.

User-function calls run in the key context of their record (``UdfOperator`` wraps them with
``with_key_context``, from the key selector the chain hands every operator on a keyed input;
the rolling reduce's backend fold sets the key per record itself), so state and timers of
user functions always refer to the record's key. Output order per key is input order.

A keyed process function's methods are bound once, when the operator is built: its
``process_element`` (the API checked the shape, ``ProcessElementLike``) and its ``on_timer``
(None when it has none, ``OnTimerLike``), as for the two-input operators.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from undertow.api.function_shapes import OnTimerLike, ProcessElementLike
from undertow.api.functions import KeyedProcessFunction, TimeDomain, TimerService
from undertow.core.errors import note_context, shown_value
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.task.context import KeyedTimerService
from undertow.runtime.task.operator import Timestamps
from undertow.runtime.task.operators import UdfOperator, process_each, run_udf
from undertow.runtime.task.timers import InternalTimer
from undertow.state.backend import KeyedStateBackend, PairAggregation
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.key_groups import user_key


class _KeyedContext(KeyedProcessFunction.OnTimerContext):
    __slots__ = ("_domain", "_op", "ts")

    def __init__(self, op: KeyedProcessOperator) -> None:
        self._op = op
        self.ts: Any = None
        self._domain = TimeDomain.EVENT_TIME

    def timestamp(self) -> int:
        ts: int | None = self.ts
        return MIN_TIMESTAMP if ts is None else ts  # PyFlink's "no timestamp" (Long.MIN_VALUE)

    def timer_service(self) -> TimerService:
        return self._op.timer_service

    def output(self, output_tag: Any, value: Any) -> None:
        self._op.output.collect_side(output_tag.tag_id, value, self.ts)

    def get_current_key(self) -> Any:
        return user_key(self._op.backend.get_current_key())  # -0.0 as the float it is

    def time_domain(self) -> TimeDomain:
        return self._domain


class UserTimerFiring:
    """Fires a user function's ``on_timer(timestamp, ctx)`` for the operator's timers.

    The operator provides ``_on_timer`` (the bound method or ``None``), ``output`` and
    ``_timer_context(timer, domain)``; it registers itself as the timer service's Triggerable.
    """

    _on_timer: Callable[[int, Any], Any] | None
    output: Any

    def _timer_context(self, timer: InternalTimer, domain: TimeDomain) -> Any:
        raise NotImplementedError

    def _fire(self, timer: InternalTimer, domain: TimeDomain) -> None:
        if self._on_timer is None:
            return
        ctx = self._timer_context(timer, domain)
        out: list[Any] = []
        stamps: list[Any] = []
        try:
            run_udf(self._on_timer(timer.timestamp, ctx), out, stamps, ctx.ts)
        except Exception as err:
            kind = "an event-time" if domain is TimeDomain.EVENT_TIME else "a processing-time"
            note_context(err, f"in on_timer({timer.timestamp}) of {kind} timer of the key "
                              f"{shown_value(timer.key)}")  # fmt: skip
            raise
        if out:
            self.output.collect_batch(out, stamps)

    def on_event_time(self, timer: InternalTimer) -> None:
        self._fire(timer, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._fire(timer, TimeDomain.PROCESSING_TIME)


class KeyedProcessOperator(UserTimerFiring, UdfOperator):
    """``KeyedStream.process(KeyedProcessFunction)``; also the engine of ``on_timer``."""

    def __init__(self, function: ProcessElementLike) -> None:
        super().__init__(function, function.process_element)
        self._on_timer = function.on_timer if isinstance(function, OnTimerLike) else None

    def open(self) -> None:
        assert self.ctx.keyed_backend is not None and self.ctx.timer_service_factory is not None
        self.backend: KeyedStateBackend = self.ctx.keyed_backend
        self.internal_timers = self.ctx.timer_service_factory("user-timers", self)
        self.timer_service = KeyedTimerService(self.internal_timers)
        self._kctx = _KeyedContext(self)
        super().open()

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        # self.call sets the record's key (UdfOperator.open)
        out, stamps = process_each(self.call, self._kctx, values, timestamps)
        if out:
            self.output.collect_batch(out, stamps)

    def process_watermark(self, watermark: int) -> None:
        """Fire the due event-time timers (in mailbox slices, see the timers), then forward."""
        self.current_watermark = watermark
        output = self.output
        self.internal_timers.advance_watermark(watermark, lambda: output.emit_watermark(watermark))

    def _timer_context(self, timer: InternalTimer, domain: TimeDomain) -> Any:
        ctx = self._kctx
        ctx.ts = timer.timestamp if domain is TimeDomain.EVENT_TIME else None
        ctx._domain = domain
        return ctx


def _serialized_order(key: Any) -> bytes:
    """A key's place in BATCH output: its pickled bytes, as PyFlink serializes untyped keys."""
    return pickle.dumps(key, protocol=5)


class StreamGroupedReduce(UdfOperator):
    """``KeyedStream.reduce`` (and sum/min/max/min_by/max_by): emits the rolling result.

    In BATCH execution (``emit_final_only``) it emits one final result per key at the end.
    ``check_record`` (the built-in aggregations': raises for a record without their field)
    runs on the operator's first record, which a reduction never sees with another one when
    its key comes once; an error from a later fold names the first record of the batch it
    finds without the field.
    """

    _DESCRIPTOR = ValueStateDescriptor("_reduce_value")
    #: ``fold_keyed`` runs every reduce call with its record's key current (if it reads state)
    KEY_CONTEXT_PER_CALL = False

    def __init__(
        self, function: Any, call: Callable[[Any, Any], Any], key_selector: Callable[[Any], Any],
        emit_final_only: bool = False, pair: PairAggregation | None = None,
        check_record: Callable[[Any], None] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(function, call)
        self.check_record = check_record
        #: ``check_record`` until the first record has passed it
        self._check_first = check_record
        self.key_selector = key_selector
        self.emit_final_only = emit_final_only
        #: A user's ReduceFunction may read keyed state, so it runs in its record's key; the
        #: built-in aggregations (``function`` None: sum, min, max, min_by, max_by) read none.
        self._reads_state = function is not None
        #: ``call`` is this field aggregation (sum/min/max of field 0 or 1): the backend's
        #: fold may apply it inline to pairs
        self.pair = pair

    def open(self) -> None:
        assert self.ctx.keyed_backend is not None
        self.backend = self.ctx.keyed_backend
        self.state = self.backend.get_partitioned_state(self._DESCRIPTOR)
        if self.ctx.task_settings.batch:
            self.emit_final_only = True
        super().open()

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if self._check_first is not None and values:
            self._check_first(values[0])
            self._check_first = None
        try:
            out = self.backend.fold_keyed(self.state, values, self.key_selector, self.call,
                                          key_context=self._reads_state,
                                          pair=self.pair)  # fmt: skip
        except LookupError as err:  # the pair fold reads the field inline, unchecked
            if self.check_record is None:
                raise
            for value in values:
                self.check_record(value)
            raise err
        if not self.emit_final_only:
            self.output.collect_batch(out, timestamps)

    def finish(self) -> None:
        if not self.emit_final_only:
            return
        backend, get = self.backend, self.state.value  # type: ignore[attr-defined]
        out = []
        # Flink's BATCH execution sorts a keyed input by the serialized key; PyFlink's keys
        # (untyped: PickledByteArray) come out in the order of their pickled bytes
        for key in sorted(backend.keys(self._DESCRIPTOR.name), key=_serialized_order):
            backend.set_current_key(key)
            out.append(get())
        if out:
            self.output.collect_batch(out, None)
