"""List and map states of the keyed batch process function: each call's vectorised reads and
writes equal a per-key Python model (lists appended row by row, dicts put and removed row by
row), also across a snapshot restored at parallelism 2 (each subtask its key groups); and
misuse names the operator, subtask and state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.batch_harness import Batched, keyed_batch_harness

from undertow.api.batch_functions import (
    BatchListStateDescriptor,
    BatchMapStateDescriptor,
    BatchValueStateDescriptor,
    KeyedBatchProcessFunction,
)
from undertow.core.errors import BatchError
from undertow.runtime.task.batch_process import BatchProcessOperator
from undertow.runtime.task.batch_process_state import LIST, MAP, column_for
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing.harness import OneInputOperatorTestHarness

SEEN = BatchListStateDescriptor("seen", pa.int64())
LAST = BatchMapStateDescriptor("last", pa.string(), pa.int64())


class Remember(KeyedBatchProcessFunction):
    """Per row: appends ``v`` to the key's list; puts ``name -> v`` in the key's map, or, for
    a negative ``v``, removes ``name``. Emits per key of the call: its list, its map, and the
    value of map key ``"a"`` and whether it is there, as seen before and after the call."""

    def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> pa.RecordBatch:
        seen, last = ctx.get_list_state(SEEN), ctx.get_map_state(LAST)
        n, index = ctx.keys().num_rows, ctx.key_index()
        a = pa.array(["a"] * n)
        before_a = last.get(a)
        seen.add(batch.column("v"), key_index=index)
        v = batch.column("v").to_numpy()
        names = batch.column("name")
        for i in range(batch.num_rows):  # row by row: a later row of a key wins
            if v[i] < 0:
                last.remove(names.slice(i, 1), key_index=index[i : i + 1])
            else:
                last.put(names.slice(i, 1), batch.column("v").slice(i, 1), index[i : i + 1])
        out = ctx.keys().append_column("list", seen.get()).append_column("map", last.items())
        out = out.append_column("a_before", before_a).append_column("a_now", last.get(a))
        return out.append_column("has_a", pa.array(last.contains(a)))


def _model(rows: list[tuple[int, str, int]], lists: dict[int, list[int]],
           maps: dict[int, dict[str, int]]) -> list[dict[str, Any]]:  # fmt: skip
    before = {k: maps.get(k, {}).get("a") for k, _, _ in rows}
    for k, name, v in rows:
        lists.setdefault(k, []).append(v)
        m = maps.setdefault(k, {})
        if v < 0:
            m.pop(name, None)
        else:
            m[name] = v
    return [
        {"k": k, "list": lists[k], "map": sorted(maps[k].items()), "a_before": before[k],
         "a_now": maps[k].get("a"), "has_a": "a" in maps[k]}
        for k in sorted({k for k, _, _ in rows})
    ]  # fmt: skip


def _got(harness: OneInputOperatorTestHarness) -> list[dict[str, Any]]:
    [batch] = harness.extract_output_values()[-1:]
    rows = batch.to_pylist()
    for row in rows:
        row["map"] = sorted(row["map"])
    return sorted(rows, key=lambda r: r["k"])


def _op(subtask: int = 0, parallelism: int = 1, blobs: dict[int, bytes] | None = None,
        ) -> Batched[BatchProcessOperator]:  # fmt: skip
    return keyed_batch_harness(BatchProcessOperator(Remember(), ["k"]), "Remember",
                               subtask=subtask, parallelism=parallelism, blobs=blobs)  # fmt: skip


def _batch(rows: list[tuple[int, str, int]]) -> pa.RecordBatch:
    k, name, v = zip(*rows)
    return pa.record_batch({"k": pa.array(k, pa.int64()), "name": list(name),
                            "v": pa.array(v, pa.int64())})  # fmt: skip


_ROWS = st.lists(st.tuples(st.integers(0, 6), st.sampled_from("abc"), st.integers(-2, 9)),
                 min_size=1, max_size=10)  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(batches=st.lists(_ROWS, min_size=1, max_size=5), split=st.integers(0, 5))
def test_list_and_map_state_equal_a_per_key_model_across_a_rescaling_restore(
    batches: list[list[tuple[int, str, int]]], split: int
) -> None:
    lists: dict[int, list[int]] = {}
    maps: dict[int, dict[str, int]] = {}
    with _op() as (op, harness):
        for rows in batches[:split]:
            harness.process_element(_batch(rows))
            assert _got(harness) == _model(rows, lists, maps)
        blobs = op.snapshot_key_groups()
    for subtask in range(2):
        mine = key_group_range_for_subtask(16, 2, subtask)
        with _op(subtask, 2, blobs) as (_, harness):
            for rows in batches[split:]:
                own = [r for r in rows if assign_to_key_group(r[0], 16) in mine]
                if own:
                    harness.process_element(_batch(own))
                    assert _got(harness) == _model(own, lists, maps)


def test_update_add_all_and_clear_of_a_list_state() -> None:
    class Lists(KeyedBatchProcessFunction):
        def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> pa.RecordBatch:
            seen = ctx.get_list_state(SEEN)
            v = batch.column("v")[0].as_py()
            n = ctx.keys().num_rows
            if v == 1:
                seen.update([[1, 2]] * n)
            elif v == 2:
                seen.add_all([[3], None][:n])
            elif v == 3:
                seen.clear()
            elif v == 4:
                seen.update([None] * n)
            return ctx.keys().append_column("list", seen.get())

    op = BatchProcessOperator(Lists(), ["k"])
    with OneInputOperatorTestHarness(op, name="Lists", max_parallelism=16) as harness:
        got = []
        for v in (1, 2, 3, 1, 4):
            harness.process_element(pa.record_batch({"k": [7], "v": [v]}))
            got.append(harness.extract_output_values()[-1].column("list").to_pylist()[0])
        assert op.states_table().columns[LIST + "seen"][0] is None  # cleared: nothing held
    assert got == [[1, 2], [1, 2, 3], [], [1, 2], []]


def test_misuse_names_operator_subtask_and_state() -> None:
    class Wrong(KeyedBatchProcessFunction):
        def __init__(self, act: Any) -> None:
            self.act = act

        def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> None:
            self.act(ctx)

    where = r"operator 'Keyed Batch Process' \(subtask 1/1\): "
    cases = [
        (lambda c: c.get_list_state(SEEN).add([1, 2, 3]),
         where + r"list state 'seen' \(int64\): add\(\): got 3 entries for the 2 entries"),
        (lambda c: c.get_list_state(SEEN).add(["x", "y"]), "add.*not int64"),
        (lambda c: c.get_map_state(LAST).put(["a", "b"], [1]), "1 values for 2 map keys"),
        (lambda c: c.get_map_state(LAST).get(["a"], key_index=[5]),
         r"map state 'last' \(string -> int64\): get\(\): key_index must be rows of ctx\.keys"),
        (lambda c: (c.get_state(BatchValueStateDescriptor("seen", pa.int64())),
                    c.get_list_state(SEEN)),
         "state name 'seen' is used by another kind of state"),
    ]  # fmt: skip
    batch = pa.record_batch({"k": [1, 2]})
    for act, match in cases:
        op = BatchProcessOperator(Wrong(act), ["k"])
        harness = OneInputOperatorTestHarness(op, name="Keyed Batch Process", max_parallelism=16)
        with harness, pytest.raises(BatchError, match=match):
            harness.process_element(batch)


def test_a_restored_list_or_map_column_is_read_back_as_lists_and_dicts() -> None:
    lists = column_for(pa.field(LIST + "x", pa.list_(pa.int64())))
    maps = column_for(pa.field(MAP + "y", pa.map_(pa.string(), pa.int64())))
    assert lists is not None and maps is not None and lists.decode and maps.decode
    assert column_for(pa.field("z", pa.list_(pa.int64()))) is None  # a value state of lists
    stored = pa.chunked_array([pa.array([[1, 2], None, []], pa.list_(pa.int64()))])
    assert list(lists.decode(stored)) == [[1, 2], None, None]
    stored = pa.chunked_array([pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int64()))])
    assert list(maps.decode(stored)) == [{"a": 1}, None]
    assert isinstance(lists.decode(stored), np.ndarray)
