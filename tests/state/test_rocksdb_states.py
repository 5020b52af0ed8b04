"""The RocksDB states' encodings (:mod:`undertow.state.rocksdb_states`): a DB key sorts by key
group first and tells void from windowed entries; equal keys give equal bytes."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from tests.state.clock import Clock

from undertow.core.errors import StateError
from undertow.state import rocksdb_states
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import ListStateDescriptor, StateTtlConfig
from undertow.state.heap import decode_key_group_blob
from undertow.state.key_groups import assign_to_key_group
from undertow.state.rocksdb import RocksDBKeyedStateBackend, check_kind
from undertow.state.rocksdb_states import (
    APPENDED,
    VOID_TAG,
    WINDOWED_TAG,
    db_key,
    decode_value,
    encode_key,
    encode_value,
    int_void_db_key,
)


def test_equal_keys_encode_equally_even_with_shared_objects() -> None:
    part = ("x", 1)
    assert encode_key((part, part)) == encode_key((("x", 1), ("x", 1)))
    assert encode_key([1, 2]) != encode_key([2, 1])


def test_a_db_key_starts_with_its_key_group_and_namespace_tag() -> None:
    void = db_key(300, "k", VOID_NAMESPACE)
    windowed = db_key(300, "k", ("window", 1))
    assert void[:2] == windowed[:2] == (300).to_bytes(2, "big")
    assert void[2:3] == VOID_TAG and windowed[2:3] == WINDOWED_TAG
    assert db_key(1, "z", VOID_NAMESPACE) < db_key(2, "a", VOID_NAMESPACE)


def test_the_int_key_shortcut_equals_the_general_key_and_refuses_other_groups() -> None:
    cache: dict[int, bytes] = {}
    group = assign_to_key_group(7, 128)
    mine = range(group, group + 1)
    assert int_void_db_key(7, 128, mine, cache) == db_key(group, 7, VOID_NAMESPACE)
    assert cache == {7: db_key(group, 7, VOID_NAMESPACE)}
    other = next(k for k in range(1000) if assign_to_key_group(k, 128) != group)
    assert int_void_db_key(other, 128, mine, cache) is None


def test_values_round_trip_and_unknown_kinds_are_named() -> None:
    assert decode_value(encode_value({"a": [1, 2]})) == {"a": [1, 2]}
    assert pickle.loads(encode_value(3)) == 3
    check_kind("op", "s", "value")
    with pytest.raises(StateError, match="operator 'op': state 's' has unknown kind 'tree'"):
        check_kind("op", "s", "tree")


def _list_backend(clock: Any = lambda: 0, ttl: bool = False) -> tuple[Any, Any]:
    backend = RocksDBKeyedStateBackend("op", 16, range(16), clock)
    descriptor = ListStateDescriptor("l", None)
    if ttl:
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(100).build())
    return backend, backend.get_partitioned_state(descriptor)


def test_a_list_add_appends_bytes_and_a_read_makes_the_entry_one_pickle_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An add costs the entry's bytes, not its elements: it never decodes the entry (here a
    decode fails the test), so a long list does not make every add slower by its length."""
    backend, state = _list_backend()
    backend.set_current_key("k")
    state.add(1)

    def no_decode(raw: bytes) -> Any:
        raise AssertionError("an add decoded the entry")

    monkeypatch.setattr(rocksdb_states, "decode_value", no_decode)
    state.add_all([2, 3])
    state.add(4)
    state.add_all([])
    monkeypatch.undo()
    column, dkey = backend.column("l"), backend.current_void_db_key()
    assert column.get(dkey)[:1] == APPENDED
    assert list(state.get()) == [1, 2, 3, 4]
    assert column.get(dkey)[:1] != APPENDED  # the read wrote one pickle back
    assert pickle.loads(column.get(dkey)) == [1, 2, 3, 4]
    with pytest.raises(StateError, match="cannot add None"):
        state.add(None)
    snapshot = {
        group: decode_key_group_blob(blob, "op", group)
        for group, blob in backend.snapshot().items()
    }
    state.add(5)  # appended again; a canonical snapshot decodes the appends
    again = {group: decode_key_group_blob(blob, "op", group)
             for group, blob in backend.snapshot().items()}  # fmt: skip
    assert [g["states"]["l"][2] for g in snapshot.values()] == [{"k": [1, 2, 3, 4]}]
    assert [g["states"]["l"][2] for g in again.values()] == [{"k": [1, 2, 3, 4, 5]}]
    backend.dispose()


def test_appended_elements_keep_their_namespace_and_ttl_timestamps() -> None:
    clock = Clock()
    backend, state = _list_backend(clock, ttl=True)
    backend.set_current_key("k")
    state.set_current_namespace(("window", 1))
    state.add("a")
    clock.now += 60
    state.add_all(["b", "c"])
    clock.now += 50  # "a" expired, "b" and "c" not
    assert list(state.get()) == ["b", "c"]
    state.set_current_namespace(VOID_NAMESPACE)
    assert list(state.get()) == []
    backend.dispose()
