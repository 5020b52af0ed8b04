"""The RocksDB backend's batch fold (keyed ``sum``/``reduce``) over a bounded write-back cache.

Invariant: for every state, the DB plus that state's cached entries (``None``: deleted) is the
state; so every other reader of a state flushes that state's cached entries first.

Threading: the owning subtask's loop thread only (as the backend). Memory: at most ``limit``
entries per state plus one batch.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocksdict import WriteBatch

from undertow.state.rocksdb_states import decode_value, encode_value

#: Cached entries per state before the cache is written to the DB.
WRITE_BACK_LIMIT = 8_192


class WriteBackCache:
    """Decoded entries of folded value states not yet written (see the module docstring).

    ``write`` applies a state's batch to the DB; ``new_batch`` makes an empty batch whose
    default column family is the state's.
    """

    def __init__(
        self,
        new_batch: Callable[[str], WriteBatch],
        write: Callable[[WriteBatch], None],
        limit: int = WRITE_BACK_LIMIT,
    ) -> None:
        self._new_batch = new_batch
        self._write = write
        self.limit = limit
        self._entries: dict[str, dict[bytes, Any]] = {}

    def table(self, name: str) -> dict[bytes, Any]:
        """The cached entries of state ``name`` (DB key -> value, ``None``: deleted)."""
        table = self._entries.get(name)
        if table is None:
            table = self._entries[name] = {}
        return table

    def flush(self, name: str | None = None) -> None:
        """Write the cached entries of ``name`` (of every state if ``None``) and forget them."""
        names = list(self._entries) if name is None else [name]
        for state in names:
            table = self._entries.get(state)
            if not table:
                continue
            batch = self._new_batch(state)
            for dkey, value in table.items():
                if value is None:
                    batch.delete(dkey)
                else:
                    batch.put(dkey, encode_value(value))
            self._write(batch)
            table.clear()

    def drop(self) -> None:
        """Forget every cached entry unwritten (the backend is disposed)."""
        self._entries.clear()

    def __len__(self) -> int:
        return sum(len(t) for t in self._entries.values())


def fold_cached(
    cache: WriteBackCache,
    name: str,
    column: Any,
    dkeys: list[bytes],
    keys: list[Any],
    values: list[Any],
    fold: Callable[[Any, Any], Any],
    enter_key: Callable[[Any, bytes], None],
) -> list[Any]:
    """Fold ``values`` into state ``name`` at ``dkeys`` (see the module docstring);
    ``enter_key(key, dkey)`` makes the record's key current before ``fold`` runs."""
    table = cache.table(name)
    missing = [d for d in dict.fromkeys(dkeys) if d not in table]
    if missing:
        for dkey, raw in zip(missing, column.get(missing)):  # one multi-get
            table[dkey] = None if raw is None else decode_value(raw)
    out: list[Any] = []
    append = out.append
    try:
        for dkey, key, value in zip(dkeys, keys, values):
            try:
                old = table[dkey]
            except KeyError:  # ``fold`` used this state itself, which flushed it
                raw = column.get(dkey)
                old = None if raw is None else decode_value(raw)
            if old is None:
                new = value
            else:  # ``fold`` may read other keyed state: it runs in this record's key
                enter_key(key, dkey)
                new = fold(old, value)
            table[dkey] = new
            append(new)
    finally:
        if len(table) > cache.limit:
            cache.flush(name)
    return out
