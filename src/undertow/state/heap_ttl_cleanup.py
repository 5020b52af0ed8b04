"""Incremental cleanup of expired TTL entries in the heap backend (Flink's heap
``cleanupIncrementally``): an expired entry whose key is never read again leaves memory.

A :class:`TtlSweeper` walks one TTL state's entries, dropping expired ones and trimming list
and map entries. Accesses (or records) drive it; its pace is time: the table
:data:`PASSES_PER_TTL` times per TTL, at most ``cleanup_size`` steps an access (Flink's).
Invariants: it never changes a live value, element or timestamp; it calls
``before_change(offset)`` before it changes a key group. Threading: the subtask's loop thread.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.state.descriptors import StateTtlConfig
from undertow.state.heap_states import ABSENT, StateTable
from undertow.state.heap_ttl import TtlPolicy, live_entry


def attach_sweeper(state: Any, table: StateTable, ttl: TtlPolicy, config: StateTtlConfig,
                   before_change: Callable[[int], None],
                   every_record: list[Callable[[], None]]) -> None:  # fmt: skip
    """Gives the TTL ``state`` of ``table`` the incremental cleanup ``config`` asks for (none
    without one), and adds its sweep to ``every_record`` if it must run for every record."""
    incremental = config.get_cleanup_strategies().get_incremental_cleanup_strategy()
    if incremental is None:
        return
    sweeper = TtlSweeper(table, ttl, incremental.get_cleanup_size(), before_change)
    state.sweep, state.accesses_per_sweep = sweeper.sweep, BATCH
    if incremental.run_cleanup_for_every_record():
        every_record.append(sweeper.record)


#: Accesses per walk: one walk every ``BATCH`` accesses costs a fraction of ``BATCH`` walks.
BATCH = 32
#: The pace: each entry is looked at about this many times per TTL, so an expired entry stays
#: at most about ``ttl / PASSES_PER_TTL`` past its expiry (while accesses keep coming).
PASSES_PER_TTL = 2
#: Walks per count of the table's size (a ``len`` per dict: a few microseconds).
SIZE_EVERY = 8


class TtlPace:
    """The steps a cleanup walk takes now (the pace of the module docstring): the steps of a
    whole pass (``count()``, asked every ``count_every`` walks) times ``passes`` (the heap's
    :data:`PASSES_PER_TTL`) times the time since the last walk over the TTL, plus one, at most
    ``cap``. The heap's :class:`TtlSweeper` and the RocksDB backend's walk
    (:mod:`undertow.state.rocksdb_ttl_cleanup`) both take theirs from one."""

    __slots__ = ("_cap", "_count", "_every", "_pass_steps", "_passes", "_ttl", "_walked_at",
                 "_walks")  # fmt: skip

    def __init__(self, ttl: TtlPolicy, cap: int, count: Callable[[], int],
                 count_every: int = SIZE_EVERY, passes: int = PASSES_PER_TTL) -> None:  # fmt: skip
        self._ttl = ttl
        self._passes = passes
        self._cap = cap
        self._count = count
        self._every = count_every
        self._walked_at = ttl.clock()
        self._pass_steps = 0
        self._walks = 0

    def due(self) -> tuple[int, int]:
        """``(steps, now)``: the steps of a walk starting now, and the time it expires by."""
        now = self._ttl.clock()
        elapsed, self._walked_at = now - self._walked_at, now
        if not self._walks % self._every:
            self._pass_steps = self._count()
        self._walks += 1
        due = self._pass_steps * self._passes * elapsed // self._ttl.ttl_ms + 1
        return min(due, self._cap), now


class TtlSweeper:
    """The incremental cleanup of one TTL state's table (the module docstring)."""

    __slots__ = ("_at", "_before_change", "_calls", "_dicts", "_pace", "_pending", "_table",
                 "_ttl")  # fmt: skip

    def __init__(self, table: StateTable, ttl: TtlPolicy, cleanup_size: int,
                 before_change: Callable[[int], None]) -> None:  # fmt: skip
        if cleanup_size <= 0:
            raise ValueError(f"incremental TTL cleanup size must be > 0, got {cleanup_size!r}")
        self._table = table
        self._ttl = ttl
        self._before_change = before_change
        #: Every dict of the table with its key group's offset, in walk order (a table's
        #: dicts are never replaced); the walk is at ``_dicts[_at]``, with the storage keys
        #: of that dict still to look at in ``_pending``.
        self._dicts = [(offset, dicts[offset]) for offset in range(table.groups)
                       for dicts in (table.void, table.windowed)]  # fmt: skip
        tables = [entries for _, entries in self._dicts]
        self._at = -1
        self._pending: list[Any] = []
        self._calls = 0  # records since the last walk (:meth:`record`)
        #: The steps of a whole pass: entries and dicts (a ``len`` per dict).
        self._pace = TtlPace(ttl, BATCH * cleanup_size,
                             lambda: sum(map(len, tables)) + len(tables))  # fmt: skip

    def sweep(self) -> None:
        """For :data:`BATCH` accesses (the state counts them) or records: a walk of the steps
        due since the last one, at most ``BATCH * cleanup_size`` (the module docstring)."""
        self.walk(*self._pace.due())

    def record(self) -> None:
        """One record (``run_cleanup_for_every_record``): a :meth:`sweep` every
        :data:`BATCH` records."""
        self._calls += 1
        if self._calls >= BATCH:
            self._calls = 0
            self.sweep()

    def walk(self, steps: int, now: int) -> None:
        """Look at the next ``steps`` entries (fewer if dicts were passed), expired as of
        ``now``."""
        dicts = self._dicts
        if not dicts:
            return
        ttl = self._ttl
        ttl_ms = ttl.ttl_ms
        kind = self._table.kind
        scalar = kind not in ("list", "map")
        deadline = now - ttl_ms  # a scalar entry (value, ts) is expired iff ts <= deadline
        at, pending = self._at, self._pending
        while steps > 0:
            if not pending:  # the next dict: a step, however big it is
                steps -= 1
                at = (at + 1) % len(dicts)
                if dicts[at][1]:
                    pending = list(dicts[at][1])  # a copy: entries change between walks
                continue
            n = min(steps, len(pending))
            steps -= n
            chunk = pending[-n:]
            del pending[-n:]
            offset, entries = dicts[at]
            get = entries.get
            if scalar:
                expired = [k for k in chunk if (e := get(k)) is not None and e[1] <= deadline]
                if expired:
                    self._before_change(offset)
                    for k in expired:
                        del entries[k]
                continue
            for skey in chunk:
                entry = get(skey)
                if entry is None:
                    continue  # removed since the walk reached this dict
                live = live_entry(kind, entry, ttl_ms, now)
                if live is ABSENT:
                    self._before_change(offset)
                    del entries[skey]
                elif len(live) != len(entry):
                    self._before_change(offset)
                    entries[skey] = live
        self._at, self._pending = at, pending
