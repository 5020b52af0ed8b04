"""Tests of key group assignment: ranges, their inverse, and the process-independent hash."""

from __future__ import annotations

import itertools
import json
import math
import os
import pickle
import random
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.errors import KeyTypeError
from undertow.state import key_groups
from undertow.state.key_groups import (
    assign_to_key_group,
    check_parallelism,
    key_group_range_for_subtask,
    stable_hash,
    state_key,
    stored_key,
    subtask_for_key_group,
    user_items,
    user_keys,
)


@st.composite
def parallelisms(draw: st.DrawFn) -> tuple[int, int]:
    max_p = draw(st.integers(1, 4096))
    return max_p, draw(st.integers(1, min(max_p, 512)))


@given(parallelisms())
def test_ranges_partition_contiguously(mp: tuple[int, int]) -> None:
    max_p, p = mp
    ranges = [key_group_range_for_subtask(max_p, p, i) for i in range(p)]
    assert ranges[0].start == 0
    assert ranges[-1].stop == max_p
    for prev, nxt in itertools.pairwise(ranges):
        assert prev.stop == nxt.start
    for r in ranges:
        assert r.step == 1 and len(r) >= 1
    sizes = {len(r) for r in ranges}
    assert max(sizes) - min(sizes) <= 1


@given(parallelisms())
def test_subtask_for_key_group_is_the_inverse(mp: tuple[int, int]) -> None:
    max_p, p = mp
    for index in range(p):
        for kg in key_group_range_for_subtask(max_p, p, index):
            assert subtask_for_key_group(max_p, p, kg) == index


@given(st.integers(1, 1 << 15), st.one_of(st.integers(), st.text(), st.binary()))
def test_key_group_in_range(max_p: int, key: Any) -> None:
    assert 0 <= assign_to_key_group(key, max_p) < max_p
    assert 0 <= stable_hash(key) < 1 << 32


def test_check_parallelism() -> None:
    check_parallelism(128, 128)
    for bad in (0, 129, -1):
        with pytest.raises(ValueError, match="parallelism"):
            check_parallelism(128, bad)


def test_hash_spreads_keys() -> None:
    groups = [assign_to_key_group(f"user-{i}", 128) for i in range(10_000)]
    counts = [groups.count(g) for g in range(128)]
    assert min(counts) > 40 and max(counts) < 120  # ~78 each


def test_unhashable_keys_hash_by_value() -> None:
    assert stable_hash([1, "a"]) == stable_hash([1, "a"])


def test_a_key_of_the_scripts_class_or_that_does_not_pickle_is_refused_by_name() -> None:
    """A class of the job script hashes on local-threads but not on workers (its class comes
    by value, pickle cannot name it), so it is refused everywhere; both messages name the key."""
    script_class = type("User", (), {"__module__": "__main__", "__repr__": lambda s: "User(a)"})
    with pytest.raises(KeyTypeError, match=r"key User\(a\) is a __main__\.User, a class defined"):
        stable_hash(script_class())
    with pytest.raises(KeyTypeError, match=r"of type builtins\.function cannot be hashed"):
        assign_to_key_group(lambda: 0, 128)


@pytest.mark.parametrize("key", [{"a", "b"}, frozenset({"a", "b"}), ("user", frozenset({1}))])
def test_a_set_key_is_refused_naming_it(key: Any) -> None:
    """A set's iteration order, and so its pickle, follows the per-process salted str hash
    (three seeds put frozenset({'alpha', 'beta', 'gamma', 'delta'}) in key groups 118, 45 and
    102): refused, also inside a tuple, with the tuple to key by instead."""
    with pytest.raises(KeyTypeError, match=r"set, whose order differs between processes.*"
                       r"tuple\(sorted\(the_set\)\)"):  # fmt: skip
        assign_to_key_group(key, 128)


SAMPLE_KEYS: list[Any] = [
    0,
    1,
    -1,
    2**40,
    -(2**70),
    True,
    "",
    "key",
    "ünïcödé",
    b"\x00\xff",
    (1, "a"),
    ("nested", (2, b"x")),
    None,
    1.5,
]

_CHILD = """
import json, sys
from undertow.state.key_groups import stable_hash
keys = eval(sys.stdin.read())
print(json.dumps([stable_hash(k) for k in keys]))
"""


def test_stable_hash_is_the_same_in_another_process() -> None:
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=repr(SAMPLE_KEYS),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert json.loads(out.stdout) == [stable_hash(k) for k in SAMPLE_KEYS]


#: Keys that Python's dict takes for one another (1 == 1.0 == True, 0.0 == -0.0 == 0 == False,
#: and tuples of them) while their stable hashes differ, among keys that never collide.
_SCALAR_KEYS = st.one_of(
    st.integers(-2, 2),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, float("nan"), float("inf")]),
    st.floats(allow_nan=False),
    st.text(max_size=2),
    st.binary(max_size=2),
    st.none(),
)
_KEYS = st.recursive(_SCALAR_KEYS, lambda inner: st.tuples(inner, inner), max_leaves=4)


def _fresh_group(key: Any, max_parallelism: int) -> int:
    """The key group of ``key`` computed with every cache of the module emptied first."""
    key_groups._cache.clear()
    key_groups._float_cache.clear()
    return assign_to_key_group(key, max_parallelism)


@given(st.lists(_KEYS, max_size=30), st.randoms(use_true_random=False))
def test_a_key_group_does_not_depend_on_the_keys_hashed_before(
    keys: list[Any], rnd: random.Random
) -> None:
    """Whatever keys one process hashed before (a worker, a restore), a key has the group a
    fresh process gives it: 1, 1.0 and True (or 0.0 and -0.0) are one dict key but not one
    stable hash, so a cache must never answer for one with the group of another."""
    expected = [_fresh_group(k, 128) for k in keys]
    order = list(range(len(keys)))
    rnd.shuffle(order)
    key_groups._cache.clear()
    key_groups._float_cache.clear()
    shared = {i: assign_to_key_group(keys[i], 128) for i in order}
    shared = {i: assign_to_key_group(keys[i], 128) for i in reversed(order)}  # all cached now
    assert [shared[i] for i in range(len(keys))] == expected


def test_one_and_one_point_zero_keep_their_own_groups_in_either_order() -> None:
    """The example that failed: the group of ``(1.0,)`` was that of ``(True,)`` seen first."""
    pairs = [((True,), (1.0,)), ((1.0,), (1,)), (-0.0, 0.0), (0.0, -0.0)]
    pairs += [(((1,), "a"), ((1.0,), "a")), (((("b", 0.0),),), ((("b", -0.0),),))]  # nested
    for first, second in pairs:
        fresh = _fresh_group(second, 1 << 15)
        key_groups._cache.clear()
        key_groups._float_cache.clear()
        assign_to_key_group(first, 1 << 15)
        assert assign_to_key_group(second, 1 << 15) == fresh, (first, second)


def test_negative_zero_has_a_state_form_of_its_own_with_its_key_group() -> None:
    """In a dict ``-0.0 == 0.0``; keyed state holds ``-0.0`` as ``NEGATIVE_ZERO`` (also inside
    tuples), which equals only itself, keeps ``-0.0``'s key group at every max parallelism,
    pickles as itself, and turns back into the float for users and byte-keyed stores."""
    negative = key_groups.NEGATIVE_ZERO
    for key in (-0.0, ("k", -0.0), ("k", (-0.0, float("nan")))):
        stored = key_groups.state_key(key)
        assert stored is not key and stored != key_groups.state_key(abs_zero(key))
        assert key_groups.state_key(stored) == stored
        for max_p in (2, 3, 5, 29, 128):
            assert key_groups.assign_to_key_group(stored, max_p) == (
                key_groups.assign_to_key_group(key, max_p)
            )
        assert repr(key_groups.user_key(stored)) == repr(key)
    assert key_groups.state_key(0.0) == 0.0 and type(key_groups.state_key(0.0)) is float
    assert len({negative, 0.0, key_groups.state_key(-0.0)}) == 2
    assert pickle.loads(pickle.dumps(negative)) is negative
    back = key_groups.user_key(("k", negative))
    assert back == ("k", -0.0) and type(back[1]) is float
    assert math.copysign(1.0, back[1]) < 0
    plain = key_groups.user_key(negative)
    assert type(plain) is float and math.copysign(1.0, plain) < 0
    assert pickle.dumps(key_groups.user_key(("k", negative))) == pickle.dumps(("k", -0.0))
    for plain_type_key in (1, "a", (1, "a"), 2.5):
        assert key_groups.state_key(plain_type_key) is plain_type_key
        assert key_groups.user_key(plain_type_key) is plain_type_key


def abs_zero(key: Any) -> Any:
    """``key`` with its ``-0.0`` made ``0.0``."""
    if type(key) is float:
        return abs(key) if key == 0.0 else key
    return tuple(abs_zero(item) for item in key) if type(key) is tuple else key


def test_restored_entries_of_an_earlier_version_take_the_state_form() -> None:
    """A snapshot of an earlier version holds ``-0.0`` as a float: its key is stored in the
    state form; entries without one are kept as they are (the same dict)."""
    old = {-0.0: "negative", 1: "one", ("k", -0.0): "tuple"}
    restored = key_groups.state_entries(old)
    assert restored[key_groups.NEGATIVE_ZERO] == "negative"
    assert restored[("k", key_groups.NEGATIVE_ZERO)] == "tuple" and 0.0 not in restored
    plain = {1: "one", "a": "a", 0.0: "zero"}
    assert key_groups.state_entries(plain) is plain


def test_a_row_key_is_hashed_once_and_in_its_tuples_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``key_type`` ROW makes every key a ``Row``: its hash is its fields' tuple's, found in
    the cache after the first record (it was computed on every record: 4.3 us a key)."""
    from undertow.common.row import Row

    calls: list[Any] = []
    uncached = key_groups._hash_uncached

    def counted(key: Any) -> int:
        calls.append(key)
        return uncached(key)

    monkeypatch.setattr(key_groups, "_hash_uncached", counted)
    named = Row(word="row-key-a", n=7)
    assert stable_hash(named) == stable_hash(("row-key-a", 7))
    assert stable_hash(Row("row-key-a", 7)) == stable_hash(named)
    assert [c for c in calls if c == ("row-key-a", 7)] == [("row-key-a", 7)]
    with_float = Row("row-key-b", 1.0)  # a float field: hashed on every call, not cached
    assert stable_hash(with_float) == stable_hash(("row-key-b", 1.0))
    assert stable_hash(with_float) != stable_hash(("row-key-b", 1))


def test_stored_keys_pickle_every_nan_alike_and_the_zeros_apart() -> None:
    """A byte-keyed store's key (``stored_key``) of a user's key or its ``state_key`` form:
    one pickle for every NaN (theirs differ by sign and payload), ``-0.0`` the float whose
    pickle is not ``0.0``'s, also inside a tuple; other keys as they are."""
    nans = [float("nan"), -float("nan"), float("inf") - float("inf")]
    assert len({pickle.dumps(n) for n in nans}) > 1
    for form in (lambda k: k, state_key):
        assert len({pickle.dumps(stored_key(form(n))) for n in nans}) == 1
        assert len({pickle.dumps(stored_key(form(("t", n)))) for n in nans}) == 1
        zeros = [stored_key(form(z)) for z in (0.0, -0.0, ("t", -0.0))]
        assert [type(z) for z in zeros] == [float, float, tuple]
        assert [repr(z) for z in zeros] == ["0.0", "-0.0", "('t', -0.0)"]
    assert [stored_key(k) for k in (1, "a", ("a", 1))] == [1, "a", ("a", 1)]


def test_user_keys_and_items_turn_the_state_forms_back_to_plain_floats() -> None:
    plain = [1, "a", 0.0]
    assert user_keys(plain) == plain
    assert user_items([(k, 1) for k in plain]) == [(k, 1) for k in plain]
    formed = [state_key(-0.0), state_key(("t", -0.0)), 2]
    keys = user_keys(formed)
    assert [(repr(k), type(k)) for k in keys] == [("-0.0", float), ("('t', -0.0)", tuple),
                                                  ("2", int)]  # fmt: skip
    assert [type(k) for k, _ in user_items([(k, None) for k in formed])] == [float, tuple, int]
    assert type(user_keys(formed)[1][1]) is float
