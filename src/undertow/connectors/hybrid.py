"""``HybridSource``: sources read one after another, switching when one ends (Flink's).

Enumerator (JobMaster loop thread): runs the *current* source's enumerator; its splits go out
wrapped as :class:`HybridSplit` (source index + split). When it tells a reader "no more
splits", that reader's request is parked: a pull reader asks only once it has read all its
splits, so when every reader is parked the current source is fully read, and the enumerator
switches to the next source and replays the parked requests to it. After the last source the
"no more splits" goes through to the readers. Its checkpoint is :class:`HybridEnumeratorState`:
the current source's index and that source's enumerator state.

Reader (task thread): one inner reader at a time. A split of a later source tells the current
inner reader "no more splits"; once that reader has ended, the reader of the later source
starts with the held splits. Its checkpoint is its splits wrapped with their source index.
Invariant: a reader never reads a source before the earlier ones ended (on every reader).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from undertow.connectors.source import (
    Boundedness,
    InputStatus,
    ReaderOutput,
    Source,
    SourceReader,
    SourceReaderContext,
    SourceSplit,
    SplitEnumerator,
    SplitEnumeratorContext,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HybridSplit(SourceSplit):
    """A split of the hybrid's source number ``source_index``."""

    source_index: int
    split: Any

    def split_id(self) -> str:
        return f"{self.source_index}:{self.split.split_id()}"


@dataclass(frozen=True, slots=True)
class HybridEnumeratorState:
    source_index: int
    enumerator_state: Any


class _InnerEnumeratorContext(SplitEnumeratorContext[Any]):
    """The context the current source's enumerator sees: wraps splits, parks "no more"."""

    def __init__(self, owner: HybridEnumerator, index: int) -> None:
        self.owner = owner
        self.index = index

    def current_parallelism(self) -> int:
        return self.owner.context.current_parallelism()

    def registered_readers(self) -> list[int]:
        return self.owner.context.registered_readers()

    def assign_split(self, split: Any, subtask: int) -> None:
        self.owner.context.assign_split(HybridSplit(self.index, split), subtask)

    def signal_no_more_splits(self, subtask: int) -> None:
        self.owner.source_exhausted_for(self.index, subtask)

    def call_async(
        self, call: Callable[[], T], handler: Callable[[T | None, BaseException | None], None]
    ) -> None:
        self.owner.context.call_async(call, handler)


class HybridEnumerator(SplitEnumerator[HybridSplit]):
    """Switches enumerators as the module doc says. JobMaster loop thread only."""

    def __init__(
        self,
        context: SplitEnumeratorContext[HybridSplit],
        sources: tuple[Source[Any], ...],
        state: HybridEnumeratorState | None = None,
    ) -> None:
        self.context = context
        self.sources = sources
        self.index = 0 if state is None else state.source_index
        if not 0 <= self.index < len(sources):
            raise ValueError(
                f"HybridSource of {len(sources)} sources: cannot restore at source "
                f"{self.index} (checkpoint of another hybrid source?)"
            )
        self.parked: set[int] = set()
        inner = _InnerEnumeratorContext(self, self.index)
        source = sources[self.index]
        self.current: SplitEnumerator[Any] = (
            source.create_enumerator(inner)
            if state is None
            else source.restore_enumerator(inner, state.enumerator_state)
        )

    def start(self) -> None:
        self.current.start()

    def add_reader(self, subtask_id: int) -> None:
        self.current.add_reader(subtask_id)

    def handle_split_request(self, subtask_id: int, requester_hostname: str | None) -> None:
        self.parked.discard(subtask_id)
        self.current.handle_split_request(subtask_id, requester_hostname)

    def source_exhausted_for(self, index: int, subtask: int) -> None:
        """Source ``index``'s enumerator has nothing more for ``subtask`` (module doc)."""
        if index != self.index:
            return  # a late answer of an enumerator already switched away from
        if self.index == len(self.sources) - 1:
            self.context.signal_no_more_splits(subtask)
            return
        self.parked.add(subtask)
        if self.parked >= set(range(self.context.current_parallelism())):
            self._switch()

    def _switch(self) -> None:
        self.current.close()
        self.index += 1
        self.current = self.sources[self.index].create_enumerator(
            _InnerEnumeratorContext(self, self.index)
        )
        self.current.start()
        waiting, self.parked = sorted(self.parked), set()
        for subtask in range(self.context.current_parallelism()):
            self.current.add_reader(subtask)
        for subtask in waiting:
            self.handle_split_request(subtask, None)

    def add_splits_back(self, splits: list[HybridSplit], subtask_id: int) -> None:
        stale = [s for s in splits if s.source_index != self.index]
        if stale:
            raise ValueError(
                f"HybridSource: splits {stale!r} of subtask {subtask_id} returned while source "
                f"{self.index} is current"
            )
        self.current.add_splits_back([s.split for s in splits], subtask_id)

    def snapshot_state(self, checkpoint_id: int) -> HybridEnumeratorState:
        return HybridEnumeratorState(self.index, self.current.snapshot_state(checkpoint_id))

    def close(self) -> None:
        self.current.close()


class HybridSourceReader(SourceReader[HybridSplit]):
    """Reads the sources' splits in source order (module doc). Task thread only."""

    def __init__(self, context: SourceReaderContext, sources: tuple[Source[Any], ...]) -> None:
        self.context = context
        self.sources = sources
        self.index = -1
        self.current: SourceReader[Any] | None = None
        self.started = False
        #: Splits of later sources, held until the current reader has ended.
        self.held: list[HybridSplit] = []
        self.no_more = False

    def _open(self, index: int, splits: list[Any]) -> None:
        if self.current is not None:
            self.current.close()
        self.index = index
        self.current = self.sources[index].create_reader(self.context)
        if splits:
            self.current.add_splits(splits)
        if self.started:
            self.current.start()

    def start(self) -> None:
        self.started = True
        if self.current is None:
            self._open(0, [])
        else:
            assert self.current is not None
            self.current.start()

    def add_splits(self, splits: list[HybridSplit]) -> None:
        for split in splits:
            if self.current is None:
                self._open(split.source_index, [split.split])
            elif split.source_index == self.index and not self.held:
                self.current.add_splits([split.split])
            elif split.source_index > self.index:
                if not self.held:
                    self.current.notify_no_more_splits()
                self.held.append(split)
            else:
                raise ValueError(
                    f"HybridSource (subtask {self.context.index_of_subtask()}): split "
                    f"{split!r} of source {split.source_index} arrived while reading source "
                    f"{self.index}"
                )
        self.context.notify_available()

    def notify_no_more_splits(self) -> None:
        self.no_more = True
        if self.current is not None and not self.held:
            self.current.notify_no_more_splits()

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        assert self.current is not None, "poll_next() before start()"
        status = self.current.poll_next(output)
        if status is not InputStatus.END_OF_INPUT:
            return status
        if not self.held:
            return InputStatus.END_OF_INPUT  # the last source ended (no_more was passed on)
        index = self.held[0].source_index
        now = [s.split for s in self.held if s.source_index == index]
        self.held = [s for s in self.held if s.source_index != index]
        self._open(index, now)
        if self.held or self.no_more:
            assert self.current is not None
            self.current.notify_no_more_splits()
        return InputStatus.MORE_AVAILABLE

    def snapshot_state(self, checkpoint_id: int) -> list[HybridSplit]:
        mine = [] if self.current is None else self.current.snapshot_state(checkpoint_id)
        return [HybridSplit(self.index, s) for s in mine] + list(self.held)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.current is not None:
            self.current.notify_checkpoint_complete(checkpoint_id)

    def close(self) -> None:
        if self.current is not None:
            self.current.close()


class HybridSource(Source[HybridSplit]):
    """PyFlink's ``HybridSource``: build with ``HybridSource.builder(first).add_source(...)``.

    Immutable; pickled to the JobMaster and every subtask. Bounded when every source is."""

    def __init__(self, sources: tuple[Source[Any], ...]) -> None:
        bad = [s for s in sources if not isinstance(s, Source)]
        if bad or not sources:
            raise TypeError(f"HybridSource: expected FLIP-27 sources, got {list(sources)!r}")
        unbounded = [
            s for s in sources[:-1] if s.get_boundedness() is not Boundedness.BOUNDED
        ]  # fmt: skip
        if unbounded:
            raise ValueError(
                f"HybridSource: only the last source may be unbounded, but {unbounded!r} is "
                f"not bounded (it would never end, so later sources would never be read)"
            )
        self.sources = tuple(sources)

    @staticmethod
    def builder(first_source: Source[Any]) -> HybridSourceBuilder:
        return HybridSourceBuilder(first_source)

    def get_boundedness(self) -> Boundedness:
        return self.sources[-1].get_boundedness()

    def create_reader(self, context: SourceReaderContext) -> SourceReader[HybridSplit]:
        return HybridSourceReader(context, self.sources)

    def create_enumerator(
        self, context: SplitEnumeratorContext[HybridSplit]
    ) -> SplitEnumerator[HybridSplit]:
        return HybridEnumerator(context, self.sources)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[HybridSplit], checkpoint: Any
    ) -> SplitEnumerator[HybridSplit]:
        if not isinstance(checkpoint, HybridEnumeratorState):
            raise TypeError(
                f"HybridSource: cannot restore the enumerator from "
                f"{type(checkpoint).__name__} (not a hybrid source checkpoint)"
            )
        return HybridEnumerator(context, self.sources, checkpoint)

    def __repr__(self) -> str:
        return f"HybridSource({list(self.sources)!r})"


class HybridSourceBuilder:
    """Collects the sources in reading order; ``build()`` checks them."""

    def __init__(self, first_source: Source[Any]) -> None:
        self._sources: list[Source[Any]] = [first_source]

    def add_source(self, source: Source[Any]) -> HybridSourceBuilder:
        self._sources.append(source)
        return self

    def build(self) -> HybridSource:
        return HybridSource(tuple(self._sources))
