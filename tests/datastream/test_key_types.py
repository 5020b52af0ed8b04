"""``key_by``'s ``key_type`` (:mod:`undertow.datastream.key_types`): no wrapper without one;
with one, every key is checked, the cheap test and the full check agreeing on which fit."""

from __future__ import annotations

import re
from typing import Any

import pytest

from undertow.common import Row
from undertow.common.typeinfo import Types
from undertow.core.errors import GraphBuildError, KeyTypeError
from undertow.datastream.key_types import with_key_type
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import assign_to_key_group


def _first(record: Any) -> Any:
    return record[0]


def test_a_selector_without_a_key_type_is_not_wrapped() -> None:
    """No ``key_type`` (or ``PICKLED_BYTE_ARRAY``, which takes any key): no cost per key."""
    assert with_key_type(_first, None, "key_by()") is _first
    assert with_key_type(_first, Types.PICKLED_BYTE_ARRAY(), "key_by()") is _first


@pytest.mark.parametrize(
    ("key_type", "fits", "refused", "problem"),
    [
        (Types.STRING(), "a", 1, "expected String, got int 1"),
        (Types.INT(), 7, 2**40, r"expected Integer \(32-bit"),
        (Types.DOUBLE(), 1, "x", "expected Double, got str 'x'"),
        (Types.ROW([Types.STRING(), Types.INT()]), ("a", 1), ("a", "b"), r"field 'f1'"),
        (Types.SQL_DATE(), None, 3, "expected DateTypeInfo"),  # no cheap test: full check
    ],
)
def test_a_declared_key_type_checks_every_key(
    key_type: Any, fits: Any, refused: Any, problem: str
) -> None:
    selector = with_key_type(_first, key_type, "key_by()")
    assert selector((fits, 0)) == fits
    declared = re.escape(repr(key_type))
    with pytest.raises(KeyTypeError, match=f"key_by\\(\\) declared key_type {declared}, but "
                       f"the key selector returned .*: {problem}") as err:  # fmt: skip
        selector((refused, 0))
    assert err.value.__notes__ == [f"on the record {(refused, 0)!r}"]


def test_a_key_type_that_is_no_type_information_is_refused() -> None:
    with pytest.raises(GraphBuildError, match=r"key_by\(\): key_type must be a TypeInformation"):
        with_key_type(_first, str, "key_by()")


@pytest.mark.parametrize(
    ("key_type", "key", "delivered"),
    [
        (Types.DOUBLE(), 1, 1.0),
        (Types.DOUBLE(), 2.5, 2.5),
        (Types.FLOAT(), 1.1, 1.100000023841858),  # PyFlink's 32-bit float
        (Types.FLOAT(), 3, 3.0),
    ],
)
def test_a_floating_key_is_delivered_as_pyflinks_serializer_gives_it(
    key_type: Any, key: Any, delivered: float
) -> None:
    selector = with_key_type(_first, key_type, "key_by()")
    out = selector((key, 0))
    assert type(out) is float and out == delivered


def test_a_key_out_of_a_float_types_range_is_refused_naming_it() -> None:
    selector = with_key_type(_first, Types.FLOAT(), "key_by()")
    with pytest.raises(KeyTypeError, match=r"returned 1e\+39 \(float\): .*too large") as err:
        selector((1e39, 0))
    assert err.value.__notes__ == ["on the record (1e+39, 0)"]


@pytest.mark.parametrize(
    "key",
    [("a", 1), Row("a", 1), Row(name="a", n=1), Row(x="a", y=1), ["a", 1]],
    ids=["tuple", "unnamed row", "named row", "other names", "list"],
)
@pytest.mark.parametrize("named", [False, True])
def test_a_row_key_is_delivered_as_a_row_of_the_types_names(key: Any, named: bool) -> None:
    """PyFlink's row serializer hands the key back as a ``Row`` named as the type."""
    fields = [Types.STRING(), Types.INT()]
    key_type = Types.ROW_NAMED(["name", "n"], fields) if named else Types.ROW(fields)
    out = with_key_type(_first, key_type, "key_by()")((key, 0))
    names = ["name", "n"] if named else ["f0", "f1"]
    assert isinstance(out, Row) and out.as_dict() == dict(zip(names, ("a", 1)))
    assert out == ("a", 1) and hash(out) == hash(("a", 1))  # same key, same key group


def test_a_row_key_with_a_float_field_conforms_it() -> None:
    key_type = Types.ROW([Types.STRING(), Types.FLOAT()])
    out = with_key_type(_first, key_type, "key_by()")((("a", 1.1), 0))
    assert isinstance(out, Row) and out[1] == 1.100000023841858


def test_the_partitioners_selector_keeps_a_fitting_tuple_in_the_rows_key_group() -> None:
    """``route_only`` (the partitioner's selector): a ``ROW`` key that is a fitting tuple is
    not made a ``Row``, and its key group is the ``Row``'s the keyed operator sees; a key of
    another shape, or of a type whose fields conform (``FLOAT``), is formed as before."""
    key_type = Types.ROW_NAMED(["w", "n"], [Types.STRING(), Types.LONG()])
    formed = with_key_type(_first, key_type, "key_by()")
    route = with_key_type(_first, key_type, "key_by()", route_only=True)
    for key in [("a", 1), ("b", -5), ("", 2**62)]:
        row, routed = formed((key, 0)), route((key, 0))
        assert type(routed) is tuple and type(row) is not tuple and row.w == key[0]
        assert assign_to_key_group(routed, 128) == assign_to_key_group(row, 128)
    assert type(route((Row("a", 1), 0))) is not tuple  # not an exact tuple: formed
    rounded = with_key_type(_first, Types.ROW([Types.STRING(), Types.FLOAT()]), "key_by()",
                            route_only=True)  # fmt: skip
    assert rounded((("a", 1.1), 0)) == ("a", 1.100000023841858)
    with pytest.raises(KeyTypeError, match="field 'n'"):
        route((("a", "b"), 0))


def test_the_keyed_selector_hands_out_one_row_per_key_of_plain_fields() -> None:
    """A ``ROW`` key of plain fields is one shared ``Row`` per key (the state's dict then finds
    it by identity); a key with a float field (``0.0`` and ``-0.0`` are two keys) is made anew
    each time, and the partitioner's selector keeps the tuple."""
    key_type = Types.ROW_NAMED(["w", "n"], [Types.STRING(), Types.LONG()])
    keyed = with_key_type(_first, key_type, "key_by()")
    first, again, other = keyed((("a", 1), 0)), keyed((("a", 1), 1)), keyed((("a", 2), 0))
    assert first is again and first.w == "a" and first.n == 1
    assert other is not first and other == ("a", 2)
    with pytest.raises(KeyTypeError, match="field 'n'"):
        keyed((("a", "b"), 0))
    floats = with_key_type(_first, Types.ROW([Types.STRING(), Types.DOUBLE()]), "key_by()")
    zero, negative = floats((("a", 0.0), 0)), floats((("a", -0.0), 0))
    assert zero is not negative and str(negative[1]) == "-0.0"
    assert floats((("a", 0.5), 0)) is not floats((("a", 0.5), 0))


def test_a_row_key_is_one_key_with_its_tuple_in_the_heap_backend() -> None:
    """``set_current_key`` of a ``Row`` of plain fields takes its key group from the offsets
    cache (its tuple's group) and reaches the same entry as the equal tuple."""
    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    state = backend.get_partitioned_state(ValueStateDescriptor("v"))
    row_key = with_key_type(_first, Types.ROW([Types.STRING(), Types.LONG()]), "key_by()")
    for n in range(300):
        key = row_key(((f"k{n % 30}", n % 3), 0))
        backend.set_current_key(key)
        assert backend.get_current_key() is key
        assert key in backend._offsets  # its key group cached, as a tuple's would be
        state.update((state.value() or 0) + 1)
    for n in range(30):
        backend.set_current_key((f"k{n}", n % 3))
        assert state.value() == 10
        assert backend._ctx.offset == assign_to_key_group((f"k{n}", n % 3), 128)
