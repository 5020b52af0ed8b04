"""``reduce_batches``: a keyed running reduce of a batch stream with a vectorised user function.

``key_by(...).reduce_batches(fn)`` is Flink's ``KeyedStream.reduce`` a batch at a time:
``fn(earlier, later)`` combines two record batches of the non-key columns row by row (row ``i``
of ``earlier`` precedes row ``i`` of ``later`` for the same key) and must be associative. For
every input row the operator emits the row's key and the key's reduction so far (the input's
schema, rows in input order). Each key's rows are combined by a log-step (Hillis-Steele) scan,
``ceil(log2(r))`` calls for runs of at most ``r`` rows, plus one call putting the key's state
first. State: one row per key in a :class:`~undertow.state.columnar_table.ColumnarKeyedTable`
(numbers and booleans in numpy, other types as Python values), snapshotted per key group.
Errors (another schema or length, changed value columns, a null key, a null reduced number)
name the operator and subtask. Threading: a task-loop operator (``setup ->
restore_key_groups? -> open -> process_batch*``). Design: docs/design.md, "Batch streams".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.core.errors import BatchError
from undertow.runtime.task.batch_aggregate import encode_keys
from undertow.runtime.task.batch_operators import _check_input, _show, _where
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.udf_hooks import ForwardsCheckpointHooks, UdfHooks
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable
from undertow.state.key_groups import key_group_range_for_subtask


def state_column(field: pa.Field) -> Accumulator:
    """The accumulator column that holds ``field``'s values: numpy for numbers and booleans,
    Python values (``object``) for every other type."""
    t = field.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        dtype = np.dtype(t.to_pandas_dtype())
        return Accumulator(field.name, dtype, dtype.type(0), t)
    return Accumulator(field.name, np.dtype(object), None, t)


def _numeric(column: pa.Array) -> bool:
    t = column.type
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
    return numeric and not column.null_count


def _put(out: pa.RecordBatch, rows: np.ndarray, new: pa.RecordBatch) -> pa.RecordBatch:
    """``out`` with its rows ``rows`` replaced by the rows of ``new``: numeric columns without
    nulls by a numpy assignment, the others by a ``take`` over both batches."""
    if all(_numeric(c) for c in out.columns) and all(_numeric(c) for c in new.columns):
        arrays = []
        for old, fresh in zip(out.columns, new.columns):
            values = old.to_numpy().copy()
            values[rows] = fresh.to_numpy()
            arrays.append(pa.array(values, type=old.type))
        return pa.RecordBatch.from_arrays(arrays, schema=out.schema)
    n = out.num_rows
    picks = np.arange(n)
    picks[rows] = n + np.arange(len(rows))
    both = pa.Table.from_batches([out, new])
    return _one_batch(both.take(pa.array(picks)), out.schema)


def _one_batch(data: pa.Table | pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if isinstance(data, pa.RecordBatch):
        return data
    batches = data.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=schema)


class BatchReduceOperator(ForwardsCheckpointHooks, OneInputStreamOperator):
    """Running ``fn``-reduction per key of ``key_columns`` (see the module docstring)."""

    takes_row_ranges = True

    def __init__(self, function: Any, call: Callable[..., Any], key_columns: Sequence[str]):
        self.function = function
        self.hooks = UdfHooks.of(function)
        self.call = call
        self.key_columns = list(key_columns)
        self.value_schema: pa.Schema | None = None
        self.table: ColumnarKeyedTable | None = None
        self._restored: dict[int, bytes] = {}

    def open(self) -> None:
        self.hooks.open(self.ctx.runtime_context)

    def close(self) -> None:
        self.hooks.close()

    # state ----------------------------------------------------------------------------------
    def snapshot_key_groups(self) -> dict[int, bytes]:
        return dict(self._restored) if self.table is None else self.table.snapshot()

    def restore_key_groups(self, blobs: dict[int, bytes]) -> None:
        mine = self._key_groups()
        self._restored = {g: b for g, b in blobs.items() if g in mine}

    def _key_groups(self) -> range:
        ctx = self.ctx
        return key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                           ctx.subtask_index)  # fmt: skip

    def _table_for(self, batch: pa.RecordBatch) -> ColumnarKeyedTable:
        """The state table, made at the first batch (whose schema fixes the columns)."""
        schema = batch.schema
        missing = [name for name in self.key_columns if schema.get_field_index(name) < 0]
        if missing:
            raise BatchError(f"{_where(self)}: key column(s) {missing} not in the batch "
                             f"(columns: {schema.names})")  # fmt: skip
        values = pa.schema([f for f in schema if f.name not in self.key_columns])
        if not len(values):
            raise BatchError(
                f"{_where(self)}: reduce_batches() needs a column besides the key columns "
                f"{self.key_columns}; the batch has {schema.names}"
            )
        self.value_schema = values
        keys = [schema.field(name) for name in self.key_columns]
        table = ColumnarKeyedTable(keys, [state_column(f) for f in values],
                                   self.ctx.max_parallelism)  # fmt: skip
        try:
            table.restore(self._restored, self._key_groups(), _where(self))
        except ValueError as err:
            raise BatchError(str(err)) from err
        self._restored = {}
        self.table = table
        return table

    # processing -----------------------------------------------------------------------------
    def _combine(self, earlier: pa.RecordBatch, later: pa.RecordBatch) -> pa.RecordBatch:
        assert self.value_schema is not None
        result = self.call(earlier, later)
        if not isinstance(result, (pa.RecordBatch, pa.Table)):
            raise BatchError(f"{_where(self)}: reduce_batches() must return a "
                             f"pyarrow.RecordBatch (or Table), got {type(result).__name__} "
                             f"{result!r:.80}")  # fmt: skip
        if not result.schema.equals(self.value_schema) or result.num_rows != later.num_rows:
            raise BatchError(
                f"{_where(self)}: reduce_batches() returned {result.num_rows} rows of schema "
                f"{_show(result.schema)} for {later.num_rows} rows of {_show(self.value_schema)}"
                "; it must return a batch of its inputs' schema and length"
            )
        return _one_batch(result, self.value_schema)

    def scan(self, values: pa.RecordBatch, groups: np.ndarray) -> pa.RecordBatch:
        """The running reduction within each run of equal ``groups`` (sorted): a log-step
        scan, each step combining every row with the row ``step`` before it in its run."""
        n, step, out = values.num_rows, 1, values
        while step < n:
            rows = np.flatnonzero(groups[step:] == groups[:-step]) + step
            if not len(rows):
                break  # every run is shorter than step: no longer distance pairs either
            combined = self._combine(out.take(pa.array(rows - step)), out.take(pa.array(rows)))
            out = _put(out, rows, combined)
            step *= 2
        return out

    def _state_rows(self, table: ColumnarKeyedTable, slots: np.ndarray) -> pa.RecordBatch:
        assert self.value_schema is not None
        arrays = [pa.array(table.columns[f.name][slots], type=f.type) for f in self.value_schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self.value_schema)

    def reduce(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The running reductions of ``batch``'s rows (the input's schema); updates the state."""
        table = self.table if self.table is not None else self._table_for(batch)
        schema = self.value_schema
        assert schema is not None
        if any(batch.schema.get_field_index(n) < 0 for n in [*self.key_columns, *schema.names]):
            raise BatchError(
                f"{_where(self)}: reduce_batches(): a batch has the columns "
                f"{batch.schema.names}, the first had {[*self.key_columns, *schema.names]}"
            )
        values = batch.select(schema.names)
        if not values.schema.equals(schema):
            raise BatchError(f"{_where(self)}: reduce_batches(): a batch has the value columns "
                             f"{_show(values.schema)}, the first had {_show(schema)}")  # fmt: skip
        n, before = batch.num_rows, table.num_slots
        columns = [(name, batch.column(name)) for name in self.key_columns]
        codes, keys = encode_keys(columns, _where(self))
        code_slots = table.slots_for(keys)
        # a stable sort groups each key's rows in input order (radix sort on 16-bit codes)
        narrow = codes.astype(np.uint16) if len(code_slots) <= 1 << 16 else codes
        order = np.argsort(narrow, kind="stable")
        sorted_codes = codes[order]
        running = self.scan(values.take(pa.array(order)), sorted_codes)
        slots = code_slots[sorted_codes]
        known = np.flatnonzero(slots < before)  # rows of keys with state before this batch
        if len(known):
            rows = pa.array(known)
            prior = self._combine(self._state_rows(table, slots[known]), running.take(rows))
            running = _put(running, known, prior)
        last = np.append(np.flatnonzero(np.diff(sorted_codes)), n - 1)
        self._store(table, slots[last], running.take(pa.array(last)))
        unsorted = np.empty(n, dtype=np.int64)
        unsorted[order] = np.arange(n)
        result = running.take(pa.array(unsorted))
        out = [batch.column(f.name) if f.name in self.key_columns else result.column(f.name)
               for f in batch.schema]  # fmt: skip
        return pa.RecordBatch.from_arrays(out, schema=batch.schema)

    def _store(self, table: ColumnarKeyedTable, slots: np.ndarray, rows: pa.RecordBatch) -> None:
        for name, column in zip(rows.schema.names, rows.columns):
            target = table.columns[name]
            if target.dtype != object and column.null_count:
                raise BatchError(f"{_where(self)}: reduce_batches(): the reduced value of "
                                 f"column {name!r} is null for {column.null_count} key(s); "
                                 f"a {column.type} column's state cannot hold a null")  # fmt: skip
            target[slots] = column.to_numpy(zero_copy_only=False)

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, value in enumerate(values):
            batch = _check_input(self, value)
            if not batch.num_rows:
                continue
            out.append(self.reduce(batch))
            if stamps is not None and timestamps is not None:
                stamps.append(timestamps[i])
        if out:
            self.output.collect_batch(out, stamps)
