"""Batches of rows of one class, pickled as the class's names once and each row as a tuple.

A ``Row`` pickles through ``__reduce__`` (a Python call per row, its names and a reference to
the row module written for every row): a batch of named rows between workers cost ~1.6 us a
row to pickle and ~1.8 us to unpickle, against ~0.05 and ~0.08 us for plain tuples
(``benchmarks/row_access.py``). :func:`pack_rows` turns a list of rows that all share one
class, are all ``INSERT`` and (unnamed ones) carry no names of their own into a
:class:`RowsOfOneClass`, which pickles as the names and a list of plain tuples and unpickles as
an equal list of rows (:func:`rows_from_tuples`); any other list is returned as it is.

Threading: pure functions of their arguments (the classes' cache is :mod:`.row`'s).
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from undertow.common.row import Row, RowKind, _create_row, row_class

_kind_of = operator.attrgetter("_row_kind")
_fields_of = operator.attrgetter("_fields")


class RowsOfOneClass:
    """A list of rows of one class in the form pickle writes it (see the module docstring)."""

    __slots__ = ("names", "tuples")

    def __init__(self, names: tuple[str, ...] | None, tuples: list[tuple[Any, ...]]) -> None:
        self.names = names
        self.tuples = tuples

    def __reduce__(self) -> tuple[Any, ...]:
        return rows_from_tuples, (self.names, self.tuples)


def rows_from_tuples(names: tuple[str, ...] | None, tuples: list[tuple[Any, ...]]) -> list[Row]:
    """The rows of ``tuples``, named ``names`` (unnamed for ``None``), all ``INSERT``."""
    cls = row_class(names)
    if cls is None:  # past the classes' limit in this process: each row keeps its names
        return [_create_row(names, values) for values in tuples]
    return list(map(functools.partial(tuple.__new__, cls), tuples))


def pack_rows(values: list[Any]) -> Any:
    """``values`` as a :class:`RowsOfOneClass` if it is a list of rows of one class (named
    rows' classes from :func:`~undertow.common.row.row_class`, or unnamed rows without names
    of their own), all ``INSERT``; else ``values`` itself. Cost on rows: a type, a kind (and
    for unnamed rows a names) read per row in C, and a tuple copy of each."""
    if not values or not isinstance(values[0], Row):
        return values
    cls = type(values[0])
    names = None if cls is Row else tuple(cls._fields or ())
    if row_class(names) is not cls:  # a user's subclass of Row, or a row keeping its names
        return values
    n = len(values)
    if list(map(type, values)).count(cls) != n:
        return values
    if list(map(_kind_of, values)).count(RowKind.INSERT) != n:
        return values
    if names is None and list(map(_fields_of, values)).count(None) != n:
        return values
    return RowsOfOneClass(names, list(map(tuple, values)))
