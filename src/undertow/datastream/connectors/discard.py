"""``DiscardingSink``: drops every record (benchmarks, tests of upstream behaviour)."""

from __future__ import annotations

from typing import Any

from undertow.connectors.sink import Sink, SinkWriter, SinkWriterContext


class _DiscardingWriter(SinkWriter):
    def __init__(self) -> None:
        self.count = 0

    def write(self, element: Any, timestamp: int | None) -> None:
        self.count += 1

    def write_batch(self, elements: list[Any], timestamps: list[Any] | None) -> None:
        self.count += len(elements)


class DiscardingSink(Sink):
    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _DiscardingWriter()
