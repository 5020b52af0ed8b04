"""The records of ``execute_and_collect`` on their way to the client: held until they are final.

Each batch a collect sink sends carries the last checkpoint whose barrier the sink had passed
before it (0: none). With periodic checkpoints on (exactly once, as in Flink) a batch is held
until a checkpoint with a greater id completes, released when its attempt finishes and dropped
when it fails (the restart replays it); savepoints release nothing. With checkpoints off a batch
goes out at once, and a restart after a sink returned records ends that sink's iterator with
an error rather than repeat them. Every queue ends with :data:`END`. Why this is exactly once:
docs/design.md, "execute_and_collect". The bytes held per sink are bounded by a
:class:`~.collect_window.CollectWindow`, whose grants go to ``send_grant``.

Threading: ``add`` and the attempt hooks run on the JobMaster's loop, ``on_checkpoint_event``
on the thread the coordinator completes on, ``take`` on the client's; one lock guards all.
``send_grant`` is called from any of them, outside the lock (it must hand the grant to the
loop: the control connections are the loop's).
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from queue import Empty, Queue
from typing import Any

from undertow.core.errors import JobExecutionError
from undertow.runtime.checkpoint.events import CheckpointEvent, Completed
from undertow.runtime.master.collect_window import CollectWindow, Grant, WindowStatistics

#: The last item of every collect queue: the job ended.
END = object()


@dataclass(frozen=True, slots=True)
class CollectFailed:
    """A queue's last item instead of :data:`END`: the iterator raises ``error``."""

    error: JobExecutionError


@dataclass(frozen=True, slots=True)
class CollectStatistics:
    """One sink's results on the driver (bytes): its window now, the most it held that the
    reader had not taken outside an overdraft (checked at each arrival), the largest batch."""

    window: WindowStatistics
    peak_unread: int
    largest_batch: int


@dataclass(slots=True)
class _Held:
    """The batches of the running attempt not yet final: ``(after_checkpoint, payload)``."""

    attempt: int
    batches: list[tuple[int, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class _Sink:
    """One sink's queue (pickled batches, then :data:`END` or a :class:`CollectFailed`) and
    its window."""

    queue: Queue[Any]
    window: CollectWindow
    peak_unread: int = 0
    largest_batch: int = 0


def _no_grants(sink_id: str, grant: Grant) -> None:
    pass


class CollectResults:
    """Queues of collected records per sink, released as described in the module docstring.

    ``exactly_once``: the job takes periodic checkpoints (records are held until final).
    ``buffer_size``: each sink's window in bytes (``undertow.collect.buffer-size``);
    ``send_grant(sink_id, grant)``: tells the sink of ``grant.attempt`` its credit."""

    def __init__(
        self, exactly_once: bool, buffer_size: int = 32 * 1024 * 1024,
        send_grant: Callable[[str, Grant], None] = _no_grants,
    ) -> None:  # fmt: skip
        self.exactly_once = exactly_once
        self.buffer_size = buffer_size
        self._send_grant = send_grant
        self._lock = threading.Lock()
        self._sinks: dict[str, _Sink] = {}
        #: Grants decided under the lock, sent once it is released.
        self._pending: list[tuple[str, Grant]] = []
        #: The attempt whose sinks get credit (deployed, not ended); None between attempts.
        self._attempt: int | None = None
        self._held: dict[str, _Held] = {}
        #: Sinks that delivered records in the running attempt (checkpoints off).
        self._delivered: set[str] = set()
        #: Sinks whose iterator was told to raise: nothing more reaches them.
        self._failed: set[str] = set()
        self._ended = False

    # -- the client's thread -------------------------------------------------------------------
    def register(self, sink_id: str) -> None:
        """The client will read sink ``sink_id`` (any thread): its window opens, and while an
        attempt runs the sink is granted its first credit. Until then the sink has none."""
        with self._lock:
            self._sink(sink_id)
        self._send_pending()

    def take(self, sink_id: str, block: bool = True) -> Any:
        """The next item of sink ``sink_id`` (the client's thread): a list of records,
        :data:`END` or a :class:`CollectFailed`; None if not ``block`` and there is none.
        Taking returns its bytes to the window; finding nothing while blocking tells the
        window the reader waits. Records are unpickled here, on the reader's thread."""
        with self._lock:
            sink = self._sink(sink_id)
        try:
            item = sink.queue.get_nowait()
        except Empty:
            if not block:
                return None
            with self._lock:
                self._note(sink_id, sink.window.reader_waits())
            self._send_pending()
            item = sink.queue.get()
        if type(item) is not bytes:
            return item
        with self._lock:
            self._note(sink_id, sink.window.taken(len(item)))
        self._send_pending()
        return pickle.loads(item)

    def statistics(self, sink_id: str) -> CollectStatistics:
        """Sink ``sink_id``'s results on the driver now (any thread)."""
        with self._lock:
            sink = self._sink(sink_id)
            return CollectStatistics(sink.window.statistics(), sink.peak_unread,
                                     sink.largest_batch)  # fmt: skip

    # -- the JobMaster's loop and the coordinator --------------------------------------------
    def attempt_deployed(self, attempt: int) -> None:
        """``attempt``'s tasks were deployed: each sink starts it without credit and is
        granted what its window has free."""
        with self._lock:
            self._attempt = attempt
            for sink_id, sink in self._sinks.items():
                self._note(sink_id, sink.window.attempt_started(attempt))
        self._send_pending()

    def add(self, attempt: int, sink_id: str, after_checkpoint: int, payload: bytes) -> None:
        """Records (pickled) of ``attempt``'s sink, processed after checkpoint
        ``after_checkpoint``."""
        with self._lock:
            if self._ended or sink_id in self._failed:
                return
            sink = self._sink(sink_id)
            window = sink.window
            self._note(sink_id, window.received(attempt, len(payload), not self.exactly_once))
            sink.largest_batch = max(sink.largest_batch, len(payload))
            if not window.in_overdraft:
                sink.peak_unread = max(sink.peak_unread, window.held + window.ready)
            if not self.exactly_once:
                self._delivered.add(sink_id)
                sink.queue.put(payload)
            else:
                held = self._held.get(sink_id)
                if held is None or held.attempt != attempt:
                    if held is not None:  # an older attempt's, not final: dropped
                        window.dropped(sum(len(payload) for _, payload in held.batches))
                    held = self._held[sink_id] = _Held(attempt)
                held.batches.append((after_checkpoint, payload))
        self._send_pending()

    def on_checkpoint_event(self, event: CheckpointEvent) -> None:
        """A coordinator event: a completed checkpoint releases what came before its barrier."""
        if not isinstance(event, Completed) or event.is_savepoint:
            return
        cid = event.checkpoint_id
        with self._lock:
            for sink_id, held in self._held.items():
                ready = [payload for tag, payload in held.batches if tag < cid]
                if ready:
                    held.batches = [(tag, payload) for tag, payload in held.batches if tag >= cid]
                    self._release(sink_id, ready)
        self._send_pending()

    def attempt_ended(self, attempt: int, finished: bool) -> None:
        """``attempt`` ended: its held records are final if it ``finished``, else dropped;
        no sink is granted credit until the next attempt is deployed."""
        with self._lock:
            self._attempt = None
            for sink in self._sinks.values():
                sink.window.attempt_ended()
            for sink_id, held in list(self._held.items()):
                if held.attempt == attempt:
                    del self._held[sink_id]
                    batches = [payload for _, payload in held.batches]
                    if finished:
                        self._release(sink_id, batches)
                    elif sink_id in self._sinks:
                        self._sinks[sink_id].window.dropped(sum(map(len, batches)))
        self._send_pending()

    def restarting(self, attempt: int, cause: str) -> None:
        """The job restarts after ``attempt`` failed with ``cause``. Checkpoints off: each sink
        that had delivered records ends with an error, as the restart would repeat them."""
        with self._lock:
            for sink_id in sorted(self._delivered):
                error = JobExecutionError(
                    f"execute_and_collect: the job restarts (attempt {attempt} failed: {cause}) "
                    f"after collect sink {sink_id!r} returned records, which the restart would "
                    "return again: without checkpoints the results cannot be exactly once. "
                    "Enable checkpointing (env.enable_checkpointing(interval_ms)) so that "
                    "records are returned once their checkpoint completes."
                )
                self._failed.add(sink_id)
                self._sink(sink_id).queue.put(CollectFailed(error))
            self._delivered.clear()

    def end(self) -> None:
        """The job ended: every queue ends (records still held were not final: dropped)."""
        with self._lock:
            self._ended = True
            self._attempt = None
            self._held.clear()
            self._pending.clear()
            for sink in self._sinks.values():
                sink.window.attempt_ended()
                sink.queue.put(END)

    # -- under the lock ------------------------------------------------------------------------
    def _sink(self, sink_id: str) -> _Sink:
        sink = self._sinks.get(sink_id)
        if sink is None:
            sink = self._sinks[sink_id] = _Sink(Queue(), CollectWindow(self.buffer_size))
            if self._ended:
                sink.queue.put(END)
            elif self._attempt is not None:
                self._note(sink_id, sink.window.attempt_started(self._attempt))
        return sink

    def _release(self, sink_id: str, batches: list[bytes]) -> None:
        """Held ``batches`` became final: to the reader (unless its iterator failed)."""
        sink = self._sink(sink_id)
        self._note(sink_id, sink.window.released(sum(map(len, batches))))
        if sink_id in self._failed:
            return
        for payload in batches:
            sink.queue.put(payload)

    def _note(self, sink_id: str, grant: Grant | None) -> None:
        if grant is not None:
            self._pending.append((sink_id, grant))

    def _send_pending(self) -> None:
        """Send the grants decided so far (outside the lock)."""
        with self._lock:
            pending, self._pending = self._pending, []
        for sink_id, grant in pending:
            self._send_grant(sink_id, grant)
