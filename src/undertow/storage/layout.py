"""Where a job's checkpoints and savepoints live, by name: the layout, without I/O.

Under the configured root (``execution.checkpointing.dir``), as in Flink::

    <root>/<job-id>/chk-<n>/        exclusive files of checkpoint n, and its _metadata
    <root>/<job-id>/shared/         files referenced by several checkpoints (incremental state)
    <root>/<job-id>/taskowned/      files owned by the tasks, never deleted by the coordinator
    <target>/savepoint-<jobid6>-<n>/_metadata, and chk-<n>/ under it: a savepoint

Pure functions of ``/``-separated paths (fsspec's stripped paths): what a directory name is,
what a pointer names, which file belongs to which directory. Nothing here touches a file
system; :class:`~undertow.storage.checkpoint_storage.CheckpointStorage` does, and asks this
module before it writes, reads or deletes anything, so a malformed name never reaches I/O.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

METADATA_FILE = "_metadata"
CHECKPOINT_DIR_PREFIX = "chk-"
SHARED_DIR = "shared"
TASKOWNED_DIR = "taskowned"
SAVEPOINT_DIR_PREFIX = "savepoint-"
#: The temporary name a local ``_metadata`` is written under before its atomic rename.
TEMP_METADATA_PREFIX = METADATA_FILE + ".inprogress."

_CHECKPOINT_DIR = re.compile(r"chk-(0|[1-9][0-9]*)")
_SAVEPOINT_DIR = re.compile(r"savepoint-[0-9A-Za-z]{1,6}-(0|[1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class CheckpointDirectory:
    """A ``chk-<n>`` directory of a job, as :meth:`CheckpointStorage.checkpoint_directories`
    found it: its id and whether it held a ``_metadata`` (a completed checkpoint) then."""

    checkpoint_id: int
    has_metadata: bool


@dataclass(frozen=True, slots=True)
class CheckpointLocation:
    """A completed checkpoint found by :meth:`CheckpointStorage.resolve`.

    ``pointer`` is the checkpoint directory (the external pointer Flink prints); ``root_uri``
    and ``job_id`` let a caller open a :class:`CheckpointStorage` on the job that wrote it, to
    read its files (a restore may come from another job's checkpoint).
    """

    root_uri: str
    job_id: str
    checkpoint_id: int
    pointer: str

    @property
    def metadata_uri(self) -> str:
        return self.pointer.rstrip("/") + "/" + METADATA_FILE


@dataclass(frozen=True, slots=True)
class SnapshotDirectory:
    """What a pointer names, by :func:`snapshot_directory`: the ``directory`` of a checkpoint
    or savepoint, the ``root`` and ``job_id`` to open a storage on that reads its files (a
    savepoint directory is its own job directory), and the snapshot's ``checkpoint_id``."""

    directory: str
    root: str
    job_id: str
    checkpoint_id: int
    savepoint: bool


def check_segment(what: str, value: str) -> None:
    """Raise :class:`ValueError` naming ``what`` and ``value`` unless ``value`` is one
    non-empty path segment not starting with ``_`` or ``.`` (names the storage reserves)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if "/" in value or "\\" in value or "\x00" in value or value[0] in "_.":
        raise ValueError(
            f"{what} must be a single path segment not starting with '_' or '.', got {value!r}"
        )


def checkpoint_dir_name(checkpoint_id: int) -> str:
    """``chk-<checkpoint_id>``; raises :class:`TypeError` / :class:`ValueError` naming the id
    unless it is an int >= 0 (a bool is not)."""
    if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int):
        raise TypeError(f"checkpoint id must be an int, got {checkpoint_id!r}")
    if checkpoint_id < 0:
        raise ValueError(f"checkpoint id must be >= 0, got {checkpoint_id}")
    return f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}"


def checkpoint_id_of(name: str) -> int | None:
    """The id of a ``chk-<n>`` directory name (no leading zeros), else ``None``."""
    match = _CHECKPOINT_DIR.fullmatch(name)
    return None if match is None else int(match.group(1))


def savepoint_name(job_id: str, checkpoint_id: int) -> str:
    """The directory name of savepoint ``checkpoint_id`` of ``job_id``."""
    return f"{SAVEPOINT_DIR_PREFIX}{job_id[:6]}-{checkpoint_id}"


def is_snapshot_dir_name(name: str) -> bool:
    """Whether ``name`` is a ``chk-<n>`` or a ``savepoint-<jobid6>-<n>`` directory name."""
    return bool(_CHECKPOINT_DIR.fullmatch(name) or _SAVEPOINT_DIR.fullmatch(name))


def snapshot_directory(path: str) -> SnapshotDirectory | None:
    """The checkpoint or savepoint ``path`` names: a ``.../<job-id>/chk-<n>`` directory, a
    ``.../savepoint-<jobid6>-<n>`` directory, or the ``_metadata`` file of either (a trailing
    ``/`` is ignored); ``None`` for anything else (a ``chk-<n>`` needs a job directory)."""
    directory = path.rstrip("/")
    if posixpath.basename(directory) == METADATA_FILE:
        directory = posixpath.dirname(directory)
    name = posixpath.basename(directory)
    savepoint = _SAVEPOINT_DIR.fullmatch(name)
    if savepoint is not None:
        root = posixpath.dirname(directory) or "/"
        return SnapshotDirectory(directory, root, name, int(savepoint.group(1)), savepoint=True)
    checkpoint_id = checkpoint_id_of(name)
    job_dir = posixpath.dirname(directory)
    if checkpoint_id is None or not posixpath.basename(job_dir):
        return None
    root = posixpath.dirname(job_dir) or "/"
    return SnapshotDirectory(
        directory, root, posixpath.basename(job_dir), checkpoint_id, savepoint=False
    )


def is_shared_file(path: str) -> bool:
    """Whether ``path`` is a file directly in a job's ``shared/`` directory."""
    return posixpath.basename(posixpath.dirname(path)) == SHARED_DIR


def is_checkpoint_file(path: str) -> bool:
    """Whether ``path`` is a file directly in a ``<job>/chk-<n>/`` directory."""
    directory = posixpath.dirname(path)
    return checkpoint_id_of(posixpath.basename(directory)) is not None and bool(
        posixpath.dirname(directory)
    )
