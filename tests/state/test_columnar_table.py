"""Columnar keyed state: per-key-group Arrow IPC snapshots that restore only owned groups."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable
from undertow.state.key_groups import assign_to_key_group


def _table() -> ColumnarKeyedTable:
    fields = [pa.field("a", pa.string()), pa.field("b", pa.int64())]
    return ColumnarKeyedTable(fields, [Accumulator("sum", np.dtype(np.int64), 0)], 8)


def test_slots_grow_and_snapshot_one_blob_per_key_group() -> None:
    table = _table()
    keys = [(str(i % 5), i) for i in range(200)]  # more than the first capacity
    slots = table.slots_for(keys)
    table.columns["sum"][slots] = np.arange(200)
    blobs = table.snapshot()
    assert set(blobs) == {assign_to_key_group(k, 8) for k in keys}
    restored = _table()
    restored.restore(blobs, range(0, 8), "op")
    assert {k: int(restored.columns["sum"][restored.slots[k]]) for k in keys} == {
        k: i for i, k in enumerate(keys)
    }


def test_restore_keeps_only_the_given_key_groups_and_checks_the_format() -> None:
    table = _table()
    table.slots_for([("x", i) for i in range(50)])
    blobs = table.snapshot()
    half = _table()
    half.restore(blobs, range(0, 4), "op")
    assert {assign_to_key_group(k, 8) for k in half.keys} <= set(range(4))
    other = ColumnarKeyedTable([pa.field("a", pa.string()), pa.field("b", pa.int64())],
                               [Accumulator("max", np.dtype(np.int64), 0)], 8)  # fmt: skip
    with pytest.raises(ValueError, match=r"has no accumulator 'max'.*aggregation changed"):
        other.restore(blobs, range(0, 8), "operator 'X' (subtask 1/1)")


def test_added_object_columns_snapshot_with_their_arrow_type_and_restore_partially() -> None:
    table = _table()
    slots = table.slots_for([("x", 1), ("y", 2)])
    table.add_accumulator(Accumulator("name", np.dtype(object), None, pa.string()))
    table.columns["name"][slots] = ["p", None]
    blobs = table.snapshot()
    schemas = {
        pa.ipc.open_stream(pa.py_buffer(b)).schema.field("name").type for b in blobs.values()
    }
    assert schemas == {pa.string()}
    wider = _table()
    wider.add_accumulator(Accumulator("name", np.dtype(object), None, pa.string()))
    wider.add_accumulator(Accumulator("late", np.dtype(np.int64), 7))
    with pytest.raises(ValueError, match="no accumulator 'late'"):
        wider.restore(blobs, range(8), "op")
    wider = _table()
    wider.add_accumulator(Accumulator("name", np.dtype(object), None, pa.string()))
    wider.add_accumulator(Accumulator("late", np.dtype(np.int64), 7))
    wider.restore(blobs, range(8), "op", partial=True)
    got = {
        k: (wider.columns["name"][s], int(wider.columns["late"][s])) for k, s in wider.slots.items()
    }
    assert got == {("x", 1): ("p", 7), ("y", 2): (None, 7)}
