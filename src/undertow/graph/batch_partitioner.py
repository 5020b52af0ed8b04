"""``key_by(columns)`` on a batch stream: each record batch is split among the channels.

The record path's :class:`~undertow.graph.partitioners.KeyGroupStreamPartitioner` sends each
record to the subtask owning its key's group. Here every value is a ``pyarrow.RecordBatch``:
its rows' key groups are computed at once (:mod:`undertow.state.key_groups_arrow`, the same
groups as the record path's), and each target gets its rows in their order: one ``take`` per
target for a few targets, else a stable sort by target and one zero-copy slice each.
A single signed-integer key column takes its groups from a
:class:`~undertow.state.key_groups_arrow.KeyGroupLookup` while its values stay dense.

A consumer reading only some columns gets a copy pruned to them (``pruned_to``). A batch's
timestamp goes with each of its slices. Threading: as every partitioner, one copy per
producing subtask, called on its loop. Cost: one hash pass (a gather for dense integer
keys), then a ``take`` of each target's rows (or a sort and zero-copy slices) per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.core.errors import BatchError
from undertow.graph.partitioners import Routed, StreamPartitioner
from undertow.state.key_groups_arrow import KeyGroupLookup, key_groups, subtasks_of

#: Up to this many channels, a batch is split by one ``take`` of each channel's row indices
#: (each keeps the rows' order); beyond, by one stable sort and zero-copy slices.
_FILTER_CHANNELS = 8


class BatchKeyGroupPartitioner(StreamPartitioner):
    """Splits record batches by the key group of ``columns`` (see the module docstring)."""

    kind = "HASH"

    def __init__(self, columns: Sequence[str], max_parallelism: int, operator_name: str) -> None:
        super().__init__()
        self.columns = list(columns)
        self.max_parallelism = max_parallelism
        self.operator_name = operator_name
        self._lookup: KeyGroupLookup | None = None
        #: The columns the consumer reads (:meth:`pruned_to`), or None: every column goes.
        self.columns_read: list[str] | None = None

    def pruned_to(self, columns: Sequence[str]) -> BatchKeyGroupPartitioner:
        """A copy that sends each target only ``columns`` of each batch (in the batch's own
        order; a batch lacking one of them goes whole, so that the consumer reports the
        missing column next to the columns the batch does have), for a consumer that reads
        no other: the rows' other columns are neither copied by the ``take`` nor
        encoded nor sent. Spark prunes the columns of a shuffle the same way."""
        pruned = BatchKeyGroupPartitioner(self.columns, self.max_parallelism, self.operator_name)
        pruned.columns_read = list(dict.fromkeys([*self.columns, *columns]))
        return pruned

    def setup(self, num_channels: int) -> None:
        super().setup(num_channels)
        # each copy (a producing subtask) its own: the lookup's table grows as keys come
        self._lookup = KeyGroupLookup(self.max_parallelism) if len(self.columns) == 1 else None

    def split(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        """``(channel, rows of batch for it)`` for each channel that gets rows."""
        n = self.num_channels
        if batch.num_rows == 0:
            return []
        missing = [c for c in self.columns if batch.schema.get_field_index(c) < 0]
        if missing:
            raise BatchError(
                f"key_by({self.columns}) after operator '{self.operator_name}': no column "
                f"{missing[0]!r} in the batch (columns: {batch.schema.names})"
            )
        try:
            groups = self._lookup.groups(batch.column(self.columns[0])) if self._lookup else None
            if groups is None:
                groups = key_groups(batch, self.columns, self.max_parallelism)
        except ValueError as err:
            raise BatchError(
                f"key_by({self.columns}) after operator '{self.operator_name}': {err}"
            ) from err
        if self.columns_read is not None:
            batch = self._pruned(batch)
        if n == 1:
            return [(0, batch)]
        targets = subtasks_of(groups, self.max_parallelism, n)
        counts = np.bincount(targets, minlength=n)
        if counts.max() == batch.num_rows:  # all rows go to one channel: no copy
            return [(int(targets[0]), batch)]
        if n <= _FILTER_CHANNELS:  # a take per channel beats a sort (and a filter: 0.7x)
            return [
                (channel, batch.take(pa.array(np.flatnonzero(targets == channel).astype(np.int32))))
                for channel, count in enumerate(counts.tolist())
                if count
            ]
        ordered = batch.take(pa.array(np.argsort(targets, kind="stable")))
        out: list[tuple[int, pa.RecordBatch]] = []
        offset = 0
        for channel, count in enumerate(counts.tolist()):
            if count:
                out.append((channel, ordered.slice(offset, count)))
                offset += count
        return out

    def _pruned(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with only the columns read (zero-copy), or ``batch`` itself when it has
        no other or lacks one of them (the consumer's error then lists its real columns)."""
        assert self.columns_read is not None
        names = batch.schema.names
        if len(names) <= len(self.columns_read) and all(c in self.columns_read for c in names):
            return batch
        wanted = set(self.columns_read)
        if not wanted.issubset(names):
            return batch
        return batch.select([i for i, name in enumerate(names) if name in wanted])

    def route(self, values: list[Any], timestamps: list[Any] | None) -> Routed:
        routed: Routed = {}
        for i, batch in enumerate(values):
            if not isinstance(batch, pa.RecordBatch):
                raise BatchError(
                    f"key_by({self.columns}) after operator '{self.operator_name}': expected a "
                    f"pyarrow.RecordBatch, got {type(batch).__name__}"
                )
            for channel, part in self.split(batch):
                vals, stamps = routed.setdefault(channel, ([], None if timestamps is None else []))
                vals.append(part)
                if stamps is not None and timestamps is not None:
                    stamps.append(timestamps[i])
        return routed
