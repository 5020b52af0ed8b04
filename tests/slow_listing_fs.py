"""A file system whose directory listing hangs until a test lets it end, for tests of what a
job does while its file source's first listing runs (an object store listing many files, an
NFS mount that hangs): ``undertow-slow-list://<path>`` is a private in-memory file system
whose ``find`` waits for ``RELEASE``. Registered with fsspec on import; one process only (the
``local-threads`` target)."""

from __future__ import annotations

import threading
from typing import Any

import fsspec  # type: ignore[import-untyped]
from fsspec.implementations.memory import MemoryFileSystem  # type: ignore[import-untyped]

PROTOCOL = "undertow-slow-list"
#: Set when a listing started waiting.
LISTING = threading.Event()
#: Set by the test to let the listings end (each gives up after a minute, failing).
RELEASE = threading.Event()


class SlowListingFileSystem(MemoryFileSystem):  # type: ignore[misc]
    """A memory file system of its own (``store``) whose ``find`` waits for ``RELEASE``."""

    protocol = PROTOCOL
    store: dict[str, Any] = {}
    pseudo_dirs = [""]

    def find(self, path: str, *args: Any, **kwargs: Any) -> Any:
        LISTING.set()
        if not RELEASE.wait(60):
            raise TimeoutError(f"{PROTOCOL}: the test never let the listing of {path} end")
        return super().find(path, *args, **kwargs)


fsspec.register_implementation(PROTOCOL, SlowListingFileSystem, clobber=True)
