"""State objects of the RocksDB keyed state backend: the heap state logic over one DB entry.

Each operation loads the current key's entry into a one-key-group scratch
:class:`~undertow.state.heap_states.StateTable`, runs the heap state class's method on it, then
writes the entry back (deleted, written if its bytes changed, or untouched): state kinds and
TTL semantics are the heap backend's, and no entry is held in memory between operations.
A map state is the exception: one DB entry per map key (:mod:`undertow.state.rocksdb_map`);
a list add appends to the entry's bytes without decoding it (:func:`appended`).

Threading: the owning subtask's loop thread only. Cost per operation: one ``get``, one pickle
load and dump, and at most one ``put`` or ``delete``.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from rocksdict import Rdict, WriteBatch

from undertow.core import pickling
from undertow.state.backend import VOID_NAMESPACE, InternalKvState
from undertow.state.descriptors import (
    AggregatingState,
    ListState,
    ReducingState,
    ValueState,
)
from undertow.state.heap_states import (
    ABSENT,
    HeapAggregatingState,
    HeapListState,
    HeapReducingState,
    HeapState,
    HeapValueState,
    KeyContext,
    StateTable,
)
from undertow.state.heap_ttl import SweepCountdown
from undertow.state.key_groups import assign_to_key_group

VOID_TAG = b"\x00"
WINDOWED_TAG = b"\x01"


#: Encoded ``int`` and short ``str`` keys a :class:`KeyEncoder` remembers before it starts over.
ENCODED_CACHE = 65_536
_CACHED_STR_LENGTH = 64


class KeyEncoder:
    """Deterministic bytes of a key: a pickle without memo (equal values, equal bytes, in
    every process: a key group's DB keys are read by another worker after a rescale).

    One pickler and buffer, reset per call: a new ``Pickler`` per key cost about 1.5 us more
    (the buffer and the pickler's set-up). Keys of exactly ``int`` or short ``str`` are
    remembered (bounded, :data:`ENCODED_CACHE`): hot map keys and keys cost a dict lookup.
    Only those two types: equal values of other types may encode differently (``1``,
    ``True``, ``1.0``; ``(1,)`` and ``(True,)``), and a cache keyed by value would mix them.
    Not thread-safe: one per backend, used from the owning subtask's loop thread. A pickle is
    self-delimiting, so no encoding is a prefix of another: a DB key can be a key's encoding
    followed by another one (map entries).
    """

    __slots__ = ("_buffer", "_cache", "_pickler")

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        self._pickler = pickle.Pickler(self._buffer, protocol=5)
        self._pickler.fast = True  # no memo: a repeated object is written again, not referenced
        self._cache: dict[int | str, bytes] = {}

    def __call__(self, value: Any) -> bytes:
        kind = type(value)
        cacheable = kind is int or (kind is str and len(value) <= _CACHED_STR_LENGTH)
        if cacheable:
            encoded = self._cache.get(value)
            if encoded is not None:
                return encoded
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._pickler.dump(value)
        encoded = buffer.getvalue()
        if cacheable:
            if len(self._cache) >= ENCODED_CACHE:
                self._cache.clear()
            self._cache[value] = encoded
        return encoded


def encode_key(value: Any) -> bytes:
    """:class:`KeyEncoder`'s bytes of ``value`` from a fresh encoder (where no backend's
    encoder is at hand)."""
    return KeyEncoder()(value)


def db_key(
    key_group: int, key: Any, namespace: Any, encode: Callable[[Any], bytes] = encode_key
) -> bytes:
    """The DB key of ``key`` under ``namespace`` (see the module docstring); ``encode`` is the
    backend's :class:`KeyEncoder`."""
    if namespace is VOID_NAMESPACE:
        return key_group.to_bytes(2, "big") + VOID_TAG + encode(key)
    return key_group.to_bytes(2, "big") + WINDOWED_TAG + encode((key, namespace))


#: Entries of an ``int`` key -> DB key cache before it starts over.
INT_KEY_CACHE = 65_536


def int_void_db_key(
    key: int, max_parallelism: int, key_groups: range, cache: dict[int, bytes]
) -> bytes | None:
    """:func:`db_key` of ``int`` ``key`` in ``VOID_NAMESPACE`` (an int's pickle has no memo, so
    ``pickle.dumps`` gives the same bytes), remembered in ``cache`` (bounded: hot keys skip the
    hash and the pickle); ``None`` if the key is outside ``key_groups``."""
    dkey = cache.get(key)
    if dkey is not None:
        return dkey
    key_group = assign_to_key_group(key, max_parallelism)
    if not key_groups.start <= key_group < key_groups.stop:
        return None
    if len(cache) >= INT_KEY_CACHE:
        cache.clear()
    dkey = cache[key] = key_group.to_bytes(2, "big") + VOID_TAG + pickle.dumps(key, protocol=5)
    return dkey


#: The first byte of a list entry written by appends: pickles of element lists follow, one
#: per append (never a pickle's first byte, which is an opcode).
APPENDED = b"\x00"


def encode_value(entry: Any) -> bytes:
    return pickling.dumps(entry)


def decode_value(raw: bytes) -> Any:
    """The entry ``raw`` holds: one pickle, or a list entry of appends (:data:`APPENDED`)."""
    if raw[:1] != APPENDED:
        return pickle.loads(raw)
    stream = io.BytesIO(raw)
    stream.seek(1)
    entry: list[Any] = []
    end = len(raw)
    while stream.tell() < end:
        entry.extend(pickle.load(stream))
    return entry


def appended(raw: bytes | None, elements: list[Any]) -> bytes:
    """The bytes of the list entry ``raw`` (None: none yet) with ``elements`` added at its
    end, without decoding it: a list add costs the entry's bytes, not its elements."""
    frame = pickling.dumps(elements)
    if raw is None:
        return frame
    if raw[:1] == APPENDED:
        return raw + frame
    return APPENDED + raw + frame


class StateHost(Protocol):
    """What a state object asks of the backend that made it (the backend in
    :mod:`undertow.state.rocksdb` implements it): the current key, its DB key, the state's
    column family and scratch table, and write batches. Same thread as the state objects."""

    #: The key context the scratch tables are bound to (``offset`` 0 while an operation runs).
    scratch_context: KeyContext
    #: Deterministic bytes of a key or map key.
    encode_key: KeyEncoder

    def current_key_and_group(self) -> tuple[Any, int]: ...

    def current_void_db_key(self) -> bytes: ...

    def flush_cached(self, name: str | None = None) -> None: ...

    def column(self, name: str) -> Rdict: ...

    def scratch(self, name: str) -> StateTable: ...

    def batch(self, name: str) -> WriteBatch: ...

    def write(self, batch: WriteBatch) -> None: ...


class RocksDBState(SweepCountdown, InternalKvState[Any]):
    """A state object backed by one column family (see the module docstring).

    ``inner`` is a heap state object bound to the scratch table and to a private key context
    whose offset is ``0`` while an operation runs. Operations count down to the backend's
    TTL cleanup (:mod:`.rocksdb_ttl_cleanup`), which runs before one loads an entry.
    """

    def __init__(self, backend: StateHost, name: str, inner: HeapState) -> None:
        self._backend = backend
        self._name = name
        self.inner = inner
        self.descriptor = inner.descriptor
        self.kind = inner.kind
        self._namespace: Any = VOID_NAMESPACE
        self._init_countdown()

    # --- namespace ------------------------------------------------------------------------

    def set_current_namespace(self, namespace: Any) -> None:
        self._namespace = namespace
        self.inner.set_current_namespace(namespace)

    @property
    def namespace(self) -> Any:
        return self._namespace

    def merge_namespaces(self, target: Any, sources: list[Any]) -> None:
        merge = self.inner.merge_namespaces
        self._run(lambda: merge(target, sources), [target, *sources])

    # --- the load / run / store cycle -----------------------------------------------------

    def _run(self, op: Callable[[], Any], namespaces: list[Any] | None = None) -> Any:
        backend = self._backend
        key, key_group = backend.current_key_and_group()
        self._until_sweep -= 1
        if not self._until_sweep:
            self._count_down()
        backend.flush_cached(self._name)
        column = backend.column(self._name)
        table = backend.scratch(self._name)
        ctx = backend.scratch_context
        ctx.key = key
        ctx.offset = 0
        slots: list[tuple[bytes, dict[Any, Any], Any, bytes | None]] = []
        for ns in dict.fromkeys([self._namespace] if namespaces is None else namespaces):
            if ns is VOID_NAMESPACE:
                dkey = backend.current_void_db_key()
            else:
                dkey = db_key(key_group, key, ns, backend.encode_key)
            raw = column.get(dkey)
            target = table.void[0] if ns is VOID_NAMESPACE else table.windowed[0]
            skey = key if ns is VOID_NAMESPACE else (key, ns)
            if raw is not None:
                target[skey] = decode_value(raw)
            slots.append((dkey, target, skey, raw))
        try:
            result = op()
        except BaseException:
            for _, target, skey, _ in slots:
                target.pop(skey, None)
            raise
        finally:
            ctx.offset = 1
        for dkey, target, skey, raw in slots:
            entry = target.pop(skey, ABSENT)
            if entry is ABSENT:
                if raw is not None:
                    column.delete(dkey)
                continue
            new = encode_value(entry)
            if new != raw:
                column.put(dkey, new)
        return result

    def clear(self) -> None:
        self._backend.column(self._name).delete(self._current_db_key())

    def _current_db_key(self) -> bytes:
        """The DB key of the current key in the current namespace, after the batch folds'
        cached writes of this state reached the DB (an operation outside :meth:`_run`)."""
        backend = self._backend
        key, key_group = backend.current_key_and_group()
        self._until_sweep -= 1
        if not self._until_sweep:
            self._count_down()
        backend.flush_cached(self._name)
        if self._namespace is VOID_NAMESPACE:
            return backend.current_void_db_key()
        return db_key(key_group, key, self._namespace, backend.encode_key)

    def __repr__(self) -> str:
        return f"RocksDB{type(self.inner).__name__}({self._name!r})"


class RocksDBValueState(RocksDBState, ValueState[Any]):
    inner: HeapValueState

    def value(self) -> Any:
        return self._run(self.inner.value)

    def update(self, value: Any) -> None:
        update = self.inner.update
        self._run(lambda: update(value))


class RocksDBListState(RocksDBState, ListState[Any]):
    """``add`` and ``add_all`` append to the entry's bytes (:func:`appended`); a read
    decodes the appends and writes the entry back as one pickle."""

    inner: HeapListState

    def get(self) -> Iterable[Any]:
        return self._run(self.inner.get)

    def add(self, value: Any) -> None:
        self._append([self.inner.stored_element(value)])

    def add_all(self, values: list[Any]) -> None:
        if values:
            store = self.inner.stored_element
            self._append([store(v) for v in values])

    def _append(self, elements: list[Any]) -> None:
        dkey = self._current_db_key()
        column = self._backend.column(self._name)
        column.put(dkey, appended(column.get(dkey), elements))

    def update(self, values: list[Any]) -> None:
        update = self.inner.update
        self._run(lambda: update(values))


class RocksDBReducingState(RocksDBState, ReducingState[Any]):
    inner: HeapReducingState

    def get(self) -> Any:
        return self._run(self.inner.get)

    def add(self, value: Any) -> None:
        add = self.inner.add
        self._run(lambda: add(value))


class RocksDBAggregatingState(RocksDBState, AggregatingState[Any, Any]):
    inner: HeapAggregatingState

    def get(self) -> Any:
        return self._run(self.inner.get)

    def add(self, value: Any) -> None:
        add = self.inner.add
        self._run(lambda: add(value))
