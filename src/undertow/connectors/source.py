"""The source contract (Flink's FLIP-27): a split enumerator on the master, readers in subtasks.

* :class:`SplitEnumerator` runs in the JobMaster (the driver). It discovers splits and assigns
  them to reader subtasks when they ask (``handle_split_request``) or on its own initiative.
  Its ``snapshot_state`` is the enumerator part of a checkpoint (splits not yet assigned).
* :class:`SourceReader` runs in each source subtask, on the task's loop thread. The task calls
  ``poll_next(output)`` whenever it may emit; the reader emits a *batch* of records (at most a
  few thousand, so the task can serve mails in between) and says whether more is available
  now, nothing is available (the task waits until ``context.notify_available()`` or a short
  back-off), or the input ended. ``snapshot_state`` returns the splits it owns, with their
  current positions: restoring them resumes exactly after the last emitted record.

Readers must not block: sources that wait for I/O do it in their own thread and call
``notify_available()``.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeGuard, TypeVar, runtime_checkable

SplitT = TypeVar("SplitT", bound="SourceSplit")
T = TypeVar("T")


class Boundedness(enum.Enum):
    BOUNDED = 0
    CONTINUOUS_UNBOUNDED = 1


class InputStatus(enum.Enum):
    MORE_AVAILABLE = 0
    NOTHING_AVAILABLE = 1
    END_OF_INPUT = 2


class SourceSplit(ABC):
    @abstractmethod
    def split_id(self) -> str: ...


class ReaderOutput(Protocol):
    """Where a reader emits. The task's output is also a :class:`DemandingReaderOutput`."""

    def collect(self, value: Any, timestamp: int | None = None) -> None: ...

    def collect_batch(self, values: list[Any], timestamps: list[Any] | None = None) -> None: ...

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None = None) -> None:
        """Emit one record to the side output ``OutputTag(tag_id)`` of the source's stream
        (``stream.get_side_output(tag)``); dropped if nobody reads that side output."""


@runtime_checkable
class DemandingReaderOutput(ReaderOutput, Protocol):
    """A reader output that says how much it wants: ``records_wanted`` (an int or ``None``
    for no limit) is a soft limit on the records one ``poll_next`` call should emit, set by
    the task while buffer debloating keeps the output buffers small; batching readers honour
    it. The task's source output implements it."""

    records_wanted: int | None


def is_demanding(output: ReaderOutput) -> TypeGuard[DemandingReaderOutput]:
    """Whether ``output`` says how much it wants (a :class:`DemandingReaderOutput`). Costly (a
    runtime Protocol check): readers ask once per output object."""
    return isinstance(output, DemandingReaderOutput)


class RecordsWanted:
    """The ``records_wanted`` of the outputs a batching reader is handed, the one home of the
    readers' demand check: whether an output is a :class:`DemandingReaderOutput` (a runtime
    Protocol check: ~0.1 ms measured at load 10) is asked once per output object, not per
    poll. Threading: the reader's (the task's loop thread)."""

    __slots__ = ("_demanding", "_output")

    def __init__(self) -> None:
        self._output: ReaderOutput | None = None
        self._demanding: DemandingReaderOutput | None = None

    def of(self, output: ReaderOutput) -> int | None:
        """``output`` 's ``records_wanted`` now, or ``None`` (no limit) if it does not say."""
        if output is not self._output:
            self._output = output
            self._demanding = output if is_demanding(output) else None
        demanding = self._demanding
        return None if demanding is None else demanding.records_wanted


@runtime_checkable
class SplitReaderOutput(ReaderOutput, Protocol):
    """A reader output that keeps one watermark generator per split (Flink's
    ``createOutputForSplit``): a reader of several partitions emits each batch with its split's
    id, so the source's watermark is the minimum over its splits and idle splits do not hold it
    back. ``register_split`` when the reader takes a split (it holds the watermark back until
    it emits or goes idle), ``release_split`` once it is finished. The task's source output
    implements it; readers fall back to ``collect_batch`` on outputs that do not."""

    def register_split(self, split_id: str) -> None: ...

    def collect_split_batch(
        self, split_id: str, values: list[Any], timestamps: list[Any] | None = None
    ) -> None: ...

    def release_split(self, split_id: str) -> None: ...


class SourceReaderContext(ABC):
    @abstractmethod
    def index_of_subtask(self) -> int: ...

    @abstractmethod
    def parallelism(self) -> int: ...

    @abstractmethod
    def send_split_request(self) -> None:
        """Ask the enumerator for a split; the answer arrives as ``add_splits`` or
        ``notify_no_more_splits``."""

    @abstractmethod
    def notify_available(self) -> None:
        """Wake the task after ``poll_next`` returned ``NOTHING_AVAILABLE``; thread-safe."""


class SourceReader(ABC, Generic[SplitT]):
    def start(self) -> None:
        """Called once after the reader is created (and restored)."""

    @abstractmethod
    def poll_next(self, output: ReaderOutput) -> InputStatus: ...

    @abstractmethod
    def add_splits(self, splits: list[SplitT]) -> None: ...

    @abstractmethod
    def notify_no_more_splits(self) -> None: ...

    def snapshot_state(self, checkpoint_id: int) -> list[SplitT]:
        return []

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def close(self) -> None:
        pass

    def poll_again_after_s(self) -> float:
        """How long after :meth:`poll_next` said ``NOTHING_AVAILABLE`` the task calls it again
        although ``context.notify_available()`` was not called (at most one such call is
        pending per task). The default, :data:`POLL_AGAIN_AFTER_S`, suits a reader that may
        not notify. A reader that notifies whenever records (or its end) arrive, one fed by a
        thread of its own, returns the longest it may go without a call: a task polled every
        5 ms for nothing wakes 200 times a second (Kafka's reader: docs/kafka.md)."""
        return POLL_AGAIN_AFTER_S


#: A reader that said ``NOTHING_AVAILABLE`` is asked again after this long by default (its
#: :meth:`SourceReader.poll_again_after_s`), even if it did not notify.
POLL_AGAIN_AFTER_S = 0.005


class SplitEnumeratorContext(ABC, Generic[SplitT]):
    """What an enumerator may do. Threading: the enumerator's thread only (the JobMaster's
    loop), except the ``call`` of :meth:`call_async`."""

    @abstractmethod
    def current_parallelism(self) -> int: ...

    @abstractmethod
    def registered_readers(self) -> list[int]: ...

    @abstractmethod
    def assign_split(self, split: SplitT, subtask: int) -> None: ...

    @abstractmethod
    def signal_no_more_splits(self, subtask: int) -> None: ...

    def call_async(
        self, call: Callable[[], T], handler: Callable[[T | None, BaseException | None], None]
    ) -> None:
        """Flink's ``callAsync``: run ``call`` (blocking I/O: listing a broker's partitions)
        where it cannot stall the enumerator's thread, then ``handler(result, None)`` or
        ``handler(None, error)`` on that thread; what the handler raises fails the job. The
        JobMaster's context runs ``call`` on a daemon thread; this default (an enumerator
        tested alone) runs both at once, so the handler's error reaches the caller."""
        try:
            result = call()
        except Exception as err:
            handler(None, err)
            return
        handler(result, None)


class FirstDiscovery:
    """An enumerator's first discovery (Kafka's partitions, the file source's files), run off
    its thread through :meth:`SplitEnumeratorContext.call_async`: until it ends, a split
    request is remembered (each reader once, in the order they asked) instead of answered, and
    a checkpoint records ``done`` False so that its restore discovers again."""

    def __init__(self, done: bool) -> None:
        self.done = done
        self._waiting: list[int] = []

    def defer(self, subtask: int) -> bool:
        """True, remembering ``subtask``'s request, while the first discovery runs."""
        if self.done:
            return False
        if subtask not in self._waiting:
            self._waiting.append(subtask)
        return True

    def end(self) -> list[int]:
        """It ended: the readers that asked meanwhile, in the order they asked."""
        self.done = True
        waiting, self._waiting = self._waiting, []
        return waiting


class DiscoveryCheckpoint(Protocol):
    """An enumerator's checkpoint that records its :class:`FirstDiscovery` (a frozen
    dataclass): format ``version`` 2 has ``initial_discovery_done``, format 1 did not."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def version(self) -> int: ...

    @property
    def initial_discovery_done(self) -> bool: ...


CheckpointT = TypeVar("CheckpointT", bound=DiscoveryCheckpoint)


def restore_discovery_state(
    checkpoint: Any, state_type: type[CheckpointT], what: str, kind: str
) -> CheckpointT:
    """``checkpoint`` as a ``state_type`` of format 2: one of format 1 (taken before format 2
    existed, so after the first discovery had ended before the job ran) gets
    ``initial_discovery_done`` True. Anything else is a ``TypeError`` naming ``what`` (the
    source) and ``kind`` (its checkpoints')."""
    if not isinstance(checkpoint, state_type) or checkpoint.version not in (1, 2):
        raise TypeError(
            f"{what}: cannot restore the enumerator from {type(checkpoint).__name__} "
            f"(not a {kind} checkpoint of format 1 or 2)"
        )
    if checkpoint.version == 1:  # its pickle has no initial_discovery_done: replace() sets it
        return dataclasses.replace(checkpoint, version=2, initial_discovery_done=True)
    return checkpoint


class SplitEnumerator(ABC, Generic[SplitT]):
    def start(self) -> None:
        pass

    @abstractmethod
    def handle_split_request(self, subtask_id: int, requester_hostname: str | None) -> None: ...

    @abstractmethod
    def add_splits_back(self, splits: list[SplitT], subtask_id: int) -> None: ...

    def add_reader(self, subtask_id: int) -> None:
        pass

    def snapshot_state(self, checkpoint_id: int) -> Any:
        return None

    def close(self) -> None:
        pass


@runtime_checkable
class SourceLike(Protocol):
    """What ``from_source`` needs of a source: the part of :class:`Source` a job graph and the
    runtime mode read, so that an object shaped like a FLIP-27 source is accepted without
    subclassing. A runtime Protocol check: made once, when the source is added."""

    def get_boundedness(self) -> Boundedness: ...

    def create_reader(self, context: SourceReaderContext) -> Any: ...

    def create_enumerator(self, context: SplitEnumeratorContext[Any]) -> Any: ...


def is_bounded(source: SourceLike) -> bool:
    """Whether ``source`` says it is bounded (by name, so that a ``Boundedness`` of another
    enum with the same members counts too; None counts as unbounded)."""
    boundedness = source.get_boundedness()
    return boundedness is not None and boundedness.name == "BOUNDED"


@runtime_checkable
class DeclaresProducedType(Protocol):
    """A source that declares the type of its records (Flink's ``ResultTypeQueryable``);
    every :class:`Source` does (``None``: Python objects)."""

    def get_produced_type(self) -> Any: ...


def produced_type(source: SourceLike) -> Any:
    """The record type ``source`` declares, which ``from_source`` gives its stream when the
    caller names none; ``None`` (Python objects) for a source shaped like a FLIP-27 source
    that declares none. A runtime Protocol check, once per ``from_source``."""
    return source.get_produced_type() if isinstance(source, DeclaresProducedType) else None


class Source(ABC, Generic[SplitT]):
    def get_produced_type(self) -> Any:
        """The type of the records this source emits (``None``: Python objects)."""
        return None

    @abstractmethod
    def get_boundedness(self) -> Boundedness: ...

    @abstractmethod
    def create_reader(self, context: SourceReaderContext) -> SourceReader[SplitT]: ...

    @abstractmethod
    def create_enumerator(
        self, context: SplitEnumeratorContext[SplitT]
    ) -> SplitEnumerator[SplitT]: ...

    @abstractmethod
    def restore_enumerator(
        self, context: SplitEnumeratorContext[SplitT], checkpoint: Any
    ) -> SplitEnumerator[SplitT]:
        """An enumerator continuing from ``checkpoint`` (what ``snapshot_state`` returned):
        it must not hand out again splits that readers had taken before the checkpoint."""


# --- reusable building blocks -------------------------------------------------------------


class IteratorSplit(SourceSplit):
    """A split that hands out its records in batches and remembers how far it got.

    ``next_batch`` advances the position; a snapshot of the split (``copy``) resumes right
    after the last record handed out.
    """

    @abstractmethod
    def next_batch(self, limit: int) -> list[Any]:
        """Up to ``limit`` records from the current position on (empty: the split is done)."""

    def copy(self) -> IteratorSplit:
        return copy.copy(self)


class JobBoundSplit(IteratorSplit):
    """An iterator split whose records come from something of the job (a generator function,
    a collection): ``payload``, bound by :class:`JobBoundReader` whenever a reader takes the
    split, never part of the split's state. So a checkpoint holds positions only (no user code,
    no copy of the data per checkpoint, as Flink's splits hold numbers only), and a restored
    job reads with its own code and data."""

    payload: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "payload": None}

    def bound_payload(self) -> Any:
        if self.payload is None:
            raise RuntimeError(f"{type(self).__name__} {self.split_id()}: no reader bound it")
        return self.payload


class StaticSplitEnumerator(SplitEnumerator[SplitT]):
    """Hands out a fixed list of splits, one per request, then signals no more splits.

    Its checkpoint is the list of splits not handed out yet; pass it back as ``splits`` to
    restore.
    """

    def __init__(self, context: SplitEnumeratorContext[SplitT], splits: list[SplitT]) -> None:
        self.context = context
        self.remaining = list(splits)

    def handle_split_request(self, subtask_id: int, requester_hostname: str | None) -> None:
        if self.remaining:
            self.context.assign_split(self.remaining.pop(0), subtask_id)
        else:
            self.context.signal_no_more_splits(subtask_id)

    def add_splits_back(self, splits: list[SplitT], subtask_id: int) -> None:
        self.remaining[:0] = splits

    def snapshot_state(self, checkpoint_id: int) -> Any:
        return list(self.remaining)


class IteratorSourceReader(SourceReader[Any]):
    """Reads :class:`IteratorSplit` s one after another, ``batch_size`` records per poll, at
    most ``records_per_second`` records a second (``None``: as fast as the task takes them).

    Never blocks: over the rate it answers ``NOTHING_AVAILABLE`` and the task retries after a
    short back-off.
    """

    def __init__(
        self,
        context: SourceReaderContext,
        batch_size: int = 1024,
        records_per_second: float | None = None,
    ) -> None:
        self.context = context
        self.rate = records_per_second
        self.batch_size = (
            batch_size if records_per_second is None
            else max(1, min(batch_size, int(records_per_second / 50)))
        )  # fmt: skip
        self.splits: list[IteratorSplit] = []
        self.current: IteratorSplit | None = None
        self.no_more_splits = False
        self._requested = False
        self._emitted = 0
        self._started_at = 0.0
        self._wanted = RecordsWanted()

    def start(self) -> None:
        if not self.splits:
            self._request()

    def _request(self) -> None:
        if not self._requested:
            self._requested = True
            self.context.send_split_request()

    def add_splits(self, splits: list[Any]) -> None:
        self.splits.extend(splits)
        self._requested = False
        self.context.notify_available()

    def notify_no_more_splits(self) -> None:
        self.no_more_splits = True
        self._requested = False
        self.context.notify_available()

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        if self.rate is not None:
            now = time.monotonic()
            if not self._started_at:
                self._started_at = now
            if self._emitted > (now - self._started_at) * self.rate:
                return InputStatus.NOTHING_AVAILABLE
        while True:
            if self.current is None:
                if not self.splits:
                    if self.no_more_splits:
                        return InputStatus.END_OF_INPUT
                    self._request()
                    return InputStatus.NOTHING_AVAILABLE
                self.current = self.splits.pop(0)
            wanted = self._wanted.of(output)
            limit = self.batch_size if wanted is None else max(1, min(self.batch_size, wanted))
            batch = self.current.next_batch(limit)
            if batch:
                self._emitted += len(batch)
                output.collect_batch(batch, None)
                return InputStatus.MORE_AVAILABLE
            self.current = None

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        """Copies of the splits this reader owns, at the positions reached so far."""
        owned = ([self.current] if self.current is not None else []) + self.splits
        return [split.copy() for split in owned]


class JobBoundReader(IteratorSourceReader):
    """Reads :class:`JobBoundSplit` s, binding the job's ``payload`` to each split it takes
    (new or restored)."""

    def __init__(self, context: SourceReaderContext, payload: Any, batch_size: int = 1024,
                 records_per_second: float | None = None) -> None:  # fmt: skip
        super().__init__(context, batch_size, records_per_second)
        self.payload = payload

    def add_splits(self, splits: list[Any]) -> None:
        for split in splits:
            split.payload = self.payload
        super().add_splits(splits)
