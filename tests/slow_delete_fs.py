"""A file system whose deletes are slow, for tests of what a job does while its checkpoints
are being deleted (an object store's DELETE takes its round trip; a local disk is too fast to
see the window): ``undertow-slow-delete://<path>`` is a private in-memory file system whose
file deletes each take ``DELETE_S``. Registered with fsspec on import; one process only (the
``local-threads`` target)."""

from __future__ import annotations

import time
from typing import Any

import fsspec  # type: ignore[import-untyped]
from fsspec.implementations.memory import MemoryFileSystem  # type: ignore[import-untyped]

PROTOCOL = "undertow-slow-delete"
#: How long deleting one file takes.
DELETE_S = 0.2


class SlowDeleteFileSystem(MemoryFileSystem):  # type: ignore[misc]
    """A memory file system of its own (``store``), whose ``rm_file`` (what ``rm`` calls per
    file) waits ``DELETE_S`` before the file goes."""

    protocol = PROTOCOL
    store: dict[str, Any] = {}
    pseudo_dirs = [""]

    def rm_file(self, path: str) -> None:
        time.sleep(DELETE_S)
        super().rm_file(path)


fsspec.register_implementation(PROTOCOL, SlowDeleteFileSystem, clobber=True)
