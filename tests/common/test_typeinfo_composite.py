"""Composite types (:mod:`undertow.common.typeinfo_composite`): arrays, lists and maps check
their elements, name the element that does not fit, and conform only when an element must."""

from __future__ import annotations

import pytest

from undertow.common.typeinfo_basic import BasicType, BasicTypeInfo
from undertow.common.typeinfo_composite import (
    BasicArrayTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
)

INT = BasicTypeInfo(BasicType.INT)
FLOAT = BasicTypeInfo(BasicType.FLOAT)
STRING = BasicTypeInfo(BasicType.STRING)


def test_a_primitive_array_holds_no_none_and_a_byte_array_may_be_bytes() -> None:
    ints = PrimitiveArrayTypeInfo(INT)
    assert ints.check([1, 2]) is None
    assert ints.check([1, None]) == "element 1: expected Integer, got None"
    assert PrimitiveArrayTypeInfo(BasicTypeInfo(BasicType.BYTE)).check(b"\x00\x01") is None
    with pytest.raises(TypeError, match="for a primitive array: use one of"):
        PrimitiveArrayTypeInfo(STRING)


def test_basic_and_object_arrays_allow_none_elements() -> None:
    assert BasicArrayTypeInfo(STRING).check(["a", None]) is None
    assert ObjectArrayTypeInfo(ListTypeInfo(INT)).check([[1], None]) is None
    problem = ObjectArrayTypeInfo(ListTypeInfo(INT)).check([[1], ["x"]])
    assert problem is not None and problem.startswith("element 1: element 0: expected Integer")


def test_a_list_names_a_value_that_is_no_list() -> None:
    assert ListTypeInfo(INT).check({1}) == "expected ListTypeInfo<Integer> (a list), got set {1}"


def test_a_lists_elements_may_be_none_only_if_their_type_is_nullable() -> None:
    assert ListTypeInfo(INT).check([1, None]) == "element 1: expected Integer, got None"
    assert ListTypeInfo(STRING).check(["a", None]) is None
    assert repr(ListTypeInfo(INT)) == "ListTypeInfo<Integer>"
    assert repr(ObjectArrayTypeInfo(INT)) == "ObjectArrayTypeInfo<Integer>"


def test_a_map_checks_keys_and_values() -> None:
    info = MapTypeInfo(STRING, INT)
    assert info.check({"a": 1, "b": None}) is None  # map values may be None
    assert info.check({1: 1}) is not None and info.check({1: 1}).startswith("key 1:")  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="value_type must be a TypeInformation"):
        MapTypeInfo(STRING, int)  # type: ignore[arg-type]


def test_conform_converts_only_where_an_element_needs_it() -> None:
    same = [1, 2]
    assert ListTypeInfo(INT).conform(same) is same
    assert ListTypeInfo(FLOAT).conform([0.1]) == [FLOAT.conform(0.1)]
    assert MapTypeInfo(STRING, FLOAT).conform({"a": 0.1}) == {"a": FLOAT.conform(0.1)}
    with pytest.raises(TypeError, match="a dict"):
        MapTypeInfo(STRING, FLOAT).conform([0.1])
