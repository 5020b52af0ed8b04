"""The records of ``execute_and_collect`` on their way to the client: held until they are final.

Each batch a collect sink sends carries the last checkpoint whose barrier the sink had passed
before it (0: none). With periodic checkpoints on (exactly once, as in Flink) a batch is held
until a checkpoint with a greater id completes, released when its attempt finishes and dropped
when it fails (the restart replays it); savepoints release nothing. With checkpoints off a batch
goes out at once, and a restart after a sink returned records ends that sink's iterator with
an error rather than repeat them. Every queue ends with :data:`END`. Why this is exactly once:
docs/design.md, "execute_and_collect".

Threading: ``add`` and the attempt hooks run on the JobMaster's loop, ``on_checkpoint_event``
on the thread the coordinator completes on, ``queue`` on the client's; one lock guards all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from queue import Queue
from typing import Any

from undertow.core.errors import JobExecutionError
from undertow.runtime.checkpoint.events import CheckpointEvent, Completed

#: The last item of every collect queue: the job ended.
END = object()


@dataclass(frozen=True, slots=True)
class CollectFailed:
    """A queue's last item instead of :data:`END`: the iterator raises ``error``."""

    error: JobExecutionError


@dataclass(slots=True)
class _Held:
    """The batches of the running attempt not yet final: ``(after_checkpoint, values)``."""

    attempt: int
    batches: list[tuple[int, list[Any]]] = field(default_factory=list)


class CollectResults:
    """Queues of collected records per sink, released as described in the module docstring.

    ``exactly_once``: the job takes periodic checkpoints (records are held until final)."""

    def __init__(self, exactly_once: bool) -> None:
        self.exactly_once = exactly_once
        self._lock = threading.Lock()
        self._queues: dict[str, Queue[Any]] = {}
        self._held: dict[str, _Held] = {}
        #: Sinks that delivered records in the running attempt (checkpoints off).
        self._delivered: set[str] = set()
        #: Sinks whose iterator was told to raise: nothing more reaches them.
        self._failed: set[str] = set()
        self._ended = False

    def queue(self, sink_id: str) -> Queue[Any]:
        """Sink ``sink_id``'s queue (any thread; one made after the end holds the end)."""
        with self._lock:
            return self._queue(sink_id)

    def _queue(self, sink_id: str) -> Queue[Any]:
        q = self._queues.get(sink_id)
        if q is None:
            q = self._queues[sink_id] = Queue()
            if self._ended:
                q.put(END)
        return q

    def add(self, attempt: int, sink_id: str, after_checkpoint: int, values: list[Any]) -> None:
        """Records of ``attempt``'s sink, processed after checkpoint ``after_checkpoint``."""
        with self._lock:
            if self._ended or sink_id in self._failed:
                return
            if not self.exactly_once:
                self._delivered.add(sink_id)
                self._queue(sink_id).put(values)
                return
            held = self._held.get(sink_id)
            if held is None or held.attempt != attempt:
                held = self._held[sink_id] = _Held(attempt)
            held.batches.append((after_checkpoint, values))

    def on_checkpoint_event(self, event: CheckpointEvent) -> None:
        """A coordinator event: a completed checkpoint releases what came before its barrier."""
        if not isinstance(event, Completed) or event.is_savepoint:
            return
        cid = event.checkpoint_id
        with self._lock:
            for sink_id, held in self._held.items():
                ready = [values for tag, values in held.batches if tag < cid]
                if ready:
                    held.batches = [(tag, values) for tag, values in held.batches if tag >= cid]
                    self._put_all(sink_id, ready)

    def attempt_ended(self, attempt: int, finished: bool) -> None:
        """``attempt`` ended: its held records are final if it ``finished``, else dropped."""
        with self._lock:
            for sink_id, held in list(self._held.items()):
                if held.attempt == attempt:
                    del self._held[sink_id]
                    if finished:
                        self._put_all(sink_id, [values for _, values in held.batches])

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
                self._queue(sink_id).put(CollectFailed(error))
            self._delivered.clear()

    def end(self) -> None:
        """The job ended: every queue ends (records still held were not final: dropped)."""
        with self._lock:
            self._ended = True
            self._held.clear()
            for q in self._queues.values():
                q.put(END)

    def _put_all(self, sink_id: str, batches: list[list[Any]]) -> None:
        if sink_id in self._failed:
            return
        q = self._queue(sink_id)
        for values in batches:
            q.put(values)
