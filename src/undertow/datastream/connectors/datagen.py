"""``DataGeneratorSource``: records made by a function of their index, bounded or not.

``DataGeneratorSource(lambda i: (i % 10, i), count=1_000_000)`` emits ``f(0) .. f(count-1)``,
split among the parallel readers; ``count=None`` runs until the job is cancelled, and
``records_per_second`` throttles each reader.

A split's state is its position only: the function is the job's, bound by the reader when it
takes a split (:class:`~undertow.connectors.source.JobBoundSplit`). What it shares with the
batch source (:mod:`.datagen_batches`), whose function takes an array of indices, is
:class:`IndexGeneratorSource`, generic in the function's type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

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
from undertow.core.errors import note_context

_UNBOUNDED = 2**62
F = TypeVar("F", bound=Callable[..., Any])


class GeneratorSplit(JobBoundSplit):
    """Indices ``position, position + stride, ...`` below ``end``; the payload, the job's
    generator function, makes a record of each."""

    def __init__(self, index: int, position: int, stride: int, end: int) -> None:
        self.index = index
        self.position = position
        self.stride = stride
        self.end = end

    def split_id(self) -> str:
        return str(self.index)

    def next_batch(self, limit: int) -> list[Any]:
        fn = self.bound_payload()
        stop = min(self.end, self.position + limit * self.stride)
        indices = range(self.position, stop, self.stride)
        batch: list[Any] = []
        try:
            batch.extend(map(fn, indices))  # extend keeps what came before a raise
        except Exception as err:  # the user's function: say which index it was making
            note_context(err, f"generating the record of index {indices[len(batch)]}")
            raise
        self.position += len(batch) * self.stride
        return batch


class IndexGeneratorSource(Source[GeneratorSplit], Generic[F]):
    """What the generator sources share: the indices ``0 .. count - 1`` (``count=None``: no
    end) split among the readers by stride, each reader binding the job's function ``F`` of
    them to its splits; ``per_poll`` items (what ``F`` makes) a poll, at most
    ``per_second`` of them a second. The subclass fixes ``F`` and the split."""

    def __init__(
        self,
        generator_function: F,
        count: int | None,
        per_poll: int,
        per_second: float | None,
    ) -> None:
        if count is not None and count < 0:
            raise ValueError(f"{type(self).__name__}: count must be >= 0, got {count}")
        self.generator_function = generator_function
        self.count = count
        self.per_poll = per_poll
        self.per_second = per_second

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.count is not None else Boundedness.CONTINUOUS_UNBOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader[GeneratorSplit]:
        return JobBoundReader(context, self.generator_function, self.per_poll, self.per_second)

    def create_enumerator(
        self, context: SplitEnumeratorContext[GeneratorSplit]
    ) -> SplitEnumerator[GeneratorSplit]:
        n = context.current_parallelism()
        end = _UNBOUNDED if self.count is None else self.count
        return StaticSplitEnumerator(context, [self.make_split(i, n, end) for i in range(n)])

    def make_split(self, index: int, stride: int, end: int) -> GeneratorSplit:
        """Split ``index`` of ``stride``: the indices ``index, index + stride, ...`` below
        ``end``."""
        return GeneratorSplit(index, index, stride, end)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[GeneratorSplit], checkpoint: Any
    ) -> SplitEnumerator[GeneratorSplit]:
        return StaticSplitEnumerator(context, list(checkpoint))


class DataGeneratorSource(IndexGeneratorSource[Callable[[int], Any]]):
    """Bounded (``count``) or not (``None``), parallel: ``generator_function(i)`` for each
    index, 4,096 records a poll, ``records_per_second`` per reader."""

    def __init__(
        self,
        generator_function: Callable[[int], Any],
        count: int | None = None,
        records_per_second: float | None = None,
    ) -> None:
        super().__init__(generator_function, count, 4096, records_per_second)
