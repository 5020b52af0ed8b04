"""Record field access for ``project``, ``sum``/``min``/``max`` and ``min_by``/``max_by``.

Fields are read by position from tuples and lists (position 0 of a scalar is the scalar) and
by name from dicts, ``Row`` s and objects; an unreadable field is a ``GraphBuildError`` naming
the record. The functions here are pickled with the job graph and run on the task thread.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from undertow.common.row import Row, _create_row
from undertow.core.errors import GraphBuildError


class Projection:
    """The record's fields at ``indexes``, as a tuple (``DataStream.project``)."""

    def __init__(self, indexes: tuple[int, ...]) -> None:
        self.indexes = indexes

    def __call__(self, value: Any) -> tuple[Any, ...]:
        return tuple(value[i] for i in self.indexes)


@runtime_checkable
class NamedTupleLike(Protocol):
    """A ``collections.namedtuple`` or ``typing.NamedTuple`` class: ``_make`` rebuilds one from
    its items without calling its constructor (which a subclass may have redefined)."""

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> Any: ...

    def _asdict(self) -> dict[str, Any]: ...


@runtime_checkable
class HasAsDict(Protocol):
    """An object that lists its fields by name (``as_dict()``) and is built from them as
    keyword arguments."""

    def as_dict(self) -> dict[str, Any]: ...


@functools.cache
def _maker(cls: type[object]) -> Callable[[Iterable[Any]], Any] | None:
    """How to rebuild a record of ``cls`` from its items: a named tuple's ``_make``, else None.
    Decided once per class: a runtime Protocol check costs microseconds, this runs per record."""
    return cls._make if issubclass(cls, tuple) and issubclass(cls, NamedTupleLike) else None


_LISTS_ITS_FIELDS: dict[type, bool] = {}


def _lists_its_fields(cls: type) -> bool:
    """Whether records of ``cls`` have ``as_dict()`` (a :class:`HasAsDict`); decided once per
    class (a dict, not ``functools.cache``: mypy takes a class for unhashable)."""
    known = _LISTS_ITS_FIELDS.get(cls)
    if known is None:
        known = _LISTS_ITS_FIELDS[cls] = issubclass(cls, HasAsDict)
    return known


def read_field(value: Any, position: int | str) -> Any:
    if isinstance(position, str):
        return value[position] if isinstance(value, dict) else getattr(value, position)
    if isinstance(value, (tuple, list)):
        return value[position]
    if position == 0:
        return value
    raise GraphBuildError(f"cannot read field {position} of record {value!r}")


def replace_field(value: Any, position: int | str, new: Any) -> Any:
    if isinstance(value, Row):
        # Same names, same order, same kind: only the one value changes.
        index = position if isinstance(position, int) else value._index_of(position)
        items = list(value)
        items[index] = new
        return _create_row(value._fields, items, value.get_row_kind())
    if isinstance(value, (tuple, list)) and not isinstance(position, str):
        items = list(value)
        items[position] = new
        make = _maker(type(value))
        if make is not None:
            return make(items)
        if type(value) is tuple or type(value) is list:
            return type(value)(items)
        return type(value)(*items)
    if isinstance(value, dict):
        return {**value, position: new}
    if isinstance(position, str):
        values = dict(value.as_dict()) if _lists_its_fields(type(value)) else {}
        values[position] = new
        return type(value)(**values)
    return new


def field_aggregator(
    position: int | str, combine: Callable[[Any, Any], Any]
) -> Callable[[Any, Any], Any]:
    """``sum`` / ``min`` / ``max`` of one field as a reduce function (Flink's semantics: the
    other fields come from the first record of the key).

    Pairs and scalars take a fast path (this runs once per record); other records (``Row``,
    named tuples, dicts, objects) go through generic field access.
    """

    def generic(a: Any, b: Any) -> Any:
        if type(a) is tuple and type(position) is int:
            p = position
            return (*a[:p], combine(a[p], b[p]), *a[p + 1 :])
        if position == 0 and not isinstance(a, (tuple, list, dict)):
            return combine(a, b)
        return replace_field(a, position, combine(read_field(a, position), read_field(b, position)))

    if position == 1 and combine is operator.add:  # ``sum``: the addition inline, no call

        def sum_second_of_pair(a: Any, b: Any) -> Any:
            if type(a) is tuple and len(a) == 2:
                return (a[0], a[1] + b[1])
            return generic(a, b)

        return sum_second_of_pair
    if position == 1:

        def second_of_pair(a: Any, b: Any) -> Any:
            if type(a) is tuple and len(a) == 2:
                return (a[0], combine(a[1], b[1]))
            return generic(a, b)

        return second_of_pair
    return generic


def pick_by(position: int | str, better: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def pick(a: Any, b: Any) -> Any:
        return b if better(read_field(b, position), read_field(a, position)) else a

    return pick
