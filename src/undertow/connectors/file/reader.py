"""The file source's reader: reads its splits one after another, a chunk per poll.

Runs in a source subtask, on the task's loop thread (``poll_next``, ``add_splits``,
``snapshot_state``); it never waits for the enumerator. File I/O is blocking but bounded: one
poll reads one chunk (``batch_size`` records).

Exactly-once positions: after a chunk is emitted the reader's split carries the position right
after that chunk, and ``snapshot_state`` (taken between polls) returns those splits; a
restored reader continues from there. Bad records of a chunk go to the side output (or fail
the job, naming file, offset and line) before the chunk's records are emitted.

Continuous sources: a reader without splits asks the enumerator again every discovery
interval (the enumerator answers only when it has a split).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from typing import Any

import fsspec  # type: ignore[import-untyped]

from undertow.connectors.file.bad_records import BadRecordError
from undertow.connectors.file.formats import Chunk, FileFormat
from undertow.connectors.file.split import FileSourceSplit
from undertow.connectors.source import InputStatus, ReaderOutput, SourceReader, SourceReaderContext


class FileSourceReader(SourceReader[FileSourceSplit]):
    def __init__(
        self,
        context: SourceReaderContext,
        file_format: FileFormat,
        batch_size: int,
        discovery_interval_ms: int | None,
        clock: Any = time.monotonic,
    ) -> None:
        self.context = context
        self.format = file_format
        self.batch_size = batch_size
        self.interval_ms = discovery_interval_ms
        self.clock = clock
        self.splits: list[FileSourceSplit] = []
        self.current: FileSourceSplit | None = None
        self._chunks: Iterator[Chunk] | None = None
        self.no_more_splits = False
        self._requested_at: float | None = None
        self.records_read = 0
        self.bad_records = 0

    def _name(self) -> str:
        return (
            f"file source (subtask {self.context.index_of_subtask() + 1}/"
            f"{self.context.parallelism()})"
        )

    def start(self) -> None:
        if not self.splits:
            self._request()

    def _request(self) -> None:
        now = self.clock()
        if self._requested_at is not None and (
            self.interval_ms is None or (now - self._requested_at) * 1000 < self.interval_ms
        ):
            return
        self._requested_at = now
        self.context.send_split_request()

    def add_splits(self, splits: list[FileSourceSplit]) -> None:
        self.splits.extend(splits)
        self._requested_at = None
        self.context.notify_available()

    def notify_no_more_splits(self) -> None:
        self.no_more_splits = True
        self.context.notify_available()

    def poll_next(self, output: ReaderOutput) -> InputStatus:
        while True:
            if self.current is None:
                if not self.splits:
                    if self.no_more_splits:
                        return InputStatus.END_OF_INPUT
                    self._request()
                    return InputStatus.NOTHING_AVAILABLE
                self.current = self.splits.pop(0)
                fs, _ = fsspec.core.url_to_fs(self.current.path)
                self._chunks = self.format.read(fs, self.current, self.batch_size)
            assert self._chunks is not None
            chunk = next(self._chunks, None)
            if chunk is None:
                self._finish_split()
                continue
            self._emit(chunk, output)
            self.current = self.current.with_position(
                chunk.offset, chunk.records_to_skip, chunk.line
            )
            return InputStatus.MORE_AVAILABLE

    def _emit(self, chunk: Chunk, output: ReaderOutput) -> None:
        if chunk.bad:
            tag = self.format.bad_records.tag
            if tag is None:
                raise BadRecordError(chunk.bad[0], self._name())
            for bad in chunk.bad:
                output.collect_side(tag.tag_id, bad, None)
            self.bad_records += len(chunk.bad)
        if chunk.records:
            self.records_read += len(chunk.records)
            output.collect_batch(chunk.records, None)

    def _finish_split(self) -> None:
        if isinstance(self._chunks, Generator):  # a format's generator: release its file
            self._chunks.close()
        self._chunks = None
        self.current = None

    def snapshot_state(self, checkpoint_id: int) -> list[FileSourceSplit]:
        """The splits this reader owns, the current one at the position after its last emitted
        chunk (splits are immutable, so no copy is needed)."""
        return ([self.current] if self.current is not None else []) + list(self.splits)

    def close(self) -> None:
        self._finish_split()
