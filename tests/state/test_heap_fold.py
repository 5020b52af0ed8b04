"""The heap backend's hot fold loops (``undertow.state.heap_fold``) through ``fold_keyed``:
the same results as the record-at-a-time loop, the key context where the fold reads state, and
the tracked loop whenever a snapshot is pending or incremental tracking is on."""

from __future__ import annotations

import collections
import operator
import traceback
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.common.row import Row
from undertow.core.errors import StateError
from undertow.datastream.field_functions import field_aggregator
from undertow.state.backend import KeyedStateBackend, PairAggregation
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.heap import _KEY_CACHE_LIMIT, HeapKeyedStateBackend
from undertow.state.heap_fold import fold_untracked, fold_untracked_by
from undertow.state.key_groups import assign_to_key_group, state_key


def _backend(incremental: bool = False) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend("op", 128, range(128), lambda: 0, incremental=incremental)


def _add_pairs(a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
    return (a[0], a[1] + b[1])


def _key(record: tuple[Any, int]) -> Any:
    return record[0]


RECORDS = st.lists(
    st.tuples(st.integers(0, 20) | st.text(max_size=2) | st.lists(st.integers(0, 3), max_size=2),
              st.integers(-5, 5)),
    max_size=12,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(RECORDS, max_size=4), key_context=st.booleans())
def test_fold_keyed_matches_the_generic_loop(
    batches: list[list[tuple[Any, int]]], key_context: bool
) -> None:
    fast, slow = _backend(), _backend()
    d = ValueStateDescriptor("sum")
    fast_state, slow_state = fast.get_partitioned_state(d), slow.get_partitioned_state(d)
    for batch in batches:
        got = fast.fold_keyed(fast_state, batch, _key, _add_pairs, key_context=key_context)
        keys = [_key(r) for r in batch]
        expected = KeyedStateBackend.fold_values(slow, slow_state, keys, batch, _add_pairs)
        assert got == expected
        if batch:
            assert fast.get_current_key() == slow.get_current_key()  # the last key, hashable
    assert fast.snapshot() == slow.snapshot()


def test_a_fold_that_reads_state_runs_in_its_records_key() -> None:
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    seen: list[Any] = []

    def fold(a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
        seen.append(backend.get_current_key())
        return _add_pairs(a, b)

    records = [("a", 1), ("b", 1), ("a", 1), ("b", 1), ("a", 1)]
    assert backend.fold_keyed(state, records, _key, fold) == [
        ("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3)
    ]  # fmt: skip
    assert seen == ["a", "b", "a"]


@pytest.mark.parametrize("pair", [None, PairAggregation(1, operator.add)])
def test_a_key_error_the_fold_raises_is_the_folds(pair: PairAggregation | None) -> None:
    """The loops look keys up by subscript; a fold's own ``KeyError`` must not read as a key
    without a value (which would store the record as the key's first)."""
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))

    def fold(a: Any, b: Any) -> Any:
        raise KeyError("the fold's own")

    backend.fold_keyed(state, [("a", 1, 0)], _key, fold, key_context=False, pair=pair)
    with pytest.raises(KeyError, match="the fold's own"):
        backend.fold_keyed(state, [("a", 2, 0)], _key, fold, key_context=False, pair=pair)


def test_a_traceback_through_a_loop_shows_its_lines() -> None:
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))

    def fold(a: Any, b: Any) -> Any:
        raise ValueError("in the fold")

    backend.fold_keyed(state, [("a", 1)], _key, fold, key_context=False)
    with pytest.raises(ValueError) as caught:
        backend.fold_keyed(state, [("a", 2)], _key, fold, key_context=False)
    shown = "".join(traceback.format_exception(caught.value))
    assert "<heap fold loop False None False>" in shown
    assert "new = fold(old, value)" in shown


@pytest.mark.parametrize("key_context", [False, True])
@pytest.mark.parametrize("pair", [None, PairAggregation(1, operator.add)])
def test_an_error_in_a_loop_names_the_record_it_raised_on(
    key_context: bool, pair: PairAggregation | None
) -> None:
    """A reduce raising on one record of a batch (or a key selector, or a pair the built-in
    aggregation cannot add) names that record, as the operators' loops do."""
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))

    def fold(a: Any, b: Any) -> Any:
        if b[1] == "x3":
            raise ValueError("bad amount")
        return _add_pairs(a, b)

    records: list[Any] = [("a", 1), ("b", 2), ("a", 3), ("a", "x3"), ("b", 5)]
    with pytest.raises((ValueError, TypeError)) as caught:
        backend.fold_keyed(state, records, _key, fold, key_context=key_context, pair=pair)
    assert caught.value.__notes__ == ["on the record ('a', 'x3')"]


def test_a_pending_snapshot_keeps_what_it_noted() -> None:
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    backend.fold_keyed(state, [("a", 1), ("b", 2)], _key, _add_pairs, key_context=False)
    snapshot = backend.snapshot()  # notes the key groups; serialized before they change
    backend.fold_keyed(state, [("a", 10), ("b", 20)], _key, _add_pairs, key_context=False)
    restored = _backend()
    restored.restore(snapshot)
    values = restored.get_partitioned_state(ValueStateDescriptor("sum"))
    for key, total in (("a", 1), ("b", 2)):
        restored.set_current_key(key)
        assert values.value() == (key, total)  # type: ignore[attr-defined]


def test_the_loops_on_their_own() -> None:
    backend = _backend()
    ctx, set_key, offsets = backend._ctx, backend.set_current_key, backend._offsets
    tables: list[dict[Any, Any]] = [{} for _ in range(128)]
    out = fold_untracked(offsets, tables, set_key, ctx, ["k", "k"], [1, 2], lambda a, b: a + b)
    assert out == [1, 3]
    tables = [{} for _ in range(128)]
    records = [([1], 5), ([1], 2)]  # a list key is stored in its hashable form
    out, last = fold_untracked_by(offsets, tables, set_key, ctx, records, _key, _add_pairs)
    assert out == [([1], 5), ([1], 7)] and last == (1,)
    assert sum(len(t) for t in tables) == 1


def test_a_fold_outside_key_context_caches_each_keys_table() -> None:
    """The loop without key context finds a key's table by the key (one lookup): the cache
    holds each key in its hashable form, mapped to the dict of its own key group."""
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    records = [("a", 1), ("b", 2), ([1], 3), ("a", 4), ([1], 5)]
    backend.fold_keyed(state, records, _key, _add_pairs, key_context=False)
    slots = state.void_by_key  # type: ignore[attr-defined]
    assert set(slots) == {"a", "b", (1,)}
    for key, table in slots.items():
        assert table is state.tables[assign_to_key_group(key, 128)]  # type: ignore[attr-defined]
    assert {key: table[key] for key, table in slots.items()} == {
        "a": ("a", 5), "b": ("b", 2), (1,): ([1], 8)
    }  # fmt: skip


@pytest.mark.parametrize("key_context", [False, True])
def test_none_is_never_stored(key_context: bool) -> None:
    """A ``None`` record stores nothing for a key without a value, and a fold's ``None``
    clears the key's value: the next record is the key's first again."""
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))

    def fold(a: int, b: int | None) -> int | None:
        return None if b is None else a + b

    out = backend.fold_keyed(state, [None, 1, 2, None, 5], lambda _v: "k", fold,
                             key_context=key_context)  # fmt: skip
    assert out == [None, 1, 3, None, 5]
    backend.set_current_key("k")
    assert state.value() == 5  # type: ignore[attr-defined]


@pytest.mark.parametrize("key_context", [False, True])
def test_a_key_of_another_subtask_is_refused_and_not_cached(key_context: bool) -> None:
    backend = HeapKeyedStateBackend("op", 128, range(64), lambda: 0)
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    ours = next(k for k in range(100) if assign_to_key_group(k, 128) < 64)
    theirs = next(k for k in range(100) if assign_to_key_group(k, 128) >= 64)
    with pytest.raises(StateError, match="outside this subtask's key group range"):
        backend.fold_keyed(state, [(ours, 1), (theirs, 1)], _key, _add_pairs,
                           key_context=key_context)  # fmt: skip
    assert theirs not in state.void_by_key  # type: ignore[attr-defined]
    with pytest.raises(StateError, match="outside this subtask's key group range"):
        backend.fold_keyed(state, [(theirs, 1)], _key, _add_pairs, key_context=key_context)


def test_the_key_table_cache_is_bounded() -> None:
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    slots = state.void_by_key  # type: ignore[attr-defined]
    batch = 500
    for start in range(0, 3 * _KEY_CACHE_LIMIT, batch):
        records = [(k, 1) for k in range(start, start + batch)]
        assert backend.fold_keyed(state, records, _key, _add_pairs, key_context=False) == records
        assert len(slots) <= _KEY_CACHE_LIMIT + batch
    again = [(k, 1) for k in range(0, 3 * _KEY_CACHE_LIMIT, 997)]  # keys cached long ago
    out = backend.fold_keyed(state, again, _key, _add_pairs, key_context=False)
    assert out == [(k, 2) for k, _ in again]


#: A named pair: not exactly a ``tuple``, so it goes through the fold function.
NamedPair = collections.namedtuple("NamedPair", "key value")

NUMBER = st.integers(-5, 5) | st.floats(-2, 2)
MIXED = st.lists(
    st.tuples(st.integers(0, 6), NUMBER)
    | st.tuples(st.integers(0, 6), NUMBER, NUMBER)
    | st.builds(NamedPair, st.integers(0, 6), NUMBER),
    max_size=12,
)
COMBINES = [operator.add, min, max]


@settings(max_examples=120, deadline=None)
@given(
    batches=st.lists(MIXED, max_size=4),
    position=st.sampled_from([0, 1]),
    combine=st.sampled_from(COMBINES),
    key_context=st.booleans(),
)
def test_a_pair_aggregation_folds_as_its_fold_function_does(
    batches: list[list[tuple[Any, ...]]], position: int, combine: Any, key_context: bool
) -> None:
    """Pairs combined in the loop, anything else through the fold: the aggregation's results
    (values and their types: ``min(1, 1.0)`` keeps the first) and the same state as the
    record-at-a-time loop with the fold function."""
    fold = field_aggregator(position, combine)
    fast, slow = _backend(), _backend()
    d = ValueStateDescriptor("agg")
    fast_state, slow_state = fast.get_partitioned_state(d), slow.get_partitioned_state(d)
    for batch in batches:
        got = fast.fold_keyed(fast_state, batch, _key, fold, key_context=key_context,
                              pair=PairAggregation(position, combine))  # fmt: skip
        keys = [_key(r) for r in batch]
        expected = KeyedStateBackend.fold_values(slow, slow_state, keys, batch, fold)
        assert got == expected
        assert [type(v) for v in got] == [type(v) for v in expected]
        assert [[type(f) for f in v] for v in got] == [[type(f) for f in v] for v in expected]
    assert fast.snapshot() == slow.snapshot()


@pytest.mark.parametrize(("position", "combine", "records", "expected"), [
    (1, operator.add, [("a", 1), ("a", 2), ("b", 5), ("a", 3)],
     [("a", 1), ("a", 3), ("b", 5), ("a", 6)]),
    (1, max, [("a", 1), ("a", 2), ("b", 5), ("a", 0)], [("a", 1), ("a", 2), ("b", 5), ("a", 2)]),
    # min(1, 1.0) is the first: the old value's field stays (and its type)
    (1, min, [("a", 1), ("a", 1.0), ("a", 0.5)], [("a", 1), ("a", 1), ("a", 0.5)]),
    (0, operator.add, [(1, "a"), (2, "a"), (5, "b"), (3, "a")],
     [(1, "a"), (3, "a"), (5, "b"), (6, "a")]),
])  # fmt: skip
def test_a_pair_aggregation_combines_pairs_without_calling_the_fold(
    position: int, combine: Any, records: list[tuple[Any, Any]], expected: list[Any]
) -> None:
    calls: list[Any] = []
    aggregate = field_aggregator(position, combine)

    def fold(a: Any, b: Any) -> Any:
        calls.append(a)
        return aggregate(a, b)

    def key(record: tuple[Any, ...]) -> Any:
        return record[1 - position]

    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("agg"))
    pair = PairAggregation(position, combine)
    out = backend.fold_keyed(state, records, key, fold, key_context=False, pair=pair)
    assert out == expected and calls == []
    assert [[type(f) for f in v] for v in out] == [[type(f) for f in v] for v in expected]
    triples = [(*records[0], 0), (*records[1], 0)]  # not pairs: the fold function runs
    state3 = backend.get_partitioned_state(ValueStateDescriptor("agg3"))
    backend.fold_keyed(state3, triples, key, fold, key_context=False, pair=pair)
    assert calls == [triples[0]]  # the fold ran once, for the second triple


def test_a_pair_aggregation_is_of_field_0_or_1() -> None:
    PairAggregation(0, min)
    with pytest.raises(ValueError, match="position 2"):
        PairAggregation(2, min)


@pytest.mark.parametrize("key_context", [False, True])
def test_a_fold_keeps_keys_equal_in_python_in_their_own_key_groups(key_context: bool) -> None:
    """``1 == 1.0 == True`` as dict keys, with other key groups: the loops' key caches (offset,
    table) must not fold ``1.0`` into the table of ``1`` folded before it."""
    keys: list[Any] = [1, 1.0, True, (1,), (1.0,), 0.0, -0.0, ("a", 2), ("a", 2.0)]
    keys += [((1,), "b"), ((1.0,), "b"), b"c", None]  # a nested tuple field; other plain keys
    backend = _backend()
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    for _ in range(2):  # the second pass finds every key cached
        backend.fold_keyed(state, [(k, 1) for k in keys], _key, _add_pairs, key_context=key_context)
    tables = state.tables  # type: ignore[attr-defined]
    for k in keys:
        table = tables[assign_to_key_group(k, 128)]
        assert state_key(k) in table, k  # -0.0 in its state form (0.0 is another key)


@pytest.mark.parametrize("key_context", [False, True])
def test_a_float_key_is_found_in_the_backends_cache_of_floats(key_context: bool) -> None:
    """A float key (not ±0.0 nor NaN) is looked up in the offsets the backend caches for
    floats: ``set_key`` runs once per float key, not once per record, and ``1.0`` still never
    takes the table of ``1``."""
    backend = _backend()
    calls: list[Any] = []

    def set_key(key: Any) -> None:
        calls.append(key)
        backend.set_current_key(key)

    tables: list[dict[Any, Any]] = [{} for _ in range(128)]
    records = [(2.5, 1), (2.5, 2), (1.0, 3), (1, 4), (2.5, 5), (1.0, 6)]
    out, _ = fold_untracked_by(
        backend._offsets, tables, set_key, backend._ctx, records, _key, _add_pairs,
        key_context=key_context, float_offsets=backend._float_offsets,
    )  # fmt: skip
    assert out == [(2.5, 1), (2.5, 3), (1.0, 3), (1, 4), (2.5, 8), (1.0, 9)]
    assert calls == [2.5, 1.0, 1]


@pytest.mark.parametrize("key_context", [False, True])
def test_a_row_key_of_plain_fields_is_found_by_its_value(key_context: bool) -> None:
    """A ``Row`` key (``key_by`` with a ``ROW`` key_type) of plain fields is looked up in the
    loop's caches as its tuple would be: ``set_key`` once per key, not once per record; a row
    holding a float still goes through ``set_key`` (``Row(1.0)`` is not ``Row(1)``'s key)."""
    backend = _backend()
    calls: list[Any] = []

    def set_key(key: Any) -> None:
        calls.append(key)
        backend.set_current_key(key)

    a, b, f = Row("a", 1), Row("b", 2), Row("a", 1.0)
    tables: list[dict[Any, Any]] = [{} for _ in range(128)]
    records = [(a, 1), (b, 2), (a, 3), (f, 4), (a, 5), (f, 6)]
    out, _ = fold_untracked_by(
        backend._offsets, tables, set_key, backend._ctx, records, _key, _add_pairs,
        key_context=key_context, float_offsets=backend._float_offsets,
    )  # fmt: skip
    assert [v for _, v in out] == [1, 2, 4, 4, 9, 10]
    assert calls == [a, b, f, f]
    assert [type(k) for k in calls] == [Row] * 4
