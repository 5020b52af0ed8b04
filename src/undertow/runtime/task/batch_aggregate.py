"""Keyed running aggregations of a batch stream: ``sum``, ``min``, ``max``, ``count``, ``mean``.

For every input row the operator emits its key's running aggregate after that row (as the
record path's ``KeyedStream.sum`` does per record), a batch at a time: key columns plus one
column (the aggregated column's name; ``count`` for ``count()``), rows in input order. Keys are
dictionary-encoded (one slot lookup per distinct key), rows sorted by slot (stable) and each
key's run is a segmented scan; state is a
:class:`~undertow.state.columnar_table.ColumnarKeyedTable`, snapshotted per key group
(:class:`~undertow.runtime.task.operator.KeyGroupedState`). Integers aggregate in int64
(wrapping past 2**63), floats in float64 (a running float sum may differ from sequential
addition in the last bits). Nulls in key or value are errors naming operator and subtask.

Threading: a task-loop operator (``setup -> restore_key_groups? -> open -> process_batch*``).
Design: docs/design.md, "Batch streams".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from undertow.core.errors import BatchError
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.window_slots import WindowSlotIndex
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable
from undertow.state.key_groups import key_group_range_for_subtask
from undertow.state.key_groups_arrow import one_nan

KINDS = ("sum", "min", "max", "count", "mean")


def segmented_scan(ufunc: np.ufunc, values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running ``ufunc`` (an associative, commutative one: min, max) within runs of equal
    ``groups`` (sorted): a log-step (Hillis-Steele) scan, O(n log n) numpy work."""
    out = values.copy()
    n, step = len(out), 1
    while step < n:
        same = groups[step:] == groups[:-step]
        out[step:] = np.where(same, ufunc(out[step:], out[:-step]), out[step:])
        step *= 2
    return out


def refuse_null_keys(name: str, column: pa.Array, where: str) -> None:
    """A ``BatchError`` naming ``where``, the key column and its first null, if it has one."""
    if column.null_count:
        first = pc.index(pc.is_null(column), True).as_py()
        raise BatchError(
            f"{where}: key column {name!r} has {column.null_count} null(s), the first at "
            f"row {first}; a key must not be null"
        )


def encode_keys(
    columns: Sequence[tuple[str, pa.Array]], where: str
) -> tuple[np.ndarray, list[Any]]:
    """``(codes, keys)`` of rows keyed by ``columns`` (name, array): every row's code
    ``0..d-1`` over the ``d`` distinct keys, and those keys (a value for one column, a tuple
    for several) in code order. A null key is an error naming ``where`` and the column."""
    dictionaries: list[list[Any]] = []
    indices: list[np.ndarray] = []
    for name, column in columns:
        refuse_null_keys(name, column, where)
        encoded = pc.dictionary_encode(one_nan(column))  # all NaNs one key, ±0.0 two
        dictionaries.append(encoded.dictionary.to_pylist())
        indices.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    if len(indices) == 1:
        return indices[0], dictionaries[0]
    codes = np.zeros(len(indices[0]), dtype=np.int64)
    for dictionary, index in zip(dictionaries, indices):
        codes = codes * len(dictionary) + index
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    keys = [tuple(d[i[row]] for d, i in zip(dictionaries, indices)) for row in first.tolist()]
    return inverse.reshape(-1), keys


def accumulators(kind: str, dtype: np.dtype[Any]) -> list[Accumulator]:
    """The accumulator columns of aggregation ``kind`` over values of ``dtype``."""
    if kind == "sum":
        return [Accumulator("sum", dtype, 0)]
    if kind == "count":
        return [Accumulator("count", np.dtype(np.int64), 0)]
    if kind == "mean":
        return [Accumulator("sum", np.dtype(np.float64), 0.0),
                Accumulator("count", np.dtype(np.int64), 0)]  # fmt: skip
    if dtype.kind == "f":
        identity = np.inf if kind == "min" else -np.inf
    else:
        info = np.iinfo(dtype)
        identity = info.max if kind == "min" else info.min
    return [Accumulator(kind, dtype, identity)]


class BatchAggregateOperator(OneInputStreamOperator):
    """Running ``kind`` of ``column`` per key of ``key_columns`` (see the module docstring)."""

    takes_row_ranges = True

    def __init__(self, kind: str, column: str | None, key_columns: Sequence[str]) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown batch aggregation {kind!r}; one of {KINDS}")
        self.kind = kind
        self.column = column
        self.key_columns = list(key_columns)
        self.output_name = "count" if kind == "count" else str(column)
        self.table: ColumnarKeyedTable | None = None
        self._restored: dict[int, bytes] = {}
        #: The slots of a single key column's values (with the table, at the first batch).
        self._index: WindowSlotIndex | None = None

    @property
    def where(self) -> str:
        ctx = self.ctx
        return f"operator '{ctx.name}' (subtask {ctx.subtask_index + 1}/{ctx.parallelism})"

    # state ----------------------------------------------------------------------------------
    def snapshot_key_groups(self) -> dict[int, bytes]:
        if self.table is None:
            return dict(self._restored)
        return self.table.snapshot()

    def restore_key_groups(self, blobs: dict[int, bytes]) -> None:
        ctx = self.ctx
        mine = key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism, ctx.subtask_index)
        self._restored = {g: b for g, b in blobs.items() if g in mine}

    def _table_for(self, batch: pa.RecordBatch) -> ColumnarKeyedTable:
        key_fields = []
        for name in self.key_columns:
            index = batch.schema.get_field_index(name)
            if index < 0:
                raise BatchError(
                    f"{self.where}: key column {name!r} is not in the batch (columns: "
                    f"{batch.schema.names})"
                )
            key_fields.append(batch.schema.field(index))
        dtype: np.dtype[Any] = np.dtype(np.int64)
        if self.column is not None:
            dtype = self._value_type(batch)
        table = ColumnarKeyedTable(key_fields, accumulators(self.kind, dtype),
                                   self.ctx.max_parallelism)  # fmt: skip
        mine = key_group_range_for_subtask(
            self.ctx.max_parallelism, self.ctx.parallelism, self.ctx.subtask_index
        )
        try:
            table.restore(self._restored, mine, self.where)
        except ValueError as err:
            raise BatchError(str(err)) from err
        self._restored = {}
        if len(self.key_columns) == 1:
            self._index = WindowSlotIndex(self.ctx.max_parallelism)
        return table

    def _value_type(self, batch: pa.RecordBatch) -> np.dtype[Any]:
        assert self.column is not None
        index = batch.schema.get_field_index(self.column)
        if index < 0:
            raise BatchError(
                f"{self.where}: {self.kind}({self.column!r}): no column {self.column!r} in the "
                f"batch (columns: {batch.schema.names})"
            )
        t = batch.schema.field(index).type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise BatchError(
                f"{self.where}: {self.kind}({self.column!r}): column {self.column!r} has type "
                f"{t}; a numeric column is needed"
            )
        return np.dtype(np.float64 if pa.types.is_floating(t) else np.int64)

    # processing -----------------------------------------------------------------------------
    def _slots(self, table: ColumnarKeyedTable, batch: pa.RecordBatch) -> np.ndarray:
        """Every row's slot in ``table`` (new keys get new slots)."""
        columns = [(name, batch.column(name)) for name in self.key_columns]
        if self._index is not None:
            name, column = columns[0]
            refuse_null_keys(name, column, self.where)
            return self._index.key_slots(table, column)
        codes, keys = encode_keys(columns, self.where)
        return table.slots_for(keys)[codes]

    def _values(self, batch: pa.RecordBatch, dtype: np.dtype[Any]) -> np.ndarray:
        assert self.column is not None
        column = batch.column(self.column)
        if column.null_count:
            first = pc.index(pc.is_null(column), True).as_py()
            raise BatchError(
                f"{self.where}: {self.kind}({self.column!r}): column has {column.null_count} "
                f"null(s), the first at row {first}"
            )
        return column.to_numpy(zero_copy_only=False).astype(dtype, copy=False)

    def fold(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The running aggregates of ``batch``'s rows; updates the state."""
        if self.table is None:
            self.table = self._table_for(batch)
        elif self.column is not None:
            self._value_type(batch)
        table = self.table
        n = batch.num_rows
        slots = self._slots(table, batch)
        # a stable sort groups each key's rows in input order; on 16-bit slots numpy sorts
        # by radix, about ten times faster than on int64
        narrow = slots.astype(np.uint16) if table.num_slots <= 1 << 16 else slots
        order = np.argsort(narrow, kind="stable")
        s = slots[order]
        starts_mask = np.empty(n, dtype=bool)
        starts_mask[0] = True
        np.not_equal(s[1:], s[:-1], out=starts_mask[1:])
        starts = np.flatnonzero(starts_mask)
        ends = np.append(starts[1:] - 1, n - 1)
        lengths = ends - starts + 1  # each key's run: a per-key value reaches its rows by repeat
        group_slots = s[starts]
        cols = table.columns
        running: np.ndarray
        if self.kind in ("count", "mean"):
            # each key's offset (its previous count, minus its first row), repeated over its run
            count = np.arange(1, n + 1, dtype=np.int64)
            count += np.repeat(cols["count"][group_slots] - starts, lengths)
            cols["count"][group_slots] = count[ends]
            running = count
        if self.kind in ("sum", "mean"):
            acc = cols["sum"]
            v = self._values(batch, acc.dtype)[order]
            cs = np.cumsum(v)
            # each key's previous sum minus the prefix before its first row, over its run
            total = cs + np.repeat(acc[group_slots] - (cs[starts] - v[starts]), lengths)
            acc[group_slots] = total[ends]
            running = total if self.kind == "sum" else total / count
        elif self.kind in ("min", "max"):
            acc = cols[self.kind]
            ufunc: Callable[..., Any] = np.minimum if self.kind == "min" else np.maximum
            v = self._values(batch, acc.dtype)[order]
            # the sorted slots tell the runs apart; acc[s]: each row's key's state
            scanned = ufunc(segmented_scan(ufunc, v, s), acc[s])  # type: ignore[arg-type]
            acc[group_slots] = scanned[ends]
            running = scanned
        out = np.empty_like(running)
        out[order] = running
        arrays = [batch.column(name) for name in self.key_columns] + [pa.array(out)]
        names = [*self.key_columns, self.output_name]
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        out: list[Any] = []
        stamps: list[Any] | None = None if timestamps is None else []
        for i, batch in enumerate(values):
            if not isinstance(batch, pa.RecordBatch):
                raise BatchError(
                    f"{self.where}: expected a pyarrow.RecordBatch, got {type(batch).__name__}"
                )
            if batch.num_rows == 0:
                continue
            out.append(self.fold(batch))
            if stamps is not None and timestamps is not None:
                stamps.append(timestamps[i])
        if out:
            self.output.collect_batch(out, stamps)
