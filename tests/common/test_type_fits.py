"""The cheap fit tests of declared types (:mod:`undertow.common.type_fits`): never true of a
value the full check refuses, true of the fitting exact tuples of row and tuple types."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.common.type_fits import surely_fits
from undertow.common.typeinfo import Types

_TYPES = [
    Types.STRING(),
    Types.BOOLEAN(),
    Types.BYTE(),
    Types.LONG(),
    Types.DOUBLE(),
    Types.BIG_INT(),
    Types.ROW([Types.STRING(), Types.INT()]),
    Types.TUPLE([Types.LONG(), Types.BOOLEAN()]),
    Types.ROW([Types.BYTE(), Types.TUPLE([Types.STRING(), Types.DOUBLE()])]),
]
_BOUNDS = [
    b + d for bits in (8, 32, 64) for b in (2 ** (bits - 1), -(2 ** (bits - 1))) for d in (-1, 0)
]
_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from(_BOUNDS),  # the edges of BYTE's, INT's and LONG's ranges
    st.booleans(),
    st.floats(),
    st.text(max_size=3),
    st.none(),
)


@given(
    declared=st.sampled_from(_TYPES),
    value=_SCALARS | st.tuples(_SCALARS, _SCALARS | st.tuples(_SCALARS, _SCALARS)),
)
def test_the_cheap_test_passes_only_values_the_full_check_takes(declared: Any, value: Any) -> None:
    """A value the cheap test passes is never one the type refuses (it skips the full check)."""
    if surely_fits(declared)(value):
        assert declared.check(value) is None


@pytest.mark.parametrize(
    ("declared", "value"),
    [
        (Types.ROW([Types.STRING(), Types.INT()]), ("a", 2**31 - 1)),
        (Types.TUPLE([Types.LONG(), Types.BOOLEAN()]), (-(2**63), True)),
        (
            Types.ROW([Types.BYTE(), Types.TUPLE([Types.STRING(), Types.DOUBLE()])]),
            (-128, ("x", 1.5)),
        ),
        (Types.ROW([]), ()),
    ],
)
def test_the_cheap_test_passes_the_fitting_tuples_of_a_row_or_tuple_type(
    declared: Any, value: Any
) -> None:
    """An exact tuple whose fields fit their basic types passes without the full check."""
    assert surely_fits(declared)(value)
    assert not surely_fits(declared)((*value, 0))  # one field too many


@pytest.mark.parametrize(
    ("declared", "value"),
    [
        (Types.ROW([Types.STRING(), Types.INT()]), ("a", 2**31)),
        (Types.ROW([Types.STRING(), Types.INT()]), (b"a", 1)),
        (Types.TUPLE([Types.LONG(), Types.BOOLEAN()]), (2**63, True)),
        (Types.TUPLE([Types.LONG(), Types.BOOLEAN()]), (1.0, True)),
        (
            Types.ROW([Types.BYTE(), Types.TUPLE([Types.STRING(), Types.DOUBLE()])]),
            (-129, ("x", 1.5)),
        ),
        (Types.ROW([Types.BYTE(), Types.TUPLE([Types.STRING(), Types.DOUBLE()])]), (1, ("x", "y"))),
    ],
)
def test_the_cheap_test_fails_a_tuple_with_a_field_its_type_refuses(
    declared: Any, value: Any
) -> None:
    assert declared.check(value) is not None
    assert not surely_fits(declared)(value)
