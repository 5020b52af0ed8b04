"""The files incremental checkpoints share, in ``<job>/shared/``, and those of a restored
snapshot brought into this job (FLIP-193's CLAIM and NO_CLAIM restores).

A shared file is written once under a name unique to its upload and is immutable once a
checkpoint references it; which one may be deleted is the coordinator's shared-state registry
(``runtime/checkpoint/shared_state_registry.py``), never this module. A restored snapshot's
files are duplicated without reading their bytes here where the file systems allow it
(:mod:`.duplicate`: a hard link, a server-side copy). Threading and cost: as
:class:`.job_directory.JobDirectory`, one or a few file-system calls per method.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from typing import Any

from undertow.storage.duplicate import DuplicateMethod, duplicate_method, link_or_copy
from undertow.storage.durable_write import fsync_directory
from undertow.storage.errors import CheckpointStorageError
from undertow.storage.handle import FileHandle, check_relative_path
from undertow.storage.job_directory import JobDirectory
from undertow.storage.layout import SHARED_DIR, check_segment, is_shared_file


class SharedFiles(JobDirectory):
    """One job's ``shared/`` files: write, name, list, delete, and duplicate or adopt another
    job's."""

    def write_shared_file(self, name: str, data: bytes) -> FileHandle:
        """Write ``data`` as ``shared/<name>`` (a file incremental checkpoints share) and return
        its handle; durable when this returns, as :meth:`write_file` (``shared/`` is created
        on the first write: a job without incremental state has none). ``name`` must be unique
        to this upload (the caller names it after its backend, checkpoint and SST file):
        shared files are immutable once referenced."""
        check_segment("file name", name)
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
        if not is_shared_file(stripped):
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
            fsync_directory(directory)
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
        if not is_shared_file(source):
            raise ValueError(f"{source_uri!r} is not a file in a job's {SHARED_DIR}/ directory")
        name = posixpath.basename(source)
        check_segment("file name", name)
        return fs, source, posixpath.join(self._job_dir, SHARED_DIR, name)
