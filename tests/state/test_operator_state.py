"""Tests of the operator state backend and its redistribution on rescale."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.errors import StateError, StateTypeError
from undertow.state.descriptors import ListStateDescriptor, MapStateDescriptor
from undertow.state.operator_state import (
    OperatorStateBackend,
    ReadOnlyBroadcastStateView,
    split_evenly,
)

LIST = ListStateDescriptor("offsets")
UNION = ListStateDescriptor("union")
BCAST = MapStateDescriptor("rules")


def subtask(elements: list[Any], union: list[Any], rules: dict[Any, Any]) -> bytes:
    b = OperatorStateBackend("src")
    b.get_list_state(LIST).add_all(elements)
    b.get_union_list_state(UNION).add_all(union)
    b.get_broadcast_state(BCAST).put_all(rules)
    return b.snapshot()


def restored(blob: bytes) -> OperatorStateBackend:
    b = OperatorStateBackend("src")
    b.restore(blob)
    return b


def test_list_state_operations() -> None:
    s = OperatorStateBackend("op").get_list_state(LIST)
    assert list(s.get()) == []
    s.add(1)
    s.add_all([2, 3])
    assert list(s) == [1, 2, 3]
    s.update([4])
    assert list(s.get()) == [4]
    with pytest.raises(StateError):
        s.add(None)
    s.clear()
    assert list(s.get()) == []


def test_same_object_per_name_and_mode_conflict() -> None:
    b = OperatorStateBackend("op")
    s = b.get_list_state(LIST)
    assert b.get_list_state(ListStateDescriptor("offsets")) is s
    with pytest.raises(StateError, match="'offsets' is list operator state"):
        b.get_union_list_state(LIST)
    with pytest.raises(StateError):
        b.get_broadcast_state(MapStateDescriptor("offsets"))


def test_broadcast_state_and_read_only_view() -> None:
    b = OperatorStateBackend("op")
    s = b.get_broadcast_state(BCAST)
    s.put("a", 1)
    s["b"] = 2
    view = b.get_read_only_broadcast_state(BCAST)
    assert isinstance(view, ReadOnlyBroadcastStateView)
    assert view.get("a") == 1 and view.contains("b") and "b" in view
    assert sorted(view.items()) == [("a", 1), ("b", 2)]
    assert sorted(view.keys()) == ["a", "b"] and sorted(view.values()) == [1, 2]
    assert not view.is_empty()
    assert not hasattr(view, "put")
    with pytest.raises(StateError, match="read-only"):
        view.clear()
    for k in s:
        s.remove(k)
    assert view.is_empty()


def test_snapshot_restore_same_parallelism() -> None:
    blob = subtask([1, 2], ["u"], {"r": 1})
    b = restored(blob)
    assert list(b.get_list_state(LIST).get()) == [1, 2]
    assert list(b.get_union_list_state(UNION).get()) == ["u"]
    assert dict(b.get_broadcast_state(BCAST).items()) == {"r": 1}
    # restored states not registered again are still in the next snapshot
    assert list(restored(restored(blob).snapshot()).get_list_state(LIST).get()) == [1, 2]


def test_restore_mode_mismatch_and_corruption() -> None:
    blob = subtask([1], [], {})
    b = OperatorStateBackend("op")
    b.get_union_list_state(ListStateDescriptor("offsets"))
    with pytest.raises(StateError, match="registered as union"):
        b.restore(blob)
    with pytest.raises(StateError, match="checksum"):
        OperatorStateBackend("op").restore(blob[:-1] + bytes([blob[-1] ^ 1]))
    with pytest.raises(StateError, match="truncated"):
        OperatorStateBackend("op").restore(b"UO")


def test_redistribute_scale_up_and_down() -> None:
    old = [
        subtask([1, 2, 3], ["a"], {"r": 1}),
        subtask([4], ["b", "c"], {"r": 1}),
    ]
    up = [restored(b) for b in OperatorStateBackend.redistribute(old, 3)]
    assert [list(b.get_list_state(LIST).get()) for b in up] == [[1, 2], [3], [4]]
    for b in up:
        assert list(b.get_union_list_state(UNION).get()) == ["a", "b", "c"]
        assert dict(b.get_broadcast_state(BCAST).items()) == {"r": 1}
    down = [restored(b) for b in OperatorStateBackend.redistribute(old, 1)]
    assert list(down[0].get_list_state(LIST).get()) == [1, 2, 3, 4]
    same = [restored(b) for b in OperatorStateBackend.redistribute(old, 2)]
    assert [list(b.get_list_state(LIST).get()) for b in same] == [[1, 2, 3], [4]]
    assert list(same[1].get_union_list_state(UNION).get()) == ["a", "b", "c"]


def test_broadcast_takes_subtask_zero_and_missing_states() -> None:
    old = [subtask([], [], {"v": 0}), OperatorStateBackend("src").snapshot()]
    new = [restored(b) for b in OperatorStateBackend.redistribute(old, 3)]
    assert all(dict(b.get_broadcast_state(BCAST).items()) == {"v": 0} for b in new)
    assert OperatorStateBackend.redistribute([], 2) == [OperatorStateBackend("x").snapshot()] * 2
    with pytest.raises(ValueError):
        OperatorStateBackend.redistribute(old, 0)


def test_redistribute_mode_conflict() -> None:
    a = OperatorStateBackend("a")
    a.get_list_state(ListStateDescriptor("s")).add(1)
    b = OperatorStateBackend("b")
    b.get_union_list_state(ListStateDescriptor("s")).add(1)
    with pytest.raises(StateError, match="subtask 1"):
        OperatorStateBackend.redistribute([a.snapshot(), b.snapshot()], 2)


@given(
    st.lists(st.lists(st.integers(), max_size=6), min_size=1, max_size=5),
    st.integers(1, 8),
)
def test_list_redistribution_keeps_every_element_once_and_balances(
    parts: list[list[int]], n: int
) -> None:
    old = [subtask(p, [], {}) for p in parts]
    new = [restored(b) for b in OperatorStateBackend.redistribute(old, n)]
    lists = [list(b.get_list_state(LIST).get()) for b in new]
    assert len(lists) == n
    assert sorted(e for lst in lists for e in lst) == sorted(e for p in parts for e in p)
    if n != len(parts):
        sizes = [len(lst) for lst in lists]
        assert max(sizes) - min(sizes) <= 1


def test_split_evenly() -> None:
    assert split_evenly([[1, 2], [3, 4, 5]], 2) == [[1, 2, 3], [4, 5]]
    assert split_evenly([[1]], 3) == [[1], [], []]


def test_broadcast_keys_are_equal_as_javas_equals_holds_them_through_a_snapshot() -> None:
    """Flink's broadcast state is a Java map: ``0.0`` and ``-0.0`` two entries, every NaN one
    (whatever its sign), also inside a tuple key and after a snapshot, a rescale and a
    restore; keys are read back as plain floats."""
    nan = float("nan")
    backend = OperatorStateBackend("rules")
    state = backend.get_broadcast_state(MapStateDescriptor("m"))
    for key in (0.0, -0.0, 0.0, nan, -nan, ("t", -0.0), ("t", 0.0), ("t", -0.0)):
        state.put(key, (state.get(key) or 0) + 1)
    state.put_all({float("inf") - float("inf"): 10})

    def seen(st: Any) -> list[tuple[str, str, int]]:
        return sorted((repr(k), type(k).__name__, v) for k, v in st.items())

    expected = [("('t', -0.0)", "tuple", 2), ("('t', 0.0)", "tuple", 1),
                ("-0.0", "float", 1), ("0.0", "float", 2), ("nan", "float", 10)]  # fmt: skip
    assert seen(state) == expected
    assert [state.contains(k) for k in (-0.0, -nan, ("t", 0.0))] == [True, True, True]
    for blob in OperatorStateBackend.redistribute([backend.snapshot()], 2):
        restored = OperatorStateBackend("rules")
        restored.restore(blob)
        again = restored.get_broadcast_state(MapStateDescriptor("m"))
        again.put(nan, again.get(-nan) + 1)
        assert seen(again) == [*expected[:4], ("nan", "float", 11)]
        again.remove(-0.0)
        assert sorted(map(repr, again.keys())) == ["('t', -0.0)", "('t', 0.0)", "0.0", "nan"]


def test_broadcast_put_all_takes_a_dict_or_pairs() -> None:
    """As a keyed map state's (PyFlink 2.3's ``put_all`` iterates pairs)."""
    state = OperatorStateBackend("op").get_broadcast_state(MapStateDescriptor("rules"))
    state.put_all({"a": 1})
    state.put_all({"b": 2}.items())
    state.put_all([("c", 3)])
    assert sorted(state.items()) == [("a", 1), ("b", 2), ("c", 3)]
    with pytest.raises(StateTypeError, match="map state 'rules': put_all takes a dict"):
        state.put_all("ab")
