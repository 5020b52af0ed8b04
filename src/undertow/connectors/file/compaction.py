"""FileSink compaction (PyFlink's ``FileCompactStrategy`` / ``FileCompactor``).

Part of the commit path, as Flink's: at a checkpoint's barrier the writer's rolled (pending,
hidden) part files of one bucket are merged by the compactor into one new pending file, named
like the writer's in-progress files so a restart cleans it up if the checkpoint never
completes; the inputs are deleted and the merged file is what the checkpoint commits. Nothing
is visible before the commit, so exactly-once holds as without compaction.

Differences from Flink: files are merged per checkpoint (``enable_compaction_on_checkpoint``
takes only 1; nothing is held back over checkpoints), in roll-order groups cut at the size
threshold; ``set_num_compact_threads`` is recorded, but merging runs on the sink's task thread
(blocking file-system calls); ``concat_file_compactor`` only for row formats.
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass
from typing import Any

from undertow.connectors.file.committable import FileSinkCommittable

INPROGRESS = ".inprogress."  # as the writer's (writer.INPROGRESS), so restarts clean it up
_COPY_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FileCompactStrategy:
    """When to compact (module doc); build with ``FileCompactStrategy.builder()``."""

    size_threshold: int = -1
    num_checkpoints_before_compaction: int = 1
    num_compact_threads: int = 1

    @staticmethod
    def builder() -> FileCompactStrategy.Builder:
        return FileCompactStrategy.Builder()

    class Builder:
        def __init__(self) -> None:
            self._size = -1
            self._checkpoints = -1
            self._threads = 1

        def enable_compaction_on_checkpoint(
            self, num_checkpoints_before_compaction: int
        ) -> FileCompactStrategy.Builder:
            if num_checkpoints_before_compaction != 1:
                raise ValueError(
                    f"FileCompactStrategy: enable_compaction_on_checkpoint("
                    f"{num_checkpoints_before_compaction}) is not supported: undertow compacts "
                    f"the files of every checkpoint (1) and holds none back over checkpoints"
                )
            self._checkpoints = 1
            return self

        def set_size_threshold(self, size_threshold: int) -> FileCompactStrategy.Builder:
            if size_threshold == 0 or size_threshold < -1:
                raise ValueError(
                    f"FileCompactStrategy: size threshold must be positive or -1, got "
                    f"{size_threshold}"
                )
            self._size = int(size_threshold)
            return self

        def set_num_compact_threads(self, num_compact_threads: int) -> FileCompactStrategy.Builder:
            if num_compact_threads < 1:
                raise ValueError(
                    f"FileCompactStrategy: compact threads must be >= 1, got {num_compact_threads}"
                )
            self._threads = int(num_compact_threads)
            return self

        def build(self) -> FileCompactStrategy:
            return FileCompactStrategy(self._size, 1, self._threads)


@dataclass(frozen=True, slots=True)
class FileCompactor:
    """How to merge files: ``concat_file_compactor(delimiter)`` joins a group's bytes with
    ``delimiter`` between neighbours; ``identical_file_compactor()`` commits each file alone,
    unchanged (Flink's, for single files)."""

    concat: bool
    delimiter: bytes = b""

    @staticmethod
    def concat_file_compactor(file_delimiter: bytes | None = None) -> FileCompactor:
        if file_delimiter is not None and not isinstance(file_delimiter, bytes):
            raise TypeError(
                f"concat_file_compactor(): delimiter must be bytes, got {file_delimiter!r}"
            )
        return FileCompactor(True, file_delimiter or b"")

    @staticmethod
    def identical_file_compactor() -> FileCompactor:
        return FileCompactor(False)


def groups(
    committables: list[FileSinkCommittable], size_threshold: int
) -> list[list[FileSinkCommittable]]:
    """The merge groups (pure): per bucket directory, in roll order, cut once a group holds
    ``size_threshold`` bytes (-1: never)."""
    by_bucket: dict[str, list[list[FileSinkCommittable]]] = {}
    for c in committables:
        runs = by_bucket.setdefault(posixpath.dirname(c.final_path), [[]])
        if size_threshold != -1 and sum(x.size for x in runs[-1]) >= size_threshold:
            runs.append([])
        runs[-1].append(c)
    return [g for runs in by_bucket.values() for g in runs if g]


def compact(
    fs: Any, recoverable: Any, committables: list[FileSinkCommittable],
    strategy: FileCompactStrategy, compactor: FileCompactor,
) -> list[FileSinkCommittable]:  # fmt: skip
    """The checkpoint's committables after merging (module doc); inputs are deleted."""
    if not compactor.concat:
        return committables
    out: list[FileSinkCommittable] = []
    for group in groups(committables, strategy.size_threshold):
        if len(group) == 1:
            out.append(group[0])
            continue
        out.append(_merge(fs, recoverable, group, compactor.delimiter))
    return out


def _merge(
    fs: Any, recoverable: Any, group: list[FileSinkCommittable], delimiter: bytes
) -> FileSinkCommittable:
    first = group[0]
    final_local = fs._strip_protocol(first.final_path)
    directory, name = posixpath.split(final_local)
    path = f"{directory}/.{name}{INPROGRESS}{uuid.uuid4().hex}"
    stream = recoverable.open(path)
    try:
        for i, c in enumerate(group):
            if i and delimiter:
                stream.write(delimiter)
            with fs.open(fs._strip_protocol(c.pending_path), "rb") as src:
                while chunk := src.read(_COPY_CHUNK):
                    stream.write(chunk)
        size = recoverable.close_for_commit(stream, path)
    except Exception as err:
        recoverable.abort(stream)
        raise OSError(
            f"FileSink compaction (subtask {first.subtask}): cannot merge "
            f"{[c.pending_path for c in group]} into {path!r}: {err}"
        ) from err
    for c in group:
        fs.rm(fs._strip_protocol(c.pending_path))
    return FileSinkCommittable(fs.unstrip_protocol(path), first.final_path, size, first.subtask)
