"""RocksDB's native snapshots: incremental checkpoints, NATIVE savepoints, and their restore.

The half of :class:`~undertow.state.rocksdb.RocksDBKeyedStateBackend` that works on the DB's
files rather than on its entries: a native checkpoint (a flush and hard links, on the task
thread), which confirmed shared files a new checkpoint may reuse (never one that a pending
checkpoint could subsume and delete, FLINK-29913), and the restore from downloaded native
checkpoints (adopt the one DB of exactly this key-group range, else copy the owned key groups
out of each). A base class of the backend, not used alone; the backend owns the DB, its
columns and its write-back cache (declared here).

Threading: the owning subtask's loop thread, but for ``NativeCheckpoint.on_uploaded``, which
the I/O pool calls (it only sets one dict entry).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import weakref
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from rocksdict import Checkpoint, Options, Rdict, WriteBatch

from undertow.core.errors import StateError
from undertow.state.backend import KeyedStateBackend
from undertow.state.rocksdb_fold import WriteBackCache
from undertow.state.rocksdb_incremental import (
    DownloadedNative,
    IncrementalKeyedHandle,
    NativeCheckpoint,
    SharedFile,
)
from undertow.state.rocksdb_map import LAYOUT_KEY, MAP_PER_KEY, map_entries
from undertow.state.rocksdb_states import KeyEncoder, decode_value
from undertow.state.rocksdb_timers import TIMER_KIND, check_no_timers, timers_in_key_groups

#: Map entries rewritten per write batch when an older DB's maps are converted.
_CONVERT_BATCH = 10_000


def _ignore_upload(handle: IncrementalKeyedHandle) -> None:
    """A NATIVE savepoint's upload: nothing to confirm (later checkpoints reuse none)."""


class RocksDBNativeSnapshots(KeyedStateBackend):
    """Native checkpoints and their restore over the DB a subclass owns (see the module
    docstring); :class:`~undertow.state.rocksdb.RocksDBKeyedStateBackend` sets every field
    declared below in its constructor."""

    directory: str
    backend_id: str
    incremental: bool
    timers_in_db: bool
    _db: Rdict
    _columns: dict[str, Rdict]
    _finalizer: weakref.finalize[Any, Any]
    _disposed: bool
    _meta: dict[str, tuple[str, bool]]
    _timer_columns: set[str]
    _write_back: WriteBackCache
    _confirmed: dict[str, SharedFile]
    _uploaded: dict[int, IncrementalKeyedHandle]
    _bases: dict[int, dict[str, SharedFile]]
    encode_key: KeyEncoder

    @abstractmethod
    def column(self, name: str) -> Rdict:
        """The column family of state ``name`` (created on first use)."""

    @abstractmethod
    def _open_db(self) -> None:
        """Open (or reopen, after a native restore moved files in) ``<directory>/db``."""

    @abstractmethod
    def batch(self, name: str) -> WriteBatch:
        """A write batch into the column family of state ``name``."""

    @abstractmethod
    def write(self, batch: WriteBatch) -> None:
        """Apply ``batch`` to the DB."""

    def _kind_error(self, name: str, registered: str, requested: str) -> StateError:
        return StateError(
            f"operator {self.operator_name!r}: state {name!r} is {registered} state "
            f"(registered before or restored), cannot use it as {requested} state"
        )

    def native_checkpoint(self, checkpoint_id: int, full: bool) -> NativeCheckpoint:
        """A RocksDB checkpoint of every state into a local directory (synchronous part: a
        flush and hard links); ``full`` (a FULL checkpoint) reuses no uploaded file. The
        upload is :func:`~undertow.state.rocksdb_incremental.upload`, on the I/O pool."""
        if self._disposed:
            raise StateError(f"operator {self.operator_name!r}: backend is disposed")
        self._write_back.flush()
        for name in [*self._meta, *self._timer_columns]:
            self.column(name).flush()
        self._db.flush()
        target = os.path.join(self.directory, f"chk-{checkpoint_id}")
        shutil.rmtree(target, ignore_errors=True)
        Checkpoint(self._db).create_checkpoint(target)
        uploaded = self._uploaded
        r = self.key_group_range
        base = {} if full else self._reusable()
        self._bases[checkpoint_id] = base
        return NativeCheckpoint(
            checkpoint_id, self.operator_name, self.backend_id, (r.start, r.stop),
            self.max_parallelism,
            {**self._meta, **{name: (TIMER_KIND, False) for name in self._timer_columns}}, target,
            base, lambda handle: uploaded.__setitem__(checkpoint_id, handle),
        )  # fmt: skip

    def _reusable(self) -> dict[str, SharedFile]:
        """The confirmed shared files a new checkpoint may reference instead of uploading.

        A file of the last confirmed checkpoint B is reused only if every checkpoint taken
        earlier and not yet confirmed here could reuse it too. One of those, P, may have been
        taken before B was confirmed here (the barrier came before the notification) and so
        have uploaded the same SST file again under its own name; if P completes, it subsumes B
        and the coordinator deletes B's copy, which nothing retained references any more. A
        new checkpoint referencing that copy would then point at a deleted file (Flink's
        FLINK-29913). SST files are immutable, so a file live now and at P is in P's set too.
        """
        reusable = dict(self._confirmed)
        for base in self._bases.values():
            for name in [n for n, f in reusable.items() if base.get(n) != f]:
                del reusable[name]
        return reusable

    def native_savepoint(self, checkpoint_id: int) -> NativeCheckpoint:
        """A NATIVE savepoint: a RocksDB checkpoint whose every file is written into the
        savepoint (``exclusive``), incremental checkpoints or not; later checkpoints reuse
        none of its files."""
        native = self.native_checkpoint(checkpoint_id, full=True)
        self._bases.pop(checkpoint_id)  # its files are its own: no copy is ever deleted under it
        return dataclasses.replace(native, exclusive=True, on_uploaded=_ignore_upload)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: later checkpoints reuse its shared files
        (only a completed checkpoint's files are registered and kept by the coordinator)."""
        handle = self._uploaded.get(checkpoint_id)
        if handle is not None:
            self._confirmed = {f.local_name: f for f in handle.shared}
        for cid in [c for c in list(self._uploaded) if c <= checkpoint_id]:  # list(): atomic
            self._uploaded.pop(cid, None)  # (the I/O pool adds entries meanwhile)
        for cid in [c for c in self._bases if c <= checkpoint_id]:  # subsumed or this one
            del self._bases[cid]

    @property
    def takes_native_checkpoints(self) -> bool:
        """With ``incremental``: checkpoints are :meth:`native_checkpoint` s."""
        return self.incremental

    def restore_native(self, downloads: Sequence[object]) -> None:
        """Restore from downloaded native checkpoints (before any state is used). One DB of
        exactly this key-group range is opened in place of the empty one (its shared files
        are reused by the next checkpoint); otherwise (rescaling) the key groups of this
        range are copied from each DB by iterating their key ranges."""
        downloaded: list[DownloadedNative] = []
        for download in downloads:
            if not isinstance(download, DownloadedNative):
                raise StateError(
                    f"operator {self.operator_name!r}: the checkpoint holds native state of "
                    f"another backend ({type(download).__name__}); restore it with that "
                    "backend, or take a savepoint (canonical) to switch backends"
                )
            downloaded.append(download)
        self._restore_downloaded(downloaded)

    def _restore_downloaded(self, downloads: list[DownloadedNative]) -> None:
        if not self.timers_in_db:
            for d in downloads:
                check_no_timers(self.operator_name, d.handle.checkpoint_id, d.handle.states)
        r = self.key_group_range
        try:
            only = downloads[0] if len(downloads) == 1 else None
            if only is not None and only.handle.key_groups == (r.start, r.stop) and not self._meta:
                self._adopt(only)
                return
            for download in downloads:
                self._copy_key_groups(download)
        finally:
            for download in downloads:
                shutil.rmtree(download.directory, ignore_errors=True)

    def _adopt(self, download: DownloadedNative) -> None:
        self._finalizer.detach()
        for column in self._columns.values():
            column.close()
        self._columns.clear()
        self._db.close()
        db_dir = os.path.join(self.directory, "db")
        shutil.rmtree(db_dir)
        shutil.move(download.directory, db_dir)
        self._open_db()
        for name, (kind, ttl) in download.handle.states.items():
            if kind == TIMER_KIND:
                self._timer_columns.add(name)
            else:
                self._meta[name] = (kind, ttl)
        if self._db.get(LAYOUT_KEY) is None:  # written before maps were stored per map key
            r = self.key_group_range
            for name, (kind, _) in download.handle.states.items():
                if kind == "map":
                    self._convert_maps(name, self.column(name), r.start, r.stop, in_place=True)
            self._db.put(LAYOUT_KEY, MAP_PER_KEY)
        # a NATIVE savepoint's files are exclusive to it: the next checkpoint uploads its own
        shared = download.handle.shared
        self._confirmed = {f.local_name: f for f in shared if f.in_shared_dir}

    def _copy_key_groups(self, download: DownloadedNative) -> None:
        handle = download.handle
        start = max(handle.key_groups[0], self.key_group_range.start)
        stop = min(handle.key_groups[1], self.key_group_range.stop)
        if start >= stop:
            return
        source = Rdict(download.directory, Options(raw_mode=True))
        maps_as_entries = source.get(LAYOUT_KEY) is None  # an older DB: one entry per map
        try:
            for name, (kind, ttl) in handle.states.items():
                column: Any = source.get_column_family(name)
                batch = self.batch(name)
                if kind == TIMER_KIND:
                    self._timer_columns.add(name)
                    for dkey, raw in timers_in_key_groups(column, start, stop):
                        batch.put(dkey, raw)
                    self._db.write(batch)
                    column.close()
                    continue
                meta = self._meta.setdefault(name, (kind, ttl))
                if meta[0] != kind:
                    raise self._kind_error(name, meta[0], kind)
                if kind == "map" and maps_as_entries:
                    self._convert_maps(name, column, start, stop, in_place=False)
                    column.close()
                    continue
                for dkey, raw in column.items(from_key=start.to_bytes(2, "big")):
                    if int.from_bytes(dkey[:2], "big") >= stop:
                        break
                    batch.put(dkey, raw)
                self._db.write(batch)
                column.close()
        finally:
            source.close()

    def _convert_maps(
        self, name: str, column: Any, start: int, stop: int, *, in_place: bool
    ) -> None:
        """Write the maps of key groups ``[start, stop)`` of ``column`` (map state ``name`` of
        a DB written before maps were stored per map key: one entry per key and namespace, the
        whole dict its value) into this DB one entry per map key; ``in_place``: ``column`` is
        this DB's, and the old entries are deleted."""
        batch = self.batch(name)
        for dkey, raw in column.items(from_key=start.to_bytes(2, "big")):
            if int.from_bytes(dkey[:2], "big") >= stop:
                break
            if in_place:
                batch.delete(dkey)
            for entry_key, value in map_entries(dkey, decode_value(raw), self.encode_key):
                batch.put(entry_key, value)
            if batch.len() >= _CONVERT_BATCH:
                self.write(batch)
                batch = self.batch(name)
        self.write(batch)
