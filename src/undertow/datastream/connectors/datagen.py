"""``DataGeneratorSource``: records made by a function of their index, bounded or not.

``DataGeneratorSource(lambda i: (i % 10, i), count=1_000_000)`` emits ``f(0) .. f(count-1)``,
split among the parallel readers; ``count=None`` runs until the job is cancelled, and
``records_per_second`` throttles each reader.

A split's state is its position only: the function is the job's, bound by the reader when it
takes a split, so a restored job generates with the function of its own code (as Flink's
splits hold numbers only), and no user code is pickled into checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.connectors.source import (
    Boundedness,
    IteratorSourceReader,
    IteratorSplit,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
    StaticSplitEnumerator,
)

_UNBOUNDED = 2**62


class GeneratorSplit(IteratorSplit):
    """Indices ``position, position + stride, ...`` below ``end``; ``fn`` (bound by the reader,
    never part of the split's state) makes a record of each."""

    def __init__(self, index: int, position: int, stride: int, end: int) -> None:
        self.index = index
        self.position = position
        self.stride = stride
        self.end = end
        self.fn: Callable[[int], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "fn": None}

    def split_id(self) -> str:
        return str(self.index)

    def next_batch(self, limit: int) -> list[Any]:
        if self.fn is None:
            raise RuntimeError(f"DataGeneratorSource: split {self.index} has no generator bound")
        stop = min(self.end, self.position + limit * self.stride)
        batch = list(map(self.fn, range(self.position, stop, self.stride)))
        self.position += len(batch) * self.stride
        return batch


class _GeneratorReader(IteratorSourceReader):
    """Binds the job's generator function to each split it takes (new or restored)."""

    def __init__(self, context: SourceReaderContext, fn: Callable[[int], Any],
                 records_per_second: float | None) -> None:  # fmt: skip
        super().__init__(context, 4096, records_per_second)
        self.fn = fn

    def add_splits(self, splits: list[Any]) -> None:
        for split in splits:
            split.fn = self.fn
        super().add_splits(splits)


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
        return _GeneratorReader(context, self.generator_function, self.records_per_second)

    def create_enumerator(
        self, context: SplitEnumeratorContext[GeneratorSplit]
    ) -> SplitEnumerator[GeneratorSplit]:
        n = context.current_parallelism()
        end = _UNBOUNDED if self.count is None else self.count
        splits = [GeneratorSplit(i, i, n, end) for i in range(n)]
        return StaticSplitEnumerator(context, splits)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[GeneratorSplit], checkpoint: Any
    ) -> SplitEnumerator[GeneratorSplit]:
        return StaticSplitEnumerator(context, list(checkpoint))
