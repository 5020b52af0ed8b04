"""The source behind ``from_collection``: a bounded list, read by one subtask.

The split's state is its position only; the list is the job's, bound by the reader
(:class:`~undertow.connectors.source.JobBoundSplit`), so a checkpoint does not hold a copy of
the collection.
"""

from __future__ import annotations

from typing import Any

from undertow.connectors.source import (
    Boundedness,
    JobBoundReader,
    JobBoundSplit,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
    StaticSplitEnumerator,
)


class CollectionSplit(JobBoundSplit):
    """Elements from ``position`` on of the job's collection (the payload)."""

    def __init__(self, position: int = 0) -> None:
        self.position = position

    def split_id(self) -> str:
        return "0"

    def next_batch(self, limit: int) -> list[Any]:
        elements: list[Any] = self.bound_payload()
        batch = elements[self.position : self.position + limit]
        self.position += len(batch)
        return batch


class CollectionSource(Source[CollectionSplit]):
    def __init__(self, elements: list[Any]) -> None:
        self.elements = list(elements)

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[CollectionSplit]:
        return JobBoundReader(context, self.elements, batch_size=1024)

    def create_enumerator(
        self, context: SplitEnumeratorContext[CollectionSplit]
    ) -> SplitEnumerator[CollectionSplit]:
        return StaticSplitEnumerator(context, [CollectionSplit()])

    def restore_enumerator(
        self, context: SplitEnumeratorContext[CollectionSplit], checkpoint: Any
    ) -> SplitEnumerator[CollectionSplit]:
        return StaticSplitEnumerator(context, list(checkpoint))
