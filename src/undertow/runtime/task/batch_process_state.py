"""The value, list and map states of the keyed batch process function, seen for a call's keys.

The states are columns of one :class:`~undertow.state.columnar_table.ColumnarKeyedTable` (a
slot per key): a value state is a column ``<name>`` (numpy for numbers and booleans, else
Python values), a list state an ``object`` column ``undertow.list.<name>`` of Python lists, a
map state one ``undertow.map.<name>`` of Python dicts (``None`` when empty); each has a flag
column ``undertow.set.<column>`` (the key holds a value) that the operator's dropping of empty
keys reads. Snapshots write them as Arrow columns (lists and maps as list and map arrays) per
key group, so they restore at any parallelism (:func:`column_for` rebuilds a column from a
snapshot's field). Arguments and results are arrays aligned with the call's keys, or with a
``key_index`` (rows of ``ctx.keys()``); the work is a Python step per entry, never per key of
the table. Threading: the operator's task thread, during the call that made the view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from undertow.api.batch_functions import (
    BatchListStateDescriptor,
    BatchMapStateDescriptor,
    BatchValueStateDescriptor,
)
from undertow.core.errors import BatchError
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable

#: How a view reaches its table (the operator's, which a restore may replace).
TableOf = Callable[[], ColumnarKeyedTable]
SET = "undertow.set."
LIST = "undertow.list."
MAP = "undertow.map."


def _lists(column: pa.ChunkedArray) -> np.ndarray:
    out = np.empty(len(column), dtype=object)
    out[:] = [v if v else None for v in column.to_pylist()]
    return out


def _dicts(column: pa.ChunkedArray) -> np.ndarray:
    out = np.empty(len(column), dtype=object)
    out[:] = [dict(v) if v else None for v in column.to_pylist()]
    return out


def column_for(field: pa.Field) -> Accumulator | None:
    """The accumulator of a list or map state's column in a snapshot (None for others)."""
    if field.name.startswith(LIST):
        return Accumulator(field.name, np.dtype(object), None, field.type, _lists)
    if field.name.startswith(MAP):
        return Accumulator(field.name, np.dtype(object), None, field.type, _dicts)
    return None


def declare(table: ColumnarKeyedTable, column: str, arrow_type: pa.DataType, where: str) -> None:
    """Add a list or map state's columns at its first use; a restored one must keep its type."""
    existing = table.accumulators.get(column)
    if existing is None:
        table.add_accumulator(column_for(pa.field(column, arrow_type)))  # type: ignore[arg-type]
        table.add_accumulator(Accumulator(SET + column, np.dtype(bool), False, pa.bool_()))
    elif existing.snapshot_type != arrow_type:
        raise BatchError(f"{where}: state {column.split('.', 2)[2]!r} is declared "
                         f"{arrow_type} but holds {existing.snapshot_type} (restored or "
                         "declared before)")  # fmt: skip


def _index(key_index: Any, keys: int, n: int | None, where: str) -> np.ndarray:
    """Rows of the context's keys: ``key_index`` checked, or every key once."""
    if key_index is None:
        index = np.arange(keys, dtype=np.int64)
    else:
        index = np.asarray(key_index, dtype=np.int64)
        if index.ndim != 1 or (len(index) and (index.min() < 0 or index.max() >= keys)):
            raise BatchError(f"{where}: key_index must be rows of ctx.keys() (0..{keys - 1}), "
                             f"got {key_index!r:.80}")  # fmt: skip
    if n is not None and n != len(index):
        what = "key_index" if key_index is not None else "ctx.keys()"
        raise BatchError(f"{where}: got {n} entries for the {len(index)} entries of {what}; "
                         "one per entry is needed")  # fmt: skip
    return index


def _values(values: Any, arrow_type: pa.DataType, where: str) -> list[Any]:
    """``values`` as Python values of ``arrow_type``."""
    try:
        array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
            values, type=arrow_type)  # fmt: skip
        if array.type != arrow_type:
            array = array.cast(arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as err:
        raise BatchError(f"{where}: got values that are not {arrow_type}: {values!r:.80} "
                         f"({err})") from err  # fmt: skip
    return array.to_pylist()


class _View:
    """The state's column and flags for the slots of a call's keys."""

    def __init__(self, table: TableOf, column: str, slots: np.ndarray, where: str) -> None:
        self._table, self._column, self._slots, self.where = table, column, slots, where

    def _cells(self) -> tuple[np.ndarray, np.ndarray]:
        columns = self._table().columns
        return columns[self._column], columns[SET + self._column]

    def clear(self) -> None:
        cells, flags = self._cells()
        cells[self._slots] = None
        flags[self._slots] = False


class BatchValueStateView(_View):
    """``BatchValueState`` (see :mod:`undertow.api.batch_functions`)."""

    def __init__(
        self, table: TableOf, descriptor: BatchValueStateDescriptor, slots: np.ndarray, where: str
    ) -> None:
        what = f"{where}: state {descriptor.name!r} ({descriptor.type})"
        super().__init__(table, descriptor.name, slots, what)
        self._type = descriptor.type

    def value(self) -> pa.Array:
        cells, present = self._cells()
        slots = self._slots
        return pa.array(cells[slots], mask=~present[slots], type=self._type)

    def update(self, values: Any) -> None:
        t, slots = self._type, self._slots
        try:
            array = values if isinstance(values, pa.Array) else pa.array(values, type=t)
            if isinstance(array, pa.ChunkedArray):
                array = array.combine_chunks()
            if array.type != t:
                array = array.cast(t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as err:
            raise BatchError(f"{self.where}: update() got values that are not {t}: "
                             f"{values!r:.80} ({err})") from err  # fmt: skip
        if len(array) != len(slots):
            raise BatchError(f"{self.where}: update() got {len(array)} values for {len(slots)} "
                             "keys; one per key of ctx.keys() is needed")  # fmt: skip
        target, flags = self._cells()
        present = array.is_valid().to_numpy(zero_copy_only=False)
        if target.dtype != object and array.null_count:
            array = pc.fill_null(array, pa.scalar(0, type=t) if t != pa.bool_() else False)
        target[slots] = array.to_numpy(zero_copy_only=False)
        flags[slots] = present

    def clear(self) -> None:
        """Clears the flags only (the values stay, unread, until overwritten)."""
        self._cells()[1][self._slots] = False


class BatchListStateView(_View):
    """``BatchListState`` (see :mod:`undertow.api.batch_functions`)."""

    def __init__(
        self, table: TableOf, descriptor: BatchListStateDescriptor, slots: np.ndarray, where: str
    ) -> None:
        what = f"{where}: list state {descriptor.name!r} ({descriptor.element_type})"
        super().__init__(table, LIST + descriptor.name, slots, what)
        self._type = descriptor.element_type

    def get(self) -> pa.ListArray:
        cells, _ = self._cells()
        lists = [cells[s] or [] for s in self._slots.tolist()]
        return pa.array(lists, type=pa.list_(self._type))

    def add(self, values: Any, key_index: Any = None) -> None:
        items = _values(values, self._type, f"{self.where}: add()")
        index = _index(key_index, len(self._slots), len(items), f"{self.where}: add()")
        cells, flags = self._cells()
        slots = self._slots[index].tolist()
        for slot, value in zip(slots, items):
            cell = cells[slot]
            if cell is None:
                cells[slot] = [value]
            else:
                cell.append(value)
        flags[slots] = True

    def add_all(self, lists: Any) -> None:
        self._extend(lists, "add_all()", replace=False)

    def update(self, lists: Any) -> None:
        self._extend(lists, "update()", replace=True)

    def _extend(self, lists: Any, what: str, replace: bool) -> None:
        items = _values(lists, pa.list_(self._type), f"{self.where}: {what}")
        _index(None, len(self._slots), len(items), f"{self.where}: {what}")
        cells, flags = self._cells()
        for slot, new in zip(self._slots.tolist(), items):
            if replace or cells[slot] is None:
                cells[slot] = list(new) if new else None
            elif new:
                cells[slot].extend(new)
            flags[slot] = cells[slot] is not None


class BatchMapStateView(_View):
    """``BatchMapState`` (see :mod:`undertow.api.batch_functions`)."""

    def __init__(
        self, table: TableOf, descriptor: BatchMapStateDescriptor, slots: np.ndarray, where: str
    ) -> None:
        d = descriptor
        what = f"{where}: map state {d.name!r} ({d.key_type} -> {d.value_type})"
        super().__init__(table, MAP + d.name, slots, what)
        self._key_type, self._value_type = d.key_type, d.value_type

    def _entries(self, map_keys: Any, key_index: Any, what: str) -> tuple[list[Any], list[int]]:
        """(map keys as Python values, the slot of each)."""
        where = f"{self.where}: {what}"
        keys = _values(map_keys, self._key_type, where)
        index = _index(key_index, len(self._slots), len(keys), where)
        return keys, self._slots[index].tolist()

    def get(self, map_keys: Any, key_index: Any = None) -> pa.Array:
        keys, slots = self._entries(map_keys, key_index, "get()")
        cells, _ = self._cells()
        found = [None if (m := cells[s]) is None else m.get(k) for k, s in zip(keys, slots)]
        return pa.array(found, type=self._value_type)

    def contains(self, map_keys: Any, key_index: Any = None) -> np.ndarray:
        keys, slots = self._entries(map_keys, key_index, "contains()")
        cells, _ = self._cells()
        return np.array([(m := cells[s]) is not None and k in m for k, s in zip(keys, slots)],
                        dtype=bool)  # fmt: skip

    def put(self, map_keys: Any, values: Any, key_index: Any = None) -> None:
        keys, slots = self._entries(map_keys, key_index, "put()")
        items = _values(values, self._value_type, f"{self.where}: put()")
        if len(items) != len(keys):
            raise BatchError(f"{self.where}: put() got {len(items)} values for {len(keys)} map "
                             "keys; one value per map key is needed")  # fmt: skip
        cells, flags = self._cells()
        for key, slot, value in zip(keys, slots, items):
            cell = cells[slot]
            if cell is None:
                cells[slot] = {key: value}
            else:
                cell[key] = value
        flags[slots] = True

    def remove(self, map_keys: Any, key_index: Any = None) -> None:
        keys, slots = self._entries(map_keys, key_index, "remove()")
        cells, flags = self._cells()
        for key, slot in zip(keys, slots):
            cell = cells[slot]
            if cell is not None:
                cell.pop(key, None)
                if not cell:
                    cells[slot] = None
                    flags[slot] = False

    def items(self) -> pa.MapArray:
        cells, _ = self._cells()
        maps = [list((cells[s] or {}).items()) for s in self._slots.tolist()]
        return pa.array(maps, type=pa.map_(self._key_type, self._value_type))
