"""Heap state objects with processing-time TTL (Flink's ``TtlValueState`` and friends).

A TTL-enabled state stores ``(value, last_access_ms)`` where the plain state stores ``value``
(per entry, list element or map entry). An entry is expired when ``last_access_ms + ttl_ms <=
clock()``; every write sets the timestamp to ``clock()``. States without TTL use
:mod:`undertow.state.heap_states` and pay nothing for it.

Threading: the owning subtask's loop thread only. Cost: one ``clock()`` call per operation on
top of the plain state; list/map reads are O(entry size).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from undertow.state.descriptors import StateDescriptor, StateTtlConfig
from undertow.state.heap_states import (
    ABSENT,
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapState,
    HeapValueState,
    KeyContext,
    StateTable,
    check_element,
)
from undertow.state.key_groups import state_entries, user_items, user_keys
from undertow.state.value_types import put_all_entries


class TtlPolicy:
    """The TTL settings of one state, resolved once at registration."""

    __slots__ = ("clock", "return_expired", "ttl_ms", "update_on_read")

    def __init__(self, config: StateTtlConfig, clock: Callable[[], int]) -> None:
        self.ttl_ms = config.ttl_ms
        self.update_on_read = config.update_type is StateTtlConfig.UpdateType.OnReadAndWrite
        self.return_expired = (
            config.state_visibility is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        )
        self.clock = clock

    def expired(self, ts: int, now: int) -> bool:
        return ts + self.ttl_ms <= now


def live_entry(kind: str, entry: Any, ttl_ms: int, now: int) -> Any:
    """``entry`` without its expired parts, or ``ABSENT`` if nothing is left (for snapshots)."""
    if kind == "list":
        kept = [e for e in entry if e[1] + ttl_ms > now]
        return kept if kept else ABSENT
    if kind == "map":
        kept_map = {k: e for k, e in entry.items() if e[1] + ttl_ms > now}
        return kept_map if kept_map else ABSENT
    return entry if entry[1] + ttl_ms > now else ABSENT


def wrap_entry(kind: str, entry: Any, now: int) -> Any:
    """A plain entry as a TTL entry accessed at ``now`` (restoring into a TTL state)."""
    if kind == "list":
        return [(v, now) for v in entry]
    if kind == "map":
        return {k: (v, now) for k, v in entry.items()}
    return (entry, now)


def unwrap_entry(kind: str, entry: Any) -> Any:
    """A TTL entry as a plain entry (restoring into a state without TTL)."""
    if kind == "list":
        return [v for v, _ in entry]
    if kind == "map":
        return {k: v for k, (v, _) in entry.items()}
    return entry[0]


def read_scalar(table: dict[Any, Any], skey: Any, ttl: TtlPolicy) -> Any:
    """The stored value of ``skey`` after the TTL check (a read), or ``ABSENT``."""
    entry = table.get(skey)
    if entry is None:
        return ABSENT
    now = ttl.clock()
    if ttl.expired(entry[1], now):
        del table[skey]
        return entry[0] if ttl.return_expired else ABSENT
    if ttl.update_on_read:
        table[skey] = (entry[0], now)
    return entry[0]


def live_scalar(table: dict[Any, Any], skey: Any, ttl: TtlPolicy, now: int) -> Any:
    """The live stored value of ``skey`` (expired counts as absent); timestamps untouched."""
    entry = table.get(skey)
    if entry is None or ttl.expired(entry[1], now):
        return ABSENT
    return entry[0]


def live_merge_input(entry: Any, ttl: TtlPolicy) -> Any:
    """A ``(value, ts)`` entry as merge input: ``ABSENT`` if missing or expired."""
    if entry is ABSENT or ttl.expired(entry[1], ttl.clock()):
        return ABSENT
    return entry


class SweepCountdown:
    """A state whose accesses count down to a backend's TTL cleanup: each access path does
    ``self._until_sweep -= 1`` and, at 0, calls :meth:`_count_down` (inline: no call on the
    other accesses), which runs :attr:`sweep` every ``accesses_per_sweep`` accesses, or never
    again if the backend set none (:mod:`.heap_ttl_cleanup`, :mod:`.rocksdb_ttl_cleanup`)."""

    def _init_countdown(self) -> None:
        #: The backend's cleanup, called once every ``accesses_per_sweep`` accesses (the
        #: countdown in ``_until_sweep``); None: no cleanup.
        self.sweep: Callable[[], None] | None = None
        self.accesses_per_sweep = 1
        self._until_sweep = 1

    def _count_down(self) -> None:
        self._until_sweep = self.accesses_per_sweep
        if self.sweep is not None:
            self.sweep()
        else:
            self._until_sweep = 1 << 62  # never again


class _TtlState(SweepCountdown, HeapState):
    """First base of each TTL state, before its plain heap state: entries are ``(value, ts)``
    read and written against ``ttl``'s clock. Its ``__init__`` takes the policy and hands the
    rest on along the MRO (to the plain state's own ``__init__``, if it has one). Accesses
    count down to :attr:`sweep`, called every ``accesses_per_sweep`` accesses before the
    access (a backend's incremental cleanup, :mod:`.heap_ttl_cleanup`; none unless the
    backend sets one)."""

    def __init__(
        self, table: StateTable, ctx: KeyContext, descriptor: StateDescriptor, ttl: TtlPolicy
    ) -> None:
        super().__init__(table, ctx, descriptor)
        self._ttl = ttl
        self._init_countdown()

    def _slot(self) -> tuple[dict[Any, Any], Any]:
        self._until_sweep -= 1
        if not self._until_sweep:
            self._count_down()
        ctx = self._ctx  # HeapState._slot, inlined: TTL states pay one call per access
        if self._void:
            return self._tables[ctx.offset], ctx.key
        return self._tables[ctx.offset], (ctx.key, self._namespace)

    def _map_slot(self, key: Any) -> tuple[dict[Any, Any], Any, Any]:
        self._until_sweep -= 1
        if not self._until_sweep:
            self._count_down()
        return HeapMapState._map_slot(self, key)  # type: ignore[arg-type]


class TtlValueState(_TtlState, HeapValueState):
    def value(self) -> Any:
        v = read_scalar(*self._slot(), self._ttl)
        return None if v is ABSENT else v

    def update(self, value: Any) -> None:
        table, skey = self._slot()
        if value is None:
            table.pop(skey, None)
            return
        if self.value_check is not None:
            self.value_check(value)
        table[skey] = (value, self._ttl.clock())


class TtlReducingState(_TtlState, HeapReducingState):
    def get(self) -> Any:
        v = read_scalar(*self._slot(), self._ttl)
        return None if v is ABSENT else v

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        table, skey = self._slot()
        now = self._ttl.clock()
        current = live_scalar(table, skey, self._ttl, now)
        reduced = value if current is ABSENT else self._reduce(current, value)
        if self.value_check is not None:
            self.value_check(reduced)
        table[skey] = (reduced, now)

    def _readable(self, entry: Any) -> Any:
        return live_merge_input(entry, self._ttl)

    def _merge(self, a: Any, b: Any) -> Any:
        return (self._reduce(a[0], b[0]), self._ttl.clock())


class TtlAggregatingState(_TtlState, HeapAggregatingState):
    def get(self) -> Any:
        acc = read_scalar(*self._slot(), self._ttl)
        return None if acc is ABSENT else self._fn.get_result(acc)

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        table, skey = self._slot()
        now = self._ttl.clock()
        acc = live_scalar(table, skey, self._ttl, now)
        if acc is ABSENT:
            acc = self._fn.create_accumulator()
        acc = self._fn.add(value, acc)
        if self.value_check is not None:
            self.value_check(acc)
        table[skey] = (acc, now)

    def _readable(self, entry: Any) -> Any:
        return live_merge_input(entry, self._ttl)

    def _merge(self, a: Any, b: Any) -> Any:
        return (self._fn.merge(a[0], b[0]), self._ttl.clock())


class TtlListState(_TtlState, HeapListState):
    """Each element carries its own timestamp (Flink's ``TtlListState``)."""

    def stored_element(self, value: Any) -> Any:
        check_element(self, value)
        return (value, self._ttl.clock())

    def get(self) -> Iterable[Any]:
        table, skey = self._slot()
        entry = table.get(skey)
        if entry is None:
            return []
        ttl = self._ttl
        now = ttl.clock()
        live = [e for e in entry if not ttl.expired(e[1], now)]
        result = [v for v, _ in (entry if ttl.return_expired else live)]
        if ttl.update_on_read:
            live = [(v, now) for v, _ in live]
        if not live:
            del table[skey]
        elif len(live) != len(entry) or ttl.update_on_read:
            table[skey] = live
        return result

    def add(self, value: Any) -> None:
        check_element(self, value)
        table, skey = self._slot()
        entry = table.get(skey)
        if entry is None:
            table[skey] = [(value, self._ttl.clock())]
        else:
            entry.append((value, self._ttl.clock()))

    def add_all(self, values: list[Any]) -> None:
        if not values:
            return
        for v in values:
            check_element(self, v)
        table, skey = self._slot()
        now = self._ttl.clock()
        table.setdefault(skey, []).extend((v, now) for v in values)

    def update(self, values: list[Any]) -> None:
        table, skey = self._slot()
        if not values:
            table.pop(skey, None)
            return
        for v in values:
            check_element(self, v)
        now = self._ttl.clock()
        table[skey] = [(v, now) for v in values]

    def _readable(self, entry: Any) -> Any:
        if entry is ABSENT:
            return ABSENT
        ttl = self._ttl
        now = ttl.clock()
        live = [e for e in entry if not ttl.expired(e[1], now)]
        return live if live else ABSENT


class TtlMapState(_TtlState, HeapMapState):
    """Each map entry carries its own timestamp (Flink's ``TtlMapState``)."""

    def _lookup(self, key: Any) -> Any:
        """The value of map key ``key`` after the TTL check (a read), or ``ABSENT``."""
        table, skey, key = self._map_slot(key)  # 0.0, -0.0 two entries, NaNs one
        entry = table.get(skey)
        if entry is None or key not in entry:
            return ABSENT
        value, ts = entry[key]
        ttl = self._ttl
        now = ttl.clock()
        if ttl.expired(ts, now):
            del entry[key]
            if not entry:
                del table[skey]
            return value if ttl.return_expired else ABSENT
        if ttl.update_on_read:
            entry[key] = (value, now)
        return value

    def get(self, key: Any) -> Any:
        value = self._lookup(key)
        return None if value is ABSENT else value

    def contains(self, key: Any) -> bool:
        return self._lookup(key) is not ABSENT

    def put(self, key: Any, value: Any) -> None:
        if self.entry_check is not None:
            self.entry_check(key, value)
        table, skey, key = self._map_slot(key)
        table.setdefault(skey, {})[key] = (value, self._ttl.clock())

    def put_all(self, mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        given = put_all_entries(mapping, self.descriptor.name)
        if not given:
            return
        table, skey = self._slot()
        now = self._ttl.clock()
        entries = state_entries(self.checked(given))
        table.setdefault(skey, {}).update((k, (v, now)) for k, v in entries.items())

    def _entries(self, *, touch: bool) -> list[tuple[Any, Any]]:
        """Visible ``(key, value)`` pairs; drops expired entries and refreshes live ones."""
        table, skey = self._slot()
        entry = table.get(skey)
        if entry is None:
            return []
        ttl = self._ttl
        now = ttl.clock()
        visible: list[tuple[Any, Any]] = []
        for k, (v, ts) in list(entry.items()):
            if ttl.expired(ts, now):
                del entry[k]
                if ttl.return_expired:
                    visible.append((k, v))
            else:
                visible.append((k, v))
                if touch and ttl.update_on_read:
                    entry[k] = (v, now)
        if not entry:
            del table[skey]
        return visible

    def items(self) -> Iterable[tuple[Any, Any]]:
        return user_items(self._entries(touch=True))

    def keys(self) -> Iterable[Any]:
        return user_keys([k for k, _ in self._entries(touch=True)])

    def values(self) -> Iterable[Any]:
        return [v for _, v in self._entries(touch=True)]

    def is_empty(self) -> bool:
        return not self._entries(touch=False)


#: The TTL state class for each descriptor kind.
TTL_STATE_CLASSES: dict[str, Callable[..., HeapState]] = {
    "value": TtlValueState,
    "list": TtlListState,
    "map": TtlMapState,
    "reducing": TtlReducingState,
    "aggregating": TtlAggregatingState,
}
