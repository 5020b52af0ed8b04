"""Columnar keyed state: one row per key, accumulators in numpy columns, snapshots per key group.

The keyed aggregations of a batch stream keep their state here: a dict maps each key to a
*slot*, and every accumulator is a numpy array indexed by slot. Keys are told apart as Flink's
(and the record path's) are (:func:`distinct_key`: ``0.0``, ``-0.0`` two, all NaNs one).
:meth:`ColumnarKeyedTable.snapshot` returns one Arrow IPC blob per non-empty key group;
:meth:`restore` keeps the key groups in this subtask's range, which makes a rescale work.

A table key may carry more than the stream's key (the windowed aggregations key slots by key
and window): ``partition_key`` maps a table key to the stream's key, whose key group it is.
Threading: owned by one operator on its task's loop thread. Invariant: ``len(keys) ==
num_slots`` and every accumulator has at least ``num_slots`` entries; slot ``i``'s key group is
``key_groups[i]``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.state.key_groups import CANONICAL_NAN, assign_to_key_group

FORMAT_VERSION = 1
_VERSION_KEY = b"undertow.columnar-state.version"


class _NegativeZero:
    """The dict entry of the key ``-0.0``, which Python holds equal to ``0.0``."""

    def __repr__(self) -> str:
        return "-0.0"


_NEGATIVE_ZERO = _NegativeZero()


def distinct_key(key: Any) -> Any:
    """The form of a key in a slot dict, in which keys are equal as Java's ``equals`` holds
    them: ``-0.0`` becomes a marker of its own (a dict takes it for ``0.0``), a NaN the one
    :data:`~undertow.state.key_groups.CANONICAL_NAN` (a dict finds no NaN but itself), also
    inside a tuple. Only for tables with a floating-point key column; other keys are equal
    as Python holds them (a column has one type: no ``1`` beside ``1.0`` or ``True``)."""
    if type(key) is float:
        if key != key:
            return CANONICAL_NAN
        if key == 0.0 and math.copysign(1.0, key) < 0.0:
            return _NEGATIVE_ZERO
        return key
    if type(key) is tuple:
        return tuple(distinct_key(item) for item in key)
    return key


@dataclass(frozen=True, slots=True)
class Accumulator:
    """One accumulator column: its name, numpy dtype and the value of a fresh slot, the
    Arrow type it has in snapshots (by default the dtype's; needed for an ``object`` column,
    which holds Python values such as strings), and how a snapshot's column becomes the
    column's values (by default ``to_numpy``; lists and dicts need their own)."""

    name: str
    dtype: np.dtype[Any]
    initial: Any
    arrow_type: pa.DataType | None = None
    decode: Callable[[pa.ChunkedArray], np.ndarray] | None = None

    @property
    def snapshot_type(self) -> pa.DataType:
        """The Arrow type of this column in a snapshot."""
        return self.arrow_type if self.arrow_type is not None else pa.from_numpy_dtype(self.dtype)


class ColumnarKeyedTable:
    """Keys -> slots, and accumulator columns indexed by slot (see the module docstring)."""

    def __init__(
        self, key_fields: Sequence[pa.Field], accumulators: Sequence[Accumulator],
        max_parallelism: int, partition_key: Callable[[Any], Any] | None = None,
    ) -> None:  # fmt: skip
        self.key_fields = list(key_fields)
        self.partition_key = partition_key
        self.accumulators = {a.name: a for a in accumulators}
        self.max_parallelism = max_parallelism
        #: Key (its :func:`distinct_key` if a key column is a float) -> slot.
        self.slots: dict[Any, int] = {}
        self._distinct: Callable[[Any], Any] | None = (
            distinct_key if any(pa.types.is_floating(f.type) for f in key_fields) else None
        )
        self.keys: list[Any] = []
        self._capacity = 64
        self.columns = {
            a.name: np.full(self._capacity, a.initial, dtype=a.dtype) for a in accumulators
        }
        self.key_groups = np.zeros(self._capacity, dtype=np.int64)

    @property
    def num_slots(self) -> int:
        return len(self.keys)

    def slots_for(self, keys: Iterable[Any], key_groups: np.ndarray | None = None) -> np.ndarray:
        """The slot of each key (distinct keys, as Python values), new slots for new keys.

        ``key_groups``, if given, holds each key's key group (one entry per key, as
        :func:`~undertow.state.key_groups_arrow.key_groups` computes them for a column):
        new keys then take theirs from it instead of hashing each key in Python."""
        distinct = self._distinct
        if key_groups is None:
            slots = self.slots
            out = []
            for key in keys:
                slot = slots.get(key if distinct is None else distinct(key))
                if slot is None:
                    slot = self._add(key)
                out.append(slot)
            return np.asarray(out, dtype=np.int64)
        listed = list(keys)
        entries = listed if distinct is None else [distinct(key) for key in listed]
        get = self.slots.get
        found = np.fromiter((get(entry, -1) for entry in entries), np.int64, len(listed))
        new = np.flatnonzero(found < 0)
        if len(new):
            first = len(self.keys)
            while first + len(new) > self._capacity:
                self._grow()
            fresh = [listed[i] for i in new.tolist()]
            self.slots.update(
                zip([entries[i] for i in new.tolist()], range(first, first + len(fresh)))
            )
            self.keys.extend(fresh)
            self.key_groups[first : first + len(fresh)] = key_groups[new]
            found[new] = np.arange(first, first + len(fresh))
        return found

    def add_accumulator(self, accumulator: Accumulator) -> None:
        """A new accumulator column, every slot at its initial value (a keyed batch process
        function's states are declared while it runs)."""
        if accumulator.name in self.accumulators:
            raise ValueError(f"accumulator {accumulator.name!r} exists already")
        self.accumulators[accumulator.name] = accumulator
        self.columns[accumulator.name] = np.full(
            self._capacity, accumulator.initial, dtype=accumulator.dtype
        )

    def _add(self, key: Any) -> int:
        slot = len(self.keys)
        if slot == self._capacity:
            self._grow()
        self.slots[key if self._distinct is None else self._distinct(key)] = slot
        self.keys.append(key)
        partition = key if self.partition_key is None else self.partition_key(key)
        self.key_groups[slot] = assign_to_key_group(partition, self.max_parallelism)
        return slot

    def remove(self, drop: np.ndarray) -> None:
        """Forget the slots where the boolean mask ``drop`` (one entry per slot) is true; the
        others keep their order and get new, dense slot numbers."""
        n = self.num_slots
        keep = np.flatnonzero(~drop[:n])
        if len(keep) == n:
            return
        self.keys = [self.keys[i] for i in keep.tolist()]
        distinct = self._distinct or (lambda key: key)
        self.slots = {distinct(key): slot for slot, key in enumerate(self.keys)}
        m = len(keep)
        for name, col in self.columns.items():
            col[:m] = col[keep]
            col[m:] = self.accumulators[name].initial
        self.key_groups[:m] = self.key_groups[keep]

    def _grow(self) -> None:
        new = self._capacity * 2
        for name, col in self.columns.items():
            acc = self.accumulators[name]
            grown = np.full(new, acc.initial, dtype=acc.dtype)
            grown[: self._capacity] = col
            self.columns[name] = grown
        groups = np.zeros(new, dtype=np.int64)
        groups[: self._capacity] = self.key_groups
        self.key_groups = groups
        self._capacity = new

    # snapshots -----------------------------------------------------------------------------
    def _schema(self) -> pa.Schema:
        fields = [*self.key_fields]
        fields += [pa.field(a.name, a.snapshot_type) for a in self.accumulators.values()]
        return pa.schema(fields, metadata={_VERSION_KEY: str(FORMAT_VERSION).encode()})

    def snapshot(self) -> dict[int, bytes]:
        """One Arrow IPC stream per non-empty key group (key group -> bytes)."""
        n = self.num_slots
        if n == 0:
            return {}
        groups = self.key_groups[:n]
        order = np.argsort(groups, kind="stable")
        sorted_groups = groups[order]
        bounds = np.flatnonzero(np.diff(sorted_groups)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [n]))
        schema = self._schema()
        multi = len(self.key_fields) > 1
        out: dict[int, bytes] = {}
        for start, end in zip(starts.tolist(), ends.tolist()):
            idx = order[start:end]
            keys = [self.keys[i] for i in idx.tolist()]
            arrays: list[pa.Array] = []
            for f_index, field in enumerate(self.key_fields):
                values = [k[f_index] for k in keys] if multi else keys
                arrays.append(pa.array(values, type=field.type))
            arrays += [
                pa.array(self.columns[name][idx], type=a.snapshot_type)
                for name, a in self.accumulators.items()
            ]
            batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema) as writer:
                writer.write_batch(batch)
            out[int(sorted_groups[start])] = sink.getvalue().to_pybytes()
        return out

    def restore(
        self, blobs: dict[int, bytes], key_groups: range, where: str, partial: bool = False
    ) -> None:
        """Load the blobs of the key groups in ``key_groups``; others belong to other subtasks.
        ``where`` names the operator and subtask in errors. With ``partial``, an accumulator a
        blob lacks keeps its initial value for that blob's keys (otherwise it is an error)."""
        for group, blob in sorted(blobs.items()):
            if group not in key_groups:
                continue
            table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
            version = (table.schema.metadata or {}).get(_VERSION_KEY)
            if version != str(FORMAT_VERSION).encode():
                raise ValueError(
                    f"{where}: columnar state of key group {group} has format version "
                    f"{version!r}, expected {FORMAT_VERSION}"
                )
            names = [f.name for f in self.key_fields]
            key_columns = [table.column(name).to_pylist() for name in names]
            keys = list(zip(*key_columns)) if len(names) > 1 else key_columns[0]
            slots = self.slots_for(keys)
            for name in self.accumulators:
                if name not in table.column_names:
                    if partial:
                        continue
                    raise ValueError(
                        f"{where}: columnar state of key group {group} has no accumulator "
                        f"{name!r} (it has {table.column_names}); was the aggregation changed?"
                    )
                decode = self.accumulators[name].decode
                column = table.column(name)
                self.columns[name][slots] = column.to_numpy() if decode is None else decode(column)
