"""``OutputTag``: names a side output (PyFlink's ``pyflink.datastream.OutputTag``)."""

from __future__ import annotations

from typing import Any


class OutputTag:
    """A side output: records emitted with ``ctx.output(tag, value)`` are read with
    ``stream.get_side_output(tag)``. Tags are equal when their ids are equal."""

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError(f"OutputTag id must be a non-empty string, got {tag_id!r}")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"
