"""Record field access for ``project``, ``sum``/``min``/``max`` and ``min_by``/``max_by``.

Fields are read by position from tuples and lists (position 0 of a scalar is the scalar) and
by name from dicts, ``Row`` s and objects. An aggregation's field is checked against the
stream's declared type when the job is built (:func:`check_declared_field`) and against records
when it runs (:class:`FieldCheck`): a missing one is an error naming the aggregation, the field
and the record's shape. The functions here are pickled with the job graph and run on the task
thread.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, runtime_checkable

from undertow.common.row import Row, _create_row
from undertow.common.typeinfo_basic import BasicTypeInfo, PickledBytesTypeInfo
from undertow.common.typeinfo_composite import RowTypeInfo, TupleTypeInfo
from undertow.core.errors import GraphBuildError, RecordFieldError
from undertow.state.backend import PairAggregation


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


def record_shape(value: Any) -> str:
    """What a record looks like, for errors: its kind and its fields."""
    if isinstance(value, Row):
        names = value._fields
        return f"Row of {len(value)} fields" + (f" {list(names)}" if names else "")
    if isinstance(value, dict):
        return f"dict with keys {list(value)[:20]}"
    if isinstance(value, (tuple, list)):
        kind = type(value).__name__
        return f"{kind} of {len(value)} field{'' if len(value) == 1 else 's'}"
    return f"{type(value).__name__} (no fields: only field 0, the value itself)"


#: What reading a missing field raises: an index or key beyond the record, an attribute the
#: object lacks, or :func:`read_field`'s own error for a scalar.
_MISSING = (LookupError, AttributeError, GraphBuildError)
#: What aggregating two records may raise for a missing field (``b[1]`` of an ``int``: a
#: ``TypeError``); :meth:`FieldCheck.explain` re-raises it as it is if both have the field.
_AGGREGATING = (*_MISSING, TypeError)


@dataclass(frozen=True)
class FieldCheck:
    """Raises :class:`RecordFieldError` for a record without field ``position``, naming
    ``what`` (the aggregation as the program wrote it, ``KeyedStream.sum(5)``), the field and
    the record's shape. Pickled with the job; a call costs one field read."""

    position: int | str
    what: str

    def __call__(self, value: Any) -> None:
        try:
            read_field(value, self.position)
        except _MISSING as err:
            raise self.error(value) from err

    def error(self, value: Any) -> RecordFieldError:
        return RecordFieldError(
            f"{self.what}: no field {self.position!r} in a record of {record_shape(value)}: "
            f"{value!r:.200}"
        )

    def explain(self, records: Iterable[Any], err: BaseException) -> NoReturn:
        """Re-raise ``err`` (raised while aggregating ``records``) as the error of the first
        record without the field, or as it is if every record has it."""
        for value in records:
            self(value)
        raise err


def check_declared_field(type_info: Any, position: int | str, what: str) -> None:
    """Raise :class:`GraphBuildError` if the stream's declared type (a tuple, a row or a basic
    type) has no field ``position``; other types (``None``, pickled, maps) are checked on
    records instead."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return
    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        found = position in names if isinstance(position, str) else 0 <= position < len(names)
        shape = f"rows of {len(names)} fields {names}"
    elif isinstance(type_info, TupleTypeInfo):
        arity = type_info.get_arity()
        found = isinstance(position, int) and 0 <= position < arity
        shape = f"tuples of {arity} fields (by position only)"
    elif isinstance(type_info, BasicTypeInfo):  # not a map's dicts, read by key
        found = position == 0
        shape = f"{type_info} values (no fields: only field 0, the value itself)"
    else:
        return
    if not found:
        raise GraphBuildError(
            f"{what}: the stream's records are {shape}; there is no field {position!r}"
        )


def field_aggregator(
    position: int | str, combine: Callable[[Any, Any], Any], what: str = ""
) -> Callable[[Any, Any], Any]:
    """``sum`` / ``min`` / ``max`` of one field as a reduce function (Flink's semantics: the
    other fields come from the first record of the key); a record without the field raises
    :class:`RecordFieldError` naming ``what`` (default: the field).

    Pairs and scalars take a fast path (this runs once per record); other records (``Row``,
    named tuples, dicts, objects) go through generic field access.
    """
    check = FieldCheck(position, what or f"aggregation of field {position!r}")

    def generic(a: Any, b: Any) -> Any:
        try:
            if type(a) is tuple and type(position) is int:
                p = position
                return (*a[:p], combine(a[p], b[p]), *a[p + 1 :])
            if position == 0 and not isinstance(a, (tuple, list, dict)):
                return combine(a, b)
            old, new = read_field(a, position), read_field(b, position)
        except _AGGREGATING as err:
            check.explain((a, b), err)
        return replace_field(a, position, combine(old, new))

    if position == 1 and combine is operator.add:  # ``sum``: the addition inline, no call

        def sum_second_of_pair(a: Any, b: Any) -> Any:
            if type(a) is tuple and len(a) == 2:
                try:
                    return (a[0], a[1] + b[1])
                except _AGGREGATING as err:
                    check.explain((b,), err)
            return generic(a, b)

        return sum_second_of_pair
    if position == 1:

        def second_of_pair(a: Any, b: Any) -> Any:
            if type(a) is tuple and len(a) == 2:
                try:
                    return (a[0], combine(a[1], b[1]))
                except _AGGREGATING as err:
                    check.explain((b,), err)
            return generic(a, b)

        return second_of_pair
    return generic


def pick_by(
    position: int | str, better: Callable[[Any, Any], bool], what: str = ""
) -> Callable[[Any, Any], Any]:
    """``min_by`` / ``max_by``: the record whose field ``position`` is ``better``; a record
    without the field raises :class:`RecordFieldError` naming ``what``."""
    check = FieldCheck(position, what or f"aggregation by field {position!r}")

    def pick(a: Any, b: Any) -> Any:
        try:
            old, new = read_field(a, position), read_field(b, position)
        except _AGGREGATING as err:
            check.explain((a, b), err)
        return b if better(new, old) else a

    return pick


def built_in_aggregation(
    method: str,
    position: int | str,
    type_info: Any,
    combine: Callable[[Any, Any], Any] | None = None,
    better: Callable[[Any, Any], bool] | None = None,
) -> tuple[Callable[[Any, Any], Any], FieldCheck, PairAggregation | None]:
    """(reduce function, record check, pair form or None) of ``method(position)`` on a stream
    of ``type_info``: sum/min/max of a field (``combine``) or min_by/max_by (``better``). The
    field is checked against the declared type here (:func:`check_declared_field`); the check
    is for the records. Of field 0 or 1 a field aggregation has a pair form (inline folds)."""
    check = FieldCheck(position, f"{method}({position!r})")
    check_declared_field(type_info, position, check.what)
    if combine is None:
        assert better is not None
        return pick_by(position, better, check.what), check, None
    pair = None
    if type(position) is int and position in (0, 1):
        pair = PairAggregation(position, combine)
    return field_aggregator(position, combine, check.what), check, pair
