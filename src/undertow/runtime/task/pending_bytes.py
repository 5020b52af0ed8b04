"""The byte bound on a source's pending records: how many records its next reader call brings.

A reader call's records become the source operator's *pending* records, which are part of the
source's snapshot until the task has emitted them (docs/design.md, "Mailbox slices end inside
a batch"). A reader that honours ``records_wanted`` (``DemandingReaderOutput``) is asked for
at most :data:`PENDING_BYTES` of records at the size estimated from its earlier calls, and
for one record before any estimate; so a source holds about that much pending (at least one
record), where 16 records of 10 MiB made checkpoints of 160 MiB.

The estimate (:func:`approx_size`) walks a record's structure without serializing it: a few
records of each call, the estimate moving halfway towards what a call shows and up at once.
Pure and cheap: three estimates a reader call; the task's loop thread.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa

#: What a source may hold pending, in estimated bytes (at least one record). Flink's file
#: source reads ``source.file.stream.io-fetch-size`` (1 MiB) at a time the same way.
PENDING_BYTES = 1 << 20
#: Items of a container looked at (its size is extrapolated from them).
_ITEMS = 8
_SCALAR = 9  # an int or float as pickled, about
_SEQUENCES = (tuple, list)
_RECORD_BATCH = pa.RecordBatch
#: Types whose ``nbytes`` is their data's size.
_BUFFERS = (memoryview, np.ndarray, pa.Array, pa.ChunkedArray, pa.Table, pa.Buffer)


def approx_size(value: Any, depth: int = 3) -> int:
    """About the bytes ``value`` takes serialized: exact lengths of bytes, strings, arrays
    and Arrow record batches; containers (tuples, ``Row`` s, lists, dicts, objects'
    ``__dict__``) by their first items, ``depth`` levels down; anything else by
    ``sys.getsizeof``. Cost: about a microsecond for a flat record."""
    kind = type(value)
    if kind is int or kind is float or kind is bool or value is None:
        return _SCALAR
    if kind is bytes or kind is bytearray or kind is str:
        return len(value) + 5
    if kind is _RECORD_BATCH:
        return int(pa.ipc.get_record_batch_size(value))
    if isinstance(value, _SEQUENCES):  # Row too
        if depth <= 0:
            return sys.getsizeof(value)
        if len(value) <= _ITEMS:
            return 4 + sum([approx_size(item, depth - 1) for item in value])
        return 4 + _items_size(value, depth - 1)
    if isinstance(value, _BUFFERS):
        return int(value.nbytes)
    if depth > 0:
        if isinstance(value, dict):
            return 4 + _items_size(list(value.items()), depth - 1)
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict):
            return 16 + _items_size(list(fields.values()), depth - 1)
    return sys.getsizeof(value)


def _items_size(items: Any, depth: int) -> int:
    n = len(items)
    if n <= _ITEMS:
        return sum(approx_size(item, depth) for item in items)
    seen = sum(approx_size(items[i], depth) for i in range(_ITEMS))
    return seen * n // _ITEMS


class PendingBound:
    """The records a source's next reader call may bring (module doc). One per source
    operator; :meth:`observe` every batch a reader call emits."""

    __slots__ = ("budget", "bytes_per_record")

    def __init__(self, budget: int = PENDING_BYTES) -> None:
        self.budget = budget
        #: Estimated bytes per record; 0.0 before the first batch.
        self.bytes_per_record = 0.0

    def records_wanted(self) -> int:
        """At most ``budget`` bytes of records, and at least one; one before any estimate."""
        per_record = self.bytes_per_record
        if per_record <= 0.0:
            return 1
        return max(1, int(self.budget / per_record))

    def observe(self, values: list[Any]) -> None:
        """Learn from a batch a reader emitted (non-empty): its first, middle and last record."""
        n = len(values)
        if n <= 2:
            seen = sum(map(approx_size, values)) / n
        else:
            seen = (approx_size(values[0]) + approx_size(values[n // 2])
                    + approx_size(values[-1])) / 3  # fmt: skip
        estimate = self.bytes_per_record
        self.bytes_per_record = seen if seen > estimate else estimate + 0.5 * (seen - estimate)
