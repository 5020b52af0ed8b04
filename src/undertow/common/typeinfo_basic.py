"""Type information for single values: the ``TypeInformation`` base and the basic types.

Basic types (``BasicTypeInfo``), the SQL date/time types and ``PICKLED_BYTE_ARRAY``; the
containers are in :mod:`undertow.common.typeinfo_composite`, the ``Types`` factory and PyFlink's
import path in :mod:`undertow.common.typeinfo`. ``STRING``, ``BIG_INT``, ``BIG_DEC``,
``INSTANT``, the ``SQL_*`` types and ``PICKLED_BYTE_ARRAY`` accept ``None``; the numeric types,
``BOOLEAN`` and ``CHAR`` do not. ``FLOAT`` conforms a value to the nearest 32-bit float, as
PyFlink's Java ``float`` delivers it (``110.1`` arrives as ``110.0999984741211``).

Threading: type information objects are immutable value objects, safe to share and pickle.
"""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
import reprlib
import struct
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol, runtime_checkable

from undertow.common.time import Instant
from undertow.core.errors import GraphBuildError

_short_repr = reprlib.Repr()
_short_repr.maxstring = 60
_short_repr.maxother = 60


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {_short_repr.repr(value)}"


@runtime_checkable
class ConformingType(Protocol):
    """A type that converts a value to its own form and says why a value does not fit (every
    :class:`TypeInformation` is one): what ``from_collection`` needs of its ``type_info``."""

    def conform(self, value: Any) -> Any: ...

    def check(self, value: Any) -> str | None: ...


class TypeInformation:
    """The description of a record type. Subclasses are frozen dataclasses.

    ``get_arity()`` is the number of direct fields (1 for anything but rows and tuples) and
    ``get_total_fields()`` the number of leaf fields, as in Flink.
    """

    __slots__ = ()

    @property
    def nullable(self) -> bool:
        """Whether ``None`` is a valid value of this type (at the top level)."""
        return False

    def get_arity(self) -> int:
        return 1

    def get_total_fields(self) -> int:
        return 1

    def needs_conform(self) -> bool:
        """Whether :meth:`conform` may return something other than its argument."""
        return False

    def conform(self, value: Any) -> Any:
        """``value`` as PyFlink would deliver it for this type (see the module docstring).

        Cheap when nothing needs converting: the value itself is returned. Raises
        ``TypeError`` / ``ValueError`` naming the type and value when it cannot be converted.
        """
        return value

    def check(self, value: Any) -> str | None:
        """``None`` if ``value`` fits this type, else a readable description of the problem."""
        return self._check(value, self.nullable)

    def _check(self, value: Any, allow_none: bool) -> str | None:
        if value is None:
            return None if allow_none else f"expected {self!r}, got None"
        return self._check_value(value)

    def _check_value(self, value: Any) -> str | None:
        """The problem with a value that is not ``None``, or ``None``."""
        raise NotImplementedError


# basic types --------------------------------------------------------------------------------


class BasicType(Enum):
    """The basic types; the value is Flink's name for the type (``repr`` of its type info)."""

    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


_INT_BITS = {BasicType.BYTE: 8, BasicType.SHORT: 16, BasicType.INT: 32, BasicType.LONG: 64}
_NULLABLE_BASIC = {BasicType.STRING, BasicType.BIG_INT, BasicType.BIG_DEC, BasicType.INSTANT}
#: Exact Python types every value of which fits the basic type (integral types of fixed width
#: have a range instead, see :meth:`BasicTypeInfo.int_range`).
_EXACT_TYPES = {
    BasicType.STRING: frozenset({str}),
    BasicType.BOOLEAN: frozenset({bool}),
    BasicType.FLOAT: frozenset({float, int, bool}),
    BasicType.DOUBLE: frozenset({float, int, bool}),
    BasicType.BIG_INT: frozenset({int}),
}


def _is_integral(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def to_float32(value: Any) -> float:
    """``value`` rounded to the nearest 32-bit float (Java's ``(float)`` cast: out of range
    becomes an infinity, NaN stays NaN)."""
    try:
        result: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return result


_FLOAT32 = struct.Struct("<f")


@dataclass(frozen=True, repr=False)
class BasicTypeInfo(TypeInformation):
    """A string, number, boolean, char, big integer / decimal or instant."""

    basic_type: BasicType

    @property
    def nullable(self) -> bool:
        return self.basic_type in _NULLABLE_BASIC

    def needs_conform(self) -> bool:
        return self.basic_type is BasicType.FLOAT

    def int_range(self) -> tuple[int, int] | None:
        """The least and greatest value of an integral type of fixed width (``BYTE`` to
        ``LONG``); None for other types."""
        bits = _INT_BITS.get(self.basic_type)
        return None if bits is None else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)

    def exact_types(self) -> frozenset[type]:
        """Exact Python types every value of which fits (``str`` for ``STRING``): the cheap
        ``type(v) in ...`` test of the per-record checks (key and output types), which leave
        other values to :meth:`check`. Empty for the types that have an :meth:`int_range` or
        need more than the type (``CHAR``, decimals, instants)."""
        return _EXACT_TYPES.get(self.basic_type, frozenset())

    def conform(self, value: Any) -> Any:
        """``FLOAT``: the nearest 32-bit float, as PyFlink's Java ``float`` delivers it."""
        if self.basic_type is BasicType.FLOAT and isinstance(value, numbers.Real):
            return to_float32(value)
        return value

    def _check_value(self, value: Any) -> str | None:
        kind = self.basic_type
        bounds = self.int_range()
        if bounds is not None:  # a bool too: PyFlink's integer coders write True as 1
            if not isinstance(value, numbers.Integral):
                return f"expected {self!r}, got {_describe(value)}"
            (low, high), bits = bounds, _INT_BITS[kind]
            if not low <= int(value) <= high:
                return f"expected {self!r} ({bits}-bit, {low}..{high}), got {value!r}"
            return None
        if kind is BasicType.STRING:
            ok = isinstance(value, str)
        elif kind is BasicType.BOOLEAN:
            ok = isinstance(value, bool)
        elif kind in (BasicType.FLOAT, BasicType.DOUBLE):  # a bool too (True as 1.0)
            ok = isinstance(value, numbers.Real)
        elif kind is BasicType.CHAR:
            ok = isinstance(value, str) and len(value) == 1
        elif kind is BasicType.BIG_INT:
            ok = _is_integral(value)
        elif kind is BasicType.BIG_DEC:
            ok = isinstance(value, decimal.Decimal)
        else:  # INSTANT
            ok = isinstance(value, Instant)
        return None if ok else f"expected {self!r}, got {_describe(value)}"

    def __repr__(self) -> str:
        return self.basic_type.value


@dataclass(frozen=True, repr=False)
class _SqlTimeTypeInfo(TypeInformation):
    _python_type: ClassVar[type] = object

    @property
    def nullable(self) -> bool:
        return True

    def _check_value(self, value: Any) -> str | None:
        expected = self._python_type
        # a datetime is also a date, but not a valid SQL_DATE
        if isinstance(value, expected) and not (
            expected is datetime.date and isinstance(value, datetime.datetime)
        ):
            return None
        return f"expected {self!r} ({expected.__module__}.{expected.__name__}), got " + (
            _describe(value)
        )

    def __repr__(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, repr=False)
class DateTypeInfo(_SqlTimeTypeInfo):
    """``Types.SQL_DATE()``: a ``datetime.date`` (not a ``datetime``)."""

    _python_type = datetime.date


@dataclass(frozen=True, repr=False)
class TimeTypeInfo(_SqlTimeTypeInfo):
    """``Types.SQL_TIME()``: a ``datetime.time``."""

    _python_type = datetime.time


@dataclass(frozen=True, repr=False)
class TimestampTypeInfo(_SqlTimeTypeInfo):
    """``Types.SQL_TIMESTAMP()``: a ``datetime.datetime``."""

    _python_type = datetime.datetime


@dataclass(frozen=True, repr=False)
class PickledBytesTypeInfo(TypeInformation):
    """Any picklable Python object (PyFlink's default when no type is given)."""

    @property
    def nullable(self) -> bool:
        return True

    def _check_value(self, value: Any) -> str | None:
        return None

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"


def type_to_check(declared: Any, where: str) -> TypeInformation | None:
    """The type a program declared (``output_type=``, ``key_type=``) when values are to be
    checked against it: None without one or with ``PICKLED_BYTE_ARRAY`` (any value fits); a
    ``GraphBuildError`` naming ``where`` (``"map(): output_type"``) for no type information."""
    if declared is None or isinstance(declared, PickledBytesTypeInfo):
        return None
    if not isinstance(declared, TypeInformation):
        raise GraphBuildError(
            f"{where} must be a TypeInformation (Types.STRING(), Types.ROW([...])), got "
            f"{type(declared).__name__} {declared!r:.200}"
        )
    return declared


# arrays and collections -----------------------------------------------------------------------


#: ``Types.BYTE()``; here because byte arrays (``typeinfo_composite``) compare against it.
_BYTE = BasicTypeInfo(BasicType.BYTE)
