"""Bulk writers: formats that encode many records at once into a part file (Parquet).

Flink's ``BulkWriter``: a part file written by a bulk writer cannot be resumed after a
checkpoint (its footer is written at the end), so bulk part files roll on every checkpoint.

Lifecycle (on the sink's task thread): ``factory.create(stream)`` when a part file opens,
``add_element`` per record, ``finish()`` once when the part file closes (write buffered
records and the footer; the caller then closes ``stream``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, BinaryIO


class BulkWriter(ABC):
    @abstractmethod
    def add_element(self, element: Any) -> None: ...

    def flush(self) -> None:
        """Write buffered records out (not the footer)."""

    @abstractmethod
    def finish(self) -> None:
        """Write what is left and the footer; no call follows."""

    def abort(self) -> None:
        """Drop the file being written (after a failure); must not raise. No call follows."""


class BulkWriterFactory(ABC):
    @abstractmethod
    def create(self, stream: BinaryIO) -> BulkWriter: ...
