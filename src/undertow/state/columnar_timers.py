"""Timers of a keyed batch process function in columnar form: one slot per (key, timestamp).

A :class:`ColumnarTimers` is a :class:`~undertow.state.columnar_table.ColumnarKeyedTable`
keyed by ``(*key, timestamp)`` whose key group is the key's (so timers are snapshotted per key
group and rescale with the key's state), with the timestamp also kept in a numpy column so that
finding the due timers is one comparison over all of them. A key has at most one timer per
timestamp (registering it again is a no-op, as in Flink's timer queues).

:func:`pack_parts` / :func:`unpack_parts` put several named blobs of one key group (a process
function's state, event-time and processing-time timers) into the one blob a key group has in
a snapshot: a magic and version, then per part its name's length and name, the blob's length
and the blob.

Threading: owned by one operator on its task's loop thread. Cost: registering is one dict
lookup per (key, timestamp); :meth:`ColumnarTimers.pop_due` is O(timers).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from undertow.state.columnar_table import Accumulator, ColumnarKeyedTable

TIMESTAMP = "undertow.timestamp"
_MAGIC = b"UTCS\x01"
_LENGTH = struct.Struct(">I")


def _key_of(entry: tuple[Any, ...]) -> Any:
    """The stream's key of a table key ``(*key columns, timestamp)``."""
    return entry[0] if len(entry) == 2 else entry[:-1]


class ColumnarTimers:
    """Timers of one domain (see the module docstring)."""

    def __init__(self, key_fields: Sequence[pa.Field], max_parallelism: int) -> None:
        fields = [*key_fields, pa.field(TIMESTAMP, pa.int64())]
        self.table = ColumnarKeyedTable(
            fields, [Accumulator(TIMESTAMP + "s", np.dtype(np.int64), 0)], max_parallelism,
            partition_key=_key_of,
        )  # fmt: skip

    def __len__(self) -> int:
        return self.table.num_slots

    @staticmethod
    def _entries(keys: Sequence[Any], times: np.ndarray, valid: np.ndarray) -> list[Any]:
        """Table keys ``(*key, t)`` for the valid entries (``keys`` as the table's keys:
        values for one key column, tuples for several)."""
        out = []
        for key, t, ok in zip(keys, times.tolist(), valid.tolist()):
            if ok:
                out.append((*key, t) if isinstance(key, tuple) else (key, t))
        return out

    def register(self, keys: Sequence[Any], times: np.ndarray, valid: np.ndarray) -> None:
        """A timer for each key at its time (where ``valid``)."""
        entries = self._entries(keys, times, valid)
        if entries:
            slots = self.table.slots_for(entries)
            self.table.columns[TIMESTAMP + "s"][slots] = [e[-1] for e in entries]

    def delete(self, keys: Sequence[Any], times: np.ndarray, valid: np.ndarray) -> None:
        """Delete each key's timer at its time (where ``valid``; absent timers are ignored)."""
        table = self.table
        drop = np.zeros(table.num_slots, dtype=bool)
        for entry in self._entries(keys, times, valid):
            slot = table.slots.get(entry)
            if slot is not None:
                drop[slot] = True
        if drop.any():
            table.remove(drop)

    def earliest(self) -> int | None:
        n = self.table.num_slots
        return int(self.table.columns[TIMESTAMP + "s"][:n].min()) if n else None

    def pop_due(self, time: int) -> list[tuple[int, list[Any]]]:
        """Remove the timers at or before ``time`` and return them as ``(timestamp, keys)``,
        earliest first (keys as the stream's keys, in slot order)."""
        table = self.table
        n = table.num_slots
        stamps = table.columns[TIMESTAMP + "s"][:n]
        due = stamps <= time
        if not due.any():
            return []
        fired = []
        for t in np.unique(stamps[due]).tolist():
            slots = np.flatnonzero(stamps == t).tolist()
            fired.append((t, [_key_of(table.keys[i]) for i in slots]))
        table.remove(due)
        return fired


def pack_parts(parts: dict[str, bytes]) -> bytes:
    """Named blobs into one (see the module docstring)."""
    out = [_MAGIC]
    for name, blob in parts.items():
        encoded = name.encode()
        out += [_LENGTH.pack(len(encoded)), encoded, _LENGTH.pack(len(blob)), blob]
    return b"".join(out)


def unpack_parts(blob: bytes, where: str) -> dict[str, bytes]:
    """The named blobs of :func:`pack_parts`; ``where`` names the operator in errors."""
    if not blob.startswith(_MAGIC):
        raise ValueError(
            f"{where}: a key group's state does not start with {_MAGIC!r} (it starts "
            f"{blob[:8]!r}): not a keyed batch process function's state"
        )
    parts: dict[str, bytes] = {}
    at = len(_MAGIC)
    try:
        while at < len(blob):
            (size,) = _LENGTH.unpack_from(blob, at)
            name = blob[at + 4 : at + 4 + size].decode()
            at += 4 + size
            (size,) = _LENGTH.unpack_from(blob, at)
            parts[name] = blob[at + 4 : at + 4 + size]
            if len(parts[name]) != size:
                raise ValueError(f"part {name!r} is truncated")
            at += 4 + size
    except (struct.error, UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{where}: a key group's state is damaged at byte {at}: {err}") from err
    return parts
