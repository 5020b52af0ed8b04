"""MapState on RocksDB: one DB entry per map key, as Flink's ``RocksDBMapState``.

DB key of map key ``k``: the entry's DB key (:func:`~undertow.state.rocksdb_states.db_key`:
key group, namespace tag, key or ``(key, namespace)``) followed by the encoding of ``k``; the
value is the pickled map value (``(value, last_access_ms)`` with TTL). Encodings are
self-delimiting pickles, so one key's map is exactly the DB keys that start with its prefix,
contiguous in key order: ``get``/``put``/``contains``/``remove`` touch one DB entry, whatever
the map's size, and ``items``/``keys``/``values``/``is_empty``/``clear`` scan the prefix.

Threading: the owning subtask's loop thread only. Cost: ``get``/``contains`` one DB get and
one unpickle; ``put``/``remove`` one put or delete; the scans O(map size). With TTL, reads run
the heap backend's TTL logic over the entries they touch (the same semantics).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from rocksdict import ReadOptions

from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import MapState
from undertow.state.heap_states import HeapMapState, HeapState
from undertow.state.key_groups import state_key, stored_key
from undertow.state.rocksdb_states import (
    RocksDBState,
    StateHost,
    db_key,
    decode_value,
    encode_value,
)
from undertow.state.value_types import put_all_entries

#: Key in the DB's default column family naming its layout; a DB without it (written before
#: maps were stored per map key) holds each map as one entry, its whole dict the value: a
#: native restore rewrites those (``RocksDBNativeSnapshots``).
LAYOUT_KEY = b"undertow.layout"
#: The layout of this module: map state as one DB entry per map key.
MAP_PER_KEY = b"map-per-key"


def prefix_end(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string that starts with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        raise ValueError("a prefix of only 0xff bytes has no upper bound")
    return stripped[:-1] + bytes([stripped[-1] + 1])


def scan_prefix(column: Any, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Every (DB key, value) of raw-mode ``column`` whose key starts with ``prefix``, in order
    (the iterator stops at the prefix's end: an upper bound, not a key compare). A generator:
    rocksdict's iterator reads the bound from ``read`` while it runs (measured: with ``read``
    collected, it stopped after one entry), so ``read`` lives as long as the iteration."""
    read = ReadOptions()
    read.set_iterate_upper_bound(prefix_end(prefix))
    yield from column.items(from_key=prefix, read_opt=read)


def split_entry_key(body: bytes) -> int:
    """The length of the first encoding in ``body`` (a DB key after its 3-byte head): where
    a map entry's key (or ``(key, namespace)``) ends and its map key begins."""
    stream = io.BytesIO(body)
    pickle.Unpickler(stream).load()
    return stream.tell()


def group_map_entries(
    entries: Iterable[tuple[bytes, bytes]],
) -> Iterator[tuple[bytes, Any, dict[Any, Any]]]:
    """The maps of ``entries`` (one key group's DB entries of a map state, in key order):
    ``(head, key or (key, namespace), {map key: stored value})`` per key and namespace, where
    ``head`` is the 3-byte head (key group, namespace tag)."""
    prefix = b""
    head = b""
    skey: Any = None
    current: dict[Any, Any] = {}
    for dkey, raw in entries:
        if not prefix or not dkey.startswith(prefix):
            if current:
                yield head, skey, current
            body = dkey[3:]
            cut = split_entry_key(body)
            head, prefix, skey, current = dkey[:3], dkey[: 3 + cut], decode_value(body), {}
        map_key = decode_value(dkey[len(prefix) :])
        t = type(map_key)
        if t is float or t is tuple:  # in a dict 0.0 and -0.0 are one: the heap's form
            map_key = state_key(map_key)
        current[map_key] = decode_value(raw)
    if current:
        yield head, skey, current


def map_entries(
    prefix: bytes, entry: dict[Any, Any], encode: Callable[[Any], bytes]
) -> Iterator[tuple[bytes, bytes]]:
    """The DB entries of map ``entry`` (map key, a user's or in ``state_key`` form -> stored
    value) under ``prefix``, each map key encoded in :func:`stored_key` form."""
    for map_key, value in entry.items():
        t = type(map_key)
        if t is not int and t is not str:
            map_key = stored_key(map_key)
        yield prefix + encode(map_key), encode_value(value)


class RocksDBMapState(RocksDBState, MapState[Any, Any]):
    """A map state stored one DB entry per map key (see the module docstring). Without TTL
    each method works on the DB directly; with TTL the reads and writes run the heap TTL
    state (``inner``) over the entries they touch, loaded into the scratch table."""

    inner: HeapMapState

    def __init__(self, backend: StateHost, name: str, inner: HeapState) -> None:
        super().__init__(backend, name, inner)
        config = self.descriptor.ttl_config
        self._ttl = config is not None and config.is_enabled()
        self._encode = backend.encode_key

    def _prefix(self) -> bytes:
        """The DB key prefix of the current key's map in the current namespace (an access:
        it counts down to the TTL cleanup, before the operation reads the map)."""
        backend = self._backend
        if self._namespace is VOID_NAMESPACE:
            prefix = backend.current_void_db_key()
        else:
            key, key_group = backend.current_key_and_group()
            prefix = db_key(key_group, key, self._namespace, self._encode)
        self._until_sweep -= 1
        if not self._until_sweep:
            self._count_down()
        return prefix

    def _column(self) -> Any:
        return self._backend.column(self._name)

    # --- TTL: the heap TTL state over the entries an operation touches --------------------

    def _with_entries(self, op: Callable[[], Any], map_keys: list[Any] | None) -> Any:
        """Run ``op`` (a method of the heap TTL state) with the entries of ``map_keys`` (all
        of the map if ``None``) in the scratch table, then write back what it changed."""
        backend = self._backend
        key, _ = backend.current_key_and_group()
        prefix = self._prefix()
        column = self._column()
        if map_keys is None:
            found = list(scan_prefix(column, prefix))
        else:
            dkeys = [prefix + self._encode(stored_key(k)) for k in map_keys]
            found = [(d, raw) for d, raw in zip(dkeys, column.get(dkeys)) if raw is not None]
        # keyed as the heap TTL state keys them (state_key: 0.0 and -0.0 two, NaNs one)
        loaded = {state_key(decode_value(d[len(prefix) :])): (d, raw) for d, raw in found}
        void = self._namespace is VOID_NAMESPACE
        table = backend.scratch(self._name)
        target = table.void[0] if void else table.windowed[0]
        skey = key if void else (key, self._namespace)
        if loaded:
            target[skey] = {k: decode_value(raw) for k, (_, raw) in loaded.items()}
        ctx = backend.scratch_context
        ctx.key = key
        ctx.offset = 0
        try:
            result = op()
        finally:
            ctx.offset = 1
            after = target.pop(skey, None) or {}
        batch = backend.batch(self._name)
        for map_key, (dkey, _) in loaded.items():
            if map_key not in after:
                batch.delete(dkey)
        for map_key, value in after.items():
            new = encode_value(value)
            old = loaded.get(map_key)
            if old is None:
                batch.put(prefix + self._encode(stored_key(map_key)), new)
            elif new != old[1]:
                batch.put(old[0], new)
        if batch.len():
            backend.write(batch)
        return result

    # --- MapState -------------------------------------------------------------------------

    def get(self, key: Any) -> Any:
        if self._ttl:
            get = self.inner.get
            return self._with_entries(lambda: get(key), [key])
        key = stored_key(key)  # NaNs one entry (one pickle); 0.0 and -0.0 pickle apart
        raw = self._column().get(self._prefix() + self._encode(key))
        return None if raw is None else decode_value(raw)

    def contains(self, key: Any) -> bool:
        if self._ttl:
            contains = self.inner.contains
            return bool(self._with_entries(lambda: contains(key), [key]))
        key = stored_key(key)
        return self._column().get(self._prefix() + self._encode(key)) is not None

    def put(self, key: Any, value: Any) -> None:
        if self._ttl:
            put = self.inner.put
            self._with_entries(lambda: put(key, value), [])
            return
        if self.inner.entry_check is not None:
            self.inner.entry_check(key, value)
        key = stored_key(key)
        self._column().put(self._prefix() + self._encode(key), encode_value(value))

    def put_all(self, mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        entries = put_all_entries(mapping, self.descriptor.name)
        if not entries:
            return
        if self._ttl:
            put_all = self.inner.put_all
            self._with_entries(lambda: put_all(entries), [])
            return
        self.inner.checked(entries)
        batch = self._backend.batch(self._name)
        for dkey, raw in map_entries(self._prefix(), entries, self._encode):
            batch.put(dkey, raw)
        self._backend.write(batch)

    def remove(self, key: Any) -> None:
        key = stored_key(key)
        self._column().delete(self._prefix() + self._encode(key))

    def _entries(self) -> list[tuple[Any, Any]]:
        prefix = self._prefix()
        cut = len(prefix)
        return [(decode_value(d[cut:]), decode_value(raw))
                for d, raw in scan_prefix(self._column(), prefix)]  # fmt: skip

    def items(self) -> Iterable[tuple[Any, Any]]:
        if self._ttl:
            return self._with_entries(self.inner.items, None)
        return self._entries()

    def keys(self) -> Iterable[Any]:
        if self._ttl:
            return self._with_entries(self.inner.keys, None)
        cut = len(prefix := self._prefix())
        return [decode_value(d[cut:]) for d, _ in scan_prefix(self._column(), prefix)]

    def values(self) -> Iterable[Any]:
        if self._ttl:
            return self._with_entries(self.inner.values, None)
        return [decode_value(raw) for _, raw in scan_prefix(self._column(), self._prefix())]

    def is_empty(self) -> bool:
        if self._ttl:
            return bool(self._with_entries(self.inner.is_empty, None))
        return next(iter(scan_prefix(self._column(), self._prefix())), None) is None

    def clear(self) -> None:
        """Delete every entry of the map (one write batch; no range tombstone, which would
        stay in the memtable and slow every later read of the column family)."""
        batch = self._backend.batch(self._name)
        for dkey, _ in scan_prefix(self._column(), self._prefix()):
            batch.delete(dkey)
        if batch.len():
            self._backend.write(batch)
