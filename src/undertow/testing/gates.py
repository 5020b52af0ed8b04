"""Gates a test opens for a running job: premises built in rather than hoped for from timing.

* :class:`CheckpointGate`: a scheduled failure (``FailingMap(gate=...)``) fires only once a
  checkpoint the test named has completed: a test that needs the restored checkpoint to have
  a property seen only from outside (REST) opens the gate at the first checkpoint with it;
  the failure then restores that checkpoint or a newer one.
* :class:`SourceHold`: each reader of an :class:`~undertow.testing.oracle.OracleSource` with
  ``hold=`` stops after ``after_records`` records of its attempt until the test releases it,
  answering ``NOTHING_AVAILABLE`` meanwhile (its mailbox runs: barriers, savepoints, RPC), so
  a savepoint taken before the release finds every source unfinished, and one taken after
  :meth:`SourceHold.wait_held` finds every reader's records emitted.

Threading and placement: pickled to the workers with the job (threads, worker processes, Spark
on this machine); the test and the workers share state through files in ``directory`` written
by an atomic rename. A worker reads them from its task thread, at most every ``POLL_S``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from undertow.connectors.source import (
    InputStatus,
    IteratorSourceReader,
    ReaderOutput,
    SourceReaderContext,
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
    :meth:`release`; :meth:`reader` builds the held reader (``OracleSource(hold=...)``)."""

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

    def _mark_held(self, index: int) -> None:
        Path(self.released_marker).with_name(f"source-held-{index}").touch()

    def reader(self, context: SourceReaderContext, batch_size: int,
               records_per_second: float | None) -> IteratorSourceReader:  # fmt: skip
        return HeldReader(context, self, batch_size, records_per_second)


class HeldReader(IteratorSourceReader):
    """An :class:`IteratorSourceReader` that answers ``NOTHING_AVAILABLE`` once it emitted
    its hold's ``after_records`` in this attempt, until the hold is released. Its batches
    never cross the limit, so the position at the hold is exactly ``after_records``."""

    def __init__(self, context: SourceReaderContext, hold: SourceHold, batch_size: int,
                 records_per_second: float | None) -> None:  # fmt: skip
        super().__init__(context, batch_size, records_per_second)
        self.hold = hold
        self._free = False
        self._marked = False
        self._looked_at = 0.0
        self._full_batch = self.batch_size

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        if not self._free:
            left = self.hold.after_records - self._emitted
            if left <= 0:
                if not self._marked:
                    self._marked = True
                    self.hold._mark_held(self.context.index_of_subtask())
                now = time.monotonic()
                if now - self._looked_at < POLL_S:
                    return InputStatus.NOTHING_AVAILABLE
                self._looked_at = now
                if not self.hold.released():
                    return InputStatus.NOTHING_AVAILABLE
                self._free = True
                self.batch_size = self._full_batch
            else:
                self.batch_size = min(self._full_batch, left)
        return super().poll_next(output)
