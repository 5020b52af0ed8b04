"""How ``print()`` renders a record: exactly as PyFlink 2.3 prints it, which depends on the
stream's declared type.

PyFlink turns Python objects into text in Python before its Java print sink sees them: a stream
without a type (pickled objects) prints ``str(value)``; a ``Types.ROW``/``ROW_NAMED`` stream
prints ``+I[f0,f1]`` (row kind, then ``str`` of each field joined by ``,`` without spaces). Every
other declared type is printed by Java's ``toString``: ``true``/``false``, ``null``, doubles as
``1.0E20``, tuples as ``(1,a)``, lists as ``[1, 2]``, maps as ``{k=1, j=2}``, nested rows as
``+I[1, a]``, instants as ``2024-03-01T12:30:05.123Z``. Two differences remain, both where
Java's output is not reproducible: arrays (Java prints an identity hash such as
``[I@2d80a877``; we print ``[1, 2]``) and maps (Java's ``HashMap`` order; we keep the dict's
order).

Pure functions, no state; :func:`formatter` is called once per sink, its result per record.
"""

from __future__ import annotations

import datetime
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from undertow.common.row import Row
from undertow.common.time import Instant
from undertow.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
)

_INTEGRAL = {BasicType.BYTE, BasicType.SHORT, BasicType.INT, BasicType.LONG, BasicType.BIG_INT}


def formatter(type_info: Any) -> Callable[[Any], str]:
    """The function that renders one record of a stream declared with ``type_info``."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return _python_str
    if isinstance(type_info, RowTypeInfo):
        return _python_row
    return lambda value: java_string(value, type_info)


def _python_str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _row_kind(value: Any) -> str:
    """``+I``, ``-U``, ``+U`` or ``-D`` (PyFlink's ``str(RowKind)``); ``+I`` for a value of a
    row-typed stream that is not a :class:`Row` (a tuple or list has no kind: an insert)."""
    return value.get_row_kind().short_string() if isinstance(value, Row) else "+I"


def _python_row(value: Any) -> str:
    return "{}[{}]".format(_row_kind(value), ",".join(str(item) for item in value))


def java_string(value: Any, type_info: Any) -> str:
    """What Java's ``toString`` shows for ``value`` as a value of ``type_info``."""
    if value is None:
        return "null"
    if isinstance(type_info, BasicTypeInfo):
        return _java_basic(value, type_info.basic_type)
    if isinstance(type_info, TupleTypeInfo):
        fields = zip(value, type_info.field_types)
        return "(" + ",".join(java_string(v, t) for v, t in fields) + ")"
    if isinstance(type_info, RowTypeInfo):
        fields = zip(value, type_info.field_types)
        return f"{_row_kind(value)}[" + ", ".join(java_string(v, t) for v, t in fields) + "]"
    if isinstance(
        type_info, (ListTypeInfo, BasicArrayTypeInfo, PrimitiveArrayTypeInfo, ObjectArrayTypeInfo)
    ):
        element = type_info.element_type
        return "[" + ", ".join(java_string(v, element) for v in value) + "]"
    if isinstance(type_info, MapTypeInfo):
        key_type, value_type = type_info.key_type, type_info.value_type
        pairs = (
            f"{java_string(k, key_type)}={java_string(v, value_type)}" for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    if isinstance(type_info, DateTypeInfo) and isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(type_info, TimeTypeInfo) and isinstance(value, datetime.time):
        return value.strftime("%H:%M:%S")
    if isinstance(type_info, TimestampTypeInfo) and isinstance(value, datetime.datetime):
        fraction = f"{value.microsecond:06d}".rstrip("0") or "0"
        return value.strftime("%Y-%m-%d %H:%M:%S") + "." + fraction
    return _python_str(value)


def _java_basic(value: Any, kind: BasicType) -> str:
    if kind is BasicType.BOOLEAN:
        return "true" if value else "false"
    if kind in _INTEGRAL and isinstance(value, int):
        return str(int(value))
    if kind is BasicType.DOUBLE and isinstance(value, (int, float)):
        return java_double(float(value))
    if kind is BasicType.FLOAT and isinstance(value, (int, float)):
        return java_double(float(value), single=True)
    if kind is BasicType.BIG_DEC and isinstance(value, Decimal):
        return str(value)
    if kind is BasicType.INSTANT and isinstance(value, Instant):
        return java_instant(value)
    return _python_str(value)


_EPOCH = datetime.datetime(1970, 1, 1)


def java_instant(value: Instant) -> str:
    """Java's ``Instant.toString`` (ISO-8601 in UTC): ``2024-03-01T12:30:05.123Z``, the
    fraction in groups of three digits and left out when zero. Outside years 1-9999 (where
    Java writes a sign or more digits), the Python ``str``."""
    try:
        at = _EPOCH + datetime.timedelta(seconds=value.seconds)
    except OverflowError:
        return str(value)
    text = (
        f"{at.year:04d}-{at.month:02d}-{at.day:02d}T{at.hour:02d}:{at.minute:02d}:{at.second:02d}"
    )
    nanos = value.nanos
    if nanos:
        digits = f"{nanos:09d}"
        text += "." + (
            digits[:3] if nanos % 1_000_000 == 0 else digits[:6] if nanos % 1000 == 0 else digits
        )
    return text + "Z"


def shortest_float32(x: float) -> str:
    """The shortest decimal that reads back as the same 32-bit float (Java's Float.toString)."""
    target = struct.unpack("f", struct.pack("f", x))[0]
    for digits in range(1, 10):
        text = f"{target:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == target:
            return text
    return repr(target)


def java_double(x: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` with ``single``): ``2.0``, ``0.1``,
    ``1.0E20``, ``1.0E-5``, ``NaN``, ``-Infinity``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exponent = Decimal(shortest_float32(x) if single else repr(x)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent  # digits before the decimal point
    minus = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{text}"
        whole, fraction = text[:point].ljust(point, "0"), text[point:]
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{point - 1}"
