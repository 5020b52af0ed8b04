"""Errors of the checkpoint storage layer.

They extend :mod:`undertow.core.errors`::

    UndertowError
     └── CheckpointStorageError        storage cannot do what was asked (bad key file, bad path)
          ├── CheckpointNotFoundError  no completed checkpoint where one was expected
          └── CorruptCheckpointError   a checkpoint exists but does not verify

A :class:`CorruptCheckpointError` is raised *before* anything in the offending bytes is decoded:
its message names the checkpoint, the file and, for a checksum or size mismatch, the expected
and the actual value.
"""

from __future__ import annotations

from undertow.core.errors import UndertowError


class CheckpointStorageError(UndertowError, OSError):
    """Checkpoint storage cannot do what was asked; the message names the path."""


class CheckpointNotFoundError(CheckpointStorageError, FileNotFoundError):
    """There is no completed checkpoint (no ``_metadata``) at the given location."""


class CorruptCheckpointError(CheckpointStorageError):
    """A checkpoint's metadata or one of its files failed verification.

    ``checkpoint`` is the checkpoint id or location, ``path`` the file that failed, and
    ``expected`` / ``actual`` the values that differ (sha256 hex or sizes), where known.
    """

    def __init__(
        self,
        message: str,
        *,
        checkpoint: int | str | None = None,
        path: str | None = None,
        expected: str | None = None,
        actual: str | None = None,
    ) -> None:
        super().__init__(message)
        self.checkpoint = checkpoint
        self.path = path
        self.expected = expected
        self.actual = actual

    def __reduce__(self) -> tuple[object, ...]:
        # OSError's own pickling would drop the keyword arguments; errors cross process
        # boundaries (worker -> driver), so keep them.
        return (_rebuild, (self.args[0], self.checkpoint, self.path, self.expected, self.actual))


def _rebuild(
    message: str,
    checkpoint: int | str | None,
    path: str | None,
    expected: str | None,
    actual: str | None,
) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        message, checkpoint=checkpoint, path=path, expected=expected, actual=actual
    )
