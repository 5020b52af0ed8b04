"""Declared types of keyed state (:mod:`undertow.state.value_types`): a write that does not
fit its descriptor's type is refused naming the state, the type and the value, and leaves the
state as it was; fitting writes, ``None`` where it clears, and untyped descriptors pass; the
cheap test inside never decides otherwise than the type's full check. On both backends, with
and without TTL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from undertow.common.typeinfo import Types
from undertow.core.errors import StateError, StateTypeError
from undertow.datastream.functions import AggregateFunction
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.value_types import entry_check, value_check

BACKENDS = ["heap", "heap-ttl", "rocksdb", "rocksdb-ttl"]


class _Count(AggregateFunction):
    """Counts into an int accumulator; ``"str"`` as an input makes a str accumulator."""

    def create_accumulator(self) -> Any:
        return 0

    def add(self, value: Any, accumulator: Any) -> Any:
        return "many" if value == "str" else accumulator + 1

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


@pytest.fixture(params=BACKENDS)
def make_state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """``make_state(descriptor)``: the descriptor's state on the backend of the parameter,
    its current key set."""
    kind = request.param
    if kind.startswith("rocksdb"):
        backend: Any = RocksDBKeyedStateBackend("op", 8, range(8), lambda: 0,
                                                local_dir=str(tmp_path))  # fmt: skip
    else:
        backend = HeapKeyedStateBackend("op", 8, range(8), lambda: 0)

    def make(descriptor: StateDescriptor) -> Any:
        if kind.endswith("ttl"):
            descriptor.enable_time_to_live(StateTtlConfig.new_builder(60_000).build())
        state = backend.get_partitioned_state(descriptor)
        backend.set_current_key("k")
        return state

    yield make
    if isinstance(backend, RocksDBKeyedStateBackend):
        backend.dispose()


def _refused(state: str, declared: str, value: str, problem: str) -> str:
    return re.escape(f"state {state!r} declared {declared}, but was given {value}") + f".*{problem}"


def test_a_value_state_refuses_a_value_of_another_type(make_state: Any) -> None:
    state = make_state(ValueStateDescriptor("count", Types.INT()))
    state.update(7)
    with pytest.raises(
        StateTypeError,
        match=_refused("count", "value type Integer", "'x' (str)", "expected Integer"),
    ):
        state.update("x")
    with pytest.raises(StateTypeError, match="32-bit"):
        state.update(2**31)
    assert state.value() == 7  # the refused writes left it as it was
    state.update(None)  # clears, as always
    assert state.value() is None


def test_a_list_state_refuses_an_element_of_another_type(make_state: Any) -> None:
    state = make_state(ListStateDescriptor("events", Types.STRING()))
    state.add("a")
    state.add_all(["b", "c"])
    with pytest.raises(StateTypeError, match=_refused("events", "element type String",
                                                      "3 (int)", "expected String")):  # fmt: skip
        state.add(3)
    with pytest.raises(StateTypeError, match="expected String"):
        state.add_all(["d", 4])
    with pytest.raises(StateTypeError, match="expected String"):
        state.update(["e", b"f"])
    with pytest.raises(StateError, match="cannot add None"):
        state.add(None)
    assert list(state.get()) == ["a", "b", "c"]


def test_a_map_state_refuses_keys_and_values_of_other_types(make_state: Any) -> None:
    state = make_state(MapStateDescriptor("seen", Types.STRING(), Types.LONG()))
    state.put("a", 1)
    state.put("none", None)  # a None value passes, as Flink's maps take null
    state.put_all({"b": 2})
    with pytest.raises(StateTypeError, match=_refused("seen", "key type String", "1 (int)",
                                                      "expected String")):  # fmt: skip
        state.put(1, 1)
    with pytest.raises(StateTypeError, match=_refused("seen", "value type Long", "1.5 (float)",
                                                      "expected Long")):  # fmt: skip
        state.put("c", 1.5)
    with pytest.raises(StateTypeError, match="expected Long"):
        state.put_all({"d": 4, "e": "five"})
    assert dict(state.items()) == {"a": 1, "none": None, "b": 2}


def test_a_map_state_with_only_a_key_type_checks_only_keys(make_state: Any) -> None:
    state = make_state(MapStateDescriptor("by-id", Types.LONG(), None))
    state.put(1, object)  # any value
    with pytest.raises(StateTypeError, match="key type Long"):
        state.put("1", 1)


def test_a_reducing_state_checks_what_it_holds_after_an_add(make_state: Any) -> None:
    state = make_state(ReducingStateDescriptor("total", lambda a, b: a + b, Types.LONG()))
    state.add(1)
    state.add(2)
    with pytest.raises(StateTypeError, match=_refused("total", "value type Long", "3.5 (float)",
                                                      "expected Long")):  # fmt: skip
        state.add(0.5)  # the sum, 3.5, is what the state would hold
    assert state.get() == 3


def test_an_aggregating_state_checks_its_accumulator(make_state: Any) -> None:
    state = make_state(AggregatingStateDescriptor("n", _Count(), Types.INT()))
    state.add("a")
    with pytest.raises(
        StateTypeError,
        match=_refused("n", "accumulator type Integer", "'many' (str)", "expected Integer"),
    ):
        state.add("str")
    assert state.get() == 1


def test_rows_and_tuples_are_checked_field_by_field(make_state: Any) -> None:
    state = make_state(ValueStateDescriptor("last", Types.TUPLE([Types.STRING(), Types.INT()])))
    state.update(("a", 1))
    with pytest.raises(StateTypeError, match="expected Integer"):
        state.update(("a", "b"))
    with pytest.raises(StateTypeError):
        state.update(("a", 1, 2))
    assert state.value() == ("a", 1)


@pytest.mark.parametrize("declared", [None, Types.PICKLED_BYTE_ARRAY()])
def test_an_untyped_state_checks_nothing(declared: Any) -> None:
    assert value_check(ValueStateDescriptor("any", declared)) is None
    assert entry_check(MapStateDescriptor("any", declared, declared)) is None


def test_a_type_that_is_no_type_information_is_refused_naming_the_state() -> None:
    with pytest.raises(StateError, match=r"value state 'n': the value type must be a "
                       r"TypeInformation .*got type <class 'int'>"):  # fmt: skip
        value_check(ValueStateDescriptor("n", int))


_TYPES = [
    Types.INT(),
    Types.LONG(),
    Types.STRING(),
    Types.DOUBLE(),
    Types.BOOLEAN(),
    Types.SQL_DATE(),
    Types.TUPLE([Types.STRING(), Types.BYTE()]),
    Types.ROW_NAMED(["a", "b"], [Types.LONG(), Types.STRING()]),
    Types.LIST(Types.INT()),
]
_SCALARS = st.one_of(
    st.integers(-(2**65), 2**65),
    st.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 127, 128, -129]),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=2),
    st.binary(max_size=2),
)
_VALUES = _SCALARS | st.tuples(_SCALARS, _SCALARS) | st.lists(_SCALARS, max_size=3)


@given(declared=st.sampled_from(_TYPES), value=_VALUES)
@example(declared=Types.INT(), value=2**31)  # an int, out of range
@example(declared=Types.STRING(), value=b"a")
@example(declared=Types.TUPLE([Types.STRING(), Types.BYTE()]), value=("a", 128))
def test_the_check_refuses_exactly_what_the_type_refuses(declared: Any, value: Any) -> None:
    check = value_check(ValueStateDescriptor("v", declared))
    assert check is not None
    problem = declared.check(value)
    if problem is None:
        check(value)
    else:
        with pytest.raises(StateTypeError, match=re.escape(problem)):
            check(value)


def test_map_put_all_takes_a_dict_or_pairs_as_pyflink_does(make_state: Any) -> None:
    """PyFlink 2.3's ``put_all`` iterates its argument as (key, value) pairs, so a ported
    job may pass ``d.items()`` or a list of pairs; a dict is the API's type. Anything else
    is refused naming the state, before anything is written."""
    state = make_state(MapStateDescriptor("m", Types.STRING(), Types.INT()))
    state.put_all({"a": 1})
    state.put_all({"b": 2, "c": None}.items())
    state.put_all([("d", 4), ["e", 5]])
    state.put_all((k, v) for k, v in [("f", 6)])
    assert sorted(state.items(), key=str) == [
        ("a", 1), ("b", 2), ("c", None), ("d", 4), ("e", 5), ("f", 6),
    ]  # fmt: skip
    refused = re.escape("map state 'm': put_all takes a dict or (key, value) pairs")
    for bad, shown in [("ab", "'ab'"), (7, "7"), ([("g", 7), ("h", 8, 9)], "('h', 8, 9)")]:
        with pytest.raises(StateTypeError, match=refused) as raised:
            state.put_all(bad)
        assert shown in str(raised.value)
    assert not state.contains("g")
    with pytest.raises(StateTypeError, match="declared value type Integer"):
        state.put_all([("x", "not an int")])
