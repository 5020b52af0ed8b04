"""Checkpoint storage: the files of a job's checkpoints on a file system, and their commit.

One class, :class:`CheckpointStorage`, over fsspec (local paths, ``file://``, ``memory://``,
``s3://``...). Where each file goes is :mod:`.layout`'s, the job directory's file system
:mod:`.job_directory`'s, the ``shared/`` files :mod:`.shared_files`', durable local writes and
the atomic replace of ``_metadata`` :mod:`.durable_write`'s, checking bytes read back against
their handle :mod:`.handle`'s.

Threading and cost: blocking I/O in every method (a few file-system calls; an object store
round trip each), called from a worker thread pool, never from a loop or task thread. No
mutable state: several threads may use an instance; the coordinator serializes the commit and
the discard of any one checkpoint.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import contextlib
import posixpath
import uuid

from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from undertow.storage.durable_write import fsync_directory, replace_local_file
from undertow.storage.errors import (
    CheckpointNotFoundError,
    CheckpointStorageError,
    CorruptCheckpointError,
)
from undertow.storage.handle import FileHandle, check_relative_path, verify_content
from undertow.storage.layout import (
    CHECKPOINT_DIR_PREFIX,
    METADATA_FILE,
    SHARED_DIR,
    TASKOWNED_DIR,
    TEMP_METADATA_PREFIX,
    CheckpointDirectory,
    CheckpointLocation,
    check_segment,
    checkpoint_dir_name,
    checkpoint_id_of,
    is_checkpoint_file,
    is_snapshot_dir_name,
    savepoint_name,
    snapshot_directory,
)
from undertow.storage.shared_files import SharedFiles

__all__ = [
    "CHECKPOINT_DIR_PREFIX",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_OPTION",
    "METADATA_FILE",
    "SHARED_DIR",
    "TASKOWNED_DIR",
    "CheckpointDirectory",
    "CheckpointLocation",
    "CheckpointStorage",
    "FileHandle",
    "savepoint_name",
]

#: Default upper bound on the size of a ``_metadata`` file read back (the option
#: ``undertow.checkpointing.metadata.max-size``); a larger one is rejected instead of being
#: read into memory. The metadata codec checks the same limit when it writes.
MAX_METADATA_BYTES = 256 * 1024 * 1024
MAX_METADATA_OPTION = "undertow.checkpointing.metadata.max-size"


class CheckpointStorage(SharedFiles):
    """The checkpoints of one job under ``<root_uri>/<job_id>/``: its ``chk-<n>/`` files, their
    ``_metadata`` commit, listing and discarding them, savepoints, and finding a snapshot by
    its pointer; the ``shared/`` files are :class:`SharedFiles`', the file system
    :class:`JobDirectory`'s. Directories are created when the first file is written.
    """

    @classmethod
    def in_memory(cls, job_id: str = "job") -> CheckpointStorage:
        """A storage on a fresh, private ``memory://`` root (for tests).

        The content lives in the process-wide fsspec memory file system until it is discarded
        or the process ends; it is not shared with other processes.
        """
        return cls(f"memory://undertow-{uuid.uuid4().hex}", job_id)

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
        check_segment("file name", name)
        directory = self._checkpoint_dir(checkpoint_id)
        path = posixpath.join(directory, name)
        self._write_durably(path, data)
        return FileHandle.of(f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}/{name}", data)

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
        # a file longer than its handle: its size is named, its hash is not computed
        size = self._fs.size(path) if len(data) > handle.size else len(data)
        verify_content(handle, data, checkpoint_id, self.job_id, uri, size)
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

    def probe_savepoint_target(self, target_directory: str) -> None:
        """Check that :meth:`export_savepoint` can write into ``target_directory`` before a
        savepoint is taken: make the directory (as the export would) and write and delete an
        empty ``.undertow-probe-<hex>`` file in it, through the file system the export uses.

        So a stop with savepoint into a directory it cannot write is refused while the job
        still runs, instead of failing after its sources stopped. Raises
        :class:`CheckpointStorageError` naming the directory and the OS error (permission
        denied, a file in the way, a read-only file system). The directory stays made. Cost:
        a ``makedirs``, a put and a delete (three round trips on an object store).
        """
        fs, path = self._open_uri(target_directory)
        uri = self._uri(path, fs)
        probe = posixpath.join(path, f".undertow-probe-{uuid.uuid4().hex}")
        step = "create"
        try:
            fs.makedirs(path, exist_ok=True)
            step = "write a file into"
            fs.pipe_file(probe, b"")
            step = "delete a file from"
            fs.rm_file(probe)
        except OSError as err:
            raise CheckpointStorageError(
                f"savepoint directory {uri}: cannot {step} it: {type(err).__name__}: {err}"
            ) from err

    def _commit_metadata_in(self, directory: str, payload: bytes) -> str:
        final = posixpath.join(directory, METADATA_FILE)
        if not self._local:
            self._fs.pipe_file(final, payload)
            return self._uri(directory)
        temp = posixpath.join(directory, TEMP_METADATA_PREFIX + uuid.uuid4().hex)
        replace_local_file(final, payload, temp)
        # chk-<n> in the job directory, the job directory in the root (new on a first commit)
        if directory != self._job_dir:
            fsync_directory(self._job_dir)
        fsync_directory(self._root)
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
            checkpoint_id = checkpoint_id_of(name)
            if checkpoint_id is not None:
                metadata = posixpath.join(self._job_dir, name, METADATA_FILE)
                has_metadata = bool(self._fs.exists(metadata))
                found.append(CheckpointDirectory(checkpoint_id, has_metadata))
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
                fsync_directory(directory)
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
        if not is_checkpoint_file(stripped):
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
        if not is_snapshot_dir_name(posixpath.basename(directory)):
            raise ValueError(
                f"{pointer!r} is not a checkpoint or savepoint directory "
                f"('.../<job-id>/chk-<n>' or '.../savepoint-<jobid6>-<n>'); not deleting it"
            )
        local = isinstance(fs, LocalFileSystem)
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(posixpath.join(directory, METADATA_FILE))
            if local:
                fsync_directory(directory)
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
        found = snapshot_directory(stripped)
        if found is None:
            raise CheckpointNotFoundError(
                f"{path!r} is not a checkpoint: expected a '.../<job-id>/chk-<n>' or "
                f"'.../savepoint-<jobid6>-<n>' directory or its {METADATA_FILE} file"
            )
        if not fs.exists(posixpath.join(found.directory, METADATA_FILE)):
            kind = "savepoint" if found.savepoint else "checkpoint"
            raise CheckpointNotFoundError(
                f"{path!r} is not a completed {kind}: {METADATA_FILE} does not exist in "
                f"{self._uri(found.directory, fs)}"
            )
        return CheckpointLocation(
            root_uri=self._uri(found.root, fs),
            job_id=found.job_id,
            checkpoint_id=found.checkpoint_id,
            pointer=self._uri(found.directory, fs),
        )

    # -- helpers ---------------------------------------------------------------------------

    def _checkpoint_dir(self, checkpoint_id: int) -> str:
        return posixpath.join(self._job_dir, checkpoint_dir_name(checkpoint_id))
