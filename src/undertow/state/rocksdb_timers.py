"""Timers in RocksDB: a timer queue of one timer service and domain in a column family.

DB keys sort by (timestamp, key group, key), so the earliest timer is the first key. Invariant:
the sorted head cache is exactly the first ``len(cache)`` keys of the column family, and if
``complete`` the column family holds nothing more.

Threading: the owning subtask's loop thread only (as the backend). Cost: add and remove are one
``get`` plus one ``put``/``delete`` and O(cache) in memory; pop is one ``delete``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import bisect
import pickle
from collections.abc import Callable, Iterator
from typing import Any

from undertow.core.errors import StateError
from undertow.state.key_groups import assign_to_key_group, user_key
from undertow.state.rocksdb_states import encode_key

#: Column families of timers start with this (Flink's name), then ``event_`` or ``processing_``.
TIMER_COLUMN_PREFIX = "_timer_state/"
#: The kind under which native checkpoints list timer column families beside the states.
TIMER_KIND = "timer"
#: Timers kept in memory per queue: the earliest ones.
HEAD_CACHE_SIZE = 128
_OFFSET = 2**63


def timer_column(service: str, domain: str) -> str:
    """The column family of the ``domain`` (``event``/``processing``) timers of ``service``."""
    return f"{TIMER_COLUMN_PREFIX}{domain}_{service}"


def timer_db_key(
    timestamp: int, key_group: int, key: Any, namespace: Any,
    encode: Callable[[Any], bytes] = encode_key,
) -> bytes:  # fmt: skip
    """The DB key of a timer (see the module docstring); ``encode`` is the backend's
    :class:`~undertow.state.rocksdb_states.KeyEncoder`."""
    return (
        (timestamp + _OFFSET).to_bytes(8, "big")
        + key_group.to_bytes(2, "big")
        + encode((key, namespace))
    )


def timer_key_group(dkey: bytes) -> int:
    """The key group of a timer's DB key (rescaling filters by it)."""
    return int.from_bytes(dkey[8:10], "big")


def timers_in_key_groups(column: Any, start: int, stop: int) -> Iterator[tuple[bytes, bytes]]:
    """The entries of key groups [start, stop) of a timer column family (rescaling): keys
    sort by timestamp first, so every timer is read and those of other key groups skipped."""
    for dkey, raw in column.items():
        if start <= timer_key_group(dkey) < stop:
            yield dkey, raw


def check_no_timers(operator: str, checkpoint_id: int, states: dict[str, tuple[str, bool]]) -> None:
    """Refuse a native checkpoint with timers in RocksDB for a backend that keeps them on the
    heap (``timer-service.factory: HEAP``): they would never fire."""
    names = sorted(name for name, (kind, _) in states.items() if kind == TIMER_KIND)
    if names:
        raise StateError(
            f"operator {operator!r}: checkpoint {checkpoint_id} holds timers in RocksDB "
            f"({', '.join(names)}) but state.backend.rocksdb.timer-service.factory is HEAP; "
            "restore with ROCKSDB (or take a canonical savepoint to switch)"
        )


def decode_timer(dkey: bytes) -> tuple[int, Any, Any]:
    """``(timestamp, key, namespace)`` of a timer's DB key."""
    key, namespace = pickle.loads(dkey[10:])
    return int.from_bytes(dkey[:8], "big") - _OFFSET, key, namespace


class RocksDBTimerQueue:
    """A timer queue with set semantics in one column family (see the module docstring).

    ``column`` is the raw-mode column family; ``max_parallelism`` gives each timer's key group;
    ``cache_size`` bounds the head cache; ``encode`` is the backend's key encoder.
    """

    def __init__(
        self, column: Any, max_parallelism: int, cache_size: int = HEAD_CACHE_SIZE,
        encode: Callable[[Any], bytes] = encode_key,
    ) -> None:  # fmt: skip
        self._column = column
        self._encode = encode
        self._cache_size = cache_size
        self._max_parallelism = max_parallelism
        self._head: list[bytes] = []
        self._complete = False  # not known yet: the column family may hold restored timers
        self._size: int | None = None  # counted on first use

    def _dkey(self, timestamp: int, key: Any, namespace: Any) -> bytes:
        key = user_key(key)  # -0.0 encoded as itself (the timers service's key: state form)
        group = assign_to_key_group(key, self._max_parallelism)
        return timer_db_key(timestamp, group, key, namespace, self._encode)

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Add a timer; True if it is now the earliest one."""
        dkey = self._dkey(timestamp, key, namespace)
        column = self._column
        if column.get(dkey) is not None:
            return False
        column.put(dkey, b"")
        if self._size is not None:
            self._size += 1
        head = self._head
        if self._complete or (head and dkey < head[-1]):
            bisect.insort(head, dkey)
            if len(head) > self._cache_size:
                head.pop()  # still in the DB: the cache is no longer everything
                self._complete = False
        return self.peek_timestamp() == timestamp

    def remove(self, timestamp: int, key: Any, namespace: Any) -> None:
        dkey = self._dkey(timestamp, key, namespace)
        column = self._column
        if column.get(dkey) is None:
            return
        column.delete(dkey)
        if self._size is not None:
            self._size -= 1
        head = self._head
        i = bisect.bisect_left(head, dkey)
        if i < len(head) and head[i] == dkey:
            del head[i]

    def _keys(self) -> Any:
        """The column family's keys in order (a raw-mode column family has no ``__iter__``)."""
        return self._column.keys()

    def _refill(self) -> None:
        """Load the first keys of the column family into the (empty) cache."""
        head = self._head
        for dkey in self._keys():
            head.append(dkey)
            if len(head) > self._cache_size:
                head.pop()
                return
        self._complete = True

    def peek_timestamp(self) -> int | None:
        if not self._head and not self._complete:
            self._refill()
        if not self._head:
            return None
        return int.from_bytes(self._head[0][:8], "big") - _OFFSET

    def pop_due(self, time: int) -> tuple[int, Any, Any] | None:
        """Remove and return the earliest timer with timestamp <= ``time``, if any."""
        ts = self.peek_timestamp()
        if ts is None or ts > time:
            return None
        dkey = self._head.pop(0)
        self._column.delete(dkey)
        if self._size is not None:
            self._size -= 1
        return decode_timer(dkey)

    def __len__(self) -> int:
        if self._size is None:
            self._size = sum(1 for _ in self._keys())
        return self._size

    def entries(self) -> list[tuple[int, Any, Any]]:
        """Every timer as ``(timestamp, key, namespace)``, earliest first (reads the DB)."""
        return [decode_timer(dkey) for dkey in self._keys()]

    def cached(self) -> int:
        """Timers held in memory (the head cache): at most :data:`HEAD_CACHE_SIZE`."""
        return len(self._head)
