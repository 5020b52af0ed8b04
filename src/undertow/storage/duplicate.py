"""Duplicating a shared file instead of uploading it again (FLIP-193's ``duplicate``).

After a NO_CLAIM restore a file that can be duplicated inside the store becomes this job's own
``shared/<same name>`` for a metadata operation: a **hard link** on the local file system (a
**copy** across devices, ``EXDEV``), a **server-side copy** on one object store (S3's
``CopyObject``), else **nothing**: the caller uploads again (a full first checkpoint) and says
so once. :func:`duplicate_method` is the pure decision (file system classes in, a
:class:`DuplicateMethod` or ``None`` out); :func:`link_or_copy` executes the local one;
:class:`SharedFileDuplication` is the capability the coordinator asks of a checkpoint storage.

Threading: :func:`link_or_copy` and :meth:`SharedFileDuplication.duplicate_shared_file` are
blocking I/O (an executor thread, never the loop); the decision is pure.
"""

from __future__ import annotations

import enum
import errno
import os
import shutil
from typing import Any, Protocol, runtime_checkable

from fsspec.asyn import AsyncFileSystem  # type: ignore[import-untyped]
from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]
from fsspec.spec import AbstractFileSystem  # type: ignore[import-untyped]


class DuplicateMethod(enum.Enum):
    """How a shared file is duplicated into another job's ``shared/`` directory."""

    #: A hard link on a local file system (a copy when source and target are on two devices).
    HARD_LINK = "hard-link"
    #: A copy made by the object store itself (fsspec ``copy``; S3 ``CopyObject``).
    SERVER_SIDE_COPY = "server-side-copy"


def duplicate_method(source_fs: Any, target_fs: Any) -> DuplicateMethod | None:
    """How a file of ``source_fs`` can be duplicated into ``target_fs`` (fsspec file systems),
    or ``None`` when it cannot without reading its bytes here (another file system, or one
    whose class has no copy of its own). Pure: looks only at the two classes."""
    if isinstance(source_fs, LocalFileSystem) and isinstance(target_fs, LocalFileSystem):
        return DuplicateMethod.HARD_LINK
    if type(source_fs) is not type(target_fs):
        return None
    cls = type(target_fs)
    if issubclass(cls, AsyncFileSystem):  # s3fs, gcsfs: the copy is the coroutine
        own_copy = cls._cp_file is not AsyncFileSystem._cp_file
    else:
        own_copy = cls.cp_file is not AbstractFileSystem.cp_file  # fsspec's: "not implemented"
    return DuplicateMethod.SERVER_SIDE_COPY if own_copy else None


def link_or_copy(source: str, target: str) -> bool:
    """Make the local file ``target`` a duplicate of ``source``: a hard link, or a copy when
    the two are on different devices (``EXDEV``). Returns whether it linked. A ``target`` that
    exists already is kept (names in ``shared/`` are unique per upload, so it is the same
    file). Neither ``source``'s bytes nor its name change. The copy is flushed to disk before
    this returns; the caller makes the directory entry durable. Raises :class:`OSError` (a
    missing ``source``, permissions) naming the path."""
    try:
        os.link(source, target)
        return True
    except FileExistsError:
        return True
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise
    with open(source, "rb") as src, open(target, "xb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
        out.flush()
        os.fsync(out.fileno())
    return False


@runtime_checkable
class SharedFileDuplication(Protocol):
    """A checkpoint storage that can make another job's shared file its own without an
    upload (see the module docstring).

    Threading: :meth:`duplicate_method` is cheap and pure; :meth:`duplicate_shared_file` is
    blocking I/O, called on an executor before the job's first attempt."""

    def duplicate_method(self, source_uri: str) -> DuplicateMethod | None:
        """How the file at ``source_uri`` would be duplicated here, or ``None`` if it cannot
        be (then its bytes must be uploaded again)."""
        ...

    def duplicate_shared_file(self, source_uri: str) -> str:
        """Duplicate the file at ``source_uri`` (in another job's ``shared/``) as this job's
        ``shared/<same name>``; its location here. Durable when this returns."""
        ...
