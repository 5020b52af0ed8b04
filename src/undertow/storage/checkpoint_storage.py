"""Checkpoint storage: where checkpoint files and ``_metadata`` live, and how they are committed.

Layout under the configured root (``execution.checkpointing.dir``), as in Flink::

    <root>/<job-id>/chk-<n>/        exclusive files of checkpoint n, and its _metadata
    <root>/<job-id>/shared/         files referenced by several checkpoints (incremental state)
    <root>/<job-id>/taskowned/      files owned by the tasks, never deleted by the coordinator

Threading and cost: blocking I/O in every method (a few file-system calls; an object store
round trip each), called from a worker thread pool, never from a loop or task thread. No
mutable state: several threads may use an instance; the coordinator serializes the commit and
the discard of any one checkpoint. It is one piece: every method resolves its paths through
the same layout and checks (``_uri``, ``_check_segment``).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fsspec  # type: ignore[import-untyped]
from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from undertow.storage.duplicate import DuplicateMethod, duplicate_method, link_or_copy
from undertow.storage.durable_write import write_local_file
from undertow.storage.errors import (
    CheckpointNotFoundError,
    CheckpointStorageError,
    CorruptCheckpointError,
)
from undertow.storage.handle import FileHandle, check_relative_path

METADATA_FILE = "_metadata"
CHECKPOINT_DIR_PREFIX = "chk-"
SHARED_DIR = "shared"
TASKOWNED_DIR = "taskowned"
#: Default upper bound on the size of a ``_metadata`` file read back (the option
#: ``undertow.checkpointing.metadata.max-size``); a larger one is rejected instead of being
#: read into memory. The metadata codec checks the same limit when it writes.
MAX_METADATA_BYTES = 256 * 1024 * 1024
MAX_METADATA_OPTION = "undertow.checkpointing.metadata.max-size"

SAVEPOINT_DIR_PREFIX = "savepoint-"

_CHECKPOINT_DIR = re.compile(r"chk-(0|[1-9][0-9]*)")
_SAVEPOINT_DIR = re.compile(r"savepoint-[0-9A-Za-z]{1,6}-(0|[1-9][0-9]*)")
_TEMP_METADATA_PREFIX = METADATA_FILE + ".inprogress."


@dataclass(frozen=True, slots=True)
class CheckpointDirectory:
    """A ``chk-<n>`` directory of a job, as :meth:`CheckpointStorage.checkpoint_directories`
    found it: its id and whether it held a ``_metadata`` (a completed checkpoint) then."""

    checkpoint_id: int
    has_metadata: bool


@dataclass(frozen=True, slots=True)
class CheckpointLocation:
    """A completed checkpoint found by :meth:`CheckpointStorage.resolve`.

    ``pointer`` is the checkpoint directory (the external pointer Flink prints); ``root_uri``
    and ``job_id`` let a caller open a :class:`CheckpointStorage` on the job that wrote it, to
    read its files (a restore may come from another job's checkpoint).
    """

    root_uri: str
    job_id: str
    checkpoint_id: int
    pointer: str

    @property
    def metadata_uri(self) -> str:
        return self.pointer.rstrip("/") + "/" + METADATA_FILE


class CheckpointStorage:
    """The checkpoints of one job under ``<root_uri>/<job_id>/``.

    ``storage_options`` go to fsspec (for example an ``s3://`` endpoint and credentials).
    Construction does no I/O; directories are created when the first file is written.
    """

    def __init__(
        self, root_uri: str, job_id: str, *, storage_options: Mapping[str, Any] | None = None
    ) -> None:
        _check_segment("job id", job_id)
        self._options = dict(storage_options or {})
        fs, root = fsspec.core.url_to_fs(root_uri, **self._options)
        self._fs: Any = fs
        self._local = isinstance(fs, LocalFileSystem)
        self._root: str = root.rstrip("/") or "/"
        self._job_dir = posixpath.join(self._root, job_id)
        self.job_id = job_id

    @classmethod
    def in_memory(cls, job_id: str = "job") -> CheckpointStorage:
        """A storage on a fresh, private ``memory://`` root (for tests).

        The content lives in the process-wide fsspec memory file system until it is discarded
        or the process ends; it is not shared with other processes.
        """
        return cls(f"memory://undertow-{uuid.uuid4().hex}", job_id)

    # -- locations -------------------------------------------------------------------------

    @property
    def root_uri(self) -> str:
        """The normalized root (a plain path on the local file system, else a URL)."""
        return self._uri(self._root)

    @property
    def job_uri(self) -> str:
        return self._uri(self._job_dir)

    def checkpoint_pointer(self, checkpoint_id: int) -> str:
        """The directory of checkpoint ``checkpoint_id`` (whether or not it exists)."""
        return self._uri(self._checkpoint_dir(checkpoint_id))

    # -- the contract ----------------------------------------------------------------------

    def write_file(self, checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        """Write ``data`` as ``chk-<checkpoint_id>/<name>`` and return its handle.

        Consistency: when this returns, the content is durable (local: written through
        ``O_DSYNC``, as ``fdatasync``; its directory entry is made durable by the directory
        fsync of :meth:`commit_metadata`)
        and readable by any process. Writing the same name again replaces the file; the
        checkpoint does not count as completed until :meth:`commit_metadata`. ``name`` is one
        path segment and must not start with ``_`` or ``.`` (reserved for the storage).
        """
        _check_segment("file name", name)
        directory = self._checkpoint_dir(checkpoint_id)
        path = posixpath.join(directory, name)
        self._write_durably(path, data)
        return FileHandle.of(f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}/{name}", data)

    def _write_durably(self, path: str, data: bytes) -> None:
        """``data`` at ``path``, on stable storage when this returns (local disks: through
        an ``O_DSYNC`` descriptor, :func:`.durable_write.write_local_file`; an object store's
        put is durable once it returns). Parent directories are created."""
        if self._local:
            write_local_file(path, data)
        else:
            self._fs.pipe_file(path, data)

    def write_shared_file(self, name: str, data: bytes) -> FileHandle:
        """Write ``data`` as ``shared/<name>`` (a file incremental checkpoints share) and return
        its handle; durable when this returns, as :meth:`write_file` (``shared/`` is created
        on the first write: a job without incremental state has none). ``name`` must be unique
        to this upload (the caller names it after its backend, checkpoint and SST file):
        shared files are immutable once referenced."""
        _check_segment("file name", name)
        path = posixpath.join(self._job_dir, SHARED_DIR, name)
        self._write_durably(path, data)
        return FileHandle.of(f"{SHARED_DIR}/{name}", data)

    def shared_file_uri(self, path: str) -> str:
        """The absolute location of a ``shared/<name>`` path relative to this job directory
        (how the coordinator's shared-state registry names files of several jobs apart)."""
        check_relative_path(path)
        if not path.startswith(SHARED_DIR + "/") or path.count("/") != 1:
            raise ValueError(f"{path!r} is not a file in {SHARED_DIR}/")
        return self._uri(posixpath.join(self._job_dir, path))

    def shared_file_uris(self) -> list[str]:
        """The files in this job's ``shared/`` now, as :meth:`shared_file_uri` names them."""
        directory = posixpath.join(self._job_dir, SHARED_DIR)
        self._fs.invalidate_cache(directory)
        try:
            entries = self._fs.ls(directory, detail=False)
        except FileNotFoundError:
            return []
        names = sorted(posixpath.basename(str(e).rstrip("/")) for e in entries)
        return [self.shared_file_uri(f"{SHARED_DIR}/{name}") for name in names]

    def discard_shared_file(self, uri: str) -> None:
        """Delete the shared file at ``uri`` (from :meth:`shared_file_uri`, possibly of another
        job: a claimed snapshot's); a missing file is fine. Raises :class:`ValueError` naming
        ``uri`` unless it is a file directly in a ``<job>/shared/`` directory."""
        fs, stripped = self._open_uri(uri)
        if posixpath.basename(posixpath.dirname(stripped)) != SHARED_DIR:
            raise ValueError(f"{uri!r} is not a file in a job's {SHARED_DIR}/ directory")
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(stripped)

    def duplicate_method(self, source_uri: str) -> DuplicateMethod | None:
        """How the file at ``source_uri`` is duplicated into this job's ``shared/`` by
        :meth:`duplicate_shared_file` (a hard link, a server-side copy), or ``None`` if it
        cannot be without reading its bytes here (see :mod:`.duplicate`). No I/O."""
        fs, _ = self._open_uri(source_uri)
        return duplicate_method(fs, self._fs)

    def duplicate_shared_file(self, source_uri: str) -> str:
        """Make the file at ``source_uri`` (in another job's ``shared/``: a snapshot this job
        restored) this job's ``shared/<same name>`` too, without reading its bytes here, and
        return its location: a hard link on a local file system (a copy across devices), a
        server-side copy on an object store (:meth:`duplicate_method`). The source is never
        modified. The name is unique per upload, so a file of that name already here is the
        same file and is kept. Raises :class:`ValueError` naming ``source_uri`` unless it is a
        file directly in a ``<job>/shared/`` directory, :class:`CheckpointStorageError` naming
        it if it cannot be duplicated (:meth:`duplicate_method` is ``None``); I/O errors as
        :class:`OSError`. Durable when this returns, as :meth:`write_file`."""
        fs, source, target = self._shared_target(source_uri)
        method = duplicate_method(fs, self._fs)
        if method is None:
            raise CheckpointStorageError(
                f"job {self.job_id!r}: {source_uri} cannot be duplicated into "
                f"{self._uri(target)} (another file system, or no server-side copy)"
            )
        if source == target:
            return self._uri(target)
        if method is DuplicateMethod.HARD_LINK:
            directory = posixpath.dirname(target)
            os.makedirs(directory, exist_ok=True)
            link_or_copy(source, target)
            _fsync_directory(directory)
        else:
            self._fs.copy(source, target)
        return self._uri(target)

    def adopt_shared_file(self, source_uri: str) -> str:
        """As :meth:`duplicate_shared_file` (a snapshot this job restored in CLAIM), but a
        file that cannot be duplicated is read and written here instead."""
        fs, source, target = self._shared_target(source_uri)
        if duplicate_method(fs, self._fs) is not None:
            return self.duplicate_shared_file(source_uri)
        self._write_durably(target, bytes(fs.cat_file(source)))
        return self._uri(target)

    def _shared_target(self, source_uri: str) -> tuple[Any, str, str]:
        """The file system and path of ``source_uri`` (a file directly in a job's
        ``shared/``) and the path of the same name in this job's ``shared/``."""
        fs, source = self._open_uri(source_uri)
        if posixpath.basename(posixpath.dirname(source)) != SHARED_DIR:
            raise ValueError(f"{source_uri!r} is not a file in a job's {SHARED_DIR}/ directory")
        name = posixpath.basename(source)
        _check_segment("file name", name)
        return fs, source, posixpath.join(self._job_dir, SHARED_DIR, name)

    def read_file(self, handle: FileHandle, checkpoint_id: int) -> bytes:
        """Read the file of ``handle`` and return its bytes only if they verify.

        ``checkpoint_id`` is the checkpoint whose metadata referenced the handle (the file
        itself may live in ``shared/``); it is named in errors. Reads at most
        ``handle.size + 1`` bytes. Raises :class:`CorruptCheckpointError` naming the
        checkpoint, the file and expected vs actual size or sha256 if the file is missing,
        has another size or another hash. Nothing is returned that did not verify.
        """
        path = posixpath.join(self._job_dir, handle.path)
        uri = self._uri(path)
        try:
            with self._fs.open(path, "rb") as stream:
                data = stream.read(handle.size + 1)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as err:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint_id} of job {self.job_id!r} is corrupt: referenced file "
                f"{uri} is missing (expected {handle.size} bytes, sha256 {handle.sha256})",
                checkpoint=checkpoint_id,
                path=uri,
                expected=handle.sha256,
                actual="missing",
            ) from err
        if len(data) != handle.size:
            if len(data) > handle.size:
                actual_size = self._fs.size(path)
                actual_hash = "not computed"
            else:
                actual_size, actual_hash = len(data), hashlib.sha256(data).hexdigest()
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint_id} of job {self.job_id!r} is corrupt: file {uri} has "
                f"size {actual_size} bytes, expected {handle.size} bytes "
                f"(sha256 actual {actual_hash}, expected {handle.sha256})",
                checkpoint=checkpoint_id,
                path=uri,
                expected=f"{handle.size} bytes",
                actual=f"{actual_size} bytes",
            )
        digest = hashlib.sha256(data).hexdigest()
        if digest != handle.sha256:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint_id} of job {self.job_id!r} is corrupt: file {uri} has "
                f"sha256 {digest}, expected {handle.sha256}",
                checkpoint=checkpoint_id,
                path=uri,
                expected=handle.sha256,
                actual=digest,
            )
        return data

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """Read ``length`` bytes at ``start`` of the file at ``path`` (relative to the job
        directory, as in a :class:`FileHandle`), without reading the rest of the file.

        Nothing is verified here: the caller checks the range against its own checksum (a
        channel-state region, see ``runtime.checkpoint.channel_state_files``). Raises
        :class:`CorruptCheckpointError` naming the file if it is missing or ends before
        ``start + length``. Cost: one open and one ranged read (one ranged GET on object
        stores).
        """
        check_relative_path(path)
        if isinstance(start, bool) or isinstance(length, bool) or start < 0 or length < 0:
            raise ValueError(f"range start and length must be >= 0, got {start!r}, {length!r}")
        full = posixpath.join(self._job_dir, path)
        uri = self._uri(full)
        try:
            with self._fs.open(full, "rb") as stream:
                stream.seek(start)
                data = stream.read(length)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as err:
            raise CorruptCheckpointError(
                f"file {uri} is missing (reading {length} bytes at offset {start})",
                path=uri,
                actual="missing",
            ) from err
        if len(data) != length:
            raise CorruptCheckpointError(
                f"file {uri} ends early: read {len(data)} of {length} bytes at offset {start}",
                path=uri,
                expected=f"{length} bytes",
                actual=f"{len(data)} bytes",
            )
        return bytes(data)

    def commit_metadata(self, checkpoint_id: int, payload: bytes) -> str:
        """Write ``chk-<checkpoint_id>/_metadata`` atomically; return the checkpoint pointer.

        Consistency: this is the commit point of the checkpoint. Before it starts, every file
        the payload references must have been written (:meth:`write_file` returned). A crash
        at any moment leaves ``_metadata`` either absent (the checkpoint never completed) or
        complete and durable: on the local file system the payload goes to a temporary name,
        is fsynced, renamed over ``_metadata``, and the checkpoint, job and root directories
        are fsynced; on object stores it is a single put, issued last. Committing an id again
        replaces its ``_metadata``.
        """
        return self._commit_metadata_in(self._checkpoint_dir(checkpoint_id), payload)

    def export_savepoint(self, checkpoint_id: int, target_directory: str, payload: bytes) -> str:
        """Copy the files of ``chk-<checkpoint_id>/`` (all of a savepoint's files: savepoints
        are aligned, so they have no channel state shared with other checkpoints) into
        ``<target_directory>/savepoint-<jobid6>-<checkpoint_id>/chk-<checkpoint_id>/``, then
        commit ``payload`` as that savepoint directory's ``_metadata``; return the savepoint
        directory (the path to restore from).

        Consistency: as :meth:`commit_metadata` — the savepoint exists once ``_metadata`` is
        there, and every file it references was durable before. This job's ``chk-<n>/`` is
        left alone (the caller discards it). Cost: one read and one write per file; the
        target may be on another file system than the checkpoints. Raises
        :class:`CheckpointStorageError` naming the job, the savepoint and the path if the
        savepoint directory already holds a ``_metadata``.
        """
        name = savepoint_name(self.job_id, checkpoint_id)
        fs, _ = self._open_uri(target_directory)
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        ours = self._fs.protocol if isinstance(self._fs.protocol, str) else self._fs.protocol[0]
        options = self._options if protocol == ours else {}
        target = CheckpointStorage(target_directory, name, storage_options=options)
        if target._fs.exists(posixpath.join(target._job_dir, METADATA_FILE)):
            raise CheckpointStorageError(
                f"savepoint {checkpoint_id} of job {self.job_id!r}: {target.job_uri} already "
                f"holds a savepoint"
            )
        source = self._checkpoint_dir(checkpoint_id)
        self._fs.invalidate_cache(source)
        try:
            entries = self._fs.ls(source, detail=False)
        except FileNotFoundError:
            entries = []  # no subtask had state
        for entry in sorted(str(e) for e in entries):
            file_name = posixpath.basename(entry.rstrip("/"))
            if file_name.startswith((METADATA_FILE, ".")):
                continue
            target.write_file(checkpoint_id, file_name, bytes(self._fs.cat_file(entry)))
        return target._commit_metadata_in(target._job_dir, payload)

    def _commit_metadata_in(self, directory: str, payload: bytes) -> str:
        final = posixpath.join(directory, METADATA_FILE)
        if not self._local:
            self._fs.pipe_file(final, payload)
            return self._uri(directory)
        os.makedirs(directory, exist_ok=True)
        temp = posixpath.join(directory, _TEMP_METADATA_PREFIX + uuid.uuid4().hex)
        try:
            with open(temp, "xb") as out:
                out.write(payload)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        # The rename, then the chk-<n> and job directory entries (new on the first commit).
        _fsync_directory(directory)
        if directory != self._job_dir:
            _fsync_directory(self._job_dir)
        _fsync_directory(self._root)
        return self._uri(directory)

    def read_metadata(self, pointer_or_id: int | str, max_bytes: int = MAX_METADATA_BYTES) -> bytes:
        """The raw ``_metadata`` bytes of a checkpoint of this job (by id) or anywhere (pointer).

        A pointer is anything :meth:`resolve` accepts. Consistency: sees every commit that
        returned before this call started, from any process. The bytes are *not* verified
        here; pass them to the metadata codec. Raises :class:`CheckpointNotFoundError` if
        there is no ``_metadata``, and :class:`CorruptCheckpointError` if it is larger than
        ``max_bytes`` (``undertow.checkpointing.metadata.max-size``).
        """
        if isinstance(pointer_or_id, int) and not isinstance(pointer_or_id, bool):
            fs, path = self._fs, posixpath.join(self._checkpoint_dir(pointer_or_id), METADATA_FILE)
            checkpoint: int | str = pointer_or_id
        else:
            location = self.resolve(str(pointer_or_id))
            fs, path = self._open_uri(location.metadata_uri)
            checkpoint = location.pointer
        try:
            with fs.open(path, "rb") as stream:
                payload = stream.read(max_bytes + 1)
        except FileNotFoundError as err:
            raise CheckpointNotFoundError(
                f"checkpoint {checkpoint} has no {METADATA_FILE} at {self._uri(path, fs)}"
            ) from err
        if len(payload) > max_bytes:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint}: {self._uri(path, fs)} is larger than {max_bytes} "
                f"bytes, the limit {MAX_METADATA_OPTION} sets (raise it to read this one)",
                checkpoint=checkpoint,
                path=self._uri(path, fs),
            )
        return bytes(payload)

    def completed_checkpoint_ids(self) -> list[int]:
        """Ids of this job's checkpoint directories that hold a ``_metadata``, ascending.

        Consistency: includes every checkpoint whose :meth:`commit_metadata` returned before
        this call started and that was not discarded since (listing caches are invalidated
        first). It says nothing about whether the metadata verifies. Cost: one listing plus
        one existence check per ``chk-<n>`` directory.
        """
        return [d.checkpoint_id for d in self.checkpoint_directories() if d.has_metadata]

    def checkpoint_directories(self) -> list[CheckpointDirectory]:
        """Every ``chk-<n>`` directory of this job, completed or not, by ascending id.

        Only names of the form ``chk-<n>`` directly in this job's directory count: ``shared/``,
        ``taskowned/``, savepoints (they live under the user's directory) and other jobs are
        never listed. Consistency: as :meth:`completed_checkpoint_ids` (caches are invalidated
        first); a directory created or deleted while the listing runs may or may not be in it.
        On object stores a "directory" is a key prefix: it exists while a file is under it.
        Cost: one listing plus one existence check per ``chk-<n>`` directory.
        """
        self._fs.invalidate_cache(self._job_dir)
        try:
            entries = self._fs.ls(self._job_dir, detail=False)
        except FileNotFoundError:
            return []
        found = []
        for entry in entries:
            name = posixpath.basename(str(entry).rstrip("/"))
            match = _CHECKPOINT_DIR.fullmatch(name)
            if match:
                metadata = posixpath.join(self._job_dir, name, METADATA_FILE)
                has_metadata = bool(self._fs.exists(metadata))
                found.append(CheckpointDirectory(int(match.group(1)), has_metadata))
        return sorted(found, key=lambda d: d.checkpoint_id)

    def discard_uncommitted(self, checkpoint_id: int) -> bool:
        """Delete ``chk-<checkpoint_id>/`` unless it holds a ``_metadata``; return whether it
        is gone (a missing directory counts as gone).

        For the coordinator's sweep of orphaned directories (files a task wrote into a
        checkpoint that was aborted after its directory had been discarded). A completed
        checkpoint is never deleted here: ``_metadata`` is checked first, and the caller must
        only pass ids that can no longer be committed (none pending or being finalized), so
        the check cannot race with a commit. Errors other than "not found" (for example a
        late file being written while the directory is removed: "Directory not empty")
        propagate as :class:`OSError`; calling again later finishes the job. Cost: one
        existence check plus one call per file.
        """
        directory = self._checkpoint_dir(checkpoint_id)
        self._fs.invalidate_cache(directory)
        if self._fs.exists(posixpath.join(directory, METADATA_FILE)):
            return False
        with contextlib.suppress(FileNotFoundError):
            self._fs.rm(directory, recursive=True)
        self._fs.invalidate_cache(self._job_dir)
        return True

    def discard(self, checkpoint_id: int, keep: frozenset[str] = frozenset()) -> None:
        """Delete ``chk-<checkpoint_id>/`` with everything in it but the files named in
        ``keep`` (channel-state files newer checkpoints still refer to: the directory then
        stays, without ``_metadata``, until :meth:`discard_checkpoint_file` removed the last
        of them); a missing directory is fine.

        Consistency: ``_metadata`` is deleted first, so a crash mid-way leaves an uncommitted
        directory (not listed by :meth:`completed_checkpoint_ids`; a later discard removes
        it), never a listed checkpoint with missing files. Files in ``shared/`` are not
        touched. Errors other than "not found" propagate as :class:`OSError`.
        """
        directory = self._checkpoint_dir(checkpoint_id)
        with contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(posixpath.join(directory, METADATA_FILE))
            if self._local:
                _fsync_directory(directory)
        with contextlib.suppress(FileNotFoundError):
            if not keep:
                self._fs.rm(directory, recursive=True)
            else:
                self._fs.invalidate_cache(directory)
                for entry in self._fs.ls(directory, detail=False):
                    if posixpath.basename(str(entry).rstrip("/")) not in keep:
                        self._fs.rm(str(entry), recursive=True)
        self._fs.invalidate_cache(self._job_dir)

    def job_file_uri(self, path: str) -> str:
        """The absolute location of a file ``path`` relative to this job directory (a
        ``chk-<n>/<name>`` channel-state file that newer checkpoints refer to)."""
        check_relative_path(path)
        return self._uri(posixpath.join(self._job_dir, path))

    def discard_checkpoint_file(self, uri: str) -> None:
        """Delete the file at ``uri`` (from :meth:`job_file_uri`: directly in a ``chk-<n>/``
        directory of this job, or of the job whose checkpoint this one claimed), then the
        directory if that left it empty (its checkpoint was discarded before, keeping the
        file); a missing file is fine. Raises :class:`ValueError` naming ``uri`` for any
        other location."""
        fs, stripped = self._open_uri(uri)
        directory = posixpath.dirname(stripped)
        job_dir = posixpath.dirname(directory)
        if not _CHECKPOINT_DIR.fullmatch(posixpath.basename(directory)) or not job_dir:
            raise ValueError(f"{uri!r} is not a file in a job's chk-<n>/ directory")
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(stripped)
        fs.invalidate_cache(directory)
        with contextlib.suppress(FileNotFoundError, OSError):
            if not fs.ls(directory, detail=False):
                fs.rm(directory, recursive=True)
        fs.invalidate_cache(job_dir)

    def discard_location(self, pointer: str) -> None:
        """Delete the completed checkpoint or savepoint *directory* at ``pointer`` (a
        ``.../<job-id>/chk-<n>`` or ``.../savepoint-<jobid6>-<n>`` directory, possibly of
        another job: a restored snapshot the job claimed), with everything in it; a missing
        directory is fine.

        Consistency: as :meth:`discard` — ``_metadata`` goes first, so a crash mid-way leaves
        no completed snapshot with missing files. The other job's ``shared/`` and its job
        directory are not touched. Raises :class:`ValueError` naming ``pointer`` if its last
        segment is neither form (never deletes an arbitrary directory), errors other than "not
        found" as :class:`OSError`. This storage's ``storage_options`` apply when the protocol
        is the same. Cost: a few file-system calls plus one per file.
        """
        fs, stripped = self._open_uri(pointer)
        directory = stripped.rstrip("/")
        name = posixpath.basename(directory)
        if not (_CHECKPOINT_DIR.fullmatch(name) or _SAVEPOINT_DIR.fullmatch(name)):
            raise ValueError(
                f"{pointer!r} is not a checkpoint or savepoint directory "
                f"('.../<job-id>/chk-<n>' or '.../savepoint-<jobid6>-<n>'); not deleting it"
            )
        local = isinstance(fs, LocalFileSystem)
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(posixpath.join(directory, METADATA_FILE))
            if local:
                _fsync_directory(directory)
        with contextlib.suppress(FileNotFoundError):
            fs.rm(directory, recursive=True)
        fs.invalidate_cache(posixpath.dirname(directory))

    def resolve(self, path: str) -> CheckpointLocation:
        """Find the completed checkpoint at ``path`` (``execution.state-recovery.path``).

        ``path`` names a checkpoint directory ``.../<job-id>/chk-<n>``, a savepoint directory
        ``.../savepoint-<jobid6>-<n>``, or its ``_metadata`` file, on any file system fsspec
        knows (this storage's ``storage_options`` apply when the protocol is the same). Raises
        :class:`CheckpointNotFoundError` if it is neither or holds no ``_metadata``. Cost: one
        existence check.
        """
        fs, stripped = self._open_uri(path)
        directory = stripped.rstrip("/")
        if posixpath.basename(directory) == METADATA_FILE:
            directory = posixpath.dirname(directory)
        savepoint = _SAVEPOINT_DIR.fullmatch(posixpath.basename(directory))
        if savepoint is not None:
            if not fs.exists(posixpath.join(directory, METADATA_FILE)):
                raise CheckpointNotFoundError(
                    f"{path!r} is not a completed savepoint: {METADATA_FILE} does not exist in "
                    f"{self._uri(directory, fs)}"
                )
            return CheckpointLocation(
                root_uri=self._uri(posixpath.dirname(directory) or "/", fs),
                job_id=posixpath.basename(directory),
                checkpoint_id=int(savepoint.group(1)),
                pointer=self._uri(directory, fs),
            )
        match = _CHECKPOINT_DIR.fullmatch(posixpath.basename(directory))
        job_dir = posixpath.dirname(directory)
        if match is None or not posixpath.basename(job_dir):
            raise CheckpointNotFoundError(
                f"{path!r} is not a checkpoint: expected a '.../<job-id>/chk-<n>' or "
                f"'.../savepoint-<jobid6>-<n>' directory or its {METADATA_FILE} file"
            )
        if not fs.exists(posixpath.join(directory, METADATA_FILE)):
            raise CheckpointNotFoundError(
                f"{path!r} is not a completed checkpoint: {METADATA_FILE} does not exist in "
                f"{self._uri(directory, fs)}"
            )
        return CheckpointLocation(
            root_uri=self._uri(posixpath.dirname(job_dir) or "/", fs),
            job_id=posixpath.basename(job_dir),
            checkpoint_id=int(match.group(1)),
            pointer=self._uri(directory, fs),
        )

    # -- helpers ---------------------------------------------------------------------------

    def _checkpoint_dir(self, checkpoint_id: int) -> str:
        if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int):
            raise TypeError(f"checkpoint id must be an int, got {checkpoint_id!r}")
        if checkpoint_id < 0:
            raise ValueError(f"checkpoint id must be >= 0, got {checkpoint_id}")
        return posixpath.join(self._job_dir, f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}")

    def _open_uri(self, uri: str) -> tuple[Any, str]:
        """The file system and stripped path of ``uri``, with our options if it is ours."""
        protocol = fsspec.core.split_protocol(uri)[0] or "file"
        ours = self._fs.protocol
        ours = (ours,) if isinstance(ours, str) else tuple(ours)
        options = self._options if protocol in ours else {}
        fs, stripped = fsspec.core.url_to_fs(uri, **options)
        return fs, str(stripped)

    def _uri(self, path: str, fs: Any = None) -> str:
        fs = self._fs if fs is None else fs
        if isinstance(fs, LocalFileSystem):
            return path
        return str(fs.unstrip_protocol(path))


def savepoint_name(job_id: str, checkpoint_id: int) -> str:
    """The directory name of savepoint ``checkpoint_id`` of ``job_id``."""
    return f"{SAVEPOINT_DIR_PREFIX}{job_id[:6]}-{checkpoint_id}"


def _check_segment(what: str, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if "/" in value or "\\" in value or "\x00" in value or value[0] in "_.":
        raise ValueError(
            f"{what} must be a single path segment not starting with '_' or '.', got {value!r}"
        )


def _fsync_directory(path: str) -> None:
    """Make the directory entries of ``path`` durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    except OSError as err:
        raise CheckpointStorageError(f"cannot fsync directory {path}: {err}") from err
    finally:
        os.close(fd)
