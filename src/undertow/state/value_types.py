"""The types a keyed state's descriptor declares, checked where a value is written.

PyFlink writes a state's values with its declared type's serializer, which fails the job on
a value of another type ("an integer is required"). Checked, as PyFlink encodes them: a
ValueState's new value, a ListState's elements, a MapState's keys and values (``None`` values
pass, as Flink's maps take null), a ReducingState's value after an add and an
AggregatingState's accumulator. A misfit raises
:class:`~undertow.core.errors.StateTypeError` naming the state, the declared type and the
value; the task names the operator and subtask.

``MapState.put_all`` takes a dict or, as PyFlink's does, (key, value) pairs
(:func:`put_all_entries`). Cost: nothing without a declared type (or with
``PICKLED_BYTE_ARRAY``): the state holds None and tests that. Otherwise per write a call and
the cheap test of :func:`~undertow.common.type_fits.surely_fits`; the full check only where
it fails. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from undertow.common.type_fits import surely_fits
from undertow.common.typeinfo import BasicTypeInfo, PickledBytesTypeInfo, TypeInformation
from undertow.core.errors import StateError, StateTypeError, shown_value
from undertow.state.descriptors import MapStateDescriptor, StateDescriptor

#: Raises :class:`StateTypeError` for a value that does not fit; returns None.
Check = Callable[[Any], None]

#: What each kind of state checks against its descriptor's ``type_info``.
_ROLES = {
    "value": "value type",
    "list": "element type",
    "map": "value type",
    "reducing": "value type",
    "aggregating": "accumulator type",
}


def value_check(descriptor: StateDescriptor) -> Check | None:
    """The check of what ``descriptor``'s state holds (see the module docstring), or None."""
    return _check(descriptor, descriptor.type_info, _ROLES[descriptor.kind])


def entry_check(descriptor: MapStateDescriptor) -> Callable[[Any, Any], None] | None:
    """The check of a map entry ``(key, value)`` of ``descriptor``'s state (a ``None`` value
    passes), or None when neither type is declared."""
    keys = _check(descriptor, descriptor.key_type_info, "key type")
    values = value_check(descriptor)
    if keys is None and values is None:
        return None

    def check(key: Any, value: Any) -> None:
        if keys is not None:
            keys(key)
        if values is not None and value is not None:
            values(value)

    return check


def _check(descriptor: StateDescriptor, declared: Any, role: str) -> Check | None:
    if declared is None or isinstance(declared, PickledBytesTypeInfo):
        return None
    name = descriptor.name
    if not isinstance(declared, TypeInformation):
        raise StateError(
            f"{descriptor.kind} state {name!r}: the {role} must be a TypeInformation "
            f"(Types.LONG(), Types.ROW([...])), got {type(declared).__name__} {declared!r:.200}"
        )

    def refuse(value: Any) -> None:
        problem = declared.check(value)
        if problem is not None:
            raise StateTypeError(
                f"{descriptor.kind} state {name!r} declared {role} {declared!r}, but was given "
                f"{shown_value(value)} ({type(value).__name__}): {problem}"
            )

    # the cheap test inline for basic types (one call per write, not two)
    bounds = declared.int_range() if isinstance(declared, BasicTypeInfo) else None
    if bounds is not None:
        low, high = bounds

        def check_int(value: Any) -> None:
            if not (type(value) is int and low <= value <= high):
                refuse(value)

        return check_int
    if isinstance(declared, BasicTypeInfo):
        exact = declared.exact_types()

        def check_exact(value: Any) -> None:
            if type(value) not in exact:
                refuse(value)

        return check_exact
    fits = surely_fits(declared)

    def check(value: Any) -> None:
        if not fits(value):
            refuse(value)

    return check


def put_all_entries(entries: Mapping[Any, Any] | Iterable[Any], state: str) -> dict[Any, Any]:
    """What ``put_all`` of the map state named ``state`` was given, as a dict: a dict as it
    is; another mapping, or an iterable of ``(key, value)`` pairs (``d.items()``: PyFlink
    2.3's ``put_all`` iterates its argument as pairs, so a ported job may pass them), as a new
    one. Raises :class:`StateTypeError` for anything else (a string is no pair)."""
    if isinstance(entries, dict):
        return entries
    if isinstance(entries, Mapping):
        return dict(entries)
    if isinstance(entries, str | bytes) or not isinstance(entries, Iterable):
        raise StateTypeError(
            f"map state {state!r}: put_all takes a dict or (key, value) pairs, got "
            f"{shown_value(entries)}"
        )
    result: dict[Any, Any] = {}
    for pair in entries:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise StateTypeError(
                f"map state {state!r}: put_all takes a dict or (key, value) pairs, but one of "
                f"the pairs was {shown_value(pair)}"
            )
        result[pair[0]] = pair[1]
    return result
