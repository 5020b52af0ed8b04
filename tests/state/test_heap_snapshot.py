"""The heap backend's cheap snapshot (:mod:`undertow.state.heap_snapshot`): the synchronous part
pickles at most one key group, and nothing done after it (writes, clears, a value object
mutated in place) reaches the snapshot, however the pending key groups get serialized."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import undertow.state.heap as heap_module
from undertow.state.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend

MAX_P = 32


def backend() -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend("op", MAX_P, range(MAX_P), lambda: 0)


def states(b: HeapKeyedStateBackend) -> dict[str, Any]:
    return {
        "v": b.get_partitioned_state(ValueStateDescriptor("v", None)),
        "l": b.get_partitioned_state(ListStateDescriptor("l", None)),
        "m": b.get_partitioned_state(MapStateDescriptor("m", None, None)),
    }


def contents(b: HeapKeyedStateBackend, keys: range) -> dict[Any, Any]:
    s = states(b)
    out = {}
    for key in keys:
        b.set_current_key(key)
        out[key] = (copy.deepcopy(s["v"].value()), list(s["l"].get() or []),
                    dict(s["m"].items()))  # fmt: skip
    return out


KEYS = range(40)
OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "mutate", "add", "put", "clear", "step", "read", "fold"]),
        st.sampled_from(list(KEYS)),
        st.integers(0, 9),
    ),
    max_size=60,
)


def _concat(old: list[int], new: list[int]) -> list[int]:
    return old + new


def apply(b: HeapKeyedStateBackend, snapshot: Any, ops: list[tuple[str, int, int]]) -> None:
    s = states(b)
    for op, key, value in ops:
        if op == "step":
            if snapshot is not None:
                snapshot.step(0.0)  # one key group
            continue
        if op == "fold":  # the batch fold of keyed reduce/sum: two keys, new list objects
            b.fold_values(s["v"], [key, (key + 1) % len(KEYS)], [[value], [value]], _concat)
            continue
        b.set_current_key(key)
        if op == "set":
            s["v"].update([value])
        elif op == "mutate":  # in place, as user code may do with the object it read
            current = s["v"].value()
            if current is not None:
                current.append(value)
        elif op == "add":
            s["l"].add(value)
        elif op == "put":
            s["m"].put(value, key)
        elif op == "clear":
            s["v"].clear()
            s["l"].clear()
            s["m"].clear()
        else:
            s["v"].value()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=OPS, after=OPS, pickled=st.booleans())
def test_changes_after_the_synchronous_part_do_not_reach_the_snapshot(
    before: list[tuple[str, int, int]], after: list[tuple[str, int, int]], pickled: bool
) -> None:
    b = backend()
    apply(b, None, before)
    expected = contents(b, KEYS)
    b.set_current_key(before[-1][1] if before else 0)  # a key context left set by the caller

    snapshot = b.snapshot()
    apply(b, snapshot, after)
    blobs = pickle.loads(pickle.dumps(snapshot)) if pickled else dict(snapshot.items())

    restored = backend()
    restored.restore(blobs)
    assert contents(restored, KEYS) == expected


def test_the_synchronous_part_pickles_one_key_group_and_a_touch_one_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Work counted, not timed: key groups pickled by ``snapshot()`` itself, by touching a
    pending key group, and by reading the result."""
    pickled: list[int] = []
    real = heap_module.encode_key_group_blob

    def counting(payload: dict[str, Any]) -> bytes:
        pickled.append(payload["key_group"])
        return real(payload)

    monkeypatch.setattr(heap_module, "encode_key_group_blob", counting)
    b = backend()
    value = states(b)["v"]
    for key in range(2000):  # every one of the 32 key groups holds state
        b.set_current_key(key)
        value.update(key)
    groups_with_state = MAX_P

    snapshot = b.snapshot()
    assert len(pickled) <= 1, "the synchronous part pickles only the current key's key group"
    assert snapshot.remaining >= groups_with_state - 1

    b.set_current_key(7)  # a record of another key group arrives
    value.update(-7)
    assert len(pickled) <= 2 and snapshot.encoded_on_touch <= 2  # the current key's, then 7's

    blobs = snapshot.result()
    assert len(pickled) == groups_with_state == len(blobs)
    assert snapshot.remaining == 0
    b.set_current_key(8)
    value.update(-8)
    assert len(pickled) == groups_with_state, "nothing is pickled once the snapshot is done"


def test_a_new_snapshot_completes_the_pending_one_first() -> None:
    b = backend()
    value = states(b)["v"]
    for key in range(100):
        b.set_current_key(key)
        value.update(key)
    first = b.snapshot()
    assert first.remaining > 0
    second = b.snapshot()
    assert first.remaining == 0
    assert dict(first.items()) == dict(second.items())


class Unpicklable:
    def __reduce__(self) -> Any:
        raise RuntimeError("cannot pickle this value")


def test_a_key_group_that_cannot_be_serialized_fails_the_snapshot_not_the_record() -> None:
    """A value that cannot be pickled surfaces where the snapshot is read (the checkpoint's
    asynchronous part, which declines it), not in the record that touches its key group."""
    b = backend()
    value = states(b)["v"]
    for key in range(200):
        b.set_current_key(key)
        value.update(Unpicklable() if key == 7 else key)
    b.set_current_key(0)
    snapshot = b.snapshot()
    b.set_current_key(7)  # touches the pending key group of the bad value: no error here
    value.update(7)
    for key in range(200):  # and the job goes on
        b.set_current_key(key)
        value.update(key)
    assert snapshot, "a failed snapshot is not an empty one (it would be dropped as such)"
    b.snapshot()  # the next one completes the failed one first: no error on this path either
    with pytest.raises(RuntimeError, match="cannot pickle this value"):
        pickle.dumps(snapshot)
    b.set_current_key(7)
    value.update(7)  # the bad value is gone
    assert pickle.loads(pickle.dumps(b.snapshot()))  # the next snapshot is fine


def test_rows_in_state_are_snapshotted_with_their_names_once() -> None:
    """Named rows in value state and window-like list state (a namespace per window) restore
    equal, of their class, and the names are written once per key group, not once per row
    (a ProcessWindowFunction's buffered rows were 61% of its job's CPU at each checkpoint)."""
    from undertow.common import Row

    b = backend()
    s = states(b)
    for key in range(64):
        b.set_current_key(key)
        s["v"].update(Row(user=key, amount=key * 2, ts=key))
        s["l"].set_current_namespace(("window", key % 3))
        for i in range(30):
            s["l"].add(Row(user=key, amount=i, ts=i))
    blobs = dict(b.snapshot().items())
    assert sum(map(len, blobs.values())) < 64 * 31 * 15, "about 12 bytes a row, not 20"
    restored = backend()
    restored.restore(blobs)
    r = states(restored)
    for key in (0, 17, 63):
        restored.set_current_key(key)
        assert r["v"].value() == Row(user=key, amount=key * 2, ts=key)
        assert r["v"].value().amount == key * 2
        r["l"].set_current_namespace(("window", key % 3))
        got = list(r["l"].get())
        assert got == [Row(user=key, amount=i, ts=i) for i in range(30)] and got[4].amount == 4
