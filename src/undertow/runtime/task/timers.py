"""Keyed timers: event-time timers fired by watermarks, processing-time timers by the clock.

One :class:`InternalTimerService` per (operator, name). A timer is (timestamp, key, namespace);
registering the same timer twice keeps one. Before a timer fires, the service makes the timer's
key the backend's current key, so the callback reads and writes that key's state.

Threading: used only from the owning task's loop thread. Processing-time callbacks arrive as
mails through the operator's :class:`~undertow.runtime.task.time_service.ProcessingTimeService`.

Cost: register/delete O(log n) (heap plus a set; deletions are lazy), firing O(log n) per timer.
Bursts (timers due together) fire in mailbox slices, processing-time ones and the event-time
ones of one watermark alike (the task holds its input while the latter go on).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import heapq
import itertools
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol

from undertow.core import pickling
from undertow.core.types import MAX_WATERMARK, MIN_TIMESTAMP
from undertow.runtime.task.time_service import ProcessingTimeService
from undertow.state.backend import KeyedStateBackend, TimerQueue
from undertow.state.heap_snapshot import DeferredBlobs
from undertow.state.key_groups import assign_to_key_group, groups_by_equality


@dataclass(frozen=True, slots=True)
class InternalTimer:
    timestamp: int
    key: Any
    namespace: Any


class Triggerable(Protocol):
    """Receives fired timers; implemented by operators that register timers."""

    def on_event_time(self, timer: InternalTimer) -> None: ...

    def on_processing_time(self, timer: InternalTimer) -> None: ...


class OutputAvailability(Protocol):
    """The task's output as timers see it; implemented by the task."""

    def is_output_available(self) -> bool:
        """Every output partition can take at least one more buffer."""

    def when_output_available(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the task's loop once the output is available again."""

    def slice_deadline(self) -> float:
        """The ``time.perf_counter()`` value at which work started now should yield."""

    def hold_input(self) -> None:
        """Take no input (records, events) until :meth:`release_input`: a watermark's timers
        are still firing. Holds nest; mails still run."""

    def release_input(self) -> None:
        """Undo one :meth:`hold_input`."""


class _TimerQueue:
    """A min-heap of timers with set semantics and lazy deletion."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Any, Any]] = []
        self._live: set[tuple[int, Any, Any]] = set()
        self._seq = itertools.count()

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Add a timer; True if it is now the earliest one."""
        ident = (timestamp, key, namespace)
        if ident in self._live:
            return False
        self._live.add(ident)
        heapq.heappush(self._heap, (timestamp, next(self._seq), key, namespace))
        return self._heap[0][0] == timestamp

    def remove(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._live.discard((timestamp, key, namespace))

    def peek_timestamp(self) -> int | None:
        heap = self._heap
        while heap:
            ts, _, key, ns = heap[0]
            if (ts, key, ns) in self._live:
                return ts
            heapq.heappop(heap)
        return None

    def pop_due(self, time: int) -> tuple[int, Any, Any] | None:
        """Remove and return the earliest timer with timestamp <= ``time``, if any."""
        ts = self.peek_timestamp()
        if ts is None or ts > time:
            return None
        _, _, key, ns = heapq.heappop(self._heap)
        self._live.discard((ts, key, ns))
        return ts, key, ns

    def __len__(self) -> int:
        return len(self._live)

    def entries(self) -> list[tuple[int, Any, Any]]:
        """A copy of the live timers as (timestamp, key, namespace) tuples, unordered."""
        return list(self._live)


def _make_queue(backend: KeyedStateBackend, service: str, domain: str) -> TimerQueue:
    """The backend's own queue (timers in RocksDB), else a heap queue."""
    queue = backend.timer_queue(service, domain)
    return _TimerQueue() if queue is None else queue


def _in_db(queue: TimerQueue) -> bool:
    """Whether ``queue`` is part of the keyed backend (in its native checkpoints)."""
    return not isinstance(queue, _TimerQueue)


class InternalTimerService:
    """Timers of one operator (see the module docstring)."""

    def __init__(
        self,
        name: str,
        backend: KeyedStateBackend,
        triggerable: Triggerable,
        processing_time_service: ProcessingTimeService,
        output: OutputAvailability | None = None,
    ) -> None:
        self.name = name
        self._backend = backend
        self._triggerable = triggerable
        self._pts = processing_time_service
        self._event = _make_queue(backend, name, "event")
        self._processing = _make_queue(backend, name, "processing")
        self._scheduled: tuple[int, Any] | None = None  # (timestamp, handle) of the wake-up
        self._output = output
        #: Due processing-time timers wait for the output (a continuation is pending there).
        self._deferred = False
        self.current_watermark = MIN_TIMESTAMP
        #: The watermark whose event-time timers are firing (None between advances), and the
        #: timers callbacks registered meanwhile at or below it: they wait for the next
        #: advance, as on PyFlink (see :meth:`advance_watermark`).
        self._firing_at: int | None = None
        self._next_advance: set[tuple[int, Any, Any]] = set()

    # registration --------------------------------------------------------------------------
    def current_processing_time(self) -> int:
        return self._pts.current_processing_time()

    def register_event_time_timer(self, namespace: Any, time: int) -> None:
        key, queue = self._backend.get_current_key(), self._event
        firing = self._firing_at
        if firing is None or time > firing:
            queue.add(time, key, namespace)
            return
        before = len(queue)
        queue.add(time, key, namespace)
        if len(queue) > before:  # new, not a timer due in this advance already
            self._next_advance.add((time, key, namespace))

    def delete_event_time_timer(self, namespace: Any, time: int) -> None:
        key = self._backend.get_current_key()
        self._event.remove(time, key, namespace)
        self._next_advance.discard((time, key, namespace))

    def register_processing_time_timer(self, namespace: Any, time: int) -> None:
        if self._processing.add(time, self._backend.get_current_key(), namespace):
            self._schedule(time)

    def delete_processing_time_timer(self, namespace: Any, time: int) -> None:
        self._processing.remove(time, self._backend.get_current_key(), namespace)

    # firing --------------------------------------------------------------------------------
    def advance_watermark(
        self, watermark: int, then: Callable[[], None] | None = None,
        after_slice: Callable[[], None] | None = None,
    ) -> bool:  # fmt: skip
        """Fire every event-time timer with timestamp <= ``watermark``, earliest first, then
        call ``then`` (the operator forwards the watermark). A timer that a callback of this
        advance registers at or below ``watermark`` fires at the next advance, not in this one:
        PyFlink's rule (its Python operator hands such timers to Java after the advance). Java
        Flink fires them in the same advance. At the end of the input (the MAX watermark) PyFlink
        advances again while callbacks register such timers: each pass fires the ones the pass
        before registered (a timer that re-arms itself in ``on_timer`` fires every time), yet
        a ContinuousEventTimeTrigger's next firing is cleared by its window's end in the same
        pass, so it fires once where Java fires once per interval.

        In a task (an output is given) the firing stops after one mailbox slice, or when the
        output is full, and goes on at a later turn of the mailbox (deferred work); meanwhile
        the task takes no input (Flink's interruptible timers, FLIP-443, without records in
        between), so nothing overtakes the watermark, while mails, barriers and triggers still
        get their turn. ``after_slice``
        runs after each slice (the operator emits what it buffered). Returns True if
        everything (``then`` included) ran in this call.
        """
        self.current_watermark = watermark
        self._firing_at = watermark
        return self._fire_event_timers(watermark, then, after_slice)

    def _fire_event_timers(self, watermark: int, then: Callable[[], None] | None,
                           after_slice: Callable[[], None] | None) -> bool:  # fmt: skip
        backend, on_event_time, queue = self._backend, self._triggerable.on_event_time, self._event
        output = self._output
        deadline = output.slice_deadline() if output is not None else 0.0
        clock = perf_counter
        later = self._next_advance
        while True:  # one pass per advance; more only at the end of the input
            held: list[tuple[int, Any, Any]] = []
            while (due := queue.pop_due(watermark)) is not None:
                if due in later:
                    held.append(due)
                    continue
                timer = InternalTimer(*due)
                backend.set_current_key(timer.key)
                on_event_time(timer)
                if output is None:
                    continue
                available = output.is_output_available()
                if available and clock() < deadline:
                    continue
                nxt = queue.peek_timestamp()
                if nxt is not None and nxt <= watermark:
                    for entry in held:  # pending in the queue (and in a snapshot) meanwhile
                        if entry in later:  # not deleted since
                            queue.add(*entry)
                    if after_slice is not None:
                        after_slice()
                    output.hold_input()

                    def resume() -> None:
                        output.release_input()
                        self._fire_event_timers(watermark, then, after_slice)

                    # deferred work, not a mail: at the end of the data the task runs it before
                    # the operators finish (the MAX watermark's timers all fire first)
                    output.when_output_available(resume)
                    return False
            requeued = False
            for entry in held:
                if entry in later:  # not deleted since
                    queue.add(*entry)
                    requeued = True
            later.clear()
            if not requeued or watermark < MAX_WATERMARK:
                break
            # the end of the input: PyFlink advances again while callbacks register such timers
        self._firing_at = None
        if after_slice is not None:
            after_slice()
        if then is not None:
            then()
        return True

    def _schedule(self, time: int) -> None:
        if self._scheduled is not None:
            if self._scheduled[0] <= time:
                return
            self._scheduled[1].cancel()
        self._scheduled = (time, self._pts.register_timer(time, self._on_wake_up))

    def _on_wake_up(self, time: int) -> None:
        self._scheduled = None
        if self._deferred:
            return  # the continuation waiting for the output fires what is due, then reschedules
        self._fire_processing_timers(time)

    def _fire_processing_timers(self, time: int) -> None:
        """Fire due processing-time timers, earliest first, while the output is available and
        for at most one mailbox slice; the rest go on in a later mail."""
        self._deferred = False
        now = max(time, self._pts.current_processing_time())
        backend, on_processing_time = self._backend, self._triggerable.on_processing_time
        output = self._output
        deadline = output.slice_deadline() if output is not None else 0.0
        clock = perf_counter
        while (due := self._processing.pop_due(now)) is not None:
            timer = InternalTimer(*due)
            backend.set_current_key(timer.key)
            on_processing_time(timer)
            if output is None:
                continue
            available = output.is_output_available()
            if available and clock() < deadline:
                continue
            nxt = self._processing.peek_timestamp()
            if nxt is not None and nxt <= now:
                self._deferred = True
                # Resumed through the processing-time service, not directly: a service
                # quiesced meanwhile (end of data) must drop the continuation too. A timer at
                # ``now`` is due at once: it comes back as a mail after the loop's next turn.
                resume = lambda: self._pts.register_timer(now, self._fire_processing_timers)  # noqa: E731
                if available:
                    resume()
                else:
                    output.when_output_available(resume)
                return
        nxt = self._processing.peek_timestamp()
        if nxt is not None:
            self._schedule(nxt)

    def fire_all_processing_timers(self) -> None:
        """End of input in BATCH mode / final flush: fire every processing-time timer now."""
        if self._scheduled is not None:
            self._scheduled[1].cancel()
            self._scheduled = None
        backend, on_processing_time = self._backend, self._triggerable.on_processing_time
        while (due := self._processing.pop_due(2**63 - 1)) is not None:
            timer = InternalTimer(*due)
            backend.set_current_key(timer.key)
            on_processing_time(timer)

    # introspection (tests, snapshots) -----------------------------------------------------
    def num_event_time_timers(self) -> int:
        return len(self._event)

    def num_processing_time_timers(self) -> int:
        return len(self._processing)

    def event_time_timers(self) -> list[InternalTimer]:
        return [InternalTimer(*t) for t in sorted(self._event.entries(), key=_timestamp)]

    def processing_time_timers(self) -> list[InternalTimer]:
        return [InternalTimer(*t) for t in sorted(self._processing.entries(), key=_timestamp)]

    def dispose(self) -> None:
        if self._scheduled is not None:
            self._scheduled[1].cancel()
            self._scheduled = None


class TimerServiceManager:
    """All timer services of one keyed operator; watermarks advance them together.

    Snapshots are per key group (like keyed state) so that timers follow their keys when a job
    is restored at another parallelism. Timers restored before their service is created (the
    operator creates it in ``open``) wait in ``_restored`` until then.
    """

    def __init__(
        self,
        backend: KeyedStateBackend,
        processing_time_service: ProcessingTimeService,
        output: OutputAvailability | None = None,
    ) -> None:
        self._backend = backend
        self._pts = processing_time_service
        self._output = output
        self.services: dict[str, InternalTimerService] = {}
        self._restored: dict[str, list[tuple[str, int, Any, Any]]] = {}

    def snapshot(self, native: bool = False) -> dict[int, bytes]:
        """Timers of all services, one blob per key group: ``{(service, domain): [(ts, key,
        ns), ...]}``, in no order (a restore pushes them on a heap). The synchronous part
        copies each queue's set of (immutable) timer tuples (a queue in RocksDB is read), and
        the timers restored for a service not made yet; grouping by key group and pickling
        run when the result is read or stepped (a
        :class:`~undertow.state.heap_snapshot.DeferredBlobs`), each distinct key hashed once
        and each timer tuple stored as it is. ``native``: the keyed backend takes a native
        checkpoint, which holds the queues in RocksDB already."""
        taken = [(name, domain, queue.entries()) for name, service in self.services.items()
                 for domain, queue in (("event", service._event),
                                       ("processing", service._processing))
                 if not (native and _in_db(queue))]  # fmt: skip
        for name, pending in self._restored.items():
            for domain in ("event", "processing"):
                waiting = [(ts, key, ns) for d, ts, key, ns in pending if d == domain]
                taken.append((name, domain, waiting))
        if not any(entries for _, _, entries in taken):
            return {}
        maxp = self._backend.max_parallelism

        def compute() -> dict[int, bytes]:
            by_group: dict[int, dict[tuple[str, str], list[tuple[int, Any, Any]]]] = {}
            group_of: dict[Any, int] = {}  # keys repeat across timers: hash each once
            for name, domain, entries in taken:
                queue = (name, domain)
                for timer in entries:
                    key = timer[1]
                    if not groups_by_equality(key):  # 1.0 == 1, another group; or unhashable
                        group = assign_to_key_group(key, maxp)
                    else:
                        try:
                            group = group_of[key]
                        except KeyError:
                            group = group_of[key] = assign_to_key_group(key, maxp)
                    lists = by_group.get(group)
                    if lists is None:
                        lists = by_group[group] = {}
                    timers = lists.get(queue)
                    if timers is None:
                        timers = lists[queue] = []
                    timers.append(timer)
            return {g: pickling.dumps(lists) for g, lists in by_group.items()}

        return DeferredBlobs(compute)

    def restore(self, blobs: dict[int, bytes]) -> None:
        """Load timers of the key groups this subtask owns (others are ignored). A blob is a
        dict of the queues' timers (see :meth:`snapshot`) or, written before 2026-12-01, a list
        of ``(service, domain, ts, key, ns)``."""
        owned = self._backend.key_group_range
        restored = self._restored
        for group, blob in blobs.items():
            if group not in owned:
                continue
            timers = pickle.loads(blob)
            if isinstance(timers, dict):
                for (name, domain), entries in timers.items():
                    pending = restored.setdefault(name, [])
                    pending.extend((domain, ts, key, ns) for ts, key, ns in entries)
            else:
                for name, domain, ts, key, ns in timers:
                    restored.setdefault(name, []).append((domain, ts, key, ns))

    def _register_restored(self, service: InternalTimerService) -> None:
        current = self._backend.get_current_key()
        for domain, ts, key, ns in self._restored.pop(service.name, []):
            self._backend.set_current_key(key)
            if domain == "event":
                service.register_event_time_timer(ns, ts)
            else:
                service.register_processing_time_timer(ns, ts)
        if current is not None:
            self._backend.set_current_key(current)

    def get(self, name: str, triggerable: Triggerable) -> InternalTimerService:
        service = self.services.get(name)
        if service is None:
            service = InternalTimerService(
                name, self._backend, triggerable, self._pts, self._output
            )
            self.services[name] = service
            nxt = service._processing.peek_timestamp()  # restored in RocksDB (native)
            if nxt is not None:
                service._schedule(nxt)
            if name in self._restored:
                self._register_restored(service)
        return service

    def advance_watermark(self, watermark: int) -> None:
        for service in self.services.values():
            service.advance_watermark(watermark)

    def fire_all_processing_timers(self) -> None:
        """BATCH execution at end of input: fire every pending processing-time timer."""
        for service in self.services.values():
            service.fire_all_processing_timers()

    def dispose(self) -> None:
        for service in self.services.values():
            service.dispose()


def _timestamp(entry: tuple[int, Any, Any]) -> int:
    return entry[0]
