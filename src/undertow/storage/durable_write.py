"""Durable writes of local checkpoint files in as few GIL-releasing calls as possible.

The worker's I/O threads write checkpoint files while a task thread may be running user code
that holds the GIL; each call that releases it (a system call, a hash of more than 2 KiB) makes
the I/O thread wait to get it back. So a file is one ``open``, one ``write`` through
``O_DSYNC`` and one ``close``, whatever its size (docs/design.md, "Checkpoint I/O beside a busy
task thread"). Blocking: call it from an I/O thread, never from the loop.

Also here: a local file replaced atomically (``_metadata``'s commit: a temporary name, fsync,
rename, fsync of the directory) and the directory fsync itself.
"""

from __future__ import annotations

import contextlib
import os
import posixpath

from undertow.storage.errors import CheckpointStorageError

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


def replace_local_file(path: str, data: bytes, temp: str) -> None:
    """Make ``data`` the content of the local file ``path`` atomically and durably: written
    to ``temp`` (a new name in the same directory, created here), fsynced, renamed over
    ``path``, then the directory fsynced. A crash at any moment leaves ``path`` as it was or
    with all of ``data``; on an error ``temp`` is removed. The directory is created if
    missing (its own entry is the caller's to make durable)."""
    directory = posixpath.dirname(path)
    os.makedirs(directory, exist_ok=True)
    try:
        with open(temp, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_directory(directory)


def fsync_directory(path: str) -> None:
    """Make the directory entries of ``path`` durable (POSIX; a no-op elsewhere, and for a
    directory that does not exist). Raises :class:`CheckpointStorageError` naming ``path``."""
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
