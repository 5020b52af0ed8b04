"""``Row`` and ``RowKind``, shaped like PyFlink's ``pyflink.common.Row``.

A :class:`Row` is a tuple of field values with optional field names and a :class:`RowKind`
(``INSERT`` unless set): ``Row(1, "a")``, ``Row(x=1, name="a")`` (names in the order given, as
PyFlink 2.x), ``Person = Row("name", "age"); Person("Alice", 11)`` (a row "class").

Named rows are instances of one subclass of ``Row`` per tuple of names, made on first use and
shared (at most :data:`NAMED_CLASS_LIMIT`; past it a row keeps its names itself), whose names
are properties reading the field in C, as a namedtuple's (``row.user`` took a failed lookup and
``__getattr__``, 25-40x slower). Equality is positional: ``Row(a=1, b=2) != Row(b=2, a=1)``.

Threading: a row is a plain value object; ``set_row_kind`` and ``set_field_names`` mutate it
and are meant for the thread that built it, before it is emitted. The classes' cache is shared
by all threads (one class per names wins). More: docs/design.md, "Module notes".
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

try:  # CPython: namedtuple's field descriptor, reading the item in C (not through __getitem__)
    from _collections import _tuplegetter
except ImportError:  # another Python: the same read, through a function  # pragma: no cover

    def _tuplegetter(index: int, doc: str | None) -> Any:
        return property(lambda row: tuple.__getitem__(row, index), doc=doc)


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

    def __str__(self) -> str:
        # PyFlink prints a kind as its short form: print(row.get_row_kind()) shows ``-U``.
        return _SHORT_STRINGS[self]


_SHORT_STRINGS = {
    RowKind.INSERT: "+I",
    RowKind.UPDATE_BEFORE: "-U",
    RowKind.UPDATE_AFTER: "+U",
    RowKind.DELETE: "-D",
}


#: The tuple's own item read and constructor (globals: no attribute lookup per row).
_tuple_item = tuple.__getitem__
_tuple_new = tuple.__new__

#: Most classes of named rows made (one per distinct tuple of names): a stream whose rows name
#: their fields from data (JSON keys) must not grow them without end.
NAMED_CLASS_LIMIT = 4096
_named_classes: dict[tuple[str, ...], type[Row]] = {}


def _named(values: Any, names: Sequence[Any]) -> Row:
    """A row of ``values`` named ``names``: an instance of the names' class, or (names not all
    strings, or the classes at their limit) a plain ``Row`` holding a copy of the names."""
    key = tuple(names)
    cls = row_class(key)
    if cls is not None:
        return tuple.__new__(cls, values)
    row = tuple.__new__(Row, values)
    row.__dict__["_fields"] = list(key)
    return row


def row_class(names: tuple[str, ...] | None) -> type[Row] | None:
    """The class of rows named ``names`` (``Row`` itself for ``None``: unnamed rows), made on
    first use; ``None`` for names not all strings, or past :data:`NAMED_CLASS_LIMIT` (a row
    named so keeps its names itself, see :func:`_named`)."""
    if names is None:
        return Row
    return _named_classes.get(names) or _named_class(names)


def _named_class(names: tuple[Any, ...]) -> type[Row] | None:
    """The class of rows named ``names``, made now; ``None`` if it cannot or may not be."""
    if len(_named_classes) >= NAMED_CLASS_LIMIT or not all(type(n) is str for n in names):
        return None
    namespace: dict[str, Any] = {
        "__slots__": (),
        "__module__": __name__,
        "__qualname__": "Row",
        "__doc__": Row.__doc__,
        "_fields": list(names),
    }
    for i, name in enumerate(names):
        # A name also a method or attribute of PyFlink's Row stays that (``row["as_dict"]``
        # reads the field), as do private names and a repeated name's later fields.
        plain = name.isidentifier() and not name.startswith("_")
        if plain and name not in namespace and name not in _ROW_ATTRIBUTES:
            namespace[name] = _tuplegetter(i, f"field {i} of the row, {name!r}")
    cls = type("Row", (Row,), namespace)
    return _named_classes.setdefault(names, cls)  # one class per names across threads


def _create_row(
    fields: Sequence[str] | None, values: Sequence[Any], row_kind: RowKind | None = None
) -> Row:
    """Build a row from its parts (also the unpickling entry point)."""
    row = tuple.__new__(Row, values) if fields is None else _named(values, fields)
    if row_kind is not None and row_kind is not RowKind.INSERT:
        row.__dict__["_row_kind"] = row_kind
    return row


def _row_with_fields(values: Sequence[Any], fields: list[str], row_kind: RowKind) -> Row:
    """Build a named row: for type-driven conversion, where every row of a stream has the
    same names (they are its class's)."""
    row = _named(values, fields)
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
            named = _named_classes.get(tuple(kwargs))
            if named is not None:
                return _tuple_new(named, kwargs.values())
            return _named(kwargs.values(), tuple(kwargs))
        if cls is not Row and len(args) != len(cls._fields or args):  # a named row's class
            raise ValueError(f"{cls._fields} are {len(cls._fields or ())} fields: got {args!r}")
        return _tuple_new(cls, args)

    # PyFlink API ---------------------------------------------------------------------------
    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The row as ``{name: value}``; ``recursive`` also converts nested rows (in lists and
        dicts too). Raises ``TypeError`` for a row without field names."""
        if self._fields is None:
            raise TypeError(f"cannot convert {self!r} to a dict: it has no field names")
        if not recursive:
            return dict(zip(self._fields, self))
        return {name: _as_plain(value) for name, value in zip(self._fields, self)}

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """``Row(*args, **kwargs)`` of kind ``row_kind``: ``Row.of_kind(RowKind.DELETE, 1)``."""
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

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
        cls = row_class(tuple(names))
        if cls is None:
            self.__dict__["_fields"] = names
        else:
            self.__dict__.pop("_fields", None)
            object.__setattr__(self, "__class__", cls)  # Row's own __setattr__ refuses

    def __call__(self, *args: Any) -> Row:
        """Use a row of names as a row class: ``Row("name", "age")("Alice", 11)``."""
        names = tuple(self)
        cls = _named_classes.get(names)  # only names that are all strings have a class
        if cls is None and not all(isinstance(name, str) for name in names):
            raise TypeError(f"{self!r} is not a row class: its values are not all field names")
        if len(args) != len(names):
            raise ValueError(
                f"row class with fields {list(names)} expects {len(names)} values, "
                f"got {len(args)}: {args!r}"
            )
        row = _tuple_new(cls, args) if cls is not None else _named(args, names)
        if self._row_kind is not RowKind.INSERT:
            row.__dict__["_row_kind"] = self._row_kind
        return row

    def get_fields_by_names(self, names: Sequence[str]) -> list[Any]:
        """The values of the fields ``names``, in that order (all values for a row without
        names). Raises ``KeyError`` naming the names the row does not have."""
        fields = self._fields
        if fields is None or list(names) == fields:
            return list(self)
        missing = [name for name in names if name not in fields]
        if missing:
            raise KeyError(f"{missing} are not fields of {self!r} (fields: {fields})")
        return [_tuple_item(self, fields.index(name)) for name in names]

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
        # two parameters exactly: CPython then inlines the call of a row[...] (no C frame)
        if item.__class__ is int:
            return _tuple_item(self, item)
        if isinstance(item, str):
            return _tuple_item(self, self._index_of(item))
        if isinstance(item, slice):  # PyFlink's row[1:] is a list of the values
            return list(_tuple_item(self, item))
        return _tuple_item(self, item)

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

    def __contains__(self, item: object) -> bool:
        """PyFlink's ``in``: a named row holds its field names (``"user" in row``), a row
        without names its values."""
        fields = self._fields
        return tuple.__contains__(self, item) if fields is None else item in fields

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


class _FieldOrTupleMethod:
    """``count`` and ``index`` of a row: its field of that name if it has one, else the
    tuple's method. PyFlink's ``Row`` is no tuple, so ``Row(word="to", count=2).count`` is 2
    there (a named row's class reads such a field directly; this serves rows that keep their
    names themselves)."""

    __slots__ = ("method", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.method = getattr(tuple, name)

    def __get__(self, row: Row | None, owner: type | None = None) -> Any:
        if row is None:
            return self.method
        fields = row._fields
        if fields is not None and self.name in fields:
            return _tuple_item(row, fields.index(self.name))
        return self.method.__get__(row, owner)


#: What a tuple has and PyFlink's Row has not: field names win over these.
_TUPLE_METHODS = ("count", "index")
for _name in _TUPLE_METHODS:
    # set after the class: in its body mypy would hold the descriptor against tuple's method
    setattr(Row, _name, _FieldOrTupleMethod(_name))

#: Names a named row's class does not make properties of: what PyFlink's ``Row`` has too.
_ROW_ATTRIBUTES = frozenset(dir(Row)) - frozenset(_TUPLE_METHODS)


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row) and value._fields is not None:
        return value.as_dict(recursive=True)
    if isinstance(value, list):
        return [_as_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_plain(item) for key, item in value.items()}
    return value
