"""The element queue of the async wait operator: what may start, what may be emitted (pure).

Invariants:

* at most ``capacity`` records are *started* and not yet emitted (in flight or completed but
  held back); records added beyond that wait unstarted, in input order;
* ordered mode emits results in input order; unordered mode emits a result as soon as it is
  complete, but never across a watermark: a watermark is emitted once every record added
  before it was emitted, and no record added after it is emitted before it;
* :meth:`AsyncWaitQueue.in_flight` lists every record not yet emitted, in input order: the
  operator's checkpoint state (re-issued on restore).

Threading: none; the operator uses it on its task's loop. Cost: ``drain`` is O(queue length).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, eq=False)
class QueueEntry:
    """One input record: its value, timestamp and, once complete, its results."""

    seq: int
    value: Any
    timestamp: int | None
    started: bool = False
    #: The results (a list) once complete, else ``None``.
    results: list[Any] | None = None
    #: Position in completion order (unordered mode emits in this order).
    completed_at: int = -1


@dataclass(frozen=True, slots=True)
class EmitRecords:
    """Results to emit, each with its input record's timestamp (``stamps`` None: none has one)."""

    values: list[Any]
    stamps: list[Any] | None


@dataclass(frozen=True, slots=True)
class EmitWatermark:
    watermark: int


Emission = EmitRecords | EmitWatermark


@dataclass(slots=True)
class _Watermark:
    watermark: int


@dataclass
class AsyncWaitQueue:
    """Ordered or unordered element queue bounded by ``capacity`` started records."""

    capacity: int
    ordered: bool
    _items: deque[QueueEntry | _Watermark] = field(default_factory=deque)
    _unstarted: deque[QueueEntry] = field(default_factory=deque)
    _entries: dict[int, QueueEntry] = field(default_factory=dict)
    _active: int = 0  # started and not emitted
    _next_seq: int = 0
    _completions: int = 0

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {self.capacity}")

    # -- input -----------------------------------------------------------------------------
    def add(self, value: Any, timestamp: int | None) -> QueueEntry:
        """Add an input record; it starts when :meth:`to_start` hands it out."""
        entry = QueueEntry(self._next_seq, value, timestamp)
        self._next_seq += 1
        self._items.append(entry)
        self._unstarted.append(entry)
        self._entries[entry.seq] = entry
        return entry

    def add_watermark(self, watermark: int) -> None:
        """Add a watermark behind every record added so far (emitted by :meth:`drain`)."""
        items = self._items
        if items and isinstance(items[-1], _Watermark):
            items[-1].watermark = max(items[-1].watermark, watermark)  # nothing between them
        else:
            items.append(_Watermark(watermark))

    def has_room(self) -> bool:
        """Fewer records than ``capacity`` are queued: the operator may take more input."""
        return len(self._entries) < self.capacity

    def to_start(self) -> list[QueueEntry]:
        """Records to start now, oldest first (marked started)."""
        out: list[QueueEntry] = []
        while self._unstarted and self._active < self.capacity:
            entry = self._unstarted.popleft()
            entry.started = True
            self._active += 1
            out.append(entry)
        return out

    def complete(self, seq: int, results: list[Any]) -> None:
        """The request of record ``seq`` completed with ``results``."""
        entry = self._entries.get(seq)
        if entry is None or not entry.started or entry.results is not None:
            raise ValueError(f"record #{seq} is not in flight")
        entry.results = results
        entry.completed_at = self._completions
        self._completions += 1

    def value_of(self, seq: int) -> Any:
        """The input value of queued record ``seq``."""
        return self._entries[seq].value

    # -- output ----------------------------------------------------------------------------
    def drain(self) -> list[Emission]:
        """Everything that may be emitted now, in emission order; removes it from the queue."""
        out: list[Emission] = []
        items = self._items
        while items:
            head = items[0]
            if isinstance(head, _Watermark):
                items.popleft()
                out.append(EmitWatermark(head.watermark))
                continue
            if self.ordered:
                if head.results is None:
                    break
                items.popleft()
                self._emit([head], out)
                continue
            # unordered: the completed records of the first segment, in completion order
            done: list[QueueEntry] = []
            kept: list[QueueEntry | _Watermark] = []
            rest = 0
            for item in items:
                if isinstance(item, _Watermark):
                    break
                rest += 1
                if item.results is not None:
                    done.append(item)
                else:
                    kept.append(item)
            if done:
                done.sort(key=lambda e: e.completed_at)
                self._emit(done, out)
                for _ in range(rest):
                    items.popleft()
                items.extendleft(reversed(kept))
            if kept:
                break
        return out

    def _emit(self, entries: list[QueueEntry], out: list[Emission]) -> None:
        values: list[Any] = []
        stamps: list[Any] = []
        for entry in entries:
            assert entry.results is not None
            values.extend(entry.results)
            stamps.extend([entry.timestamp] * len(entry.results))
            del self._entries[entry.seq]
            self._active -= 1
        if not values:
            return
        if all(s is None for s in stamps):
            out.append(EmitRecords(values, None))
        else:
            out.append(EmitRecords(values, stamps))

    # -- state -----------------------------------------------------------------------------
    def in_flight(self) -> list[tuple[Any, int | None]]:
        """Every record not yet emitted, as (value, timestamp), in input order."""
        return [(e.value, e.timestamp) for e in self._items if isinstance(e, QueueEntry)]

    def __len__(self) -> int:
        """Records not yet emitted (started or not)."""
        return len(self._entries)

    def is_empty(self) -> bool:
        """No record and no watermark is held."""
        return not self._items
