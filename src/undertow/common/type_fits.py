"""Cheap tests that a value fits a declared type, for checks that run on every value.

A declared type's full ``check`` (:class:`~undertow.common.typeinfo_basic.TypeInformation`)
describes why a value does not fit, in microseconds; a check per record or per state write
cannot afford it on every value. :func:`surely_fits` builds a test true only of values that
fit and cheap on them (``str`` for ``STRING``, an ``int`` in ``LONG``'s range, an exact tuple
whose fields pass theirs); where it is false, the caller runs the full check, which decides.
Used by ``key_by``'s ``key_type`` (:mod:`undertow.datastream.key_types`) and by the declared
types of keyed state (:mod:`undertow.state.value_types`). Pure; the tests are closures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.common.typeinfo import BasicTypeInfo, RowTypeInfo, TupleTypeInfo, TypeInformation


def surely_fits(declared: TypeInformation) -> Callable[[Any], bool]:
    """A test true only of values that fit ``declared`` and cheap on them: a basic type, a
    row or tuple of such types (as an exact ``tuple``); false of every other value, which the
    full check then decides."""
    if isinstance(declared, BasicTypeInfo):
        bounds = declared.int_range()
        if bounds is not None:
            low, high = bounds
            return lambda value: type(value) is int and low <= value <= high
        exact = declared.exact_types()
        return lambda value: type(value) in exact
    if isinstance(declared, (RowTypeInfo, TupleTypeInfo)):
        return _fields_fit(tuple(declared.field_types))
    return lambda value: False


def _fields_fit(field_types: tuple[TypeInformation, ...]) -> Callable[[Any], bool]:
    """:func:`surely_fits` of a row or tuple type, written out as one expression over the
    value's fields (``type(value) is tuple and len(value) == 2 and type(value[0]) in exact0
    and ...``): a loop calling each field's test took 480 ns a key of two fields, 2.5 times
    the route."""
    namespace: dict[str, Any] = {}
    terms = ["type(value) is tuple", f"len(value) == {len(field_types)}"]
    for i, field_type in enumerate(field_types):
        item = f"value[{i}]"
        bounds = field_type.int_range() if isinstance(field_type, BasicTypeInfo) else None
        if bounds is not None:
            namespace[f"low{i}"], namespace[f"high{i}"] = bounds
            terms.append(f"type({item}) is int and low{i} <= {item} <= high{i}")
        elif isinstance(field_type, BasicTypeInfo):
            namespace[f"exact{i}"] = field_type.exact_types()
            terms.append(f"type({item}) in exact{i}")
        else:  # a nested row or tuple, or a type without a cheap test
            namespace[f"fits{i}"] = surely_fits(field_type)
            terms.append(f"fits{i}({item})")
    source = "def fields_fit(value):\n    return " + " and ".join(f"({t})" for t in terms) + "\n"
    exec(compile(source, f"<value fits {field_types!r:.200}>", "exec"), namespace)
    fits: Callable[[Any], bool] = namespace["fields_fit"]
    return fits
