"""Two-input operators: ``connect`` (co-map, co-flat-map, co-process, keyed co-process) and
broadcast-connected process functions with broadcast state.

The task combines watermarks of the two inputs (minimum) before ``process_watermark``. On
keyed inputs every user-function call runs in the key context of its record (each input with
its own key selector, see ``StreamOperator.with_key_context``); the broadcast side of a
broadcast connection has no key.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from operator import is_
from typing import Any

from undertow.api.function_shapes import (
    BroadcastProcessLike,
    CoFlatMapLike,
    CoMapLike,
    CoProcessLike,
    OnTimerLike,
)
from undertow.api.functions import (
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    TimeDomain,
    TimerService,
)
from undertow.core.errors import StateError, note_record
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.task.context import KeyedTimerService, NonKeyedTimerService
from undertow.runtime.task.keyed_operators import UserTimerFiring
from undertow.runtime.task.operator import Timestamps, TwoInputStreamOperator
from undertow.runtime.task.operators import apply_each, run_udf
from undertow.runtime.task.timers import InternalTimer
from undertow.runtime.task.udf_hooks import ForwardsCheckpointHooks, UdfHooks
from undertow.state.descriptors import MapStateDescriptor
from undertow.state.key_groups import user_key


class _TwoInputUdf(ForwardsCheckpointHooks, TwoInputStreamOperator):
    """A two-input operator around one user function: ``method1`` / ``method2`` take the
    records of input 1 / 2, bound when the operator is built (from the function's shape, a
    Protocol of :mod:`undertow.api.function_shapes`), as are its lifecycle and checkpoint
    hooks (:class:`UdfHooks`); ``call1`` / ``call2`` are the methods in the key context of
    their record (set in ``open``)."""

    def __init__(
        self, function: Any, method1: Callable[..., Any], method2: Callable[..., Any]
    ) -> None:
        self.function = function
        self.method1 = method1
        self.method2 = method2
        self.hooks = UdfHooks.of(function)
        self.current_watermark = MIN_TIMESTAMP

    def open(self) -> None:
        self.call1 = self.with_key_context(self.method1, 1)
        self.call2 = self.with_key_context(self.method2, 2)
        self.hooks.open(self.ctx.runtime_context)

    def close(self) -> None:
        self.hooks.close()

    def process_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        self.output.emit_watermark(watermark)


class CoMapOperator(_TwoInputUdf):
    """A ``None`` that ``map1``/``map2`` returns is dropped, as PyFlink's CoMap adapters yield
    a result only if it is not None (a one-input ``map`` emits ``None``, there and here).
    Cost: one identity scan of each batch's results."""

    def __init__(self, function: CoMapLike) -> None:
        super().__init__(function, function.map1, function.map2)

    def process_batch1(self, values: list[Any], timestamps: Timestamps) -> None:
        self._emit(apply_each(self.call1, values), timestamps)

    def process_batch2(self, values: list[Any], timestamps: Timestamps) -> None:
        self._emit(apply_each(self.call2, values), timestamps)

    def _emit(self, out: list[Any], timestamps: Timestamps) -> None:
        if any(map(is_, out, repeat(None))):
            kept = [i for i, v in enumerate(out) if v is not None]
            out = [out[i] for i in kept]
            if timestamps is not None:
                timestamps = [timestamps[i] for i in kept]
            if not out:
                return
        self.output.collect_batch(out, timestamps)


class CoFlatMapOperator(_TwoInputUdf):
    def __init__(self, function: CoFlatMapLike) -> None:
        super().__init__(function, function.flat_map1, function.flat_map2)

    def _run(self, f: Callable[[Any], Any], values: list[Any], timestamps: Timestamps) -> None:
        out: list[Any] = []
        stamps: list[Any] = []
        v: Any = None
        try:
            for v, ts in zip(values, timestamps or [None] * len(values)):
                run_udf(f(v), out, stamps, ts)
        except Exception as err:
            note_record(err, v)
            raise
        if out:
            self.output.collect_batch(out, stamps)

    def process_batch1(self, values: list[Any], timestamps: Timestamps) -> None:
        self._run(self.call1, values, timestamps)

    def process_batch2(self, values: list[Any], timestamps: Timestamps) -> None:
        self._run(self.call2, values, timestamps)


class _Ctx(KeyedCoProcessFunction.OnTimerContext, KeyedBroadcastProcessFunction.OnTimerContext):
    """One context object serving co-process and broadcast-process functions, keyed or not."""

    def __init__(self, op: CoProcessOperator) -> None:
        self._op = op
        self.ts: Any = None
        self.domain = TimeDomain.EVENT_TIME
        self.writable_broadcast = False

    def timestamp(self) -> int:
        ts: int | None = self.ts
        return MIN_TIMESTAMP if ts is None else ts  # PyFlink's "no timestamp" (Long.MIN_VALUE)

    def timer_service(self) -> TimerService:
        return self._op.timer_service

    def output(self, output_tag: Any, value: Any) -> None:
        self._op.output.collect_side(output_tag.tag_id, value, self.ts)

    def get_current_key(self) -> Any:
        backend = self._op.ctx.keyed_backend
        if backend is None:
            raise StateError(f"operator '{self._op.ctx.name}': no key on a non-keyed stream")
        return user_key(backend.get_current_key())  # -0.0 as the float it is

    def time_domain(self) -> TimeDomain:
        return self.domain

    def current_processing_time(self) -> int:
        return self._op.timer_service.current_processing_time()

    def current_watermark(self) -> int:
        return self._op.current_watermark

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> Any:
        backend = self._op.ctx.operator_state_backend
        if self.writable_broadcast:
            return backend.get_broadcast_state(state_descriptor)
        return backend.get_read_only_broadcast_state(state_descriptor)


class CoProcessOperator(UserTimerFiring, _TwoInputUdf):
    """Co-process and broadcast-process functions, keyed (with timers) or not.

    Built by :meth:`co_process` or :meth:`broadcast_process`, which bind the function's
    methods for the two inputs and its ``on_timer`` (``None`` when it has none) once. For
    broadcast variants input 2 is the broadcast side: its context may write broadcast state.
    """

    def __init__(
        self,
        function: Any,
        method1: Callable[..., Any],
        method2: Callable[..., Any],
        on_timer: Callable[[int, Any], Any] | None,
        broadcast: bool,
    ) -> None:
        super().__init__(function, method1, method2)
        self._on_timer = on_timer
        self.broadcast = broadcast

    @classmethod
    def co_process(cls, function: CoProcessLike) -> CoProcessOperator:
        """``connect(...).process``: ``process_element1`` / ``process_element2``."""
        on_timer = function.on_timer if isinstance(function, OnTimerLike) else None
        return cls(function, function.process_element1, function.process_element2, on_timer,
                   broadcast=False)  # fmt: skip

    @classmethod
    def broadcast_process(cls, function: BroadcastProcessLike) -> CoProcessOperator:
        """``connect(broadcast_stream).process``: ``process_element`` for the other input,
        ``process_broadcast_element`` for the broadcast one (input 2)."""
        on_timer = function.on_timer if isinstance(function, OnTimerLike) else None
        return cls(function, function.process_element, function.process_broadcast_element,
                   on_timer, broadcast=True)  # fmt: skip

    def open(self) -> None:
        backend = self.ctx.keyed_backend
        if backend is not None and self.ctx.timer_service_factory is not None:
            self.internal_timers = self.ctx.timer_service_factory("user-timers", self)
            self.timer_service: TimerService = KeyedTimerService(self.internal_timers)
        else:
            self.internal_timers = None  # type: ignore[assignment]
            self.timer_service = NonKeyedTimerService(
                self.ctx.name, self.ctx.processing_time_service, lambda: self.current_watermark
            )
        self._ctx = _Ctx(self)
        super().open()

    def _run(
        self, call: Callable[[Any, Any], Any], values: list[Any], timestamps: Timestamps,
        writable: bool,
    ) -> None:  # fmt: skip
        ctx = self._ctx
        ctx.writable_broadcast = writable
        out: list[Any] = []
        stamps: list[Any] = []
        v: Any = None
        try:
            for v, ts in zip(values, timestamps or [None] * len(values)):
                ctx.ts = ts
                run_udf(call(v, ctx), out, stamps, ts)
        except Exception as err:
            note_record(err, v)
            raise
        if out:
            self.output.collect_batch(out, stamps)

    def process_batch1(self, values: list[Any], timestamps: Timestamps) -> None:
        self._run(self.call1, values, timestamps, False)

    def process_batch2(self, values: list[Any], timestamps: Timestamps) -> None:
        self._run(self.call2, values, timestamps, self.broadcast)

    def process_watermark(self, watermark: int) -> None:
        """Fire the due event-time timers (in mailbox slices, see the timers), then forward."""
        self.current_watermark = watermark
        output = self.output
        if self.internal_timers is not None:
            self.internal_timers.advance_watermark(
                watermark, lambda: output.emit_watermark(watermark)
            )
        else:
            output.emit_watermark(watermark)

    def _timer_context(self, timer: InternalTimer, domain: TimeDomain) -> Any:
        ctx = self._ctx
        ctx.ts = timer.timestamp if domain is TimeDomain.EVENT_TIME else None
        ctx.domain = domain
        ctx.writable_broadcast = False
        return ctx
