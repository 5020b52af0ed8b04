"""The RocksDB states' encodings (:mod:`undertow.state.rocksdb_states`): a DB key sorts by key
group first and tells void from windowed entries; equal keys give equal bytes."""

from __future__ import annotations

import pickle

import pytest

from undertow.core.errors import StateError
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.key_groups import assign_to_key_group
from undertow.state.rocksdb import check_kind
from undertow.state.rocksdb_states import (
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
