"""The heap backend's hot fold loops (``undertow.state.heap_fold``) through ``fold_keyed``:
the same results as the record-at-a-time loop, the key context where the fold reads state, and
the tracked loop whenever a snapshot is pending or incremental tracking is on."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.state.backend import KeyedStateBackend
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.heap_fold import fold_untracked, fold_untracked_by


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
