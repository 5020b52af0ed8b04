"""Type information: ``Types`` and ``TypeInformation``, shaped like ``pyflink.common.typeinfo``.

PyFlink programs import every type from this one module, so it re-exports the basic types
(:mod:`undertow.common.typeinfo_basic`) and the containers
(:mod:`undertow.common.typeinfo_composite`) and holds the ``Types`` factory, whose results are
shared singletons for the basic types. Nullability follows PyFlink's documentation: the two
modules say which types accept ``None``.

Threading: type information objects are immutable value objects, safe to share and pickle.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from undertow.common.typeinfo_basic import (
    _BYTE,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    PickledBytesTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TypeInformation,
)
from undertow.common.typeinfo_composite import (
    BasicArrayTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
)

__all__ = [
    "BasicArrayTypeInfo",
    "BasicType",
    "BasicTypeInfo",
    "DateTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
]


_STRING = BasicTypeInfo(BasicType.STRING)
_BOOLEAN = BasicTypeInfo(BasicType.BOOLEAN)
_SHORT = BasicTypeInfo(BasicType.SHORT)
_INT = BasicTypeInfo(BasicType.INT)
_LONG = BasicTypeInfo(BasicType.LONG)
_FLOAT = BasicTypeInfo(BasicType.FLOAT)
_DOUBLE = BasicTypeInfo(BasicType.DOUBLE)
_CHAR = BasicTypeInfo(BasicType.CHAR)
_BIG_INT = BasicTypeInfo(BasicType.BIG_INT)
_BIG_DEC = BasicTypeInfo(BasicType.BIG_DEC)
_INSTANT = BasicTypeInfo(BasicType.INSTANT)
_SQL_DATE = DateTypeInfo()
_SQL_TIME = TimeTypeInfo()
_SQL_TIMESTAMP = TimestampTypeInfo()
_PICKLED = PickledBytesTypeInfo()


class Types:
    """The type information of the common types (PyFlink's ``Types``; call, don't reference:
    ``Types.INT()``)."""

    @staticmethod
    def STRING() -> BasicTypeInfo:
        """A ``str``; supports ``None``."""
        return _STRING

    @staticmethod
    def BYTE() -> BasicTypeInfo:
        """An ``int`` in -128..127."""
        return _BYTE

    @staticmethod
    def BOOLEAN() -> BasicTypeInfo:
        return _BOOLEAN

    @staticmethod
    def SHORT() -> BasicTypeInfo:
        """An ``int`` in 16 bits."""
        return _SHORT

    @staticmethod
    def INT() -> BasicTypeInfo:
        """An ``int`` in 32 bits."""
        return _INT

    @staticmethod
    def LONG() -> BasicTypeInfo:
        """An ``int`` in 64 bits."""
        return _LONG

    @staticmethod
    def FLOAT() -> BasicTypeInfo:
        return _FLOAT

    @staticmethod
    def DOUBLE() -> BasicTypeInfo:
        return _DOUBLE

    @staticmethod
    def CHAR() -> BasicTypeInfo:
        """A ``str`` of length 1."""
        return _CHAR

    @staticmethod
    def BIG_INT() -> BasicTypeInfo:
        """An ``int`` of any size; supports ``None``."""
        return _BIG_INT

    @staticmethod
    def BIG_DEC() -> BasicTypeInfo:
        """A ``decimal.Decimal``; supports ``None``."""
        return _BIG_DEC

    @staticmethod
    def INSTANT() -> BasicTypeInfo:
        """An :class:`~undertow.common.time.Instant`; supports ``None``."""
        return _INSTANT

    @staticmethod
    def SQL_DATE() -> DateTypeInfo:
        return _SQL_DATE

    @staticmethod
    def SQL_TIME() -> TimeTypeInfo:
        return _SQL_TIME

    @staticmethod
    def SQL_TIMESTAMP() -> TimestampTypeInfo:
        return _SQL_TIMESTAMP

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> PickledBytesTypeInfo:
        """Any picklable object."""
        return _PICKLED

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> RowTypeInfo:
        """A :class:`Row` with fields of the given types, named ``f0``, ``f1``, ..."""
        return RowTypeInfo(tuple(field_types))

    @staticmethod
    def ROW_NAMED(
        field_names: Sequence[str], field_types: Sequence[TypeInformation]
    ) -> RowTypeInfo:
        """A :class:`Row` with the given field names and types."""
        return RowTypeInfo(tuple(field_types), tuple(field_names))

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TupleTypeInfo:
        return TupleTypeInfo(tuple(field_types))

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> PrimitiveArrayTypeInfo:
        """An array of ``BOOLEAN``/``BYTE``/``SHORT``/``INT``/``LONG``/``FLOAT``/``DOUBLE``/
        ``CHAR``; ``PRIMITIVE_ARRAY(Types.BYTE())`` also accepts ``bytes``."""
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> BasicArrayTypeInfo:
        """An array of a primitive type or ``STRING`` whose elements may be ``None``."""
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> ObjectArrayTypeInfo:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> ListTypeInfo:
        return ListTypeInfo(element_type_info)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> MapTypeInfo:
        return MapTypeInfo(key_type_info, value_type_info)
