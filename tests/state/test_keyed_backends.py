"""Tests of the keyed state backends (heap and RocksDB): state semantics, key groups,
snapshot/restore.

Every test runs against both backends (the autouse ``impl`` fixture picks the class that
``backend()`` builds). The model-based test is in ``test_backend_model.py``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from undertow.core.errors import StateError
from undertow.state.backend import VOID_NAMESPACE, KeyedStateBackend
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import (
    assign_to_key_group,
    key_group_range_for_subtask,
    stable_hash,
)
from undertow.state.rocksdb import RocksDBKeyedStateBackend

MAX_P = 8
BACKENDS: dict[str, type[KeyedStateBackend]] = {
    "heap": HeapKeyedStateBackend,
    "rocksdb": RocksDBKeyedStateBackend,
}
#: The backend class ``backend()`` builds (set per test by the ``impl`` fixture).
_impl: list[type[KeyedStateBackend]] = [HeapKeyedStateBackend]


@pytest.fixture(autouse=True, params=sorted(BACKENDS))
def impl(request: pytest.FixtureRequest) -> Any:
    _impl[0] = BACKENDS[request.param]
    yield request.param
    _impl[0] = HeapKeyedStateBackend


def backend(key_groups: range = range(MAX_P), max_p: int = MAX_P) -> Any:
    return _impl[0]("op", max_p, key_groups, lambda: 0)  # type: ignore[call-arg]


class SumReduce:
    def reduce(self, a: int, b: int) -> int:
        return a + b


class AverageAggregate:
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def test_is_a_keyed_state_backend() -> None:
    assert isinstance(backend(), KeyedStateBackend)


@pytest.mark.parametrize("bad", [range(0), range(4, 2), range(0, 8, 2), range(-1, 4),
                                 range(0, MAX_P + 1)])  # fmt: skip
def test_a_bad_key_group_range_is_refused_naming_the_operator(bad: range) -> None:
    with pytest.raises(
        StateError, match=re.escape(f"operator 'op': key group range {bad!r} is not")
    ):
        backend(bad)


def test_value_state_per_key() -> None:
    b = backend()
    s = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key("a")
    assert s.value() is None  # type: ignore[attr-defined]
    s.update(1)  # type: ignore[attr-defined]
    b.set_current_key("b")
    assert s.value() is None  # type: ignore[attr-defined]
    s.update(2)  # type: ignore[attr-defined]
    b.set_current_key("a")
    assert s.value() == 1  # type: ignore[attr-defined]
    assert b.get_current_key() == "a"
    s.clear()
    assert s.value() is None  # type: ignore[attr-defined]
    assert list(b.keys("v")) == ["b"]


def test_a_stream_of_ten_thousand_keys_computes_each_key_group_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import undertow.state.heap as heap

    computed: list[Any] = []
    real = heap.assign_to_key_group
    monkeypatch.setattr(heap, "assign_to_key_group",
                        lambda key, maxp: computed.append(key) or real(key, maxp))  # fmt: skip
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    state = backend.get_partitioned_state(ValueStateDescriptor("count"))
    for _ in range(3):
        for key in range(10_000):
            backend.set_current_key(key)
            state.update((state.value() or 0) + 1)
    assert len(computed) == 10_000, "the key -> key group cache keeps 10,000 keys"
    backend.set_current_key(9_999)
    assert state.value() == 3


def test_value_update_none_clears() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key(1)
    s.update(5)
    s.update(None)
    assert list(b.keys("v")) == []


def test_same_object_per_name_and_kind_conflict() -> None:
    b = backend()
    s = b.get_partitioned_state(ValueStateDescriptor("x"))
    assert b.get_partitioned_state(ValueStateDescriptor("x")) is s
    with pytest.raises(StateError, match="'x' is value state"):
        b.get_partitioned_state(ListStateDescriptor("x"))


def test_access_without_key_raises() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError, match="without a current key"):
        s.value()
    with pytest.raises(StateError, match="without a current key"):
        s.update(1)


def test_key_outside_range_raises_and_names_everything() -> None:
    b = backend(range(0, 4))
    outside = next(k for k in range(1000) if assign_to_key_group(k, MAX_P) >= 4)
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError) as info:
        b.set_current_key(outside)
    msg = str(info.value)
    assert "'op'" in msg
    assert repr(outside) in msg
    assert f"key group {assign_to_key_group(outside, MAX_P)}" in msg
    assert "[0, 4)" in msg
    with pytest.raises(StateError):  # the failed key is not silently current
        s.value()


def test_unhashable_key_raises_state_error() -> None:
    with pytest.raises(StateError, match="not hashable"):
        backend().set_current_key({1, 2})


def test_a_list_key_holding_a_set_is_refused_naming_operator_key_and_the_set() -> None:
    """A list becomes a tuple, but a set inside it stays unhashable: the refusal names the
    operator, the key as the function returned it and the type that cannot be hashed, and
    the refused key is not current (state access fails instead of using the last key)."""
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key("good")
    with pytest.raises(StateError) as info:
        b.set_current_key(["a", {1}])
    msg = str(info.value)
    assert "'op'" in msg and "['a', {1}] (list)" in msg and "'set'" in msg, msg
    with pytest.raises(StateError):
        s.value()


def test_list_and_dict_keys_are_kept_in_their_hashable_form() -> None:
    """PyFlink keys by value: ``[1, 2]`` is a key, stored as ``(1, 2)`` in the same group."""
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key([1, 2])
    s.update("list")
    assert b.get_current_key() == (1, 2)
    b.set_current_key((1, 2))
    assert s.value() == "list"
    b.set_current_key({"k": [3]})
    s.update("dict")
    assert b.get_current_key() == (("k", (3,)),)
    assert stable_hash([1, 2]) == stable_hash((1, 2))
    assert stable_hash({"k": [3]}) == stable_hash((("k", (3,)),))
    folded = b.fold_values(s, [[1, 2], [1, 2]], ["a", "b"], lambda x, y: x + y)
    assert folded == ["lista", "listab"]


def test_list_state() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ListStateDescriptor("l"))
    b.set_current_key("k")
    assert list(s.get()) == []
    s.add(1)
    s.add_all([2, 3])
    assert list(s.get()) == [1, 2, 3]
    assert list(s) == [1, 2, 3]
    got = s.get()
    s.add(4)  # get() returned a copy
    assert list(got) == [1, 2, 3]
    s.update([9])
    assert list(s.get()) == [9]
    with pytest.raises(StateError):
        s.add(None)
    with pytest.raises(StateError):
        s.add_all([1, None])
    s.add_all([])
    s.update([])
    assert list(s.get()) == []
    assert list(b.keys("l")) == []


def test_map_state() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(MapStateDescriptor("m"))
    b.set_current_key("k")
    assert s.is_empty()
    assert s.get("x") is None
    s.put("x", 1)
    s.put_all({"y": 2, "z": 3})
    s["w"] = 4
    assert s["w"] == 4 and "w" in s and s.contains("x")
    del s["w"]
    assert not s.contains("w")
    assert sorted(s.items()) == [("x", 1), ("y", 2), ("z", 3)]
    for k in s:  # iterates a snapshot of the keys: removing while iterating is fine
        s.remove(k)
    assert s.is_empty()
    assert list(b.keys("m")) == []  # no empty dict left behind
    s.put("a", 1)
    assert sorted(s.values()) == [1] and list(s) == ["a"]
    s.clear()
    assert list(b.keys("m")) == []


def test_reducing_state_with_function_object_and_callable() -> None:
    b = backend()
    s1: Any = b.get_partitioned_state(ReducingStateDescriptor("r1", SumReduce()))
    s2: Any = b.get_partitioned_state(ReducingStateDescriptor("r2", lambda a, c: max(a, c)))
    b.set_current_key(7)
    assert s1.get() is None
    for v in (1, 5, 2):
        s1.add(v)
        s2.add(v)
    assert s1.get() == 8
    assert s2.get() == 5
    s1.add(None)  # as Flink: adding None clears
    assert s1.get() is None


def test_bad_reduce_and_aggregate_functions() -> None:
    b = backend()
    with pytest.raises(StateError, match="reduce_function"):
        b.get_partitioned_state(ReducingStateDescriptor("r", 42))
    with pytest.raises(StateError, match="create_accumulator"):
        b.get_partitioned_state(AggregatingStateDescriptor("a", object()))


def test_aggregating_state() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(AggregatingStateDescriptor("a", AverageAggregate()))
    b.set_current_key("k")
    assert s.get() is None
    s.add(1)
    s.add(3)
    assert s.get() == 2.0
    s.clear()
    assert s.get() is None


def test_namespaces_are_separate_and_keys_filter_by_namespace() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key(("a", 1))  # a tuple key never collides with (key, namespace)
    s.update("void")
    s.set_current_namespace("w1")
    assert s.value() is None
    s.update("w1")
    b.set_current_key("a")
    s.update("a-w1")
    s.set_current_namespace(VOID_NAMESPACE)
    assert s.value() is None
    b.set_current_key(("a", 1))
    assert s.value() == "void"
    assert sorted(map(repr, b.keys("v", "w1"))) == sorted(map(repr, ["a", ("a", 1)]))
    assert list(b.keys("v")) == [("a", 1)]
    assert list(b.keys("unknown")) == []


def test_merge_namespaces_list_reducing_aggregating() -> None:
    b = backend()
    lst: Any = b.get_partitioned_state(ListStateDescriptor("l"))
    red: Any = b.get_partitioned_state(ReducingStateDescriptor("r", SumReduce()))
    agg: Any = b.get_partitioned_state(AggregatingStateDescriptor("a", AverageAggregate()))
    b.set_current_key("k")
    for ns, v in (("w1", 1), ("w2", 2), ("w3", 6)):
        for s in (lst, red, agg):
            s.set_current_namespace(ns)
            s.add(v)
    for s in (lst, red, agg):
        s.merge_namespaces("w3", ["w1", "w2", "missing"])
        s.set_current_namespace("w3")
    assert list(lst.get()) == [6, 1, 2]  # target first, then the sources in order
    assert red.get() == 9
    assert agg.get() == 3.0
    for s in (lst, red, agg):
        s.set_current_namespace("w1")
        assert not list(s.get()) if s is lst else s.get() is None
    assert list(b.keys("l", "w1")) == []


def test_value_and_map_state_cannot_merge() -> None:
    b = backend()
    b.set_current_key(1)
    for d in (ValueStateDescriptor("v"), MapStateDescriptor("m")):
        with pytest.raises(NotImplementedError):
            b.get_partitioned_state(d).merge_namespaces("a", ["b"])


def fill(b: Any, keys: list[Any]) -> None:
    v: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    lst: Any = b.get_partitioned_state(ListStateDescriptor("l"))
    m: Any = b.get_partitioned_state(MapStateDescriptor("m"))
    for k in keys:
        b.set_current_key(k)
        v.update(f"v{k}")
        lst.add_all([k, k])
        m.put("k", k)
        m.set_current_namespace(("win", k))
        m.put("w", k)
        m.set_current_namespace(VOID_NAMESPACE)


def test_snapshot_restore_roundtrip() -> None:
    keys = [*range(50), "a", "b", ("t", 1)]
    b = backend()
    fill(b, keys)
    blobs = b.snapshot()
    assert set(blobs) <= set(range(MAX_P))
    assert all(isinstance(x, bytes) for x in blobs.values())
    fresh = backend()
    fresh.restore(blobs)
    assert sorted(map(repr, fresh.keys("v"))) == sorted(map(repr, keys))
    v: Any = fresh.get_partitioned_state(ValueStateDescriptor("v"))
    m: Any = fresh.get_partitioned_state(MapStateDescriptor("m"))
    for k in keys:
        fresh.set_current_key(k)
        assert v.value() == f"v{k}"
        m.set_current_namespace(("win", k))
        assert m.get("w") == k
        m.set_current_namespace(VOID_NAMESPACE)
    # a snapshot taken before the states are registered again still holds them
    again = backend()
    again.restore(fresh.snapshot())
    assert again.snapshot().keys() == blobs.keys()


def test_p1_snapshot_restored_into_two_halves_gives_each_exactly_its_keys() -> None:
    max_p = 128
    keys = [*range(200), *(f"user-{i}" for i in range(100))]
    whole = backend(range(max_p), max_p)
    fill(whole, keys)
    blobs = whole.snapshot()
    seen: list[Any] = []
    for index in range(2):
        kg_range = key_group_range_for_subtask(max_p, 2, index)
        half = backend(kg_range, max_p)
        half.restore(blobs)
        mine = [k for k in keys if assign_to_key_group(k, max_p) in kg_range]
        assert sorted(map(repr, half.keys("v"))) == sorted(map(repr, mine))
        assert sorted(map(repr, half.keys("l"))) == sorted(map(repr, mine))
        lst: Any = half.get_partitioned_state(ListStateDescriptor("l"))
        for k in mine:
            half.set_current_key(k)
            assert list(lst.get()) == [k, k]
        seen.extend(mine)
        assert set(half.snapshot()) <= set(kg_range)
    assert len(seen) == len(keys)


def test_restore_kind_mismatch_and_corrupt_blob() -> None:
    b = backend()
    fill(b, [1])
    blobs = b.snapshot()
    other = backend()
    other.get_partitioned_state(ListStateDescriptor("v"))
    with pytest.raises(StateError, match="'v' is list state"):
        other.restore(blobs)
    kg, blob = next(iter(blobs.items()))
    with pytest.raises(StateError, match="checksum"):
        backend().restore({kg: blob[:-1] + bytes([blob[-1] ^ 1])})
    with pytest.raises(StateError, match="magic"):
        backend().restore({kg: b"XXXX" + blob[4:]})
    with pytest.raises(StateError, match="holds key group"):
        backend().restore({(kg + 1) % MAX_P: blob})
    # restored state registered with another kind
    restored = backend()
    restored.restore(blobs)
    with pytest.raises(StateError, match="'v' is value state"):
        restored.get_partitioned_state(ReducingStateDescriptor("v", SumReduce()))


def test_dispose_drops_everything() -> None:
    b = backend()
    fill(b, [1, 2])
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.dispose()
    assert b.snapshot() == {}
    with pytest.raises(StateError):
        s.value()


def test_bad_key_group_range() -> None:
    with pytest.raises(StateError):
        backend(range(2, 6), 4)
    with pytest.raises(StateError):
        backend(range(0), 4)


def test_keys_equal_in_python_keep_their_own_key_groups_whichever_came_first() -> None:
    """``1 == 1.0`` and ``0.0 == -0.0`` as dict keys, but their key groups differ: each key's
    state is kept in its own key group (the heap's key -> key group cache must not answer for
    an equal key seen before), so a restore of that group alone finds it."""
    keys: list[Any] = [1, 1.0, (1,), (1.0,), 0.0, -0.0]
    whole = backend(range(128), 128)
    v: Any = whole.get_partitioned_state(ValueStateDescriptor("v"))
    for k in keys:
        whole.set_current_key(k)
        v.update(repr(k))
    blobs = whole.snapshot()
    for k in keys:
        group = assign_to_key_group(k, 128)
        assert group in blobs, (k, group)
        one = backend(range(group, group + 1), 128)
        one.restore({group: blobs[group]})
        state: Any = one.get_partitioned_state(ValueStateDescriptor("v"))
        one.set_current_key(k)
        assert state.value() == repr(k)


def test_every_nan_is_one_key_and_the_zeros_two_as_flinks_double_equals() -> None:
    """Python's NaN equals nothing, not even itself: without one stored form every NaN record
    got a fresh entry. Java's ``Double.equals`` (Flink's keys) holds all NaNs one key (any
    sign or payload) and ``0.0``, ``-0.0`` two; the same inside a tuple key."""
    nans = [float("nan"), -float("nan"), float("inf") - float("inf"), float("nan")]
    b = backend(range(128), 128)
    v: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    for key_of in (lambda x: x, lambda x: (x, 1)):
        for k in [*nans, 0.0, -0.0, 0.0, -0.0]:
            b.set_current_key(key_of(k))
            v.update((v.value() or 0) + 1)
        counts = {}
        for k in (nans[0], 0.0, -0.0):
            b.set_current_key(key_of(k))
            counts[repr(k)] = v.value()
        assert counts == {"nan": 4, "0.0": 2, "-0.0": 2}


@pytest.mark.parametrize("restore_into", sorted(BACKENDS))
def test_zero_and_negative_zero_of_one_key_group_survive_a_snapshot_as_two_keys(
    restore_into: str,
) -> None:
    """At max parallelism 3 ``0.0`` and ``-0.0`` (and ``(0.0,)``, ``(-0.0,)`` at 2) share a
    key group: their entries, value and windowed, stay two through a (canonical) snapshot and
    its restore into either backend, and the keys read back are the floats they were."""
    for max_p, key_of in ((3, lambda z: z), (2, lambda z: ("k", z))):
        zero, negative = key_of(0.0), key_of(-0.0)
        assert assign_to_key_group(zero, max_p) == assign_to_key_group(negative, max_p)
        b = backend(range(max_p), max_p)
        v: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
        w: Any = b.get_partitioned_state(ValueStateDescriptor("w"))
        w.set_current_namespace("window")
        for k, value in ((zero, "zero"), (negative, "negative")):
            b.set_current_key(k)
            v.update(value)
            w.update(value)
        restored = BACKENDS[restore_into]("op", max_p, range(max_p), lambda: 0)  # type: ignore[call-arg]
        restored.restore(dict(b.snapshot()))
        rv: Any = restored.get_partitioned_state(ValueStateDescriptor("v"))
        rw: Any = restored.get_partitioned_state(ValueStateDescriptor("w"))
        rw.set_current_namespace("window")
        for k, value in ((zero, "zero"), (negative, "negative")):
            restored.set_current_key(k)
            assert (rv.value(), rw.value()) == (value, value), (max_p, k)
        keys = sorted(repr(k) for k in restored.keys("v"))
        assert keys == sorted([repr(zero), repr(negative)])
        assert all(type(k) is type(zero) for k in restored.keys("v"))


@pytest.mark.parametrize("restore_into", sorted(BACKENDS))
@pytest.mark.parametrize("ttl", [False, True], ids=["plain", "ttl"])
def test_map_state_user_keys_stay_as_javas_equals_holds_them_through_a_snapshot(
    restore_into: str, ttl: bool
) -> None:
    """A ``MapState``'s user keys are Flink's (Java's ``equals``): ``0.0`` and ``-0.0`` two
    entries, every NaN one, also in a tuple; so they stay through ``put_all``, a canonical
    snapshot and its restore into either backend, and read back as the floats written."""
    descriptor = MapStateDescriptor("m")
    if ttl:
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(600_000).build())
    b = backend()
    m: Any = b.get_partitioned_state(descriptor)
    b.set_current_key("k")
    m.put_all({0.0: "zero", ("t", -0.0): "tuple negative", float("nan"): "nan"})
    m.put_all({-0.0: "negative", ("t", 0.0): "tuple zero", -float("nan"): "other nan"})
    m.put(float("inf") - float("inf"), "last nan")
    restored = BACKENDS[restore_into]("op", MAX_P, range(MAX_P), lambda: 0)  # type: ignore[call-arg]
    restored.restore(dict(b.snapshot()))
    r: Any = restored.get_partitioned_state(descriptor)
    restored.set_current_key("k")
    expected = [
        ("('t', -0.0)", "tuple negative"), ("('t', 0.0)", "tuple zero"),
        ("-0.0", "negative"), ("0.0", "zero"), ("nan", "last nan"),
    ]  # fmt: skip
    for state in (m, r):
        assert sorted((repr(k), v) for k, v in state.items()) == expected
        assert [state.get(k) for k in (-0.0, 0.0, float("nan"))] == ["negative", "zero", "last nan"]
        keys = list(state.keys())
        assert sorted(map(repr, keys)) == [shown for shown, _ in expected]
        assert {type(k) for k in keys} == {float, tuple}
    r.remove(-0.0)
    r.remove(float("nan"))
    assert sorted(repr(k) for k in r) == ["('t', -0.0)", "('t', 0.0)", "0.0"]
