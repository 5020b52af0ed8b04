"""A reference to one file of a checkpoint, with what is needed to verify it.

A :class:`FileHandle` is what a subtask reports when its state file is written and what the
``_metadata`` file stores: the path relative to the job directory (so a job directory can be
moved or copied as a whole), the size and the sha256 of the content. Handles are immutable
values; constructing one validates it, so a handle can never name a file outside the job
directory. :func:`verify_content` checks bytes read back against their handle.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from undertow.storage.errors import CorruptCheckpointError

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class FileHandle:
    """``path`` is relative to ``<root>/<job-id>/`` and uses ``/``; e.g. ``chk-7/map-0.state``.

    Invariants (checked here, raising :class:`ValueError`): ``path`` is non-empty, relative,
    and has no empty, ``.`` or ``..`` segment; ``size >= 0``; ``sha256`` is 64 lowercase hex
    digits.
    """

    path: str
    size: int
    sha256: str

    def __post_init__(self) -> None:
        check_relative_path(self.path)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise ValueError(f"file size must be a non-negative int, got {self.size!r}")
        if not isinstance(self.sha256, str) or not _SHA256_HEX.match(self.sha256):
            raise ValueError(f"sha256 must be 64 lowercase hex digits, got {self.sha256!r}")

    @classmethod
    def of(cls, path: str, data: bytes) -> FileHandle:
        """The handle of ``data`` stored at ``path``."""
        return cls(path, len(data), hashlib.sha256(data).hexdigest())


def check_relative_path(path: str) -> None:
    """Raise :class:`ValueError` unless ``path`` is a safe relative ``/``-separated path."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"file path must be a non-empty string, got {path!r}")
    if path.startswith("/") or "\\" in path or "\x00" in path or ":" in path.split("/", 1)[0]:
        raise ValueError(f"file path must be relative to the job directory, got {path!r}")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(f"file path has an empty, '.' or '..' segment: {path!r}")


def verify_content(
    handle: FileHandle, data: bytes, checkpoint_id: int, job_id: str, uri: str, size: int
) -> None:
    """Raise :class:`CorruptCheckpointError` naming the checkpoint, the job, the file at
    ``uri`` and expected vs actual size or sha256 unless ``data`` (at most ``handle.size + 1``
    bytes read from a file of ``size`` bytes) is the content ``handle`` names."""
    if len(data) != handle.size:
        actual_hash = "not computed" if len(data) > handle.size else _sha256(data)
        raise CorruptCheckpointError(
            f"checkpoint {checkpoint_id} of job {job_id!r} is corrupt: file {uri} has "
            f"size {size} bytes, expected {handle.size} bytes "
            f"(sha256 actual {actual_hash}, expected {handle.sha256})",
            checkpoint=checkpoint_id,
            path=uri,
            expected=f"{handle.size} bytes",
            actual=f"{size} bytes",
        )
    digest = _sha256(data)
    if digest != handle.sha256:
        raise CorruptCheckpointError(
            f"checkpoint {checkpoint_id} of job {job_id!r} is corrupt: file {uri} has "
            f"sha256 {digest}, expected {handle.sha256}",
            checkpoint=checkpoint_id,
            path=uri,
            expected=handle.sha256,
            actual=digest,
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
