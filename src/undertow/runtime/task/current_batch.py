"""The batch a subtask is processing, and the chunks its head gets of it: records, or rows.

A network batch (or a restored one) is handed to the head in chunks; :class:`CurrentBatch`
holds it with how far the head got, so that a slice may end inside it and the next resume
there, and so that an unaligned checkpoint can persist its unprocessed rest as its channel's
state (:meth:`CurrentBatch.rest_chunk`). A chain of batch operators takes row ranges of a
record batch: :meth:`CurrentBatch.next_rows` hands it a large record batch in row ranges
sized by a :class:`~.row_cuts.RowCutter`, keeping the row the head reached; a source does
the same with its reader's pending record batch (:func:`emit_source_rows`).

Threading: the task's loop thread only, as its input processor. Lifecycle: a batch is held
from the poll that took it until its last record was processed (or an unaligned stop dropped
it). Invariant: ``0 <= position <= len(values)``; ``row > 0`` only while the record at
``position`` is a record batch cut by rows, and then ``row`` of its rows were processed.
"""

from __future__ import annotations

from typing import Any

from undertow.runtime.network.buffer import serialize_batch
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.task.restored_input import batch_chunk
from undertow.runtime.task.row_cuts import RowCutter


class CurrentBatch:
    """The batch being processed: where it came from and how far the head got."""

    __slots__ = (
        "channel", "gate", "position", "recovered", "restored", "row", "timestamps", "values",
    )  # fmt: skip

    def __init__(
        self, gate: InputGate, channel: InputChannel, values: list[Any],
        timestamps: list[Any] | None, restored: bool, recovered: bool = False,
    ) -> None:  # fmt: skip
        self.gate = gate
        self.channel = channel
        self.values = values
        self.timestamps = timestamps
        #: Records before this index were processed.
        self.position = 0
        #: Rows of the record batch at ``position`` processed already (cut by rows).
        self.row = 0
        #: Restored channel state: not counted by the gate, not released to it.
        self.restored = restored
        #: Recovered input (re-emitted by a rescaled restore, or restored as such): its rest
        #: is persisted as recovered chunks.
        self.recovered = recovered

    def next_rows(self, cutter: RowCutter, slice_s: float) -> tuple[list[Any], int]:
        """The next chunk of the record batch at ``position``: the whole batch, or its next
        row range when the rest would overrun ``slice_s`` (``row`` moves past it, back to 0 at
        the batch's end; the caller moves ``position`` then). Returns the chunk and its rows."""
        batch = self.values[self.position]
        start, total = self.row, batch.num_rows
        rows = min(total - start, cutter.rows_for(slice_s, total))
        if start == 0 and rows == total:
            return [batch], total
        self.row = 0 if start + rows >= total else start + rows
        return [batch.slice(start, rows)], rows

    def rest_chunk(self) -> bytes | None:
        """The channel-state chunk of what the head has not processed (the rest of a record
        batch cut by rows first), or None if it processed everything."""
        pos = self.position
        if pos >= len(self.values):
            return None
        stamps = None if self.timestamps is None else self.timestamps[pos:]
        values = self.values[pos:]
        if self.row:
            values[0] = values[0].slice(self.row)
        return batch_chunk(serialize_batch(values, stamps), self.recovered)


def emit_source_rows(head: Any, cutter: RowCutter, slice_s: float, cut: tuple[int, int]) -> int:
    """Emit the next row range of a source's pending record batch (``cut``: the row it
    reached, its rows) through ``head`` (a ``SourceOperator``), sized by ``cutter`` for
    ``slice_s``; returns the rows emitted."""
    row, total = cut
    rows = min(total - row, cutter.rows_for(slice_s, total))
    head.emit_pending_rows(rows)
    return rows
