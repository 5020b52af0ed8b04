"""Key groups of a whole column (or several), vectorised: the same groups as the record path.

:func:`key_groups` gives, for every row, exactly ``assign_to_key_group(key, max_parallelism)``
of the key the record path sees for that row (the column's value for one key column, the tuple
of the columns' values for several), computed with numpy. A key column with nulls raises
``ValueError`` naming the column and the first null row.

:class:`KeyGroupLookup`: the same groups for a signed-integer column from a table over the
span of its values while it stays dense (a gather instead of a dozen hashing passes).

Threading: functions pure; a lookup owned by one caller. Cost: O(rows) numpy work plus one
Python hash per distinct non-integer key; a lookup, min, max and a gather per column.
The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from undertow.state.key_groups import stable_hash

_MASK32 = np.uint64(0xFFFFFFFF)


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h & _MASK32
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & _MASK32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & _MASK32
    h ^= h >> np.uint64(16)
    return h


def _integer_hashes(column: pa.Array) -> np.ndarray:
    k = column.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    mixed = (k ^ (k >> np.int64(32))).view(np.uint64)
    return _fmix32(mixed)


def one_nan(column: pa.Array) -> pa.Array:
    """``column`` with every NaN the same NaN (sign and payload dropped) and ``±0.0`` kept
    apart: what Arrow's dictionary encoding then tells apart are the keys Flink's
    ``Double.equals`` tells apart, and the record path (see ``key_groups.state_key``). A
    column of another type, or without NaNs, is returned as it is; cost: one pass over a
    float column."""
    if not pa.types.is_floating(column.type):
        return column
    nan = pc.is_nan(column)
    if not pc.any(nan).as_py():
        return column
    return pc.if_else(nan, pa.scalar(float("nan"), column.type), column)


def _distinct_hashes(column: pa.Array) -> np.ndarray:
    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    dictionary = encoded.dictionary.to_pylist()
    per_value = np.fromiter(
        (stable_hash(v) for v in dictionary), dtype=np.uint64, count=len(dictionary)
    )
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    return per_value[indices]


def column_hashes(column: pa.Array, name: str = "") -> np.ndarray:
    """The 32-bit stable hash (as uint64) of every value of ``column``."""
    if column.null_count:
        first = pc.index(pc.is_null(column), True).as_py()
        raise ValueError(
            f"key column {name!r} has {column.null_count} null(s), the first at row {first}; "
            "a key must not be null"
        )
    t = column.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        if pa.types.is_uint64(t) and len(column) and pc.max(column).as_py() >= 1 << 63:
            return _distinct_hashes(column)
        return _integer_hashes(column)
    if (
        pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
        or pa.types.is_large_binary(t) or pa.types.is_floating(t)
    ):  # fmt: skip
        return _distinct_hashes(column)
    raise ValueError(f"key column {name!r} has type {t}, which cannot be a key column")


def key_hashes(batch: pa.RecordBatch, columns: Sequence[str]) -> np.ndarray:
    """The stable hash of every row's key: one column's value, or the tuple of several."""
    if len(columns) == 1:
        return column_hashes(batch.column(columns[0]), columns[0])
    h = np.full(batch.num_rows, 17, dtype=np.uint64)
    for name in columns:
        h = (h * np.uint64(31) + column_hashes(batch.column(name), name)) & _MASK32
    return _fmix32(h)


#: A lookup table covers a span of at most this many values more than four times a column's
#: rows (4 bytes a value); keys spread wider are hashed.
DENSE_SPAN = 1 << 16


class KeyGroupLookup:
    """Key groups of a signed-integer key column from a lookup table over its values' span.

    :meth:`groups` returns exactly :func:`key_groups` of the column, or None when the column is
    not one this lookup serves (another type, nulls, or values spread wider than
    :data:`DENSE_SPAN` beyond four times the rows): the caller then hashes, and so does every
    later call (a key space that spread once is not dense). Invariant: ``_table[i]`` is the
    key group of ``_base + i``. Owned by one caller.
    """

    __slots__ = ("_base", "_dense", "_table", "max_parallelism")

    def __init__(self, max_parallelism: int) -> None:
        self.max_parallelism = max_parallelism
        self._table: np.ndarray | None = None
        self._base = 0
        self._dense = True

    def groups(self, column: pa.Array) -> np.ndarray | None:
        """Every row's key group (an int32 array), or None (see the class docstring)."""
        if not self._dense or column.null_count or not pa.types.is_signed_integer(column.type):
            return None
        if not len(column):
            return np.zeros(0, dtype=np.int32)
        values = column.to_numpy().astype(np.int64, copy=False)
        low, high = int(values.min()), int(values.max())
        table, base = self._table, self._base
        if table is None or low < base or high >= base + len(table):
            if table is not None:
                low, high = min(low, base), max(high, base + len(table) - 1)
            if high - low + 1 > DENSE_SPAN + 4 * len(values):
                self._dense, self._table = False, None
                return None
            span = pa.array(np.arange(low, high + 1, dtype=np.int64))
            groups = _integer_hashes(span) % np.uint64(self.max_parallelism)
            table, self._base = groups.astype(np.int32), low
            self._table = table
        return table[values - self._base]


def key_groups(batch: pa.RecordBatch, columns: Sequence[str], max_parallelism: int) -> np.ndarray:
    """The key group of every row of ``batch`` keyed by ``columns`` (int64 array)."""
    return (key_hashes(batch, columns) % np.uint64(max_parallelism)).astype(np.int64)


def subtasks_of(groups: np.ndarray, max_parallelism: int, parallelism: int) -> np.ndarray:
    """The subtask that owns each key group (Flink's formula, as the record path)."""
    return groups * parallelism // max_parallelism
