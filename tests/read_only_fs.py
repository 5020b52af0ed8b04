"""A file system that refuses every write, for tests of directories a job cannot write into
(as root a ``chmod`` refuses nothing): ``undertow-read-only://<path>`` is a private in-memory
file system whose writes raise the ``OSError`` an object store's access denial or a read-only
mount gives. Registered with fsspec on import."""

from __future__ import annotations

import errno
from typing import Any

import fsspec  # type: ignore[import-untyped]
from fsspec.implementations.memory import MemoryFileSystem  # type: ignore[import-untyped]

PROTOCOL = "undertow-read-only"


class ReadOnlyFileSystem(MemoryFileSystem):  # type: ignore[misc]
    """Reads like an (empty) memory file system; ``makedirs`` succeeds (a directory of an
    object store is only a key prefix) and any file write raises ``PermissionError``."""

    protocol = PROTOCOL
    store: dict[str, Any] = {}
    pseudo_dirs = [""]

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        return None

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        if "r" not in mode:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return super()._open(path, mode, *args, **kwargs)

    def pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", path)


fsspec.register_implementation(PROTOCOL, ReadOnlyFileSystem, clobber=True)
