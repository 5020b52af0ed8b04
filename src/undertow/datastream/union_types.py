"""``DataStream.union``'s type check: streams of two different types are refused when the job
is declared, as Flink refuses them ("Cannot union streams of different types").

A union has its first input's type (``get_type``), which drives ``print`` and the built-in
aggregations; records of another type would not fit it. A stream of Python objects (no type)
has PyFlink's ``PICKLED_BYTE_ARRAY`` type: it unions with such streams only, and a typed
stream beside it is refused as PyFlink refuses it ("Cannot union streams of different types:
Integer and PickledByteArrayTypeInfo"). Pure, called on the driver while the job is declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from undertow.common.typeinfo import PickledBytesTypeInfo
from undertow.core.errors import GraphBuildError


class TypedStream(Protocol):
    """What the check reads of a stream: its declared type and its operator's name."""

    def get_type(self) -> Any: ...

    def get_name(self) -> str: ...


def _shown(type_info: Any) -> str:
    if isinstance(type_info, PickledBytesTypeInfo):
        return "no type (Python objects: PICKLED_BYTE_ARRAY)"
    return repr(type_info)


def check_union_types(first: TypedStream, others: Sequence[TypedStream]) -> None:
    """Raises :class:`GraphBuildError` naming both operators and types if two of the streams'
    types differ (no type is ``PICKLED_BYTE_ARRAY``)."""
    pickled = PickledBytesTypeInfo()
    declared = [(s, pickled if s.get_type() is None else s.get_type()) for s in (first, *others)]
    head, head_type = declared[0]
    for stream, t in declared[1:]:
        if t != head_type:
            raise GraphBuildError(
                f"union(): cannot union streams of different types: operator "
                f"'{head.get_name()}' has {_shown(head_type)}, operator '{stream.get_name()}' "
                f"has {_shown(t)} (declare the same type on both: output_type=... of the "
                "function before, or type_info=... of the source)"
            )
