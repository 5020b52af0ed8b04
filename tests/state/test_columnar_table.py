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


@pytest.mark.parametrize("with_groups", [False, True])
def test_keys_are_told_apart_as_javas_equals_does_and_stay_so_after_restore(
    with_groups: bool,
) -> None:
    """``0.0`` and ``-0.0`` (equal in a dict, two keys in Flink and on the record path) get a
    slot each, in their own key groups; every NaN, whatever object, one slot; the same in a
    tuple key, after a restore and after a removal."""
    nan, neg_nan = float("nan"), -float("nan")
    for fields, key_of in (
        ([pa.field("k", pa.float64())], lambda x: x),
        ([pa.field("k", pa.float64()), pa.field("j", pa.int64())], lambda x: (x, 7)),
    ):
        table = ColumnarKeyedTable(fields, [Accumulator("n", np.dtype(np.int64), 0)], 128)
        keys = [key_of(k) for k in (0.0, -0.0, nan, 1.5)]
        groups = np.array([assign_to_key_group(k, 128) for k in keys])
        slots = table.slots_for(keys, groups if with_groups else None).tolist()
        assert len(set(slots)) == 4
        assert table.slots_for([key_of(neg_nan), key_of(float("nan"))]).tolist() == [slots[2]] * 2
        table.columns["n"][slots] = [10, 20, 30, 40]
        assert table.key_groups[slots[:2]].tolist() == [
            assign_to_key_group(key_of(0.0), 128), assign_to_key_group(key_of(-0.0), 128)
        ]  # fmt: skip
        restored = ColumnarKeyedTable(fields, [Accumulator("n", np.dtype(np.int64), 0)], 128)
        restored.restore(table.snapshot(), range(128), "op")
        again = restored.slots_for([key_of(k) for k in (0.0, -0.0, float("nan"), 1.5)])
        assert restored.columns["n"][again].tolist() == [10, 20, 30, 40]
        drop = np.zeros(64, dtype=bool)
        drop[again[3]] = True  # 1.5's slot: the others are numbered anew
        restored.remove(drop)
        assert restored.num_slots == 3
        left = restored.slots_for([key_of(k) for k in (0.0, -0.0, neg_nan)])
        assert restored.columns["n"][left].tolist() == [10, 20, 30]
        assert restored.num_slots == 3
