"""Operators of a batch stream: functions over ``pyarrow.RecordBatch``, and conversions.

A batch stream is a stream whose records are ``pyarrow.RecordBatch`` objects: they go through
chains, buffers (as Arrow IPC, :mod:`undertow.runtime.network.arrow_payload`), barriers and
credits as records do, one record batch being one record. The operators here apply a user
function to each record batch (``map_batches``, ``map_pandas``, ``filter_batches``,
``flat_map_batches``), or convert between records and record batches (``to_batches``,
``to_records``).

A record batch's timestamp (if any) goes with what is made from it (``to_records``: to each
row); ``to_batches`` emits batches without one.
Errors name the operator and subtask: a function that returns something other than a record
batch (or a table), a batch whose schema differs from the declared one, a mask of the wrong
length, a ``map_pandas`` result that is not a DataFrame of the declared columns. Threading
and lifecycle: task-loop operators, ``setup -> open -> process_batch* -> finish -> close``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from undertow.common.row import Row
from undertow.core.errors import BatchError
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.udf_hooks import ForwardsCheckpointHooks, UdfHooks


def _where(op: OneInputStreamOperator) -> str:
    ctx = op.ctx
    return f"operator '{ctx.name}' (subtask {ctx.subtask_index + 1}/{ctx.parallelism})"


def _check_input(op: OneInputStreamOperator, value: Any) -> pa.RecordBatch:
    if type(value) is not pa.RecordBatch:
        raise BatchError(
            f"{_where(op)}: expected a pyarrow.RecordBatch, got {type(value).__name__} "
            f"{value!r:.80}; use to_batches() to turn records into batches"
        )
    return value


class _BatchFunctionOperator(ForwardsCheckpointHooks, OneInputStreamOperator):
    """Opens and closes the user's function object (if it has ``open``/``close``) and passes
    the checkpoint hooks on to it."""

    takes_row_ranges = True

    def __init__(self, function: Any, call: Callable[..., Any], schema: pa.Schema | None = None):
        self.function = function
        self.hooks = UdfHooks.of(function)
        self.call = call
        self.schema = schema

    def open(self) -> None:
        self.hooks.open(self.ctx.runtime_context)

    def close(self) -> None:
        self.hooks.close()

    def _checked(self, result: Any, what: str) -> list[pa.RecordBatch]:
        if isinstance(result, pa.Table):
            batches = result.to_batches()
        elif isinstance(result, pa.RecordBatch):
            batches = [result]
        else:
            raise BatchError(
                f"{_where(self)}: {what} must return a pyarrow.RecordBatch (or Table), got "
                f"{type(result).__name__} {result!r:.80}"
            )
        schema = self.schema
        if schema is not None:
            for batch in batches:
                if not batch.schema.equals(schema):
                    raise BatchError(
                        f"{_where(self)}: {what} returned a batch of schema "
                        f"{_show(batch.schema)}, declared {_show(schema)}"
                    )
        return batches


def _show(schema: pa.Schema) -> str:
    return "{" + ", ".join(f"{f.name}: {f.type}" for f in schema) + "}"


def _emit(op: OneInputStreamOperator, out: list[Any], stamps: list[Any] | None) -> None:
    if out:
        op.output.collect_batch(out, stamps)


class MapBatches(_BatchFunctionOperator):
    """``map_batches(fn, schema)``: one record batch out per record batch in."""

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        call = self.call
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, value in enumerate(values):
            for batch in self._checked(call(_check_input(self, value)), "map_batches()"):
                out.append(batch)
                if stamps is not None and timestamps is not None:
                    stamps.append(timestamps[i])
        _emit(self, out, stamps)


class MapPandas(_BatchFunctionOperator):
    """``map_pandas(fn, schema)``: ``fn(DataFrame) -> DataFrame`` per record batch; the
    result becomes a record batch of ``schema`` (columns taken by name, converted to its
    types), or of the types pandas infers; the DataFrame's index is dropped."""

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        import pandas as pd  # type: ignore[import-untyped]  # optional: undertow[pandas]

        call, schema = self.call, self.schema
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, value in enumerate(values):
            result = call(_check_input(self, value).to_pandas())
            if not isinstance(result, pd.DataFrame):
                raise BatchError(f"{_where(self)}: map_pandas() must return a pandas.DataFrame, "
                                 f"got {type(result).__name__} {result!r:.80}")  # fmt: skip
            try:
                batch = pa.RecordBatch.from_pandas(result, schema=schema, preserve_index=False)
            except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
                wanted = "" if schema is None else f" to the declared {_show(schema)}"
                raise BatchError(f"{_where(self)}: map_pandas() returned a DataFrame with "
                                 f"columns {list(result.columns)} (dtypes "
                                 f"{[str(t) for t in result.dtypes]}) that does not convert"
                                 f"{wanted}: {err}") from err  # fmt: skip
            out.append(batch.replace_schema_metadata(None))
            if stamps is not None and timestamps is not None:
                stamps.append(timestamps[i])
        _emit(self, out, stamps)


class FlatMapBatches(_BatchFunctionOperator):
    """``flat_map_batches(fn)``: ``fn`` returns an iterable of record batches (or ``None``)."""

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        call = self.call
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, value in enumerate(values):
            result = call(_check_input(self, value))
            if result is None:
                continue
            if isinstance(result, (pa.RecordBatch, pa.Table)):
                result = [result]
            for item in result:
                for batch in self._checked(item, "flat_map_batches()"):
                    out.append(batch)
                    if stamps is not None and timestamps is not None:
                        stamps.append(timestamps[i])
        _emit(self, out, stamps)


class FilterBatches(_BatchFunctionOperator):
    """``filter_batches(fn)``: ``fn`` returns a boolean mask (Arrow array, numpy array or list)
    with one entry per row; rows where it is true are kept (null counts as false)."""

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        call = self.call
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, value in enumerate(values):
            batch = _check_input(self, value)
            mask = call(batch)
            try:
                array = mask if isinstance(mask, pa.Array) else pa.array(mask, type=pa.bool_())
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
                raise BatchError(
                    f"{_where(self)}: filter_batches() must return a boolean mask, got "
                    f"{type(mask).__name__} {mask!r:.80}"
                ) from err
            if array.type != pa.bool_() or len(array) != batch.num_rows:
                raise BatchError(
                    f"{_where(self)}: filter_batches() returned a mask of type {array.type} and "
                    f"{len(array)} entries for a batch of {batch.num_rows} rows; a boolean mask "
                    "with one entry per row is needed"
                )
            kept = batch.filter(array, null_selection_behavior="drop")
            if kept.num_rows:
                out.append(kept)
                if stamps is not None and timestamps is not None:
                    stamps.append(timestamps[i])
        _emit(self, out, stamps)


class ToRecords(OneInputStreamOperator):
    """``to_records()``: every row of every record batch becomes a :class:`Row` with the
    batch's column names, carrying its batch's timestamp."""

    takes_row_ranges = True

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, value in enumerate(values):
            batch = _check_input(self, value)
            names = batch.schema.names
            columns = [c.to_pylist() for c in batch.columns]
            rows = [Row(**dict(zip(names, r))) for r in zip(*columns)]
            out.extend(rows)
            if stamps is not None and timestamps is not None:
                stamps.extend([timestamps[i]] * len(rows))
        _emit(self, out, stamps)


def _misfit(rows: list[Any], schema: pa.Schema) -> str | None:
    """Which of ``rows`` does not fit ``schema`` and why (the record, its field and value),
    or None if each fits alone. Only called once a batch failed to build: a row at a time."""
    width = len(schema.names)
    for record in rows:
        if isinstance(record, dict):
            values = [record.get(name) for name in schema.names]
        elif isinstance(record, (tuple, list)):
            if len(record) != width:
                return f"the record {record!r:.200} has {len(record)} fields, the schema {width}"
            values = list(record)
        else:
            return (
                f"the record {record!r:.200} is a {type(record).__name__}, not a Row, tuple or dict"
            )
        for field, value in zip(schema, values):
            try:
                pa.array([value], type=field.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as err:
                return (
                    f"the record {record!r:.200} has {value!r:.100} in field {field.name!r} "
                    f"({field.type}): {err}"
                )
    return None


class ToBatches(OneInputStreamOperator):
    """``to_batches(schema, max_rows, max_delay)``: records into record batches of ``schema``.

    A record is a ``Row``/tuple (fields by position) or a dict (fields by name). Rows are
    buffered and a batch is emitted when ``max_rows`` are buffered, when the oldest buffered
    row has waited ``max_delay`` ms (a processing-time timer), before every checkpoint barrier
    (so the buffer is never state), before every watermark it forwards and at the end of the
    input. Flushing before a watermark keeps every row ahead of the watermarks that came after
    it (as Flink's bundling Python operators finish their bundle first): otherwise a row held
    here would reach an event-time window after the watermark that fired the window, late.
    """

    def __init__(self, schema: pa.Schema, max_rows: int, max_delay_ms: int) -> None:
        self.schema = schema
        self.max_rows = max_rows
        self.max_delay_ms = max_delay_ms
        self._rows: list[Any] = []
        self._timer: Any = None

    def open(self) -> None:
        self._pts = self.ctx.processing_time_service

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        rows = self._rows
        rows.extend(values)
        if len(rows) >= self.max_rows:
            self._flush(whole_batches_only=True)
        if self._rows and self._timer is None:
            deadline = self._pts.current_processing_time() + self.max_delay_ms
            self._timer = self._pts.register_timer(deadline, self._on_timer)

    def _on_timer(self, _timestamp: int) -> None:
        self._timer = None
        self._flush()

    def _to_batch(self, rows: list[Any]) -> pa.RecordBatch:
        schema = self.schema
        try:
            if isinstance(rows[0], dict):
                return pa.RecordBatch.from_pylist(rows, schema=schema)
            columns = list(zip(*rows)) if schema.names else []
            width = len(schema.names)
            bad = next((r for r in rows if len(r) != width), None)
            if bad is not None:
                raise ValueError(f"record {bad!r} has {len(bad)} fields, the schema {width}")
            arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema)]
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as err:
            raise BatchError(
                f"{_where(self)}: to_batches(): records do not fit the schema "
                f"{_show(schema)}: {_misfit(rows, schema) or err}"
            ) from err

    def _flush(self, whole_batches_only: bool = False) -> None:
        """Emit the buffered rows in batches of ``max_rows``; with ``whole_batches_only`` a
        smaller remainder stays buffered (its timer keeps running)."""
        rows, step = self._rows, self.max_rows
        end = len(rows) - len(rows) % step if whole_batches_only else len(rows)
        self._rows = rows[end:]
        if not self._rows and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        out = [self._to_batch(rows[i : min(i + step, end)]) for i in range(0, end, step)]
        _emit(self, out, None)

    def process_watermark(self, watermark: int) -> None:
        if self._rows:
            self._flush()
        self.output.emit_watermark(watermark)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if self._rows:
            self._flush()

    def finish(self) -> None:
        if self._rows:
            self._flush()
