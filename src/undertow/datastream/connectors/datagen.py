"""``DataGeneratorSource``: records made by a function of their index, bounded or not.

``DataGeneratorSource(lambda i: (i % 10, i), count=1_000_000)`` emits ``f(0) .. f(count-1)``,
split among the parallel readers; ``count=None`` runs until the job is cancelled, and
``records_per_second`` throttles each reader.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from undertow.connectors.source import (
    Boundedness,
    InputStatus,
    IteratorSourceReader,
    IteratorSplit,
    ReaderOutput,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
    StaticSplitEnumerator,
)

_UNBOUNDED = 2**62


class GeneratorSplit(IteratorSplit):
    """Indices ``position, position + stride, ...`` below ``end``."""

    def __init__(self, index: int, position: int, stride: int, end: int, fn: Any) -> None:
        self.index = index
        self.position = position
        self.stride = stride
        self.end = end
        self.fn = fn

    def split_id(self) -> str:
        return str(self.index)

    def iterator(self) -> Iterator[Any]:
        return map(self.fn, range(self.position, self.end, self.stride))

    def advance(self, count: int) -> None:
        self.position += count * self.stride


class _ThrottledReader(IteratorSourceReader):
    def __init__(self, context: SourceReaderContext, rate: float | None) -> None:
        batch = 4096 if rate is None else max(1, min(4096, int(rate / 20)))
        super().__init__(context, batch_size=batch)
        self.rate = rate
        self._emitted = 0
        self._t0 = 0.0

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        if self.rate is not None:
            now = time.monotonic()
            if not self._t0:
                self._t0 = now
            if self._emitted > (now - self._t0) * self.rate:
                return InputStatus.NOTHING_AVAILABLE
        return super().poll_next(_Counting(output, self))


class _Counting:
    def __init__(self, output: ReaderOutput, reader: _ThrottledReader) -> None:
        self.output = output
        self.reader = reader

    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.reader._emitted += 1
        self.output.collect(value, timestamp)

    def collect_batch(self, values: list[Any], timestamps: list[Any] | None = None) -> None:
        self.reader._emitted += len(values)
        self.output.collect_batch(values, timestamps)


class DataGeneratorSource(Source[GeneratorSplit]):
    def __init__(
        self,
        generator_function: Callable[[int], Any],
        count: int | None = None,
        records_per_second: float | None = None,
    ) -> None:
        if count is not None and count < 0:
            raise ValueError(f"DataGeneratorSource: count must be >= 0, got {count}")
        self.generator_function = generator_function
        self.count = count
        self.records_per_second = records_per_second

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.count is not None else Boundedness.CONTINUOUS_UNBOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[GeneratorSplit]:
        return _ThrottledReader(context, self.records_per_second)

    def create_enumerator(
        self, context: SplitEnumeratorContext[GeneratorSplit]
    ) -> SplitEnumerator[GeneratorSplit]:
        n = context.current_parallelism()
        end = _UNBOUNDED if self.count is None else self.count
        splits = [GeneratorSplit(i, i, n, end, self.generator_function) for i in range(n)]
        return StaticSplitEnumerator(context, splits)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[GeneratorSplit], checkpoint: Any
    ) -> SplitEnumerator[GeneratorSplit]:
        return StaticSplitEnumerator(context, list(checkpoint))
