"""Reader formats of the file source: how a file's bytes become records.

Both produce :class:`Chunk` s: the records of one batch, the bad records met in it, and the
position right after the batch. A reader emits a chunk as a whole, so the position it
checkpoints is always a chunk boundary.

Threading: a format object is immutable and shared; ``read`` returns a fresh iterator that is
used on one task's loop thread only. Cost: line formats read through the file with one
``readline`` per record (buffered by fsspec); no format loads a whole file into memory.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import codecs
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from undertow.common.typeinfo import Types
from undertow.connectors.file.bad_records import BadRecord, BadRecordHandling, to_handling
from undertow.connectors.file.split import FileSourceSplit

#: Records per chunk (a source emits one chunk per poll, then serves its mailbox).
DEFAULT_BATCH_SIZE = 1024
#: A line format's chunk also ends once it holds this many bytes of the file (Flink's
#: ``source.file.stream.io-fetch-size``, 1 MiB): a chunk is pending in the source, and in its
#: checkpoints, until emitted, and 1,024 lines of 10 MiB would be 10 GiB.
CHUNK_BYTES = 1 << 20


class RecordParseError(ValueError):
    """Raised by a format's parse function for a bad record; the message is the reason."""


@dataclass(slots=True)
class Chunk:
    """One batch of a split: records, bad records, and the position after the batch."""

    records: list[Any]
    bad: list[BadRecord] = field(default_factory=list)
    offset: int = 0
    records_to_skip: int = 0
    line: int = 0


class FileFormat(ABC):
    """Common base: a format reads a split into chunks and knows how to treat bad records."""

    bad_records: BadRecordHandling = BadRecordHandling()

    @abstractmethod
    def read(self, fs: Any, split: FileSourceSplit, batch_size: int) -> Iterator[Chunk]:
        """Chunks of ``split`` from its position on; closing the iterator closes the file."""

    def get_produced_type(self) -> Any:
        """The type of the records read (``None``: Python objects, no declared type)."""
        return None

    def with_bad_records(self, handling: Any) -> FileFormat:
        """A copy of this format that handles bad records as ``handling`` says: a
        :class:`BadRecordHandling`, an ``OutputTag`` (side output) or ``None`` (fail)."""
        import copy

        clone = copy.copy(self)
        clone.bad_records = to_handling(handling)
        return clone


class StreamFormat(FileFormat):
    """A line-based format; subclasses implement :meth:`parse` (and may group lines)."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        try:
            self.charset = codecs.lookup(charset_name).name
        except LookupError as err:
            raise ValueError(f"unknown charset {charset_name!r}") from err

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> TextLineFormat:
        """Each line of the file as a ``str`` without its line terminator (PyFlink's name)."""
        return TextLineFormat(charset_name)

    @abstractmethod
    def parse(self, text: str) -> Any:
        """The record of one line's text (terminator removed); raise
        :class:`RecordParseError` (or ``ValueError``) with the reason for a bad record."""

    def skip(self, text: str) -> bool:
        """Whether a line is no record at all (a CSV header, a blank JSON line)."""
        return False

    def complete(self, raw: bytes) -> bool:
        """Whether ``raw`` (one or more lines) is a whole record; CSV says no while a quoted
        field is open. A record still open at the end of the file is parsed as is."""
        return True

    def read(self, fs: Any, split: FileSourceSplit, batch_size: int) -> Iterator[Chunk]:
        with fs.open(split.path, "rb") as f:
            yield from self._read_lines(f, split, batch_size)

    def _read_lines(self, f: BinaryIO, split: FileSourceSplit, batch_size: int) -> Iterator[Chunk]:
        offset, line = split.offset, split.line
        if offset:
            f.seek(offset)
        charset = self.charset
        chunk = Chunk([], offset=offset, line=line)
        chunk_start = offset
        while True:
            start, start_line = offset, line + 1
            raw = f.readline()
            if not raw:
                break
            while not self.complete(raw):
                more = f.readline()
                if not more:
                    break
                raw += more
            offset += len(raw)
            line += raw.count(b"\n") or 1
            try:
                text = raw.decode(charset).rstrip("\r\n")
            except UnicodeDecodeError as err:
                text = raw.decode(charset, errors="replace").rstrip("\r\n")
                chunk.bad.append(
                    BadRecord(
                        split.path, start, start_line, f"not valid {charset}: {err.reason}", text
                    )
                )
            else:
                try:  # a header the format refuses is a bad record too
                    if not (start == 0 and self.skip_header(text)) and not self.skip(text):
                        chunk.records.append(self.parse(text))
                except (ValueError, TypeError, KeyError) as err:
                    chunk.bad.append(BadRecord(split.path, start, start_line, _reason(err), text))
            if len(chunk.records) + len(chunk.bad) >= batch_size or (
                offset - chunk_start >= CHUNK_BYTES
            ):
                chunk.offset, chunk.line = offset, line
                yield chunk
                chunk = Chunk([], offset=offset, line=line)
                chunk_start = offset
        chunk.offset, chunk.line = offset, line
        if chunk.records or chunk.bad:
            yield chunk

    def skip_header(self, text: str) -> bool:
        """Whether the first line of a file is a header to skip (CSV with a header); raises
        :class:`RecordParseError` for a header the format refuses (a bad record)."""
        return False


def _reason(err: BaseException) -> str:
    text = str(err)
    return text if isinstance(err, RecordParseError) else f"{type(err).__name__}: {text}"


class TextLineFormat(StreamFormat):
    """Lines as ``str`` (Flink's ``TextLineInputFormat``); only undecodable bytes are bad."""

    def get_produced_type(self) -> Any:
        return Types.STRING()

    def parse(self, text: str) -> str:
        return text

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self.charset!r})"


class BulkFormat(FileFormat):
    """A format read in batches of rows; positions are row counts from the file start."""
