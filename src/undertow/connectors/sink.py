"""The sink contract (Flink's Sink V2): a writer per subtask, optionally a committer.

* :class:`SinkWriter` receives records (``write``) and flushes (``flush``). A writer of a
  two-phase-commit sink also produces *committables* (``prepare_commit``): descriptions of
  data written but not yet visible (a pending file, an open transaction).
* :class:`Committer` makes committables visible (``commit``). Commit must be idempotent: the
  same committable may be committed again after a failure, and must not duplicate data.

Writer state (Flink's ``StatefulSinkWriter`` / ``SupportsWriterState``): a writer may also keep
state of its own across checkpoints, for what it has written but not yet handed out as a
committable (an open part file it resumes after a failure). ``snapshot_state(n)`` runs after
``prepare_commit`` for checkpoint ``n``, in the same synchronous step, so the two describe one
cut; after a restore the sink builds the writer with ``restore_writer(context, states)``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from undertow.core.config import Configuration


@runtime_checkable
class OwnedBySubtask(Protocol):
    """A committable or writer state of one subtask's share of the output (a part file named
    after it, a transaction of its id): after a rescale it goes to new subtask ``subtask %
    parallelism``. A capability: an entry that lacks it (or whose ``subtask`` is not an int)
    goes with the subtask that snapshotted it."""

    @property
    def subtask(self) -> int: ...


class DeliveryGuarantee(enum.Enum):
    """What a sink promises about each record after failures.

    * ``EXACTLY_ONCE``: visible once, also after a restore (the file and Delta sinks, and
      the Kafka sink so configured: output becomes visible at the commit of the checkpoint
      that covers it).
    * ``AT_LEAST_ONCE``: may be visible more than once after a restore, never lost.
    * ``NONE``: best effort: records may be lost or duplicated.
    """

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


class SinkWriterContext(ABC):
    @abstractmethod
    def subtask_index(self) -> int: ...

    @abstractmethod
    def parallelism(self) -> int: ...

    @abstractmethod
    def attempt_number(self) -> int: ...

    def operator_name(self) -> str | None:
        """The name of the sink's operator in the job (for error messages), or ``None``
        outside a job."""
        return None

    def restored_checkpoint_id(self) -> int | None:
        """The checkpoint this writer's subtask was restored from, or ``None`` (a fresh start).

        Flink's ``WriterInitContext.getRestoredCheckpointId``: a writer may clean up what
        earlier attempts left behind."""
        return None

    def configuration(self) -> Configuration | None:
        """The job's configuration (checkpoint interval and timeout), or ``None`` outside a
        job."""
        return None


class SinkWriter(ABC):
    @abstractmethod
    def write(self, element: Any, timestamp: int | None) -> None: ...

    def write_batch(self, elements: list[Any], timestamps: list[Any] | None) -> None:
        """Write many records; override for speed."""
        if timestamps is None:
            for e in elements:
                self.write(e, None)
        else:
            for e, ts in zip(elements, timestamps):
                self.write(e, ts)

    def flush(self, end_of_input: bool) -> None:
        pass

    def prepare_commit(self) -> list[Any]:
        """Committables for what was written since the last call (two-phase sinks)."""
        return []

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        """The writer's own state for checkpoint ``checkpoint_id`` (module doc); picklable.

        Called on the task thread right after ``prepare_commit`` for the same checkpoint,
        before any further ``write``. It may do blocking I/O that must finish before the
        checkpoint can complete (a file sink fsyncs its open part files)."""
        return []

    def close(self) -> None:
        pass


class WriteAheadSinkWriter(SinkWriter):
    """A writer that keeps what it wrote in its writer state and makes it visible itself.

    Lifecycle, all on the task thread: ``prepare_commit`` closes the batch of the coming
    checkpoint, ``snapshot_state(n)`` files it under ``n``, ``notify_checkpoint_complete(n)``
    commits every filed batch ``<= n``; a restored writer commits what its restored state holds
    before it takes input. Without a final checkpoint (checkpointing off) the sink operator
    calls ``commit_at_end_of_input`` after the last ``prepare_commit``."""

    @abstractmethod
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...

    @abstractmethod
    def commit_at_end_of_input(self) -> None: ...


class Committer(ABC):
    @abstractmethod
    def commit(self, committables: list[Any]) -> None:
        """Make ``committables`` visible; idempotent."""

    def close(self) -> None:
        pass


@runtime_checkable
class SinkLike(Protocol):
    """What the sink operator calls on a sink: a :class:`Sink`, or an object shaped like one.
    A runtime Protocol check, made once when the sink is added (``sink_to``)."""

    def create_writer(self, context: SinkWriterContext) -> SinkWriter: ...

    def restore_writer(
        self, context: SinkWriterContext, recovered_state: list[Any]
    ) -> SinkWriter: ...

    def create_committer(self) -> Committer | None: ...


@runtime_checkable
class EncodesRecords(Protocol):
    """A sink that writes each record through an ``Encoder`` (a row-format ``FileSink``):
    ``sink_to`` hands a typed stream one whose simple string encoder writes Java's text of
    the records, as Flink's does. A runtime Protocol check, once per ``sink_to``."""

    encoder: Any

    def with_encoder(self, encoder: Any) -> Any: ...


class Sink(ABC):
    @abstractmethod
    def create_writer(self, context: SinkWriterContext) -> SinkWriter: ...

    def restore_writer(self, context: SinkWriterContext, recovered_state: list[Any]) -> SinkWriter:
        """A writer for a restored subtask, given the writer states routed to it (module doc;
        empty if its writers keep none). The default ignores them: writers without state."""
        return self.create_writer(context)

    def create_committer(self) -> Committer | None:
        """A committer for two-phase-commit sinks; ``None`` for at-least-once sinks."""
        return None
