"""File source splits: one file, and how far a reader got in it.

A :class:`FileSourceSplit` is immutable. A reader keeps its own position while reading and
checkpoints a *new* split with the position reached (``with_position``); restoring that split
resumes right after the last record emitted before the checkpoint, so nothing is read twice
and nothing is skipped.

The position has two parts, as Flink's ``CheckpointedPosition``: ``offset`` is a byte offset
where reading may restart (line formats: the start of the next record), ``records_to_skip``
counts records to skip from there (bulk formats such as Parquet restart at offset 0 and skip
rows). ``line`` counts the lines before ``offset``, only to name lines in error messages.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from undertow.connectors.source import SourceSplit


@dataclass(frozen=True, slots=True)
class FileSourceSplit(SourceSplit):
    """The file ``path`` (a full fsspec URL or local path) from ``offset`` on."""

    path: str
    file_size: int
    modification_time: float = 0.0
    offset: int = 0
    records_to_skip: int = 0
    line: int = 0

    def split_id(self) -> str:
        return self.path

    def with_position(self, offset: int, records_to_skip: int, line: int) -> FileSourceSplit:
        return dataclasses.replace(self, offset=offset, records_to_skip=records_to_skip, line=line)

    def __repr__(self) -> str:
        return (
            f"FileSourceSplit({self.path!r}, offset={self.offset}, "
            f"skip={self.records_to_skip}, line={self.line})"
        )
