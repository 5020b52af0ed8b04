"""Batches of rows of one class, pickled as the class's names once and each row as a tuple.

A ``Row`` pickles through ``__reduce__`` (a Python call per row, its names and a reference to
the row module written for every row): a batch of named rows between workers cost ~1.6 us a
row to pickle and ~1.8 us to unpickle, against ~0.05 and ~0.08 us for plain tuples
(``benchmarks/row_access.py``). :func:`pack_rows` turns a list of rows that all share one
class, are all ``INSERT`` and (unnamed ones) carry no names of their own into a
:class:`RowsOfOneClass`, which pickles as the names and a list of plain tuples and unpickles as
an equal list of rows (:func:`rows_from_tuples`); any other list is returned as it is.

Keyed state holds rows too (a window's buffered elements, a process function's value):
:func:`pack_values` does the same for one key group's entries of a state, whose values are rows
of one class (a :class:`RowMapping`) or lists of rows (each list packed).

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


class RowMapping:
    """A dict whose values are rows of one class, in the form pickle writes it: its keys and
    a :class:`RowsOfOneClass`; unpickles as an equal dict."""

    __slots__ = ("keys", "rows")

    def __init__(self, keys: list[Any], rows: RowsOfOneClass) -> None:
        self.keys = keys
        self.rows = rows

    def __reduce__(self) -> tuple[Any, ...]:
        return dict_from_rows, (self.keys, self.rows)


def dict_from_rows(keys: list[Any], rows: list[Row]) -> dict[Any, Row]:
    """The dict of :class:`RowMapping` (``rows`` unpickled from its packed form)."""
    return dict(zip(keys, rows, strict=True))


def pack_values(entries: dict[Any, Any]) -> Any:
    """``entries`` (a state's entries in one key group) in the form that pickles rows as
    :func:`pack_rows` does: a :class:`RowMapping` if every value is a row of one class, a new
    dict of the lists packed if the values are lists of rows, else ``entries`` itself (never
    changed). Cost: a look at the first value; then a pass over the values if it is a row or
    a list of rows."""
    if not entries:
        return entries
    first = next(iter(entries.values()))
    if isinstance(first, Row):
        rows = pack_rows(list(entries.values()))
        return RowMapping(list(entries), rows) if isinstance(rows, RowsOfOneClass) else entries
    if type(first) is list and first and isinstance(first[0], Row):
        return {k: pack_rows(v) if type(v) is list else v for k, v in entries.items()}
    return entries
