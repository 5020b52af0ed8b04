"""``Row`` and ``RowKind``, shaped like PyFlink's ``pyflink.common.Row``.

A :class:`Row` is a tuple of field values with optional field names and a :class:`RowKind`
(the change-log flag of Flink's table runtime; ``INSERT`` unless set)::

    Row(1, "a")                 # <Row(1, 'a')>         positional, unnamed
    Row(x=1, name="a")          # Row(x=1, name='a')    named, in the order given (PyFlink 2.x)
    Person = Row("name", "age") # a row "class": calling it makes named rows
    Person("Alice", 11)         # Row(name='Alice', age=11)

Threading: a row is a plain value object. Its values are immutable; ``set_row_kind`` and
``set_field_names`` mutate it and are meant for the thread that built it, before it is emitted.

Equality is positional: ``Row(a=1, b=2) != Row(b=2, a=1)``. The longer story: docs/design.md,
"Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

__all__ = ["Row", "RowKind"]


class RowKind(Enum):
    """The kind of change a row describes in a change log."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        """Flink's short form: ``+I``, ``-U``, ``+U`` or ``-D``."""
        return _SHORT_STRINGS[self]


_SHORT_STRINGS = {
    RowKind.INSERT: "+I",
    RowKind.UPDATE_BEFORE: "-U",
    RowKind.UPDATE_AFTER: "+U",
    RowKind.DELETE: "-D",
}


def _create_row(
    fields: Sequence[str] | None, values: Sequence[Any], row_kind: RowKind | None = None
) -> Row:
    """Build a row from its parts (also the unpickling entry point)."""
    row = Row(*values)
    if fields is not None:
        row.__dict__["_fields"] = list(fields)
    if row_kind is not None and row_kind is not RowKind.INSERT:
        row.__dict__["_row_kind"] = row_kind
    return row


def _row_with_fields(values: Sequence[Any], fields: list[str], row_kind: RowKind) -> Row:
    """Build a named row that shares ``fields`` (no copy): for type-driven conversion, where
    every row of a stream has the same names. ``set_field_names`` replaces, never mutates, it."""
    row = tuple.__new__(Row, values)
    row.__dict__["_fields"] = fields
    if row_kind is not RowKind.INSERT:
        row.__dict__["_row_kind"] = row_kind
    return row


class Row(tuple[Any, ...]):
    """A tuple of field values with optional field names and a :class:`RowKind`.

    ``Row(*values)`` or ``Row(**named_values)`` (names in the order given), not both.
    """

    # Instance values live in the instance ``__dict__`` only when they differ from these
    # defaults, so an unnamed INSERT row costs no more than its tuple.
    _fields: list[str] | None = None
    _row_kind: RowKind = RowKind.INSERT

    def __new__(cls, *args: Any, **kwargs: Any) -> Row:
        if kwargs:
            if args:
                raise ValueError("cannot use both positional and named values to create a Row")
            row = tuple.__new__(cls, kwargs.values())
            row.__dict__["_fields"] = list(kwargs)
            return row
        return tuple.__new__(cls, args)

    # PyFlink API ---------------------------------------------------------------------------
    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The row as ``{name: value}``; ``recursive`` also converts nested rows (in lists and
        dicts too). Raises ``TypeError`` for a row without field names."""
        if self._fields is None:
            raise TypeError(f"cannot convert {self!r} to a dict: it has no field names")
        if not recursive:
            return dict(zip(self._fields, self))
        return {name: _as_plain(value) for name, value in zip(self._fields, self)}

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        if not isinstance(row_kind, RowKind):
            raise TypeError(f"row_kind must be a RowKind, got {row_kind!r}")
        self.__dict__["_row_kind"] = row_kind

    def set_field_names(self, field_names: Sequence[str]) -> None:
        names = list(field_names)
        if len(names) != len(self):
            raise ValueError(
                f"{len(names)} field names {names!r} for a row of {len(self)} values {self!r}"
            )
        self.__dict__["_fields"] = names

    def __call__(self, *args: Any) -> Row:
        """Use a row of names as a row class: ``Row("name", "age")("Alice", 11)``."""
        names = tuple(self)
        if not all(isinstance(name, str) for name in names):
            raise TypeError(f"{self!r} is not a row class: its values are not all field names")
        if len(args) != len(names):
            raise ValueError(
                f"row class with fields {list(names)} expects {len(names)} values, "
                f"got {len(args)}: {args!r}"
            )
        return _create_row(names, args, self._row_kind)

    # field access --------------------------------------------------------------------------
    def _index_of(self, name: str) -> int:
        fields = self._fields
        if fields is not None:
            try:
                return fields.index(name)
            except ValueError:
                pass
        raise KeyError(f"{name!r} is not a field of {self!r}")

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return tuple.__getitem__(self, self._index_of(item))
        return tuple.__getitem__(self, item)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails, i.e. for field names.
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return tuple.__getitem__(self, self._index_of(name))
        except KeyError:
            raise AttributeError(f"{name!r} is not a field of {self!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot set {name!r}: Row fields are read-only; build a new Row")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(f"cannot set {key!r}: Row fields are read-only; build a new Row")

    # value semantics -----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return (
                tuple.__eq__(self, other)
                and self._row_kind is other._row_kind
                and (self._fields is None or other._fields is None or self._fields == other._fields)
            )
        if isinstance(other, tuple):
            return tuple.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        kind = self._row_kind
        return _create_row, (self._fields, tuple(self), None if kind is RowKind.INSERT else kind)

    def __repr__(self) -> str:
        if self._fields is not None:
            values = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
            return f"Row({values})"
        return "<Row({})>".format(", ".join(repr(value) for value in self))


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row) and value._fields is not None:
        return value.as_dict(recursive=True)
    if isinstance(value, list):
        return [_as_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_plain(item) for key, item in value.items()}
    return value
