"""How the file sink opens, persists, resumes and closes in-progress part files (Flink's
``RecoverableWriter``).

Threading: a writer object is used by one sink writer on its task thread; the streams it
returns are not shared. Cost: ``persist`` is one flush and one fsync per open part file and
checkpoint; ``recover`` one stat and one truncate; ``open`` on the local file system also
fsyncs the parent directory once, so the new file's name is durable before a checkpoint can
refer to it.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, BinaryIO

from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from undertow.core.errors import UndertowError


class FileSinkRecoveryError(UndertowError):
    """An in-progress part file recorded in a checkpoint cannot be resumed; names the file,
    the length the checkpoint recorded and the length found."""


@dataclass(frozen=True, slots=True)
class InProgressFileRecoverable:
    """What a checkpoint records of an open part file: enough to resume it.

    ``path`` is the hidden in-progress file (a path in the writer's file system, no protocol),
    ``final_path`` the name it gets when committed, ``valid_length`` the bytes that belong to
    the checkpoint; anything after them was written later and is cut off on resume.
    """

    path: str
    final_path: str
    valid_length: int


class RecoverableWriter(ABC):
    """Opens and closes in-progress part files on one file system; resumes them if it can.

    Lifecycle of a stream: ``open`` -> writes (by the sink writer or a bulk writer) ->
    ``persist`` at checkpoints (only if :attr:`supports_resume`) -> ``close_for_commit`` (the
    file is complete and pending) or ``abort``. ``recover`` replaces ``open`` after a restore.
    """

    #: Why part files of this file system cannot stay open across checkpoints (for the log);
    #: ``None`` when they can.
    cannot_resume_reason: str | None = None

    @property
    def supports_resume(self) -> bool:
        return self.cannot_resume_reason is None

    @abstractmethod
    def open(self, path: str) -> BinaryIO:
        """A new, empty in-progress file at ``path`` (its directory exists)."""

    def persist(self, stream: BinaryIO, path: str, final_path: str) -> InProgressFileRecoverable:
        """Make everything written to ``stream`` durable; the resumable for a checkpoint."""
        raise NotImplementedError(f"{type(self).__name__} cannot resume part files")

    def recover(self, recoverable: InProgressFileRecoverable) -> BinaryIO:
        """The in-progress file cut to its valid length, open for appending; raises
        :class:`FileSinkRecoveryError` if it is missing or shorter."""
        raise NotImplementedError(f"{type(self).__name__} cannot resume part files")

    @abstractmethod
    def close_for_commit(self, stream: BinaryIO, path: str) -> int:
        """Close ``stream`` with everything written durable; the file's size in bytes."""

    def abort(self, stream: BinaryIO) -> None:
        """Close ``stream`` without making it durable (the caller may delete the file)."""
        stream.close()


class LocalRecoverableWriter(RecoverableWriter):
    """Resumable part files on the local file system, with plain ``os`` calls."""

    def open(self, path: str) -> BinaryIO:
        stream = open(path, "xb")  # noqa: SIM115 - the caller owns the stream
        _fsync_directory(os.path.dirname(path))
        return stream

    def persist(self, stream: BinaryIO, path: str, final_path: str) -> InProgressFileRecoverable:
        stream.flush()
        os.fsync(stream.fileno())
        return InProgressFileRecoverable(path, final_path, stream.tell())

    def recover(self, recoverable: InProgressFileRecoverable) -> BinaryIO:
        path, expected = recoverable.path, recoverable.valid_length
        try:
            actual: int | None = os.path.getsize(path)
        except FileNotFoundError:
            actual = None
        if actual is None or actual < expected:
            found = "it is missing" if actual is None else f"it has only {actual} bytes"
            committed = os.path.exists(recoverable.final_path)
            hint = (
                f"; its final file {recoverable.final_path!r} exists, so a later checkpoint "
                "committed it: a job cannot be restored from a checkpoint or savepoint older "
                "than the one that committed a part file it was still writing"
                if committed
                else ""
            )
            raise FileSinkRecoveryError(
                f"cannot resume in-progress part file {path!r}: the checkpoint recorded "
                f"{expected} valid bytes but {found}{hint}"
            )
        os.truncate(path, expected)
        stream = open(path, "ab")  # noqa: SIM115 - positioned at the end: the valid length
        os.fsync(stream.fileno())  # the truncation is durable before new bytes follow
        return stream

    def close_for_commit(self, stream: BinaryIO, path: str) -> int:
        stream.flush()
        os.fsync(stream.fileno())
        size = stream.tell()
        stream.close()
        return size


class NonResumableWriter(RecoverableWriter):
    """Part files through fsspec, for file systems that cannot resume them."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.cannot_resume_reason = (
            f"{type(fs).__name__} ({protocol}://) cannot resume an open file after a failure: "
            "what is written to it lives in this process until it is closed"
        )

    def open(self, path: str) -> BinaryIO:
        stream: BinaryIO = self.fs.open(path, "wb")
        return stream

    def close_for_commit(self, stream: BinaryIO, path: str) -> int:
        stream.close()
        return int(self.fs.info(path).get("size") or 0)


def recoverable_writer_for(fs: Any) -> RecoverableWriter:
    """The recoverable writer of an fsspec file system: the one capability check."""
    if isinstance(fs, LocalFileSystem):
        return LocalRecoverableWriter()
    return NonResumableWriter(fs)


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
