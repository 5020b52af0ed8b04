"""``DataTypes``: PyFlink's Table API type factory, answering the ``TypeInformation`` that
undertow's formats take (``Types``).

Each factory keeps PyFlink's signature (``nullable``, lengths, precisions) and returns the
type a DataStream record of that SQL type has: ``INT()`` is ``Types.INT()``, ``BIGINT()``
``Types.LONG()``, ``STRING()`` / ``VARCHAR(n)`` / ``CHAR(n)`` ``Types.STRING()``, ``BYTES()``
a byte array, ``DECIMAL(p, s)`` ``Types.BIG_DEC()``, ``DATE()`` / ``TIME()`` /
``TIMESTAMP()`` the SQL date and time types, ``ARRAY`` / ``MAP`` / ``ROW`` the composite types
(``ROW`` of ``FIELD`` s is ``Types.ROW_NAMED``). Nullability, lengths and precisions are not
checked: Python values carry none. Types with no DataStream counterpart here (``INTERVAL``,
``MULTISET``, ``RAW``, ``NULL``) are absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from undertow.common.typeinfo import (
    BasicTypeInfo,
    RowTypeInfo,
    TypeInformation,
    Types,
)

__all__ = ["DataTypeField", "DataTypes"]


class DataTypeField(NamedTuple):
    """A named field of a ``DataTypes.ROW`` (PyFlink's ``RowField``)."""

    name: str
    data_type: TypeInformation
    description: str | None = None


def _checked(what: str, data_type: object) -> TypeInformation:
    if not isinstance(data_type, TypeInformation):
        raise TypeError(f"DataTypes.{what}: expected a data type (DataTypes.*), got {data_type!r}")
    return data_type


class DataTypes:
    """PyFlink's ``DataTypes`` factories (the module docstring lists what each gives)."""

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> TypeInformation:
        return Types.BOOLEAN()

    @staticmethod
    def TINYINT(nullable: bool = True) -> TypeInformation:
        return Types.BYTE()

    @staticmethod
    def SMALLINT(nullable: bool = True) -> TypeInformation:
        return Types.SHORT()

    @staticmethod
    def INT(nullable: bool = True) -> TypeInformation:
        return Types.INT()

    @staticmethod
    def BIGINT(nullable: bool = True) -> TypeInformation:
        return Types.LONG()

    @staticmethod
    def FLOAT(nullable: bool = True) -> TypeInformation:
        return Types.FLOAT()

    @staticmethod
    def DOUBLE(nullable: bool = True) -> TypeInformation:
        return Types.DOUBLE()

    @staticmethod
    def DECIMAL(precision: int = 10, scale: int = 0, nullable: bool = True) -> TypeInformation:
        return Types.BIG_DEC()

    @staticmethod
    def CHAR(length: int = 1, nullable: bool = True) -> TypeInformation:
        return Types.STRING()

    @staticmethod
    def VARCHAR(length: int = 2147483647, nullable: bool = True) -> TypeInformation:
        return Types.STRING()

    @staticmethod
    def STRING(nullable: bool = True) -> TypeInformation:
        return Types.STRING()

    @staticmethod
    def BINARY(length: int = 1, nullable: bool = True) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())

    @staticmethod
    def VARBINARY(length: int = 2147483647, nullable: bool = True) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())

    @staticmethod
    def BYTES(nullable: bool = True) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())

    @staticmethod
    def DATE(nullable: bool = True) -> TypeInformation:
        return Types.SQL_DATE()

    @staticmethod
    def TIME(precision: int = 0, nullable: bool = True) -> TypeInformation:
        return Types.SQL_TIME()

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> TypeInformation:
        return Types.SQL_TIMESTAMP()

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> TypeInformation:
        return Types.INSTANT()

    TIMESTAMP_WITH_LOCAL_TIME_ZONE = TIMESTAMP_LTZ

    @staticmethod
    def ARRAY(element_type: TypeInformation, nullable: bool = True) -> TypeInformation:
        element = _checked("ARRAY", element_type)
        if isinstance(element, BasicTypeInfo):
            return Types.BASIC_ARRAY(element)
        return Types.OBJECT_ARRAY(element)

    @staticmethod
    def MAP(
        key_type: TypeInformation, value_type: TypeInformation, nullable: bool = True
    ) -> TypeInformation:
        return Types.MAP(_checked("MAP", key_type), _checked("MAP", value_type))

    @staticmethod
    def FIELD(
        name: str, data_type: TypeInformation, description: str | None = None
    ) -> DataTypeField:
        if not isinstance(name, str) or not name:
            raise ValueError(f"DataTypes.FIELD: the name must be a non-empty str, got {name!r}")
        return DataTypeField(name, _checked(f"FIELD({name!r})", data_type), description)

    @staticmethod
    def ROW(row_fields: Sequence[DataTypeField] = (), nullable: bool = True) -> RowTypeInfo:
        fields = list(row_fields)
        bad = [f for f in fields if not isinstance(f, DataTypeField)]
        if bad:
            raise TypeError(f"DataTypes.ROW: expected DataTypes.FIELD(...)s, got {bad!r}")
        return Types.ROW_NAMED([f.name for f in fields], [f.data_type for f in fields])
