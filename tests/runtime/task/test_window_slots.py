"""The windows' slot cache: every answer is the table's own slot of the (key, window start),
through new keys, new windows, removals and a restored table; the cache answers known pairs
without the table, and new slots take the record path's key groups without hashing in Python."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.task import window_slots
from undertow.runtime.task.batch_windows import without_window
from undertow.runtime.task.window_slots import WindowSlotIndex
from undertow.state import columnar_table
from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable
from undertow.state.key_groups import assign_to_key_group

MAX_PARALLELISM = 16


def _table(key_type: pa.DataType | None = None) -> ColumnarKeyedTable:
    fields = [pa.field("k", key_type or pa.int64()), pa.field("window_start", pa.int64())]
    starts = Accumulator("start", np.dtype(np.int64), 0)
    return ColumnarKeyedTable(fields, [starts], MAX_PARALLELISM, partition_key=without_window)


def _check(table: ColumnarKeyedTable, keys: list[Any], starts: list[int], slots: Any) -> None:
    assert [table.slots[(k, s)] for k, s in zip(keys, starts)] == slots.tolist()


batches = st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0, 10, 20, 30])),
                   min_size=1, max_size=20)  # fmt: skip
steps = st.lists(st.one_of(batches, st.sampled_from([0, 10, 20, 30])), max_size=25)


@settings(max_examples=50, deadline=None)
@given(plan=steps, forget=st.sampled_from([0, 4096]))
def test_every_slot_is_the_tables_slot_of_its_key_and_window(plan: list[Any], forget: int) -> None:
    # an int step removes that window's slots (as a window that fired and expired)
    window_slots.FORGET_ABOVE, saved = forget, window_slots.FORGET_ABOVE
    try:
        table, index = _table(), WindowSlotIndex(MAX_PARALLELISM)
        for step in plan:
            if isinstance(step, int):
                n = table.num_slots
                drop = np.zeros(n, dtype=bool)
                drop[[i for i, key in enumerate(table.keys) if key[1] == step]] = True
                table.remove(drop)
                index.removed(drop, n)
                continue
            keys, starts = [k for k, _ in step], [s for _, s in step]
            slots = index.slots(table, pa.array(keys, pa.int64()), np.array(starts))
            _check(table, keys, starts, slots)
            assert len(table.slots) == table.num_slots == len(set(table.keys))
    finally:
        window_slots.FORGET_ABOVE = saved


def test_known_pairs_are_answered_without_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    table, index = _table(pa.string()), WindowSlotIndex(MAX_PARALLELISM)
    keys = pa.array(["a", "b", "a", "c"])
    first = index.slots(table, keys, np.array([0, 0, 5, 5]))

    def refuse(*args: Any) -> Any:
        raise AssertionError("the table was asked for a pair the cache knows")

    monkeypatch.setattr(table, "slots_for", refuse)
    again = index.slots(table, pa.array(["c", "a", "b"]), np.array([5, 0, 0]))
    assert again.tolist() == [first[3], first[0], first[1]]


def test_pairs_a_restore_put_in_the_table_keep_their_slots() -> None:
    table = _table()
    restored = table.slots_for([(7, 0), (8, 0)])
    index = WindowSlotIndex(MAX_PARALLELISM)
    slots = index.slots(table, pa.array([8, 9, 7], pa.int64()), np.array([0, 0, 0]))
    assert slots.tolist() == [restored[1], 2, restored[0]]
    assert table.num_slots == 3


def test_new_slots_take_the_record_paths_key_groups_without_python_hashing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, index = _table(), WindowSlotIndex(MAX_PARALLELISM)
    keys = list(range(-50, 50))

    def refuse(*args: Any) -> Any:
        raise AssertionError("a new slot hashed its key in Python")

    monkeypatch.setattr(columnar_table, "assign_to_key_group", refuse)
    slots = index.slots(table, pa.array(keys, pa.int64()), np.zeros(100, dtype=np.int64))
    monkeypatch.undo()
    groups = table.key_groups[slots].tolist()
    assert groups == [assign_to_key_group(k, MAX_PARALLELISM) for k in keys]


def test_keys_that_stopped_coming_are_forgotten() -> None:
    table, index = _table(), WindowSlotIndex(MAX_PARALLELISM)
    for window in range(3):  # a new set of keys in each window, and the window expires
        keys = pa.array(np.arange(window * 5000, (window + 1) * 5000))
        index.slots(table, keys, np.full(5000, window * 10, dtype=np.int64))
        n = table.num_slots
        drop = np.ones(n, dtype=bool)
        table.remove(drop)
        index.removed(drop, n)
        # forgotten: the window's last key is new again (id 0), not the 5,000th known
        assert index.key_ids(pa.array([(window + 1) * 5000 - 1])).tolist() == [0]


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.lists(st.one_of(st.integers(-40, 40), st.integers(-(2**62), 2**62)),
                                 min_size=1, max_size=15), min_size=1, max_size=8))  # fmt: skip
def test_a_key_keeps_its_id_whether_ids_come_from_the_lookup_table_or_index_in(
    batches: list[list[int]],
) -> None:
    index, ids_of = WindowSlotIndex(MAX_PARALLELISM), {}
    for batch in batches:
        ids = index.key_ids(pa.array(batch, pa.int64())).tolist()
        for key, key_id in zip(batch, ids):
            assert ids_of.setdefault(key, key_id) == key_id
        assert sorted(set(ids_of.values())) == list(range(len(ids_of)))


def test_dense_integer_keys_take_their_ids_from_a_lookup_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = WindowSlotIndex(MAX_PARALLELISM)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("index_in hashed dense integer keys")

    monkeypatch.setattr(window_slots.pc, "index_in", refuse)
    first = index.key_ids(pa.array(np.arange(10_000) % 7_000 + 500))
    again = index.key_ids(pa.array(np.arange(-20, 10_000, 3)))  # below the table: it grows
    monkeypatch.undo()
    assert first[:3].tolist() == [0, 1, 2] and again[2_340] == first[6_500]  # key 7,000
    # keys spread far wider than their number: index_in from then on, the same ids
    wide = index.key_ids(pa.array([2**40, 501, 2**40]))
    assert wide[1] == first[1] and wide[0] == wide[2] == len(set(range(500, 7_500)) | set(
        range(-20, 10_000, 3)))  # fmt: skip
