"""Durable writes of local checkpoint files in as few GIL-releasing calls as possible.

The worker's I/O threads write checkpoint files while a task thread may be running user code
that holds the GIL; each call that releases it (a system call, a hash of more than 2 KiB) makes
the I/O thread wait to get it back. So a file is one ``open``, one ``write`` through
``O_DSYNC`` and one ``close``, whatever its size (docs/design.md, "Checkpoint I/O beside a busy
task thread"). Blocking: call it from an I/O thread, never from the loop.
"""

from __future__ import annotations

import os
import posixpath

#: Flags of a local checkpoint file: ``O_DSYNC`` makes each ``write`` return only once its
#: data (and the size needed to read it back) is on stable storage, as ``fdatasync`` would.
_WRITE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)
_DSYNC = getattr(os, "O_DSYNC", 0)


def write_local_file(path: str, data: bytes) -> None:
    """Write ``data`` durably to the local file ``path`` in as few blocking calls as possible.

    Called on the worker's I/O threads while a task thread may be running user code: every
    call that releases the GIL costs that thread a wait for it (up to one switch interval,
    and one scheduler wake-up on a loaded machine). So the common case is three calls whatever
    the size: ``open`` (the parent directory is created only when it is missing), one
    ``write`` through ``O_DSYNC`` (durable when it returns; more only for a partial write),
    ``close``. Without ``O_DSYNC`` (not POSIX) an ``fsync`` follows the write.
    """
    flags = _WRITE_FLAGS | _DSYNC
    try:
        fd = os.open(path, flags, 0o666)
    except FileNotFoundError:
        os.makedirs(posixpath.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if not _DSYNC:
            os.fsync(fd)
    finally:
        os.close(fd)
