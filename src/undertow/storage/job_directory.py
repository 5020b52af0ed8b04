"""A job's directory on a file system: the fsspec file system and paths every file of the
job's checkpoints goes through, and the one way each is written durably.

``<root_uri>/<job_id>/`` on any file system fsspec knows (local paths, ``file://``,
``memory://``, ``s3://`` with ``s3fs``); ``storage_options`` go to fsspec (an ``s3://``
endpoint and credentials) and apply to other locations of the same protocol too (another
job's snapshot being restored or claimed). Construction does no I/O. Threading: no mutable
state; blocking I/O, from a worker thread pool. Subclassed by :class:`.shared_files.SharedFiles`
and :class:`.checkpoint_storage.CheckpointStorage`, which name the files (:mod:`.layout`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

import fsspec  # type: ignore[import-untyped]
from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from undertow.core.errors import ConfigurationError
from undertow.storage.durable_write import write_local_file
from undertow.storage.layout import check_segment


class JobDirectory:
    """``<root_uri>/<job_id>/`` and the file system it is on.

    Invariant: ``job_id`` is one path segment (:func:`.layout.check_segment`), so nothing this
    directory names lies outside ``<root>/<job_id>/`` unless a caller passes a URI.
    """

    def __init__(
        self, root_uri: str, job_id: str, *, storage_options: Mapping[str, Any] | None = None
    ) -> None:
        check_segment("job id", job_id)
        self._options = dict(storage_options or {})
        fs, root = fsspec.core.url_to_fs(root_uri, **self._options)
        self._fs: Any = fs
        self._local = isinstance(fs, LocalFileSystem)
        self._root: str = root.rstrip("/") or "/"
        self._job_dir = posixpath.join(self._root, job_id)
        self.job_id = job_id

    @property
    def root_uri(self) -> str:
        """The normalized root (a plain path on the local file system, else a URL)."""
        return self._uri(self._root)

    @property
    def job_uri(self) -> str:
        return self._uri(self._job_dir)

    def create(self, option: str) -> None:
        """Make the job's directory now, as Flink makes its checkpoint locations when the job
        starts: a directory that cannot be made (a read-only or missing mount, a typo) fails
        the job before anything runs, not every checkpoint after it (each failed checkpoint
        restarted the job, without end). Raises ``ConfigurationError`` naming ``option`` (the
        key that set the root) and the directory."""
        try:
            self._fs.makedirs(self._job_dir, exist_ok=True)
        except OSError as err:
            raise ConfigurationError(
                f"{option}: cannot create the job's directory {self.job_uri}: {err}"
            ) from err

    def _write_durably(self, path: str, data: bytes) -> None:
        """``data`` at ``path``, on stable storage when this returns (local disks: through
        an ``O_DSYNC`` descriptor, :func:`.durable_write.write_local_file`; an object store's
        put is durable once it returns). Parent directories are created."""
        if self._local:
            write_local_file(path, data)
        else:
            self._fs.pipe_file(path, data)

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
