"""``NumberSequenceBatchSource``: the numbers ``start..end`` (inclusive) as record batches.

The batch-stream twin of :class:`~undertow.datastream.connectors.number_seq.NumberSequenceSource`:
each record it emits is a ``pyarrow.RecordBatch`` of one int64 column (``column``, default
``"value"``) of at most ``batch_rows`` consecutive numbers. Splits, enumerator and checkpoints
are those of the record source (a split remembers the next number), so a restored job resumes
right after the last batch handed out. Use it with ``env.from_source(...).as_batches()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from undertow.connectors.source import IteratorSourceReader, SourceReader, SourceReaderContext
from undertow.datastream.connectors.number_seq import NumberSequenceSource, NumberSequenceSplit


class NumberSequenceBatchSplit(NumberSequenceSplit):
    def __init__(self, split_id: str, start: int, end: int, batch_rows: int, column: str) -> None:
        super().__init__(split_id, start, end)
        self.batch_rows = batch_rows
        self.column = column

    def next_batch(self, limit: int) -> list[Any]:
        """One record batch of up to ``batch_rows`` numbers (``limit`` counts batches, and a
        call hands out one)."""
        if self.start > self.end:
            return []
        end = min(self.end + 1, self.start + self.batch_rows)
        values = np.arange(self.start, end, dtype=np.int64)
        self.start = end
        return [pa.RecordBatch.from_arrays([pa.array(values)], names=[self.column])]

    def __repr__(self) -> str:
        return f"NumberSequenceBatchSplit({self._id}, {self.start}..{self.end})"


class NumberSequenceBatchSource(NumberSequenceSource):
    """Bounded, parallel: the numbers ``start..end`` in record batches of ``batch_rows``; the
    record source's splitting, enumerator and checkpoints."""

    def __init__(self, start: int, end: int, batch_rows: int = 8192, column: str = "value"):
        if end < start:
            raise ValueError(f"NumberSequenceBatchSource: end {end} is before start {start}")
        if batch_rows < 1:
            raise ValueError(
                f"NumberSequenceBatchSource: batch_rows must be >= 1, got {batch_rows}"
            )
        super().__init__(start, end)
        self.batch_rows = batch_rows
        self.column = column

    def create_reader(self, context: SourceReaderContext) -> SourceReader[NumberSequenceSplit]:
        return IteratorSourceReader(context, batch_size=1)

    def make_split(self, split_id: str, start: int, end: int) -> NumberSequenceSplit:
        return NumberSequenceBatchSplit(split_id, start, end, self.batch_rows, self.column)
