"""The heap keyed state backend: all keyed state of one operator subtask in Python dicts.

Invariants: one :class:`~undertow.state.heap_states.StateTable` per state name, whose kind
never changes; inside it one dict per owned key group, holding only keys of that key group (a
snapshot is one blob per key group); entries are never empty. With ``incremental`` a
checkpoint writes only the key groups accessed since the last completed one
(:mod:`.heap_incremental`).

Threading: one backend belongs to one subtask and is used only from that subtask's loop thread;
it takes no locks. ``snapshot()`` only notes the key groups holding state; each is pickled
before anything can touch it again, or when the snapshot is read (:mod:`.heap_snapshot`).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import functools
import pickle
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from undertow.common.row import Row
from undertow.common.row_batches import pack_values
from undertow.core import pickling
from undertow.core.errors import StateError
from undertow.state.backend import (
    VOID_NAMESPACE,
    InternalKvState,
    KeyedStateBackend,
    PairAggregation,
)
from undertow.state.descriptors import StateDescriptor
from undertow.state.heap_fold import fold_untracked, fold_untracked_by
from undertow.state.heap_incremental import (
    CompactionPolicy,
    DirtyKeyGroups,
    DownloadedHeapState,
    HeapNativeSnapshot,
)
from undertow.state.heap_snapshot import PendingKeyGroups
from undertow.state.heap_states import (
    ABSENT,
    STATE_CLASSES,
    HeapState,
    HeapValueState,
    KeyContext,
    StateTable,
    UnkeyedDict,
)
from undertow.state.heap_ttl import (
    TTL_STATE_CLASSES,
    TtlPolicy,
    live_entry,
    unwrap_entry,
    wrap_entry,
)
from undertow.state.heap_ttl_cleanup import attach_sweeper
from undertow.state.key_groups import (
    assign_to_key_group,
    groups_by_equality,
    require_hashable,
    state_entries,
    state_key,
    user_key,
)

_MAGIC = b"UHKG"
_VERSION = 1
_HEADER = struct.Struct(">4sBI")
#: Bound of the key -> key group offset cache (cleared when full): the partitioner's and the
#: key hash cache's. At 4,096 a stream of 10,000 keys missed on every record, paying the key
#: group's hash (~0.45 us for an int) and a clear per 4,096 records; 65,536 offsets cost ~2.6 MB.
_KEY_CACHE_LIMIT = 1 << 16


class HeapKeyedStateBackend(KeyedStateBackend):
    """Keyed state in dicts, one per state and key group (see the module docstring)."""

    def __init__(
        self,
        operator_name: str,
        max_parallelism: int,
        key_group_range: range,
        clock: Callable[[], int],
        *,
        incremental: bool = False,
        compaction: CompactionPolicy | None = None,
    ) -> None:
        self._identify(operator_name, max_parallelism, key_group_range)
        self._clock = clock
        self._groups = len(key_group_range)
        self._unkeyed = UnkeyedDict(operator_name)
        self._ctx = KeyContext(unkeyed_offset=self._groups)
        self._offsets: dict[Any, int] = {}
        self._float_offsets: dict[float, int] = {}
        self._tables: dict[str, StateTable] = {}
        self._states: dict[str, HeapState] = {}
        #: The snapshot whose key groups are not all serialized yet (at most one).
        self._snapshot: PendingKeyGroups | None = None
        #: Incremental checkpoints (``execution.checkpointing.incremental``): the chain takes
        #: :meth:`native_checkpoint` instead of :meth:`snapshot` for checkpoints.
        self.incremental = incremental
        #: Per key group, the snapshot count at its last access (:mod:`.heap_incremental`);
        #: None without incremental checkpoints (no cost on the record path).
        self._dirty = (
            DirtyKeyGroups(self._groups, compaction or CompactionPolicy()) if incremental else None
        )
        self._record_sweeps: list[Callable[[], None]] = []  # TTL cleanups run every record

    # --- current key ---------------------------------------------------------------------

    def set_current_key(self, key: Any) -> None:
        ctx = self._ctx
        ctx.key = key
        key_type = type(key)  # int, str, float first: `is` tests cost less than a call
        cache: dict[Any, int] | None
        if key_type is int or key_type is str:
            cache = self._offsets
        elif key_type is float:
            # floats apart (1.0 == 1, another group), never ±0.0 (equal, two keys) nor a NaN
            # (a dict finds none but itself): state_key below makes them the keys Flink's are
            cache = self._float_offsets if key and key == key else None
        elif groups_by_equality(key) or (isinstance(key, Row) and groups_by_equality(tuple(key))):
            cache = self._offsets  # a ROW key of plain fields: equal rows are equal tuples
        else:
            cache = None
        if cache is not None:
            offset = cache.get(key)
            if offset is None:
                offset = self._offset_of(key)
                if len(cache) >= _KEY_CACHE_LIMIT:
                    cache.clear()
                cache[key] = offset
        else:  # a list, a Decimal, ±0.0, NaN...: never cached (equal keys, other key groups)
            try:
                hash(key)
            except TypeError:
                ctx.offset = self._groups  # no key group while the key is refused
                self.set_current_key(require_hashable(key, self.operator_name))
                return
            ctx.key = key = state_key(key)  # NaNs one key, ±0.0 two: Flink's Double.equals
            offset = self._offset_of(key)
        ctx.offset = offset
        snapshot = self._snapshot
        if snapshot is not None:  # copy on access: serialize the key group before its use
            snapshot.touch(offset)
        dirty = self._dirty
        if dirty is not None:  # any access may write: the key group changed
            dirty.stamps[offset] = dirty.epoch
        if self._record_sweeps:  # TTL cleanups run for every record (rare; a test is cheap)
            for sweep in self._record_sweeps:
                sweep()

    def fold_values(
        self,
        state: InternalKvState[Any],
        keys: list[Any],
        values: list[Any],
        fold: Callable[[Any, Any], Any],
    ) -> list[Any]:
        if type(state) is not HeapValueState or state.namespace is not VOID_NAMESPACE:
            return super().fold_values(state, keys, values, fold)
        offsets, tables, set_key, ctx = self._offsets, state.tables, self.set_current_key, self._ctx
        if self._snapshot is None and self._dirty is None:
            # nothing to copy on touch nor to mark dirty, and neither can start mid-batch (a
            # snapshot starts on the task thread, between batches): the loop without them
            out = fold_untracked(
                offsets, tables, set_key, ctx, keys, values, fold, self._float_offsets
            )
            if keys:
                set_key(keys[-1])
            return out
        out = []
        append = out.append
        for key, value in zip(keys, values):
            key_type = type(key)
            plain = key_type is int or key_type is str or groups_by_equality(key)
            offset = offsets.get(key) if plain else None
            if offset is None:
                set_key(key)  # computes and caches the offset, or raises StateError
                offset, key = ctx.offset, ctx.key  # key: its hashable form
            snapshot = self._snapshot
            if snapshot is not None:
                snapshot.touch(offset)
            dirty = self._dirty
            if dirty is not None:
                dirty.stamps[offset] = dirty.epoch
            table = tables[offset]
            old = table.get(key)
            if old is None:
                new = value
            else:  # ``fold`` may read other keyed state: it runs in this record's key
                ctx.key, ctx.offset = key, offset
                new = fold(old, value)
            if new is None:
                table.pop(key, None)
            else:
                table[key] = new
            append(new)
        if keys:
            set_key(keys[-1])
        return out

    def fold_keyed(
        self,
        state: InternalKvState[Any],
        values: list[Any],
        key_of: Callable[[Any], Any],
        fold: Callable[[Any, Any], Any],
        *,
        key_context: bool = True,
        pair: PairAggregation | None = None,
    ) -> list[Any]:
        if (
            type(state) is not HeapValueState
            or state.namespace is not VOID_NAMESPACE
            or self._snapshot is not None
            or self._dirty is not None
        ):
            return super().fold_keyed(state, values, key_of, fold, key_context=key_context)
        set_key = self.set_current_key
        slots = state.void_by_key
        if len(slots) > _KEY_CACHE_LIMIT:  # a batch adds at most one entry per record
            slots.clear()
        out, last = fold_untracked_by(
            self._offsets, state.tables, set_key, self._ctx, values, key_of, fold,
            key_context=key_context, pair=pair, slots=slots, float_offsets=self._float_offsets,
        )  # fmt: skip
        if values:
            set_key(last)
        return out

    def _offset_of(self, key: Any) -> int:
        key_group = assign_to_key_group(key, self.max_parallelism)
        offset = key_group - self.key_group_range.start
        if not 0 <= offset < self._groups:
            self._ctx.offset = self._groups
            raise self._key_outside_range(key, key_group)
        return offset

    def get_current_key(self) -> Any:
        return self._ctx.key

    # --- states --------------------------------------------------------------------------

    def get_partitioned_state(self, descriptor: StateDescriptor) -> InternalKvState[Any]:
        name = descriptor.name
        state = self._states.get(name)
        if state is not None:
            if state.kind != descriptor.kind:
                raise self._kind_error(name, state.kind, descriptor.kind)
            return state
        kind = descriptor.kind
        if kind not in STATE_CLASSES:
            raise StateError(
                f"operator {self.operator_name!r}: state {name!r} has unknown kind {kind!r}"
            )
        ttl_config = descriptor.ttl_config
        ttl = ttl_config is not None and ttl_config.is_enabled()
        table = self._tables.get(name)
        if table is None:
            table = StateTable(name, kind, ttl, self._groups, self._unkeyed)
            self._tables[name] = table
        elif table.kind != kind:
            raise self._kind_error(name, table.kind, kind)
        elif table.ttl != ttl:
            self._convert_ttl(table, ttl)
        if ttl_config is not None and ttl:
            policy = TtlPolicy(ttl_config, self._clock)
            state = TTL_STATE_CLASSES[kind](table, self._ctx, descriptor, policy)
            attach_sweeper(state, table, policy, ttl_config, self._before_ttl_cleanup,
                           self._record_sweeps)  # fmt: skip
        else:
            state = STATE_CLASSES[kind](table, self._ctx, descriptor)
        self._states[name] = state
        return state

    def _before_ttl_cleanup(self, offset: int) -> None:  # as an access of ``offset`` would
        if self._snapshot is not None:
            self._snapshot.touch(offset)
        if self._dirty is not None:
            self._dirty.stamps[offset] = self._dirty.epoch

    def _kind_error(self, name: str, registered: str, requested: str) -> StateError:
        return StateError(
            f"operator {self.operator_name!r}: state {name!r} is {registered} state "
            f"(registered before or restored), cannot use it as {requested} state"
        )

    def _convert_ttl(self, table: StateTable, ttl: bool) -> None:
        """Restored entries written with(out) TTL, read by a state without (with) TTL."""
        self._finish_snapshot()
        if self._dirty is not None:
            self._dirty.mark_all()
        now = self._clock()
        for dicts in (table.void, table.windowed):
            for i in range(table.groups):
                d = dicts[i]
                for skey, entry in d.items():
                    d[skey] = (
                        wrap_entry(table.kind, entry, now)
                        if ttl
                        else unwrap_entry(table.kind, entry)
                    )
        table.ttl = ttl

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        """Keys with an entry (expired TTL entries not yet cleaned up included, as in Flink).

        Iterates a copy: the caller may change state while iterating.
        """
        table = self._tables.get(state_name)
        if table is None:
            return iter(())
        found: list[Any] = []
        if namespace is VOID_NAMESPACE:
            for i in range(table.groups):
                found.extend(table.void[i])
        else:
            for i in range(table.groups):
                found.extend(k for k, ns in table.windowed[i] if ns == namespace)
        return iter([user_key(k) for k in found])  # -0.0 as RocksDB's: the float it is

    # --- snapshot and restore ------------------------------------------------------------

    def snapshot(self) -> PendingKeyGroups:
        """The keyed state now, as key group -> blob. Synchronous cost: one emptiness check
        per key group and state, and the current key's key group pickled (a caller may still
        use the key context it set); every other key group is pickled on first touch or when
        the result is read (:mod:`.heap_snapshot`)."""
        self._finish_snapshot()  # at most one pending snapshot
        return self._pending(self._non_empty())

    def _non_empty(self) -> list[int]:
        return [o for o in range(self._groups) if self._is_non_empty(o)]

    def _is_non_empty(self, offset: int) -> bool:
        return any(not table.is_empty_at(offset) for table in self._tables.values())

    def _pending(self, offsets: list[int]) -> PendingKeyGroups:
        """The key groups at ``offsets`` as they are now, pickled lazily (copy on touch)."""
        tables = list(self._tables.items())
        snapshot = PendingKeyGroups(
            offsets, self.key_group_range.start,
            functools.partial(self._encode_group, tables, self._clock()), self._snapshot_done,
        )  # fmt: skip
        if snapshot.remaining:
            self._snapshot = snapshot
            snapshot.touch(self._ctx.offset)
        return snapshot

    def native_checkpoint(self, checkpoint_id: int, full: bool) -> HeapNativeSnapshot:
        """An incremental checkpoint (:mod:`.heap_incremental`): the key groups accessed since
        the base's snapshot, pickled lazily like :meth:`snapshot`, and the base's slices of
        the others; ``full`` (a FULL checkpoint) reuses nothing. Uploaded on the I/O pool."""
        dirty = self._dirty
        if dirty is None:
            raise StateError(
                f"operator {self.operator_name!r}: checkpoint {checkpoint_id}: incremental "
                "checkpoint asked of a heap backend built without incremental checkpoints"
            )
        self._finish_snapshot()
        r = self.key_group_range
        offsets, base, reuse, since_full = dirty.take(
            checkpoint_id, full, self._non_empty, self._is_non_empty, self._ctx.offset, r.start
        )
        return HeapNativeSnapshot(
            checkpoint_id, self.operator_name, dirty.backend_id, (r.start, r.stop),
            self.max_parallelism, self._pending(offsets), base, reuse, since_full,
            dirty.uploaded,
        )  # fmt: skip

    @property
    def takes_native_checkpoints(self) -> bool:
        """With ``incremental``: checkpoints are :meth:`native_checkpoint` s."""
        return self.incremental

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: later incremental checkpoints diff against
        it (only a completed checkpoint's files are kept by the coordinator)."""
        if self._dirty is not None:
            self._dirty.completed(checkpoint_id)

    def restore_native(self, downloads: Sequence[object]) -> None:
        """Restore the key groups this subtask owns from heap incremental checkpoints (read and
        verified by :meth:`HeapIncrementalHandle.download`); the old
        subtasks' ranges may differ from this one's (rescaling)."""
        blobs: dict[int, bytes] = {}
        for download in downloads:
            if not isinstance(download, DownloadedHeapState):
                raise StateError(
                    f"operator {self.operator_name!r}: the checkpoint holds native state of "
                    f"another backend ({type(download).__name__}); restore it with that "
                    "backend, or take a savepoint (canonical) to switch backends"
                )
            blobs.update(download.blobs)
        self.restore(blobs)

    def _snapshot_done(self, snapshot: PendingKeyGroups) -> None:
        if self._snapshot is snapshot:
            self._snapshot = None

    def _finish_snapshot(self) -> None:
        """Serialize what the pending snapshot still needs (before a change to every group)."""
        snapshot = self._snapshot
        if snapshot is not None:
            snapshot.finish()

    def _encode_group(self, tables: list[tuple[str, StateTable]], now: int,
                      offset: int) -> bytes | None:  # fmt: skip
        """The blob of the key group at ``offset`` (None: no live entry), TTL as of ``now``."""
        states: dict[str, tuple[str, bool, dict[Any, Any], dict[Any, Any]]] = {}
        for name, table in tables:
            if table.is_empty_at(offset):
                continue
            void, windowed = table.void[offset], table.windowed[offset]
            if table.ttl:
                void = self._live_entries(table, void, now)
                windowed = self._live_entries(table, windowed, now)
                if not void and not windowed:
                    continue
            else:  # rows (values, or a window's lists of them) pickled as names and tuples
                void, windowed = pack_values(void), pack_values(windowed)
            states[name] = (table.kind, table.ttl, void, windowed)
        if not states:
            return None
        key_group = self.key_group_range.start + offset
        return encode_key_group_blob({"key_group": key_group, "states": states})

    def _live_entries(self, table: StateTable, d: dict[Any, Any], now: int) -> dict[Any, Any]:
        ttl_ms = self._ttl_ms(table.name)
        kept: dict[Any, Any] = {}
        for skey, entry in d.items():
            live = live_entry(table.kind, entry, ttl_ms, now)
            if live is not ABSENT:
                kept[skey] = live
        return kept

    def _ttl_ms(self, name: str) -> int:
        state = self._states.get(name)
        config = None if state is None else state.descriptor.ttl_config
        if config is None:  # restored TTL state not registered yet: keep everything
            return 2**62
        return config.ttl_ms

    def restore(self, blobs: dict[int, bytes]) -> None:
        self._finish_snapshot()
        if self._dirty is not None:
            self._dirty.restored()
        now = self._clock()
        for key_group, blob in blobs.items():
            offset = key_group - self.key_group_range.start
            if not 0 <= offset < self._groups:
                continue
            payload = decode_key_group_blob(blob, self.operator_name, key_group)
            for name, (kind, ttl, void, windowed) in payload["states"].items():
                table = self._tables.get(name)
                if table is None:
                    table = StateTable(name, kind, ttl, self._groups, self._unkeyed)
                    self._tables[name] = table
                elif table.kind != kind:
                    raise self._kind_error(name, table.kind, kind)
                for target, entries in ((table.void, void), (table.windowed, windowed)):
                    if table.ttl != ttl:
                        entries = {
                            k: wrap_entry(kind, e, now) if table.ttl else unwrap_entry(kind, e)
                            for k, e in entries.items()
                        }
                    if kind == "map":  # user keys too: an unpickled NaN is a fresh one
                        entries = {k: state_entries(e) for k, e in entries.items()}
                    target[offset].update(state_entries(entries))

    def dispose(self) -> None:
        self._finish_snapshot()
        for table in self._tables.values():
            table.clear()
        self._tables.clear()
        self._states.clear()
        self._offsets.clear()
        self._float_offsets.clear()
        self._ctx.key = None
        self._ctx.offset = self._groups

    def __repr__(self) -> str:
        r = self.key_group_range
        return (
            f"HeapKeyedStateBackend({self.operator_name!r}, key groups [{r.start}, {r.stop}) "
            f"of {self.max_parallelism}, {len(self._tables)} states)"
        )


def encode_key_group_blob(payload: dict[str, Any]) -> bytes:
    """One key group's keyed state as a versioned, checksummed blob: the canonical format
    both backends write, so a job may switch backends at restore."""
    body = pickling.dumps(payload)
    return _HEADER.pack(_MAGIC, _VERSION, zlib.crc32(body)) + body


def decode_key_group_blob(blob: bytes, operator_name: str, key_group: int) -> dict[str, Any]:
    where = f"operator {operator_name!r}, key group {key_group}"
    if len(blob) < _HEADER.size:
        raise StateError(f"{where}: keyed state blob of {len(blob)} bytes is truncated")
    magic, version, crc = _HEADER.unpack_from(blob)
    if magic != _MAGIC:
        raise StateError(f"{where}: not a heap keyed state blob (magic {magic!r})")
    if version != _VERSION:
        raise StateError(f"{where}: keyed state blob version {version}, expected {_VERSION}")
    body = memoryview(blob)[_HEADER.size :]
    if zlib.crc32(body) != crc:
        raise StateError(f"{where}: keyed state blob checksum mismatch (corrupt data)")
    try:
        payload: dict[str, Any] = pickle.loads(body)
    except Exception as err:
        raise StateError(f"{where}: cannot unpickle keyed state blob: {err}") from err
    if payload.get("key_group") != key_group:
        raise StateError(f"{where}: blob holds key group {payload.get('key_group')!r}")
    return payload
