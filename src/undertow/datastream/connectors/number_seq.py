"""``NumberSequenceSource``: the numbers ``start..end`` (inclusive), split for parallel reading."""

from __future__ import annotations

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


class NumberSequenceSplit(IteratorSplit):
    def __init__(self, split_id: str, start: int, end: int) -> None:
        self._id = split_id
        self.start = start  # next number to emit
        self.end = end  # inclusive

    def split_id(self) -> str:
        return self._id

    def next_batch(self, limit: int) -> list[Any]:
        end = min(self.end + 1, self.start + limit)
        batch = list(range(self.start, end))
        self.start = end
        return batch

    def __repr__(self) -> str:
        return f"NumberSequenceSplit({self._id}, {self.start}..{self.end})"


class NumberSequenceSource(Source[NumberSequenceSplit]):
    """PyFlink's ``NumberSequenceSource(start, end)``: bounded, parallel."""

    def __init__(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError(f"NumberSequenceSource: end {end} is before start {start}")
        self.start = start
        self.end = end

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[NumberSequenceSplit]:
        return IteratorSourceReader(context, batch_size=4096)

    def make_split(self, split_id: str, start: int, end: int) -> NumberSequenceSplit:
        """The split of ``start..end`` (inclusive); a subclass emits its numbers otherwise."""
        return NumberSequenceSplit(split_id, start, end)

    def create_enumerator(
        self, context: SplitEnumeratorContext[NumberSequenceSplit]
    ) -> SplitEnumerator[NumberSequenceSplit]:
        count = self.end - self.start + 1
        n = max(1, min(count, context.current_parallelism() * 4))
        splits = []
        for i in range(n):
            lo = self.start + count * i // n
            hi = self.start + count * (i + 1) // n - 1
            splits.append(self.make_split(str(i), lo, hi))
        return StaticSplitEnumerator(context, splits)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[NumberSequenceSplit], checkpoint: Any
    ) -> SplitEnumerator[NumberSequenceSplit]:
        return StaticSplitEnumerator(context, list(checkpoint))
