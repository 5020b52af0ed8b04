"""Type information for containers: arrays, lists, maps, rows and tuples.

Every field of a row may be ``None`` (Flink's row serializer keeps a null mask); tuple fields
and primitive-array elements follow their type; basic/object-array elements and map values
may be ``None``; a row, tuple, array, list or map itself may not. ``conform`` builds the value
PyFlink would hand the next function (a ``Row`` from a tuple, list, dict, row or a plain object's
attributes, ...).

Threading: type information objects are immutable value objects, safe to share and pickle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from undertow.common.row import Row, RowKind, _row_with_fields
from undertow.common.typeinfo_basic import (
    _BYTE,
    BasicType,
    BasicTypeInfo,
    TypeInformation,
    _describe,
    _short_repr,
)


def _check_sequence(
    owner: TypeInformation, value: Any, element: TypeInformation, allow_none: bool
) -> str | None:
    if not isinstance(value, (list, tuple)):
        return f"expected {owner!r} (a list), got {_describe(value)}"
    for index, item in enumerate(value):
        problem = element._check(item, allow_none)
        if problem is not None:
            return f"element {index}: {problem}"
    return None


def _conform_sequence(value: Any, element: TypeInformation) -> Any:
    if not element.needs_conform():
        return value
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list, got {_describe(value)}")
    return [element.conform(item) for item in value]


_PRIMITIVE_ELEMENTS = (
    BasicType.BOOLEAN,
    BasicType.BYTE,
    BasicType.SHORT,
    BasicType.INT,
    BasicType.LONG,
    BasicType.FLOAT,
    BasicType.DOUBLE,
    BasicType.CHAR,
)


def _require_element(kind: str, element: Any, allowed: Sequence[BasicType]) -> None:
    if not (isinstance(element, BasicTypeInfo) and element.basic_type in allowed):
        names = ", ".join(f"Types.{t.name}()" for t in allowed)
        raise TypeError(f"invalid element type {element!r} for {kind}: use one of {names}")


@dataclass(frozen=True, repr=False)
class PrimitiveArrayTypeInfo(TypeInformation):
    """An array of a primitive type (``PRIMITIVE_ARRAY(Types.BYTE())`` is ``bytes``)."""

    element_type: TypeInformation

    def __post_init__(self) -> None:
        _require_element("a primitive array", self.element_type, _PRIMITIVE_ELEMENTS)

    def _check_value(self, value: Any) -> str | None:
        if self.element_type == _BYTE and isinstance(value, (bytes, bytearray)):
            return None
        return _check_sequence(self, value, self.element_type, allow_none=False)

    def __repr__(self) -> str:
        return f"PrimitiveArrayTypeInfo<{self.element_type!r}>"


@dataclass(frozen=True, repr=False)
class BasicArrayTypeInfo(TypeInformation):
    """An array of a basic type whose elements may be ``None``."""

    element_type: TypeInformation

    def __post_init__(self) -> None:
        _require_element(
            "a basic array", self.element_type, (*_PRIMITIVE_ELEMENTS, BasicType.STRING)
        )

    def _check_value(self, value: Any) -> str | None:
        return _check_sequence(self, value, self.element_type, allow_none=True)

    def __repr__(self) -> str:
        return f"BasicArrayTypeInfo<{self.element_type!r}>"


def _require_type(what: str, value: Any) -> None:
    if not isinstance(value, TypeInformation):
        raise TypeError(f"{what} must be a TypeInformation (from Types), got {_describe(value)}")


@dataclass(frozen=True, repr=False)
class _ElementsTypeInfo(TypeInformation):
    """A sequence whose elements follow ``element_type``; a subclass says whether an element
    may be ``None`` (:meth:`_none_allowed`)."""

    element_type: TypeInformation

    def __post_init__(self) -> None:
        _require_type("element_type", self.element_type)

    def _none_allowed(self) -> bool:
        raise NotImplementedError

    def needs_conform(self) -> bool:
        return self.element_type.needs_conform()

    def conform(self, value: Any) -> Any:
        return _conform_sequence(value, self.element_type)

    def _check_value(self, value: Any) -> str | None:
        return _check_sequence(self, value, self.element_type, self._none_allowed())

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.element_type!r}>"


@dataclass(frozen=True, repr=False)
class ObjectArrayTypeInfo(_ElementsTypeInfo):
    """An array of any type whose elements may be ``None``."""

    def _none_allowed(self) -> bool:
        return True


@dataclass(frozen=True, repr=False)
class ListTypeInfo(_ElementsTypeInfo):
    """A list; elements follow ``element_type`` (including its nullability)."""

    def _none_allowed(self) -> bool:
        return self.element_type.nullable


@dataclass(frozen=True, repr=False)
class MapTypeInfo(TypeInformation):
    """A dict; keys follow ``key_type``, values follow ``value_type`` and may be ``None``."""

    key_type: TypeInformation
    value_type: TypeInformation

    def __post_init__(self) -> None:
        _require_type("key_type", self.key_type)
        _require_type("value_type", self.value_type)

    def needs_conform(self) -> bool:
        return self.key_type.needs_conform() or self.value_type.needs_conform()

    def conform(self, value: Any) -> Any:
        if not self.needs_conform():
            return value
        if not isinstance(value, dict):
            raise TypeError(f"expected {self!r} (a dict), got {_describe(value)}")
        key_type, value_type = self.key_type, self.value_type
        return {key_type.conform(k): value_type.conform(v) for k, v in value.items()}

    def _check_value(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"expected {self!r} (a dict), got {_describe(value)}"
        for key, item in value.items():
            problem = self.key_type._check(key, self.key_type.nullable)
            if problem is not None:
                return f"key {_short_repr.repr(key)}: {problem}"
            problem = self.value_type._check(item, True)
            if problem is not None:
                return f"value of key {_short_repr.repr(key)}: {problem}"
        return None

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self.key_type!r}, {self.value_type!r}>"


# composite types ------------------------------------------------------------------------------


def _as_type_tuple(what: str, types: Sequence[TypeInformation]) -> tuple[TypeInformation, ...]:
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence):
        raise TypeError(f"{what} must be a list of TypeInformation, got {_describe(types)}")
    for index, item in enumerate(types):
        _require_type(f"{what}[{index}]", item)
    return tuple(types)


@dataclass(frozen=True, repr=False)
class RowTypeInfo(TypeInformation):
    """A :class:`Row` of typed fields. Without names the fields are ``f0``, ``f1``, ... (Flink's
    default), so ``Types.ROW([a, b]) == Types.ROW_NAMED(["f0", "f1"], [a, b])``."""

    field_types: tuple[TypeInformation, ...]
    field_names: tuple[str, ...] | None = None
    _names: list[str] = field(init=False, repr=False, compare=False, hash=False)
    _convert: tuple[bool, ...] = field(init=False, repr=False, compare=False, hash=False)
    _any_convert: bool = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        types = _as_type_tuple("field_types", self.field_types)
        if self.field_names is None:
            names = tuple(f"f{i}" for i in range(len(types)))
        else:
            if isinstance(self.field_names, str) or not isinstance(self.field_names, Sequence):
                raise TypeError(f"field_names must be a list of str, got {self.field_names!r}")
            names = tuple(self.field_names)
            bad = [name for name in names if not isinstance(name, str) or not name]
            if bad:
                raise TypeError(f"field names must be non-empty strings, got {bad!r}")
            if len(names) != len(types):
                raise ValueError(
                    f"{len(names)} field names {list(names)} for {len(types)} field types"
                )
            duplicates = sorted({name for name in names if names.count(name) > 1})
            if duplicates:
                raise ValueError(f"duplicate field names {duplicates} in {list(names)}")
        object.__setattr__(self, "field_types", types)
        object.__setattr__(self, "field_names", names)
        object.__setattr__(self, "_names", list(names))
        object.__setattr__(self, "_convert", tuple(t.needs_conform() for t in types))
        object.__setattr__(self, "_any_convert", any(self._convert))

    # PyFlink API
    def get_field_names(self) -> list[str]:
        return list(self._names)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def get_field_index(self, field_name: str) -> int:
        """The index of ``field_name``, or -1."""
        try:
            return self._names.index(field_name)
        except ValueError:
            return -1

    def get_arity(self) -> int:
        return len(self.field_types)

    def get_total_fields(self) -> int:
        return sum(t.get_total_fields() for t in self.field_types)

    def needs_conform(self) -> bool:
        return True

    def conform(self, value: Any) -> Any:
        names = self._names
        kind = RowKind.INSERT
        if isinstance(value, Row):
            kind = value.get_row_kind()
            fields = value._fields
            if fields == names and not self._any_convert:
                return value
            values: Sequence[Any] = value
            if fields is not None and fields != names and sorted(fields) == sorted(names):
                values = [value[name] for name in names]  # PyFlink's get_fields_by_names
        elif isinstance(value, (tuple, list)):
            values = value
        elif isinstance(value, dict):
            values = [value.get(name) for name in names]
        else:
            # A plain object (a class of the user's): its attributes by field name, a missing
            # one as null, as PyFlink reads ``obj.__dict__``; vars() refuses what has none.
            try:
                attributes = vars(value)
            except TypeError:
                raise TypeError(f"cannot make a row of {self!r} from {_describe(value)}") from None
            values = [attributes.get(name) for name in names]
        if len(values) != len(names):
            raise ValueError(
                f"{self!r} has {len(names)} fields, got {len(values)} values: {_describe(value)}"
            )
        if self._any_convert:
            values = [
                t.conform(v) if c and v is not None else v
                for t, v, c in zip(self.field_types, values, self._convert)
            ]
        return _row_with_fields(values, names, kind)

    def _check_value(self, value: Any) -> str | None:
        if isinstance(value, dict):
            values: Sequence[Any] = [value.get(name) for name in self._names]
        elif isinstance(value, (tuple, list)):
            values = value
        else:
            return f"expected {self!r}, got {_describe(value)}"
        if len(values) != len(self._names):
            return (
                f"expected {self!r} with {len(self._names)} fields, "
                f"got {len(values)} values: {_describe(value)}"
            )
        for index, (name, field_type, item) in enumerate(
            zip(self._names, self.field_types, values)
        ):
            problem = field_type._check(item, True)
            if problem is not None:
                return f"field {name!r} (index {index}): {problem}"
        return None

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}: {t!r}" for n, t in zip(self._names, self.field_types))
        return f"RowTypeInfo({fields})"


@dataclass(frozen=True, repr=False)
class TupleTypeInfo(TypeInformation):
    """A tuple of typed fields (fields follow their type's nullability)."""

    field_types: tuple[TypeInformation, ...]
    _convert: tuple[bool, ...] = field(init=False, repr=False, compare=False, hash=False)
    _any_convert: bool = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        types = _as_type_tuple("field_types", self.field_types)
        object.__setattr__(self, "field_types", types)
        object.__setattr__(self, "_convert", tuple(t.needs_conform() for t in types))
        object.__setattr__(self, "_any_convert", any(self._convert))

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def get_arity(self) -> int:
        return len(self.field_types)

    def get_total_fields(self) -> int:
        return sum(t.get_total_fields() for t in self.field_types)

    def needs_conform(self) -> bool:
        return True

    def conform(self, value: Any) -> Any:
        if type(value) is tuple and not self._any_convert:
            if len(value) != len(self.field_types):
                raise ValueError(self._arity_problem(value))
            return value
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"cannot make a tuple of {self!r} from {_describe(value)}")
        if len(value) != len(self.field_types):
            raise ValueError(self._arity_problem(value))
        if not self._any_convert:
            return tuple(value)
        return tuple(
            t.conform(v) if c and v is not None else v
            for t, v, c in zip(self.field_types, value, self._convert)
        )

    def _arity_problem(self, value: Any) -> str:
        return (
            f"expected {self!r} with {len(self.field_types)} fields, "
            f"got {len(value)} values: {_describe(value)}"
        )

    def _check_value(self, value: Any) -> str | None:
        if not isinstance(value, (tuple, list)):
            return f"expected {self!r}, got {_describe(value)}"
        if len(value) != len(self.field_types):
            return self._arity_problem(value)
        for index, (field_type, item) in enumerate(zip(self.field_types, value)):
            problem = field_type._check(item, field_type.nullable)
            if problem is not None:
                return f"field {index}: {problem}"
        return None

    def __repr__(self) -> str:
        return "TupleTypeInfo({})".format(", ".join(repr(t) for t in self.field_types))


# Types ---------------------------------------------------------------------------------------
