"""The source behind ``from_collection``: a bounded list, read by one subtask."""

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


class CollectionSplit(IteratorSplit):
    def __init__(self, elements: list[Any], position: int = 0) -> None:
        self.elements = elements
        self.position = position

    def split_id(self) -> str:
        return "0"

    def next_batch(self, limit: int) -> list[Any]:
        batch = self.elements[self.position : self.position + limit]
        self.position += len(batch)
        return batch


class CollectionSource(Source[CollectionSplit]):
    def __init__(self, elements: list[Any]) -> None:
        self.elements = list(elements)

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[CollectionSplit]:
        return IteratorSourceReader(context, batch_size=1024)

    def create_enumerator(
        self, context: SplitEnumeratorContext[CollectionSplit]
    ) -> SplitEnumerator[CollectionSplit]:
        return StaticSplitEnumerator(context, [CollectionSplit(self.elements)])

    def restore_enumerator(
        self, context: SplitEnumeratorContext[CollectionSplit], checkpoint: Any
    ) -> SplitEnumerator[CollectionSplit]:
        return StaticSplitEnumerator(context, list(checkpoint))
