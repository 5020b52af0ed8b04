"""Basic types (:mod:`undertow.common.typeinfo_basic`): what fits, what is converted, and the
problem named when a value does not fit."""

from __future__ import annotations

import decimal
import math

import pytest

from undertow.common.typeinfo_basic import BasicType, BasicTypeInfo, to_float32


@pytest.mark.parametrize(
    ("kind", "fits", "does_not"),
    [
        (BasicType.BYTE, 127, 128),
        (BasicType.SHORT, -(2**15), 2**15),
        (BasicType.INT, 2**31 - 1, 2**31),
        (BasicType.LONG, True, 1.0),  # a bool is one (PyFlink's coder writes True as 1)
        (BasicType.STRING, "x", b"x"),
        (BasicType.BOOLEAN, False, 0),
        (BasicType.CHAR, "a", "ab"),
        (BasicType.BIG_DEC, decimal.Decimal("1.5"), 1.5),
    ],
)
def test_a_value_fits_its_basic_type_or_is_named(
    kind: BasicType, fits: object, does_not: object
) -> None:
    info = BasicTypeInfo(kind)
    assert info.check(fits) is None
    problem = info.check(does_not)
    assert problem is not None and kind.value in problem


def test_integer_problems_name_the_range() -> None:
    problem = BasicTypeInfo(BasicType.BYTE).check(300)
    assert problem == "expected Byte (8-bit, -128..127), got 300"


def test_only_reference_types_are_nullable() -> None:
    assert BasicTypeInfo(BasicType.STRING).check(None) is None
    assert BasicTypeInfo(BasicType.INT).check(None) == "expected Integer, got None"


def test_float_is_conformed_to_32_bits_as_java_does() -> None:
    info = BasicTypeInfo(BasicType.FLOAT)
    assert info.needs_conform() and not BasicTypeInfo(BasicType.DOUBLE).needs_conform()
    assert info.conform(0.1) == to_float32(0.1) != 0.1
    assert to_float32(1e300) == math.inf and to_float32(-1e300) == -math.inf
    assert math.isnan(to_float32(math.nan))
    assert BasicTypeInfo(BasicType.DOUBLE).conform(0.1) == 0.1


@pytest.mark.parametrize("kind", list(BasicType))
def test_the_cheap_tests_never_pass_a_value_the_check_refuses(kind: BasicType) -> None:
    """``int_range`` and ``exact_types`` feed the per-record key and output checks, which
    trust a value they pass without the full ``check``: both must agree with it."""
    info = BasicTypeInfo(kind)
    samples = [0, 1, -1, 127, 128, -129, 2**31, 2**63, -(2**63) - 1, 2**64, True, 1.5, "a",
               "ab", b"a", None]  # fmt: skip
    bounds = info.int_range()
    for value in samples:
        if bounds is not None:
            cheap = type(value) is int and bounds[0] <= value <= bounds[1]
        else:
            cheap = type(value) in info.exact_types()
        if cheap:
            assert info.check(value) is None, (kind, value)
    assert (bounds is None) != (kind in (BasicType.BYTE, BasicType.SHORT, BasicType.INT,
                                         BasicType.LONG))  # fmt: skip
