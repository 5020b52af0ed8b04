"""The RocksDB keyed state backend: keyed state of one operator subtask in an embedded RocksDB.

One DB per backend in a fresh local directory, one column family per state name, DB keys
prefixed by key group. Durability comes from checkpoints, not from the DB (the write-ahead log
is off); savepoints and full checkpoints are canonical (the heap backend's blob format), so a
job can switch backends at restore; with ``incremental`` a checkpoint is a native one
(:mod:`undertow.state.rocksdb_native`: native snapshots and their restore).

Threading: one backend belongs to one subtask and is used only from that subtask's loop
thread. Cost: ``set_current_key`` computes the key group; a state operation is one DB read and
at most one write; ``snapshot``/``restore`` are O(state size); ``keys`` scans the state's
column family.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import os
import tempfile
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from rocksdict import Rdict, WriteBatch, WriteOptions

from undertow.core.errors import StateError
from undertow.state.backend import VOID_NAMESPACE, InternalKvState
from undertow.state.descriptors import StateDescriptor
from undertow.state.heap import decode_key_group_blob, encode_key_group_blob
from undertow.state.heap_states import ABSENT, STATE_CLASSES, KeyContext, StateTable, UnkeyedDict
from undertow.state.heap_ttl import (
    TTL_STATE_CLASSES,
    TtlPolicy,
    live_entry,
    unwrap_entry,
    wrap_entry,
)
from undertow.state.key_groups import (
    assign_to_key_group,
    require_hashable,
    state_key,
    user_key,
)
from undertow.state.rocksdb_fold import WriteBackCache, fold_cached
from undertow.state.rocksdb_incremental import (
    IncrementalKeyedHandle,
    SharedFile,
)
from undertow.state.rocksdb_local import close_and_delete, new_db_directory, sweep_dead_directories
from undertow.state.rocksdb_map import (
    LAYOUT_KEY,
    MAP_PER_KEY,
    RocksDBMapState,
    group_map_entries,
    map_entries,
    split_entry_key,
)
from undertow.state.rocksdb_native import RocksDBNativeSnapshots
from undertow.state.rocksdb_options import RocksDBMemory
from undertow.state.rocksdb_states import (
    VOID_TAG,
    KeyEncoder,
    RocksDBAggregatingState,
    RocksDBListState,
    RocksDBReducingState,
    RocksDBState,
    RocksDBValueState,
    db_key,
    decode_value,
    encode_value,
    int_void_db_key,
)
from undertow.state.rocksdb_timers import (
    TIMER_COLUMN_PREFIX,
    RocksDBTimerQueue,
    timer_column,
)
from undertow.state.rocksdb_ttl_cleanup import attach_walk

#: TTL of restored TTL state whose descriptor is not registered yet: keep everything.
_KEEP_ALL_MS = 2**62

#: The RocksDB state class for each descriptor kind.
ROCKSDB_STATE_CLASSES: dict[str, type[RocksDBState]] = {
    "value": RocksDBValueState,
    "list": RocksDBListState,
    "map": RocksDBMapState,
    "reducing": RocksDBReducingState,
    "aggregating": RocksDBAggregatingState,
}


def check_kind(operator_name: str, name: str, kind: str) -> None:
    if kind not in ROCKSDB_STATE_CLASSES:
        raise StateError(f"operator {operator_name!r}: state {name!r} has unknown kind {kind!r}")


class RocksDBKeyedStateBackend(RocksDBNativeSnapshots):
    """Keyed state in an embedded RocksDB (see the module docstring)."""

    def __init__(
        self,
        operator_name: str,
        max_parallelism: int,
        key_group_range: range,
        clock: Callable[[], int],
        local_dir: str = "",
        incremental: bool = False,
        timer_service: str = "ROCKSDB",
        memory: RocksDBMemory | None = None,
    ) -> None:
        self._identify(operator_name, max_parallelism, key_group_range)
        self._clock = clock
        if local_dir:
            os.makedirs(local_dir, exist_ok=True)
        parent = local_dir or tempfile.gettempdir()
        sweep_dead_directories(parent)
        safe = "".join(c if c.isalnum() else "_" for c in operator_name)[:40]
        self.directory = new_db_directory(parent, safe)
        self._columns: dict[str, Rdict] = {}
        #: Block cache (and write buffer manager) of the DB, see ``rocksdb_options``.
        self._resources = (memory or RocksDBMemory()).build()
        self._open_db()
        self._db.put(LAYOUT_KEY, MAP_PER_KEY)  # a native restore may adopt an older DB
        #: Encodes keys into DB keys (one pickler for the backend, see ``KeyEncoder``).
        self.encode_key = KeyEncoder()
        #: The current key's DB key in ``VOID_NAMESPACE``, made on first use per key.
        self._current_dkey: bytes | None = None
        self._meta: dict[str, tuple[str, bool]] = {}  # state name -> (kind, ttl)
        self._states: dict[str, RocksDBState] = {}
        self._scratch: dict[str, StateTable] = {}
        self._unkeyed = UnkeyedDict(operator_name)
        self.scratch_context = KeyContext(unkeyed_offset=1)
        self._key: Any = None
        #: The current key in ``state_key`` form (``get_current_key``): ``_key`` encodes.
        self._current: Any = None
        self._key_group: int | None = None
        self._disposed = False
        #: Incremental checkpoints (``execution.checkpointing.incremental``): native ones.
        self.incremental = incremental
        self.backend_id = uuid.uuid4().hex[:12]
        #: Local SST name -> shared file, of the last checkpoint confirmed complete (or restored).
        self._confirmed: dict[str, SharedFile] = {}
        #: Checkpoint id -> its uploaded handle (filled on the I/O thread), until confirmed.
        self._uploaded: dict[int, IncrementalKeyedHandle] = {}
        #: Checkpoint id -> the confirmed files it could reuse, for checkpoints taken and not yet
        #: confirmed or subsumed here (see :meth:`_reusable`).
        self._bases: dict[int, dict[str, SharedFile]] = {}
        #: ``state.backend.rocksdb.timer-service.factory``: timers in the DB (``ROCKSDB``) or in
        #: the timer service's heap queues (``HEAP``).
        self.timers_in_db = timer_service == "ROCKSDB"
        #: Column families of timers (restored ones too): in native checkpoints as they are.
        self._timer_columns: set[str] = set()
        #: ``int`` key -> its DB key in ``VOID_NAMESPACE`` (see :meth:`_void_db_key`).
        self._int_db_keys: dict[int, bytes] = {}
        self._write_back = WriteBackCache(self.batch, self.write)

    def _open_db(self) -> None:
        """Open (or reopen, after a native restore moved files in) ``<directory>/db``."""
        self._db = Rdict(os.path.join(self.directory, "db"), self._resources.options())
        write_options = WriteOptions()
        write_options.disable_wal = True  # type: ignore[method-assign,assignment]  # a property
        self._db.set_write_options(write_options)
        self._finalizer = weakref.finalize(
            self, close_and_delete, self._db, self._columns, self.directory
        )

    # --- current key ---------------------------------------------------------------------

    def set_current_key(self, key: Any) -> None:
        self._key_group = None
        self._current_dkey = None
        try:
            hash(key)
        except TypeError:
            self._key = self._current = key  # the refused key is not current: no key group
            self.set_current_key(require_hashable(key, self.operator_name))
            return
        # all NaNs one key, ±0.0 two, as Flink's Double.equals; encoded, -0.0 is the float
        # (its pickle is not 0.0's: the DB keys of earlier versions stay)
        self._current = current = state_key(key)
        if current is not key:  # it held a NaN or a -0.0: the canonical NaN, the float -0.0
            key = user_key(current)
        self._key = key
        key_group = assign_to_key_group(key, self.max_parallelism)
        r = self.key_group_range
        if not r.start <= key_group < r.stop:
            raise self._key_outside_range(key, key_group)
        self._key_group = key_group

    def get_current_key(self) -> Any:
        """The current key in :func:`~undertow.state.key_groups.state_key` form, as the heap
        backend's (a timer queue's set holds ``0.0`` and ``-0.0`` apart)."""
        return self._current

    def current_void_db_key(self) -> bytes:
        """The current key's DB key in ``VOID_NAMESPACE`` (encoded once per current key);
        ``StateError`` if there is no current key."""
        dkey = self._current_dkey
        if dkey is None:
            key, key_group = self.current_key_and_group()
            if type(key) is int:  # its key group is in range: set_current_key checked it
                dkey = int_void_db_key(key, self.max_parallelism, self.key_group_range,
                                       self._int_db_keys)  # fmt: skip
            else:
                dkey = db_key(key_group, key, VOID_NAMESPACE, self.encode_key)
            self._current_dkey = dkey
        return dkey  # type: ignore[return-value]

    def current_key_and_group(self) -> tuple[Any, int]:
        """The current key and its key group; ``StateError`` if there is none (state use)."""
        if self._key_group is None or self._disposed:
            raise StateError(
                f"operator {self.operator_name!r}: keyed state accessed without a current key "
                "(outside processElement/onTimer of a keyed stream, or after dispose)"
            )
        return self._key, self._key_group

    # --- states --------------------------------------------------------------------------

    def column(self, name: str) -> Rdict:
        """The column family of state ``name`` (created on first use)."""
        column = self._columns.get(name)
        if column is None:
            if self._disposed:
                raise StateError(f"operator {self.operator_name!r}: backend is disposed")
            if name in self._db.list_cf(self._db.path()):
                column = self._db.get_column_family(name)
            else:
                column = self._db.create_column_family(name, self._resources.options())
            self._columns[name] = column
        return column

    def timer_queue(self, service: str, domain: str) -> RocksDBTimerQueue | None:
        """The queue of ``service``'s ``domain`` (``event``/``processing``) timers in this DB,
        or ``None`` with ``timer-service.factory: HEAP`` (the timer service keeps them)."""
        if not self.timers_in_db:
            return None
        name = timer_column(service, domain)
        self._timer_columns.add(name)
        return RocksDBTimerQueue(self.column(name), self.max_parallelism, encode=self.encode_key)

    def scratch(self, name: str) -> StateTable:
        return self._scratch[name]

    def get_partitioned_state(self, descriptor: StateDescriptor) -> InternalKvState[Any]:
        name = descriptor.name
        kind = descriptor.kind
        if name.startswith(TIMER_COLUMN_PREFIX):
            raise StateError(
                f"operator {self.operator_name!r}: state name {name!r} is reserved for timers "
                f"(names starting with {TIMER_COLUMN_PREFIX!r})"
            )
        state = self._states.get(name)
        if state is not None:
            if state.kind != kind:
                raise self._kind_error(name, state.kind, kind)
            return state
        check_kind(self.operator_name, name, kind)
        ttl_config = descriptor.ttl_config
        ttl = ttl_config is not None and ttl_config.is_enabled()
        meta = self._meta.get(name)
        if meta is not None and meta[0] != kind:
            raise self._kind_error(name, meta[0], kind)
        if meta is not None and meta[1] != ttl:
            self._convert_ttl(name, kind, ttl)
        self._meta[name] = (kind, ttl)
        self.column(name)
        table = StateTable(name, kind, ttl, 1, self._unkeyed)
        self._scratch[name] = table
        ctx = self.scratch_context
        policy = None if ttl_config is None or not ttl else TtlPolicy(ttl_config, self._clock)
        if policy is not None:
            inner = TTL_STATE_CLASSES[kind](table, ctx, descriptor, policy)
        else:
            inner = STATE_CLASSES[kind](table, ctx, descriptor)
        state = ROCKSDB_STATE_CLASSES[kind](self, name, inner)
        if ttl_config is not None and policy is not None:
            attach_walk(state, self, name, kind, policy, ttl_config)
        self._states[name] = state
        return state

    def _convert_ttl(self, name: str, kind: str, ttl: bool) -> None:
        """Restored entries written with(out) TTL, read by a state without (with) TTL."""
        now = self._clock()
        batch = self.batch(name)
        entry_kind = "value" if kind == "map" else kind  # a map's DB entry holds one map value
        for dkey, raw in self._items(name):
            entry = decode_value(raw)
            entry = wrap_entry(entry_kind, entry, now) if ttl else unwrap_entry(entry_kind, entry)
            batch.put(dkey, encode_value(entry))
        self._db.write(batch)

    def _items(self, name: str, key_group: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Every (DB key, value) of state ``name`` in key order, or those of one key group."""
        self._write_back.flush(name)
        column: Any = self.column(name)  # raw mode: keys and values are bytes
        if key_group is None:
            yield from column.items()
            return
        prefix = key_group.to_bytes(2, "big")
        for dkey, raw in column.items(from_key=prefix):
            if dkey[:2] != prefix:
                break
            yield dkey, raw

    def write(self, batch: WriteBatch) -> None:
        self._db.write(batch)

    def batch(self, name: str) -> WriteBatch:
        batch = WriteBatch(raw_mode=True)
        self.column(name)
        batch.set_default_column_family(self._db.get_column_family_handle(name))
        return batch

    def fold_values(
        self,
        state: InternalKvState[Any],
        keys: list[Any],
        values: list[Any],
        fold: Callable[[Any, Any], Any],
    ) -> list[Any]:
        if (
            type(state) is not RocksDBValueState
            or state.namespace is not VOID_NAMESPACE
            or self._meta[state.descriptor.name][1]
        ):
            return super().fold_values(state, keys, values, fold)
        name = state.descriptor.name
        dkeys = [self._void_db_key(key) for key in keys]
        out = fold_cached(self._write_back, name, self.column(name), dkeys, keys, values, fold,
                          self._enter_key)  # fmt: skip
        if keys:
            self.set_current_key(keys[-1])
        return out

    def _enter_key(self, key: Any, dkey: bytes) -> None:
        if type(key) is int:
            self._key, self._key_group = key, int.from_bytes(dkey[:2], "big")
            self._current = key
            self._current_dkey = dkey
        else:
            self.set_current_key(key)

    def flush_cached(self, name: str | None = None) -> None:
        """Write what batch folds left cached for state ``name`` (every state if ``None``)
        into the DB: before anything else reads or writes it (see ``rocksdb_fold``)."""
        self._write_back.flush(name)

    def _void_db_key(self, key: Any) -> bytes:
        """The DB key of ``key`` in ``VOID_NAMESPACE``; an ``int`` key skips the key context
        (:func:`~undertow.state.rocksdb_states.int_void_db_key`)."""
        if type(key) is int:
            dkey = int_void_db_key(key, self.max_parallelism, self.key_group_range,
                                   self._int_db_keys)  # fmt: skip
            if dkey is not None:
                return dkey
        self.set_current_key(key)  # computes the key group, or raises StateError
        return self.current_void_db_key()

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        """Keys with an entry (expired TTL entries not yet cleaned up included, as in Flink).

        Returns a list's iterator: the caller may change state while iterating.
        """
        if state_name not in self._meta or self._disposed:
            return iter(())
        found: list[Any] = []
        void = namespace is VOID_NAMESPACE
        is_map = self._meta[state_name][0] == "map"
        prefix = b"\xff"  # a map's entries share their prefix: its key is listed once
        for dkey, _ in self._items(state_name):
            if is_map:
                if dkey.startswith(prefix):
                    continue
                prefix = dkey[: 3 + split_entry_key(dkey[3:])]
            is_void = dkey[2:3] == VOID_TAG
            if void and is_void:
                found.append(decode_value(dkey[3:]))
            elif not void and not is_void:
                key, ns = decode_value(dkey[3:])
                if ns == namespace:
                    found.append(key)
        return iter(found)

    # --- snapshot and restore ------------------------------------------------------------

    def snapshot(self) -> dict[int, bytes]:
        """The canonical blobs, built one key group at a time: besides the blobs, memory holds
        the decoded entries of one key group only (state may be larger than memory)."""
        if self._disposed:
            return {}
        now = self._clock()
        blobs: dict[int, bytes] = {}
        for key_group in self.key_group_range:
            states: dict[str, tuple[str, bool, dict[Any, Any], dict[Any, Any]]] = {}
            for name, (kind, ttl) in self._meta.items():
                ttl_ms = self._ttl_ms(name) if ttl else 0
                void: dict[Any, Any] = {}
                windowed: dict[Any, Any] = {}
                for head, skey, entry in self._entries(name, kind, key_group):
                    if ttl:
                        entry = live_entry(kind, entry, ttl_ms, now)
                        if entry is ABSENT:
                            continue
                    # in a dict, the heap's keys: -0.0 apart from 0.0 of its key group
                    (void if head[2:3] == VOID_TAG else windowed)[state_key(skey)] = entry
                if void or windowed:
                    states[name] = (kind, ttl, void, windowed)
            if states:
                blobs[key_group] = encode_key_group_blob({"key_group": key_group, "states": states})
        return blobs

    def _entries(self, name: str, kind: str, key_group: int) -> Iterator[tuple[bytes, Any, Any]]:
        """``(head, key or (key, namespace), entry)`` of state ``name`` in ``key_group``, the
        entry as the heap backend holds it (a map's entries gathered into one dict)."""
        items = self._items(name, key_group)
        if kind == "map":
            return group_map_entries(items)
        return ((dkey[:3], decode_value(dkey[3:]), decode_value(raw)) for dkey, raw in items)

    def _ttl_ms(self, name: str) -> int:
        state = self._states.get(name)
        config = None if state is None else state.descriptor.ttl_config
        return _KEEP_ALL_MS if config is None else config.ttl_ms

    def restore(self, blobs: dict[int, bytes]) -> None:
        now = self._clock()
        r = self.key_group_range
        for key_group, blob in blobs.items():
            if not r.start <= key_group < r.stop:
                continue
            payload = decode_key_group_blob(blob, self.operator_name, key_group)
            for name, (kind, ttl, void, windowed) in payload["states"].items():
                meta = self._meta.get(name)
                if meta is None:
                    check_kind(self.operator_name, name, kind)
                    meta = self._meta[name] = (kind, ttl)
                elif meta[0] != kind:
                    raise self._kind_error(name, meta[0], kind)
                batch = self.batch(name)
                for namespaced, entries in ((False, void), (True, windowed)):
                    for skey, entry in entries.items():
                        if meta[1] != ttl:
                            entry = (
                                wrap_entry(kind, entry, now)
                                if meta[1]
                                else unwrap_entry(kind, entry)
                            )
                        if namespaced:
                            dkey = db_key(key_group, user_key(skey[0]), skey[1], self.encode_key)
                        else:
                            dkey = db_key(key_group, user_key(skey), VOID_NAMESPACE,
                                          self.encode_key)  # fmt: skip
                        if kind == "map":
                            for entry_key, raw in map_entries(dkey, entry, self.encode_key):
                                batch.put(entry_key, raw)
                        else:
                            batch.put(dkey, encode_value(entry))
                self._db.write(batch)

    def dispose(self) -> None:
        """Close the DB and delete its directory; state objects raise ``StateError`` after."""
        if self._disposed:
            return
        self._disposed = True
        self._write_back.drop()
        self._key = self._current = None
        self._key_group = None
        self._current_dkey = None
        self._states.clear()
        self._meta.clear()
        self._finalizer()

    def __repr__(self) -> str:
        r = self.key_group_range
        return (
            f"RocksDBKeyedStateBackend({self.operator_name!r}, key groups [{r.start}, {r.stop}) "
            f"of {self.max_parallelism}, {len(self._meta)} states, {self.directory})"
        )
