"""``key_by(columns)`` on a batch stream: each record batch is split among the channels.

The record path's :class:`~undertow.graph.partitioners.KeyGroupStreamPartitioner` sends each
record to the subtask owning its key's group. Here every value is a ``pyarrow.RecordBatch``:
its rows' key groups are computed at once (:mod:`undertow.state.key_groups_arrow`, the same
groups as the record path's), and each target gets its rows in their order: one boolean filter
per target for a few targets, else a stable sort by target and one zero-copy slice each.

A batch's timestamp goes with each of its slices. Threading: as every partitioner, one copy per
producing subtask, called on its loop. Cost: one hash pass, then a filter per target (or a
sort and a ``take``) per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.core.errors import BatchError
from undertow.graph.partitioners import Routed, StreamPartitioner
from undertow.state.key_groups_arrow import key_groups, subtasks_of

#: Up to this many channels, a batch is split by one boolean filter per channel (each keeps the
#: rows' order); beyond, by one stable sort and zero-copy slices.
_FILTER_CHANNELS = 8


class BatchKeyGroupPartitioner(StreamPartitioner):
    """Splits record batches by the key group of ``columns`` (see the module docstring)."""

    kind = "HASH"

    def __init__(self, columns: Sequence[str], max_parallelism: int, operator_name: str) -> None:
        super().__init__()
        self.columns = list(columns)
        self.max_parallelism = max_parallelism
        self.operator_name = operator_name

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
            groups = key_groups(batch, self.columns, self.max_parallelism)
        except ValueError as err:
            raise BatchError(
                f"key_by({self.columns}) after operator '{self.operator_name}': {err}"
            ) from err
        if n == 1:
            return [(0, batch)]
        targets = subtasks_of(groups, self.max_parallelism, n)
        counts = np.bincount(targets, minlength=n)
        if counts.max() == batch.num_rows:  # all rows go to one channel: no copy
            return [(int(targets[0]), batch)]
        if n <= _FILTER_CHANNELS:  # a few vectorised filters beat a sort
            return [
                (channel, batch.filter(pa.array(targets == channel)))
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
