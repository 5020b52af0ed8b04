"""Background cleanup of expired TTL entries in the RocksDB backend, in the place of Flink's
compaction filter (rocksdict exposes none): an expired entry whose key is never read again
leaves the DB.

A :class:`TtlWalk` per TTL state walks its column family in key order from a cursor (the
next DB key to look at), wrapping around at its end. The state's accesses drive it, before
an access loads its entry; its pace is the heap's (:class:`~.heap_ttl_cleanup.TtlPace`) but
the column once per TTL (:data:`PASSES_PER_TTL`), at most ``query_time_after_num_entries``
entries a walk (one clock reading each). It deletes expired value and map entries and
rewrites list entries without their expired elements, in one write batch a walk: never a
live value, element or timestamp. A write never changes a snapshot already taken and reaches
the next incremental checkpoint. Threading: the subtask's loop thread.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from rocksdict import WriteBatch

from undertow.state.descriptors import StateTtlConfig
from undertow.state.heap_states import ABSENT
from undertow.state.heap_ttl import SweepCountdown, TtlPolicy, live_entry
from undertow.state.heap_ttl_cleanup import BATCH, TtlPace
from undertow.state.rocksdb_states import StateHost, decode_value, encode_value

#: Passes over the column family per TTL: one, where the heap takes two. An entry is looked
#: at once or twice in its life instead of two or three times, and stays up to a TTL past its
#: expiry: each look is an iterator step and an unpickle, and a delete adds compaction work,
#: several microseconds an entry where the heap's look costs under one (an expired entry on
#: disk costs little; Flink's compaction filter drops it only when a compaction reaches it).
PASSES_PER_TTL = 1
#: The RocksDB property that estimates a column family's entries (the first pass's size).
ESTIMATE_KEYS = "rocksdb.estimate-num-keys"
#: Deletions since the last flush before the walk flushes the memtable (or a pass's entries,
#: if more): an iterator steps over every tombstone in a memtable, on every pass, while
#: RocksDB's compactions drop those in files.
DELETES_PER_FLUSH = 10_000


def attach_walk(
    state: SweepCountdown, host: StateHost, name: str, kind: str, ttl: TtlPolicy,
    config: StateTtlConfig,
) -> None:  # fmt: skip
    """Gives TTL state ``name`` (of ``kind``, in ``host``'s DB) the background cleanup
    ``config`` asks for: none without a RocksDB compaction filter strategy (PyFlink's default
    has one; ``disable_cleanup_in_background()`` without an explicit one leaves none)."""
    strategy = config.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    if strategy is None:
        return
    walk = TtlWalk(host, name, kind, ttl, strategy.get_query_time_after_num_entries())
    state.sweep, state.accesses_per_sweep = walk.sweep, BATCH


class TtlWalk:
    """The background cleanup of one TTL state's column family (the module docstring)."""

    __slots__ = ("_cursor", "_deleted", "_host", "_last_pass", "_list", "_name", "_pace", "_seen",
                 "_ttl_ms")  # fmt: skip

    def __init__(self, host: StateHost, name: str, kind: str, ttl: TtlPolicy,
                 entries_per_walk: int) -> None:  # fmt: skip
        self._host = host
        self._name = name
        #: A list entry loses its expired elements; any other DB entry (a value, an
        #: accumulator, one map entry) is one ``(value, ts)``, expired or not.
        self._list = kind == "list"
        self._ttl_ms = ttl.ttl_ms
        #: The next DB key to look at: the successor of the last one looked at, or b"" (the
        #: start of the column family, of a new pass).
        self._cursor = b""
        self._seen = 0  # DB entries looked at in this pass
        self._deleted = 0  # DB entries deleted since the last flush (DELETES_PER_FLUSH)
        #: The DB entries of the last whole pass (None before one).
        self._last_pass: int | None = None
        #: ``query_time_after_num_entries`` as the cap of a walk, which reads the clock once.
        self._pace = TtlPace(ttl, max(1, entries_per_walk), self._pass_size, count_every=1,
                             passes=PASSES_PER_TTL)  # fmt: skip

    def _pass_size(self) -> int:
        """The entries of a whole pass: the last one's, or this one's so far if more. Before
        a pass over some entries is done, RocksDB's estimate, which is good for a start (a
        restored DB) but not as the steady pace: it counts every write still in a memtable,
        overwrites too, and every delete twice."""
        if self._last_pass is None:
            column: Any = self._host.column(self._name)
            return max(int(column.property_int_value(ESTIMATE_KEYS) or 0), self._seen)
        return max(self._last_pass, self._seen)

    def sweep(self) -> None:
        """For :data:`~.heap_ttl_cleanup.BATCH` accesses (the state counts them): a walk of
        the entries due since the last one."""
        self.walk(*self._pace.due())

    def walk(self, steps: int, now: int) -> None:
        """Look at the next ``steps`` DB entries, expired as of ``now``: from the cursor on,
        and past the column family's end (a pass done) from its start up to where this walk
        began; one write batch for what changed."""
        host, name = self._host, self._name
        host.flush_cached(name)  # a fold's cached entries are the state too (none with TTL)
        column: Any = host.column(name)  # raw mode: keys and values are bytes
        batch = host.batch(name)
        start = self._cursor
        left = self._look(column, batch, start, b"", steps, now)
        if left and start:
            self._look(column, batch, b"", start, left, now)
        if batch.len():
            host.write(batch)
            if self._deleted > max(DELETES_PER_FLUSH, self._last_pass or 0):
                column.flush(False)  # in the background
                self._deleted = 0

    def _look(self, column: Any, batch: WriteBatch, first: bytes, stop: bytes, steps: int,
              now: int) -> int:  # fmt: skip
        """Look at up to ``steps`` entries from DB key ``first`` on, before ``stop`` (b"":
        the end); move the cursor. The steps left if the column family ended first."""
        ttl_ms, lists = self._ttl_ms, self._list
        deadline = now - ttl_ms  # a (value, ts) entry is expired iff ts <= deadline
        looked = 0
        dkey = first
        for dkey, raw in islice(column.items(from_key=first), steps):
            if stop and dkey >= stop:
                self._seen += looked
                self._cursor = stop
                return 0
            looked += 1
            entry = decode_value(raw)
            if not lists:
                if entry[1] <= deadline:
                    batch.delete(dkey)
                    self._deleted += 1
                continue
            live = live_entry("list", entry, ttl_ms, now)
            if live is ABSENT:
                batch.delete(dkey)
                self._deleted += 1
            elif len(live) != len(entry):
                batch.put(dkey, encode_value(live))
        self._seen += looked
        if looked == steps:
            if looked:
                self._cursor = dkey + b"\x00"  # the smallest DB key after the last one
            return 0
        if self._seen:  # a pass is done (over nothing: no news of the size)
            self._last_pass = self._seen
        self._cursor, self._seen = b"", 0
        return steps - looked
