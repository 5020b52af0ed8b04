"""Several column aggregations per key and window, folded into one columnar table.

A window operator of a batch stream computes one or more :class:`ColumnAggregate` (``sum``,
``min``, ``max``, ``mean`` of a column, ``count`` of rows), each an output column of its own.
:class:`WindowAggregates` names their accumulator columns in the operator's
:class:`~undertow.state.columnar_table.ColumnarKeyedTable`, folds a batch's rows into them and
reads the results. Aggregates share accumulators where they can (``count`` and ``mean``'s
count; two aggregates of one kind and column). A single aggregate keeps the names the window
operators have always used (``sum``, ``count``, ``min``, ``max``), so its snapshots restore as
before; several are named by kind and column (``sum(v)``, ``mean.sum(v)``).
Pure numpy over the table's columns: no I/O, no threads (the owning operator's task loop).
Design: docs/design.md, "Batch streams".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.core.errors import BatchError
from undertow.runtime.task.batch_aggregate import KINDS, accumulators
from undertow.state.columnar_table import Accumulator

#: The ufunc that merges two partial values of an accumulator, by accumulator kind.
_MERGE = {"sum": np.add, "count": np.add, "min": np.minimum, "max": np.maximum}


@dataclass(frozen=True, slots=True)
class ColumnAggregate:
    """One aggregate: ``kind`` (one of ``KINDS``) of ``column`` (None for ``count``, which
    counts rows), output as the column ``name``."""

    kind: str
    column: str | None
    name: str

    @classmethod
    def of(cls, kind: str, column: str | None) -> ColumnAggregate:
        """The aggregate ``.sum(column)`` (...) makes: named ``column``, or ``count``."""
        return cls(kind, None if kind == "count" else column, "count" if kind == "count" else
                   str(column))  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Slot:
    """One accumulator column: its table name, kind (``sum``/``count``/``min``/``max``),
    the column it folds (None: rows) and whether it holds float64 whatever the column."""

    name: str
    kind: str
    column: str | None
    floating: bool


class WindowAggregates:
    """The accumulators of ``aggregates`` (see the module docstring). Immutable."""

    def __init__(self, aggregates: Sequence[ColumnAggregate]) -> None:
        if not aggregates:
            raise ValueError("a window needs at least one aggregate")
        for a in aggregates:
            if a.kind not in KINDS:
                raise ValueError(f"unknown batch aggregation {a.kind!r}; one of {KINDS}")
        self.aggregates = tuple(aggregates)
        single = len(aggregates) == 1
        slots: dict[str, _Slot] = {}
        #: Per aggregate, the accumulator names it reads: (value or sum, count or None).
        self._reads: list[tuple[str, str | None]] = []
        for a in aggregates:
            if a.kind == "count":
                slots["count"] = _Slot("count", "count", None, False)
                self._reads.append(("count", None))
                continue
            base = "sum" if a.kind == "mean" else a.kind
            name = base if single else f"{'mean.' if a.kind == 'mean' else ''}{base}({a.column})"
            slots[name] = _Slot(name, base, a.column, a.kind == "mean")
            if a.kind == "mean":
                slots["count"] = _Slot("count", "count", None, False)
            self._reads.append((name, "count" if a.kind == "mean" else None))
        self._slots = tuple(slots.values())
        #: The value columns the aggregates read, in first-use order.
        self.columns = tuple(dict.fromkeys(s.column for s in self._slots if s.column))

    @property
    def names(self) -> list[str]:
        """The output columns, in the order the aggregates were given."""
        return [a.name for a in self.aggregates]

    def accumulators(self, dtypes: dict[str, np.dtype[Any]]) -> list[Accumulator]:
        """The table's accumulator columns, ``dtypes`` giving each value column's (int64 or
        float64; a column missing from it counts as int64)."""
        out = []
        for s in self._slots:
            dtype = np.dtype(np.float64) if s.floating else dtypes.get(s.column or "", np.int64)
            [acc] = [a for a in accumulators(s.kind, np.dtype(dtype)) if a.name == s.kind]
            out.append(Accumulator(s.name, acc.dtype, acc.initial))
        return out

    def dtypes_of_snapshot(self, schema: pa.Schema) -> dict[str, np.dtype[Any]]:
        """The value columns' dtypes as a snapshot of ``schema`` holds them (for a restore
        before any batch: the table must be made with the types it was written with)."""
        out: dict[str, np.dtype[Any]] = {}
        for s in self._slots:
            index = schema.get_field_index(s.name)
            if s.column and not s.floating and index >= 0:
                out[s.column] = np.dtype(schema.field(index).type.to_pandas_dtype())
        return out

    def value_types(self, batch: pa.RecordBatch, where: str) -> dict[str, np.dtype[Any]]:
        """Each value column's accumulator dtype; an error naming ``where`` if a column is
        missing or not numeric."""
        out: dict[str, np.dtype[Any]] = {}
        for a in self.aggregates:
            if a.column is None or a.column in out:
                continue
            index = batch.schema.get_field_index(a.column)
            kind = batch.schema.field(index).type if index >= 0 else None
            if kind is None or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
                raise BatchError(
                    f"{where}: {a.kind}({a.column!r}): a numeric column {a.column!r} is "
                    f"needed; the batch has {batch.schema.names}"
                    + ("" if kind is None else f" and {a.column!r} is {kind}")
                )
            out[a.column] = np.dtype(np.float64 if pa.types.is_floating(kind) else np.int64)
        return out

    def values(self, batch: pa.RecordBatch, where: str) -> dict[str, np.ndarray]:
        """Each value column of ``batch`` as numpy (checked numeric and without nulls)."""
        self.value_types(batch, where)
        out = {}
        for column in self.columns:
            array = batch.column(column)
            if array.null_count:
                kinds = "/".join(a.kind for a in self.aggregates if a.column == column)
                raise BatchError(f"{where}: {kinds}({column!r}): column has "
                                 f"{array.null_count} null(s)")  # fmt: skip
            out[column] = array.to_numpy(zero_copy_only=False)
        return out

    def fold(self, cols: dict[str, np.ndarray], slots: np.ndarray,
             values: dict[str, np.ndarray], rows: np.ndarray | None) -> None:  # fmt: skip
        """Fold rows into the accumulators ``cols``: entry ``i`` adds row ``rows[i]`` (or
        ``i`` if ``rows`` is None) of ``values`` to slot ``slots[i]``."""
        for s in self._slots:
            acc = cols[s.name]
            if s.column is None:
                if len(slots):
                    top = int(slots.max()) + 1
                    acc[:top] += np.bincount(slots, minlength=top)
                continue
            v = values[s.column].astype(acc.dtype, copy=False)
            _MERGE[s.kind].at(acc, slots, v if rows is None else v[rows])

    def merge(self, out: dict[str, np.ndarray], at: np.ndarray,
              cols: dict[str, np.ndarray], slots: np.ndarray) -> None:  # fmt: skip
        """Merge the accumulators of table slots ``slots`` into ``out`` (fresh accumulator
        arrays, as :meth:`fresh` makes) at positions ``at`` (sessions merging)."""
        for s in self._slots:
            _MERGE[s.kind].at(out[s.name], at, cols[s.name][slots])

    def fresh(self, table_accumulators: dict[str, Accumulator], n: int) -> dict[str, np.ndarray]:
        """``n`` fresh entries of each accumulator (their initial values)."""
        return {s.name: np.full(n, table_accumulators[s.name].initial,
                                dtype=table_accumulators[s.name].dtype)
                for s in self._slots}  # fmt: skip

    def results(self, cols: dict[str, np.ndarray], slots: np.ndarray) -> list[pa.Array]:
        """Each aggregate's values at table slots ``slots``, as :attr:`names` orders them."""
        out = []
        for value, count in self._reads:
            v = cols[value][slots]
            out.append(pa.array(v if count is None else v / cols[count][slots]))
        return out
