"""Built-in one-input operators for the DataStream API's record-at-a-time functions.

Each operator takes the user's function object (its lifecycle and checkpoint hooks, bound once
by :mod:`~undertow.runtime.task.udf_hooks`) and the callable to apply (``fn.map``, a lambda,
...), resolved by the API layer. Per-record work is a tight loop
or comprehension over the batch; contexts handed to process functions are reused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import compress
from typing import Any

from undertow.api.functions import ProcessFunction, TimerService
from undertow.core.errors import note_record
from undertow.core.pickling import dumps_records
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.task.collect_credit import CollectCredit
from undertow.runtime.task.context import NonKeyedTimerService
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.print_format import formatter
from undertow.runtime.task.udf_hooks import ForwardsCheckpointHooks, UdfHooks


class UdfOperator(ForwardsCheckpointHooks, OneInputStreamOperator):
    """An operator around one user function: opens and closes it with the operator and tells
    it about checkpoints (its hooks, resolved once here: :class:`UdfHooks`).

    On a keyed stream ``call`` runs in the key context of its record (see
    :meth:`~undertow.runtime.task.operator.StreamOperator.with_key_context`) whenever there is
    a function object, which may use keyed state. Plain callables (lambdas) have no runtime
    context, so they run unwrapped.
    """

    #: Whether ``open`` wraps ``call`` to set the key per call; ``False`` for an operator whose
    #: loop already runs each call in its record's key (the rolling reduce).
    KEY_CONTEXT_PER_CALL = True

    def __init__(self, function: Any, call: Callable[..., Any] | None = None) -> None:
        self.function = function
        self.call = call if call is not None else function
        self.hooks = UdfHooks.of(function)
        self.current_watermark = MIN_TIMESTAMP

    def open(self) -> None:
        if self.function is not None and self.KEY_CONTEXT_PER_CALL:
            self.call = self.with_key_context(self.call)
        self.hooks.open(self.ctx.runtime_context)

    def close(self) -> None:
        self.hooks.close()

    def process_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        self.output.emit_watermark(watermark)


def apply_each(call: Callable[[Any], Any], values: list[Any]) -> list[Any]:
    """``[call(v) for v in values]``, except that a call that raises names its record
    (:func:`~undertow.core.errors.note_record`): ``list.extend`` keeps what ``map`` produced
    before the failing call, so its index is the list's length. Cost: none over the
    comprehension (slightly less)."""
    out: list[Any] = []
    try:
        out.extend(map(call, values))
    except Exception as err:
        note_record(err, values[len(out)])
        raise
    return out


class StreamMap(UdfOperator):
    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        self.output.collect_batch(apply_each(self.call, values), timestamps)


class StreamFlatMap(UdfOperator):
    """``flat_map``: the function's iterable (or generator) per record. One that returns
    ``None`` fails, as in PyFlink (which iterates it), with a ``TypeError`` that names the
    operator, its subtask and the record."""

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        call = self.call
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        v: Any = None
        result: Any = ()
        try:
            if stamps is None:
                extend = out.extend
                for v in values:
                    result = call(v)
                    extend(result)
            else:
                for v, ts in zip(values, timestamps):  # type: ignore[arg-type]
                    result = call(v)
                    before = len(out)
                    out.extend(result)
                    stamps.extend([ts] * (len(out) - before))
        except Exception as err:
            if result is None:  # extend(None) raised; a raising call leaves the last result
                raise self._returned_none(v) from err
            note_record(err, v)
            raise
        self.output.collect_batch(out, stamps)

    def _returned_none(self, record: Any) -> TypeError:
        err = TypeError(
            f"operator '{self.ctx.name}' (subtask {self.ctx.subtask_index + 1}/"
            f"{self.ctx.parallelism}): the flat_map() function returned None, which is not "
            "iterable: it yields its output records or returns an iterable of them (PyFlink "
            "fails too: 'NoneType' object is not iterable)"
        )
        note_record(err, record)
        return err


class StreamFilter(UdfOperator):
    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        keep = apply_each(self.call, values)
        if timestamps is None:
            self.output.collect_batch(list(compress(values, keep)), None)
            return
        self.output.collect_batch(list(compress(values, keep)), list(compress(timestamps, keep)))


class CollectingContext:
    """Collects what one process-function call emits: its return values and side outputs."""

    __slots__ = ("ts",)

    def __init__(self) -> None:
        self.ts: Any = None


def process_each(
    call: Callable[[Any, Any], Iterable[Any] | None],
    ctx: Any,
    values: list[Any],
    timestamps: Timestamps,
) -> tuple[list[Any], list[Any]]:
    """A process function's loop over a batch (keyed or not): ``call(value, ctx)`` per record
    with ``ctx.ts`` its timestamp; what the calls emitted and its timestamps. An error the
    function raises names its record (:func:`~undertow.core.errors.note_record`)."""
    out: list[Any] = []
    stamps: list[Any] = []
    if timestamps is None:
        timestamps = [None] * len(values)
    v: Any = None
    try:
        for v, ts in zip(values, timestamps):
            ctx.ts = ts
            run_udf(call(v, ctx), out, stamps, ts)
    except Exception as err:
        note_record(err, v)
        raise
    return out, stamps


def run_udf(result: Iterable[Any] | None, out: list[Any], stamps: list[Any], ts: Any) -> None:
    """Append what a process function returned (an iterable or None) with timestamp ``ts``.

    A function that returned one record instead of yielding it (``return value * 2``) fails
    with a ``TypeError`` that says so, not Python's bare "'int' object is not iterable"."""
    if result is None:
        return
    before = len(out)
    try:
        out.extend(result)
    except TypeError as err:
        if isinstance(result, Iterable):
            raise  # the function's generator raised it
        raise TypeError(
            f"the function returned {result!r:.200} ({type(result).__name__}), which is not "
            "iterable: a process function yields its output records (or returns a list of "
            "them, or None)"
        ) from err
    if len(out) > before:
        stamps.extend([ts] * (len(out) - before))


class _ProcessContext(ProcessFunction.Context):
    __slots__ = ("_op", "ts")

    def __init__(self, op: ProcessOperator) -> None:
        self._op = op
        self.ts: Any = None

    def timestamp(self) -> int:
        ts: int | None = self.ts
        return MIN_TIMESTAMP if ts is None else ts  # PyFlink's "no timestamp" (Long.MIN_VALUE)

    def timer_service(self) -> TimerService:
        return self._op.timer_service

    def output(self, output_tag: Any, value: Any) -> None:
        self._op.output.collect_side(output_tag.tag_id, value, self.ts)


class ProcessOperator(UdfOperator):
    """``DataStream.process(ProcessFunction)`` on a non-keyed stream."""

    def open(self) -> None:
        self.timer_service = NonKeyedTimerService(
            self.ctx.name, self.ctx.processing_time_service, lambda: self.current_watermark
        )
        self._pctx = _ProcessContext(self)
        super().open()

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        out, stamps = process_each(self.call, self._pctx, values, timestamps)
        if out:
            self.output.collect_batch(out, stamps)


class SinkFunctionOperator(UdfOperator):
    """``add_sink(SinkFunction)``: ``invoke(value, context)`` per record."""

    takes_row_ranges = True
    runs_in_java = True

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        call = self.call
        v: Any = None
        try:
            for v in values:
                call(v, None)
        except Exception as err:
            note_record(err, v)
            raise


class PrintSinkOperator(OneInputStreamOperator):
    """``print()``: one line per record, ``N> `` prefixed when the sink runs in parallel;
    records are rendered as PyFlink renders values of the stream's type ``type_info``
    (see :mod:`undertow.runtime.task.print_format`)."""

    takes_row_ranges = True
    runs_in_java = True

    def __init__(self, sink_identifier: str | None = None, type_info: Any = None) -> None:
        self.sink_identifier = sink_identifier
        self.type_info = type_info

    def open(self) -> None:
        prefix = self.sink_identifier or ""
        if self.ctx.parallelism > 1:
            prefix = (
                f"{prefix}:{self.ctx.subtask_index + 1}"
                if prefix
                else str(self.ctx.subtask_index + 1)
            )
        self._prefix = f"{prefix}> " if prefix else ""
        self._render = formatter(self.type_info)

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if not values:  # an empty batch (e.g. after a filter) is no line at all
            return
        prefix, render = self._prefix, self._render
        assert self.ctx.services is not None
        self.ctx.services.print_lines([prefix + render(v) for v in values])


class CollectSinkOperator(OneInputStreamOperator):
    """``execute_and_collect``: ships records to the client, each batch tagged with the last
    checkpoint whose barrier passed before it (the JobMaster releases the batch once a later
    checkpoint completes: :mod:`undertow.runtime.master.collect_results`). Each batch is paid
    for with the sink's credit (:mod:`.collect_credit`): without credit the task takes no
    input (it is a :class:`~.collect_credit.GatedOperator`), so a slow reader backpressures
    the job instead of filling the driver's memory."""

    takes_row_ranges = True
    runs_in_java = True

    def __init__(self, sink_id: str) -> None:
        self.sink_id = sink_id
        self._after_checkpoint = 0
        self._credit: CollectCredit | None = None

    def one_subtask_reason(self) -> str:
        """Why it runs as one subtask (:class:`~undertow.graph.stream_graph.RunsAsOneSubtask`:
        the stream graph refuses it with another parallelism)."""
        return "the driver grants a collect sink's credit to its subtask 0 only"

    def output_gate(self) -> CollectCredit:
        """The sink's credit (after ``setup``; made on first use)."""
        if self._credit is None:
            assert self.ctx.services is not None
            self._credit = self.ctx.services.collect_credit(self.sink_id)
        return self._credit

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._after_checkpoint = checkpoint_id

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if not values:
            return
        assert self.ctx.services is not None
        payload = dumps_records(list(values), len(values))
        self.output_gate().spend(len(payload))
        self.ctx.services.collect(self.sink_id, payload, self._after_checkpoint)


class DiscardingSinkOperator(OneInputStreamOperator):
    """Counts and drops records (benchmarks)."""

    takes_row_ranges = True
    runs_in_java = True

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        acc = self.ctx.accumulators
        acc["records_discarded"] = acc.get("records_discarded", 0) + len(values)
