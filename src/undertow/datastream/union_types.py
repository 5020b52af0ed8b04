"""``DataStream.union``'s type check: streams of two different declared types are refused when
the job is declared, as Flink refuses them ("Cannot union streams of different types").

A union has its first input's type (``get_type``), which drives ``print`` and the built-in
aggregations; records of another declared type would not fit it. A stream of Python objects
(no type, or ``PICKLED_BYTE_ARRAY``) unions with any stream here, where PyFlink refuses it
beside a declared one. Pure, called on the driver while the job is declared.
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


def check_union_types(first: TypedStream, others: Sequence[TypedStream]) -> None:
    """Raises :class:`GraphBuildError` naming both operators and types if two of the streams'
    declared types differ."""
    declared = [(s, s.get_type()) for s in (first, *others)]
    known = [
        (s, t) for s, t in declared if t is not None and not isinstance(t, PickledBytesTypeInfo)
    ]
    if not known:
        return
    head, head_type = known[0]
    for stream, t in known[1:]:
        if t != head_type:
            raise GraphBuildError(
                f"union(): cannot union streams of different types: operator "
                f"'{head.get_name()}' has {head_type!r}, operator '{stream.get_name()}' has "
                f"{t!r} (map one of them to the other's type with output_type=...)"
            )
