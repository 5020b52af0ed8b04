"""Gates a test opens for a running job: premises built in rather than hoped for from timing.

* :class:`CheckpointGate`: a scheduled failure (``FailingMap(gate=...)``) fires only once a
  checkpoint the test named has completed: a test that needs the restored checkpoint to have
  a property seen only from outside (REST) opens the gate at the first checkpoint with it;
  the failure then restores that checkpoint or a newer one.
* :class:`SourceHold`: each reader of a held source (any source via :meth:`SourceHold.source`;
  ``OracleSource(hold=...)``) stops after ``after_records`` records of its attempt until the
  test releases it (its mailbox runs: barriers, savepoints, RPC), so a savepoint taken after
  :meth:`SourceHold.wait_held` finds every reader's records emitted and none finished.

Threading and placement: pickled to the workers with the job (threads, worker processes, Spark
on this machine); the test and the workers share state through files in ``directory`` written
by an atomic rename. A worker reads them from its task thread, at most every ``POLL_S``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from undertow.connectors.source import (
    Boundedness,
    DemandingReaderOutput,
    InputStatus,
    IteratorSourceReader,
    ReaderOutput,
    Source,
    SourceReader,
    SourceReaderContext,
    SplitEnumerator,
    SplitEnumeratorContext,
    SplitReaderOutput,
    SplitT,
    is_demanding,
)

#: How often a worker looks at a gate's file while it is closed.
POLL_S = 0.005


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


class CheckpointGate:
    """Opened by the test at a completed checkpoint id; :meth:`admits` tells a worker whether
    a checkpoint it was told completed is that one or newer.

    Lifecycle: closed until :meth:`open`; the first :meth:`open` wins (later ones are ignored),
    so the gate's id is the first checkpoint the test saw with the property it waits for.
    """

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = str(directory / "gate-opened-at")
        self._opened_at: int | None = None
        self._looked_at = 0.0

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = str(state["path"])
        self._opened_at = None
        self._looked_at = 0.0

    def open(self, checkpoint_id: int) -> None:
        """Admit ``checkpoint_id`` and every newer one (test side; once)."""
        if not os.path.exists(self.path):
            _write_atomically(Path(self.path), str(int(checkpoint_id)))

    def opened_at(self) -> int | None:
        """The checkpoint the gate was opened at, or ``None`` (closed)."""
        if self._opened_at is None:
            now = time.monotonic()
            if now - self._looked_at >= POLL_S:
                self._looked_at = now
                try:
                    self._opened_at = int(Path(self.path).read_text())
                except FileNotFoundError:
                    pass
        return self._opened_at

    def admits(self, completed: int) -> bool:
        """Whether checkpoint ``completed`` (told complete) is the gate's or newer."""
        opened = self.opened_at()
        return opened is not None and completed >= opened


class SourceHold:
    """Holds every reader after ``after_records`` records of its attempt until
    :meth:`release`. Any source can be held: :meth:`source` wraps a
    :class:`~undertow.connectors.source.Source` (a Kafka source, a file source) so that its
    readers are :class:`HeldReader` s; :meth:`reader` builds a held
    :class:`~undertow.connectors.source.IteratorSourceReader` (``OracleSource(hold=...)``)."""

    def __init__(self, directory: Path, after_records: int) -> None:
        if after_records < 1:
            raise ValueError(f"SourceHold: after_records must be >= 1, got {after_records}")
        directory.mkdir(parents=True, exist_ok=True)
        self.released_marker = str(directory / "source-released")
        self.after_records = after_records

    def release(self) -> None:
        """Let the readers go on (test side)."""
        _write_atomically(Path(self.released_marker), "released")

    def released(self) -> bool:
        return os.path.exists(self.released_marker)

    def held_readers(self) -> int:
        """How many readers reached the hold so far (test side)."""
        return len(list(Path(self.released_marker).parent.glob("source-held-*")))

    def wait_held(self, readers: int, timeout_s: float) -> bool:
        """Wait until ``readers`` readers reached the hold (their records went out before
        anything the test does next); False if they did not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.held_readers() < readers:
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)
        return True

    def mark_held(self, subtask: int) -> None:
        """The reader of ``subtask`` reached the hold (reader side: :class:`HeldReader`, once
        per attempt). Idempotent: :meth:`held_readers` counts subtasks, not calls."""
        Path(self.released_marker).with_name(f"source-held-{subtask}").touch()

    def source(self, source: Source[SplitT]) -> HeldSource[SplitT]:
        """``source`` with every reader it creates held (:class:`HeldSource`)."""
        return HeldSource(source, self)

    def reader(self, context: SourceReaderContext, batch_size: int,
               records_per_second: float | None) -> HeldReader[Any]:  # fmt: skip
        """A held :class:`IteratorSourceReader`: it honours the output's ``records_wanted``,
        so its position at the hold is exactly ``after_records``."""
        inner = IteratorSourceReader(context, batch_size, records_per_second)
        return HeldReader(inner, self, context)


class HeldSource(Source[SplitT]):
    """A :class:`~undertow.connectors.source.Source` whose readers are ``source`` 's readers
    held by ``hold`` (:class:`HeldReader`); its boundedness and enumerator are ``source`` 's.
    Pickled with the job like the source it wraps."""

    def __init__(self, source: Source[SplitT], hold: SourceHold) -> None:
        self.source = source
        self.hold = hold

    def get_boundedness(self) -> Boundedness:
        return self.source.get_boundedness()

    def create_reader(self, context: SourceReaderContext) -> HeldReader[SplitT]:
        return HeldReader(self.source.create_reader(context), self.hold, context)

    def create_enumerator(self, context: SplitEnumeratorContext[SplitT]) -> SplitEnumerator[SplitT]:
        return self.source.create_enumerator(context)

    def restore_enumerator(
        self, context: SplitEnumeratorContext[SplitT], checkpoint: Any
    ) -> SplitEnumerator[SplitT]:
        return self.source.restore_enumerator(context, checkpoint)


class _CountingOutput:
    """The output a :class:`HeldReader` hands its reader while holding is ahead: it counts
    the records emitted and passes them on to ``output``. It is a
    :class:`~undertow.connectors.source.DemandingReaderOutput` whose ``records_wanted`` is
    at most what is left before the hold (and ``output`` 's own limit, if it has one), and a
    :class:`~undertow.connectors.source.SplitReaderOutput` that passes the per-split calls on
    if ``output`` is one (else a split's batch goes to ``collect_batch``, as a reader does
    with an output that has no splits). Threading: the task's loop thread, like the reader."""

    def __init__(self, output: ReaderOutput) -> None:
        self.output = output
        self.demanding: DemandingReaderOutput | None = output if is_demanding(output) else None
        self.per_split: SplitReaderOutput | None = (
            output if isinstance(output, SplitReaderOutput) else None
        )
        self.records_wanted: int | None = None
        self.emitted = 0

    def limit(self, left: int) -> None:
        """Before a reader call: ``left`` records may go out before the hold."""
        wanted = None if self.demanding is None else self.demanding.records_wanted
        self.records_wanted = left if wanted is None else min(wanted, left)

    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.emitted += 1
        self.output.collect(value, timestamp)

    def collect_batch(self, values: list[Any], timestamps: list[Any] | None = None) -> None:
        self.emitted += len(values)
        self.output.collect_batch(values, timestamps)

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None = None) -> None:
        self.output.collect_side(tag_id, value, timestamp)

    def register_split(self, split_id: str) -> None:
        if self.per_split is not None:
            self.per_split.register_split(split_id)

    def collect_split_batch(
        self, split_id: str, values: list[Any], timestamps: list[Any] | None = None
    ) -> None:
        if self.per_split is None:
            self.collect_batch(values, timestamps)
            return
        self.emitted += len(values)
        self.per_split.collect_split_batch(split_id, values, timestamps)

    def release_split(self, split_id: str) -> None:
        if self.per_split is not None:
            self.per_split.release_split(split_id)


class HeldReader(SourceReader[SplitT]):
    """Any :class:`~undertow.connectors.source.SourceReader` held by a :class:`SourceHold`:
    once ``reader`` emitted the hold's ``after_records`` in this attempt (records collected,
    side outputs not counted), it answers ``NOTHING_AVAILABLE`` without calling ``reader``
    until the hold is released, and is asked again every :data:`POLL_S` meanwhile (nobody
    notifies it of a release). The task's mailbox runs throughout: barriers, savepoints, RPC.

    Where it stops: ``reader`` sees an output whose ``records_wanted`` is what is left before
    the hold; a reader that honours it (an :class:`IteratorSourceReader`) stops exactly at
    ``after_records``, one that emits what it fetched (Kafka's: up to its fetch size) stops
    after the call that reached the limit. Every other call (splits, snapshots, checkpoint
    notices, close) goes to ``reader`` unchanged, held or not.

    Threading and lifecycle: the task's loop thread, as ``reader``; created per attempt, so
    each attempt counts from 0, and an attempt that starts after the release is not held."""

    def __init__(
        self, reader: SourceReader[SplitT], hold: SourceHold, context: SourceReaderContext
    ) -> None:
        self.reader = reader
        self.hold = hold
        self.context = context
        self._free = False
        self._marked = False
        self._looked_at = 0.0
        self._counting: _CountingOutput | None = None

    def _counted(self) -> int:
        return 0 if self._counting is None else self._counting.emitted

    def holding(self) -> bool:
        """Whether this reader stopped at the hold and was not released yet."""
        if self._free or self._counted() < self.hold.after_records:
            return False
        if not self._marked:
            self._marked = True
            self.hold.mark_held(self.context.index_of_subtask())
        now = time.monotonic()
        if now - self._looked_at < POLL_S:
            return True
        self._looked_at = now
        self._free = self.hold.released()
        return not self._free

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        if self.holding():
            return InputStatus.NOTHING_AVAILABLE
        if self._free:
            return self.reader.poll_next(output)
        counting = self._counting
        if counting is None or counting.output is not output:  # one per output: readers
            counting = _CountingOutput(output)  # look at an output's capabilities once
            counting.emitted = self._counted()
            self._counting = counting
        counting.limit(self.hold.after_records - counting.emitted)
        return self.reader.poll_next(counting)

    def poll_again_after_s(self) -> float:
        wait = self.reader.poll_again_after_s()
        if self._free or self._counted() < self.hold.after_records:
            return wait
        return min(wait, POLL_S)  # held: look at the release again soon

    def start(self) -> None:
        self.reader.start()

    def add_splits(self, splits: list[SplitT]) -> None:
        self.reader.add_splits(splits)

    def notify_no_more_splits(self) -> None:
        self.reader.notify_no_more_splits()

    def snapshot_state(self, checkpoint_id: int) -> list[SplitT]:
        return self.reader.snapshot_state(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.reader.notify_checkpoint_complete(checkpoint_id)

    def close(self) -> None:
        self.reader.close()
