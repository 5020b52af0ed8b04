"""``DataGeneratorBatchSource``: record batches made by a vectorised function of row indices.

The batch-stream twin of :class:`~undertow.datastream.connectors.datagen.DataGeneratorSource`::

    source = DataGeneratorBatchSource(
        lambda i: pa.record_batch({"k": i % 1000, "v": np.ones_like(i)}), count=10_000_000
    )
    batches = env.from_source(source, None, "generator").as_batches()

The function gets a numpy ``int64`` array of row indices and returns one
``pyarrow.RecordBatch``. The indices, their split among the readers, the checkpoints (a
split's next index, no user code) and ``count=None`` are the record source's; a throttled
source's batches hold about 20 ms of rows (see :class:`DataGeneratorBatchSource`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.datastream.connectors.datagen import GeneratorSplit, IndexGeneratorSource

#: a batch carries about this share of a second of a throttled reader's rows
_THROTTLED_BATCH_SECONDS = 1 / 50


class GeneratorBatchSplit(GeneratorSplit):
    """A :class:`GeneratorSplit` handing out one record batch of up to ``batch_rows`` indices
    per call. Not thread-safe: one reader owns it."""

    def __init__(self, index: int, position: int, stride: int, end: int, batch_rows: int) -> None:
        super().__init__(index, position, stride, end)
        self.batch_rows = batch_rows

    def next_batch(self, limit: int) -> list[Any]:
        """One record batch (``limit`` counts batches, and a call hands out one), or ``[]``
        at the split's end."""
        fn = self.bound_payload()
        stop = min(self.end, self.position + self.batch_rows * self.stride)
        if self.position >= stop:
            return []
        indices = np.arange(self.position, stop, self.stride, dtype=np.int64)
        batch = fn(indices)
        if not isinstance(batch, pa.RecordBatch):
            raise TypeError(
                f"DataGeneratorBatchSource (split {self.index}): the generator function "
                f"returned {type(batch).__name__} for the indices {indices[0]}..{indices[-1]}; "
                "it must return a pyarrow.RecordBatch (e.g. pa.record_batch({...}))"
            )
        self.position += len(indices) * self.stride
        return [batch]

    def __repr__(self) -> str:
        return f"GeneratorBatchSplit({self.index}, next {self.position}, end {self.end})"


class DataGeneratorBatchSource(IndexGeneratorSource[Callable[[np.ndarray], pa.RecordBatch]]):
    """Bounded (``count``) or not (``None``), parallel: batches of ``generator_function`` over
    the row indices.

    The function may return any number of rows (it may drop or repeat some). Over the job's
    readers the indices are ``0 .. count - 1``, each once: reader ``s`` of ``p`` takes
    ``s, s + p, s + 2p, ...``, at most ``batch_rows`` a batch. So a function computing
    ``f_row`` over the indices gives the rows ``DataGeneratorSource(f_row)`` gives. A restored
    job generates with its own function, right after the last batch handed out before the
    checkpoint. ``rows_per_second`` throttles each reader; at low rates a batch holds about
    20 ms of rows (``rows_per_second / 50``, at least one), so a slow source still emits small
    batches often.
    """

    def __init__(
        self,
        generator_function: Callable[[np.ndarray], pa.RecordBatch],
        count: int | None = None,
        batch_rows: int = 8192,
        rows_per_second: float | None = None,
    ) -> None:
        if batch_rows < 1:
            raise ValueError(f"DataGeneratorBatchSource: batch_rows must be >= 1, got {batch_rows}")
        if rows_per_second is not None and rows_per_second <= 0:
            raise ValueError(
                f"DataGeneratorBatchSource: rows_per_second must be > 0, got {rows_per_second}"
            )
        if rows_per_second is not None:
            batch_rows = min(batch_rows, max(1, int(rows_per_second * _THROTTLED_BATCH_SECONDS)))
        # one batch per poll; the rate the reader enforces counts batches
        per_second = None if rows_per_second is None else rows_per_second / batch_rows
        super().__init__(generator_function, count, 1, per_second)
        self.batch_rows = batch_rows

    def make_split(self, index: int, stride: int, end: int) -> GeneratorSplit:
        return GeneratorBatchSplit(index, index, stride, end, self.batch_rows)
