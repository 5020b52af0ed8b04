"""Vectorised slots of (key, window start) pairs for the batch windows of one key column, and of
plain keys for the running aggregations.

:class:`WindowSlotIndex` is a cache in front of a ``ColumnarKeyedTable``'s dict: each key value
gets a key id (a lookup table for dense integer keys, else ``pyarrow.compute.index_in``
against the known keys), each open window start a
numpy array ``key id -> slot``; only pairs it does not know go to ``table.slots_for``, with
their key groups computed for the column at once. :meth:`~WindowSlotIndex.key_slots`: the
same for a table keyed by the key alone (the running aggregations), under the start ``None``.

Invariant: every slot the cache holds is the table's slot of that (key, start); the owner
calls :meth:`removed` with each mask it passes to ``table.remove``, and a new table gets a new
index. Threading: owned by one operator on its task's loop thread. Cost: ``O(rows)`` numpy per
batch and window start in it, ``O(known keys)`` for the lookup set, Python work only for pairs
new to the cache. The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from undertow.state.columnar_table import ColumnarKeyedTable
from undertow.state.key_groups_arrow import key_groups, one_nan

#: Known keys beyond twice the table's slots (plus this) are forgotten at the next removal:
#: keys that stopped coming (one per session, say) must not grow the cache forever.
FORGET_ABOVE = 4096
#: Integer keys use a lookup table while their values span at most this many more than four
#: times their number (a table of 8 bytes a value); wider, ``pyarrow.compute.index_in``.
DIRECT_SPAN = 1 << 16


class WindowSlotIndex:
    """``(key column, window starts) -> slots`` for one key column (see the module doc)."""

    def __init__(self, max_parallelism: int) -> None:
        self.max_parallelism = max_parallelism
        #: Key values by key id (None before the first batch).
        self._known: pa.Array | None = None
        #: The key group of each key id (the record path's, computed for a column at once).
        self._groups = np.zeros(0, dtype=np.int64)
        #: Window start -> slot per key id (-1: none yet); at least ``len(_known)`` long.
        #: ``None``: the slots of a table keyed by the key alone (:meth:`key_slots`).
        self._windows: dict[int | None, np.ndarray] = {}
        #: Signed integer keys: key id by ``value - _base`` (-1: none), while they are dense.
        self._direct = False
        self._lookup: np.ndarray | None = None
        self._base = 0

    def key_ids(self, keys: pa.Array) -> np.ndarray:
        """The key id of every row of ``keys`` (new values get new ids). ``keys`` has no
        nulls (the caller checked). All NaNs are one key, ``0.0`` and ``-0.0`` two."""
        keys = one_nan(keys)
        if self._known is None:
            self._known = pa.array([], type=keys.type)
            self._direct = pa.types.is_signed_integer(keys.type)
        if self._direct:
            ids = self._direct_ids(keys)
            if ids is not None:
                return ids
        ids = pc.index_in(keys, value_set=self._known)
        if ids.null_count:
            self._learn(pc.unique(keys.filter(pc.is_null(ids))))
            ids = pc.index_in(keys, value_set=self._known)
        return ids.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def _learn(self, fresh: pa.Array) -> None:
        """New key values get the next ids, and their key groups."""
        assert self._known is not None
        self._known = pa.concat_arrays([self._known, fresh.cast(self._known.type)])
        groups = key_groups(pa.record_batch([fresh], names=["k"]), ["k"], self.max_parallelism)
        self._groups = np.concatenate([self._groups, groups])

    def _direct_ids(self, keys: pa.Array) -> np.ndarray | None:
        """Signed integer keys whose values span a range not much wider than their number:
        ids from a lookup table indexed by ``value - base``, no hashing. None (and index_in
        from then on) once the keys spread wider than that."""
        values = keys.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        low, high = int(values.min()), int(values.max())
        table, base = self._lookup, self._base
        if table is None or low < base or high >= base + len(table):
            low, high = (
                (low, high) if table is None else (min(low, base), max(high, base + len(table) - 1))
            )
            span = high - low + 1
            assert self._known is not None
            if span > DIRECT_SPAN + 4 * (len(self._known) + len(values)):
                self._direct, self._lookup = False, None
                return None
            grown = np.full(span, -1, dtype=np.int64)
            if table is not None:
                grown[base - low : base - low + len(table)] = table
            table, base = self._lookup, self._base = grown, low
        ids = table[values - base]
        missing = ids < 0
        if missing.any():
            fresh = np.unique(values[missing])
            assert self._known is not None
            first = len(self._known)
            self._learn(pa.array(fresh))
            table[fresh - base] = np.arange(first, first + len(fresh))
            ids = table[values - base]
        return ids

    def slots(self, table: ColumnarKeyedTable, keys: pa.Array, starts: np.ndarray) -> np.ndarray:
        """The table slot of every row's ``(keys[i], starts[i])``, new slots for new pairs."""
        ids = self.key_ids(keys)
        low, high = int(starts.min()), int(starts.max())
        if low == high:
            return self._slots_of_window(table, low, ids)
        out = np.empty(len(ids), dtype=np.int64)
        for start in np.unique(starts).tolist():
            rows = starts == start
            out[rows] = self._slots_of_window(table, start, ids[rows])
        return out

    def key_slots(self, table: ColumnarKeyedTable, keys: pa.Array) -> np.ndarray:
        """The slot of every row's key in ``table``, a table keyed by the key alone (not by
        window): new slots for new keys. A table is served by one index, keyed one way."""
        return self._slots_of_window(table, None, self.key_ids(keys))

    def _slots_of_window(
        self, table: ColumnarKeyedTable, start: int | None, ids: np.ndarray
    ) -> np.ndarray:
        assert self._known is not None
        size = len(self._known)
        cached = self._windows.get(start)
        if cached is None or len(cached) < size:
            grown = np.full(max(size, 2 * (0 if cached is None else len(cached))), -1, np.int64)
            if cached is not None:
                grown[: len(cached)] = cached
            cached = self._windows[start] = grown
        slots = cached[ids]
        missing = slots < 0
        if missing.any():
            new_ids = np.unique(ids[missing])
            values = self._known.take(pa.array(new_ids)).to_pylist()
            table_keys = values if start is None else [(value, start) for value in values]
            cached[new_ids] = table.slots_for(table_keys, self._groups[new_ids])
            slots = cached[ids]
        return slots

    def removed(self, drop: np.ndarray, num_slots: int) -> None:
        """``table.remove(drop)`` ran on a table of ``num_slots`` slots: renumber the cached
        slots as it did, and forget the dropped ones (and windows left with none)."""
        keep = ~drop[:num_slots]
        renumber = np.full(num_slots + 1, -1, dtype=np.int64)  # [-1] stays -1
        renumber[:num_slots][keep] = np.arange(int(np.count_nonzero(keep)))
        windows: dict[int | None, np.ndarray] = {}
        for start, cached in self._windows.items():
            moved = renumber[cached]
            if (moved >= 0).any():
                windows[start] = moved
        self._windows = windows
        if self._known is not None and len(self._known) > FORGET_ABOVE + 2 * int(keep.sum()):
            self._known, self._groups, self._windows = None, np.zeros(0, np.int64), {}
            self._lookup = None
