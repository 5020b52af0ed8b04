"""Bad input records of file sources: what one is, and what a format does with it.

A record is *bad* when its bytes cannot become a value: malformed JSON or CSV, a field that
does not fit the declared type, a wrong number of columns, undecodable text. Every format
reports a bad record as a :class:`BadRecord` (file, byte offset, line, reason, raw text) and
never drops one silently. The user chooses per format what happens next
(:class:`BadRecordHandling`):

* ``fail()`` (the default): the source raises :class:`BadRecordError`, which names the file,
  the byte offset and line, the reason and the raw text; the job fails (and, with a restart
  strategy, fails again at the same record: bad input is not a transient fault).
* ``side_output(tag)``: the :class:`BadRecord` goes to the side output ``tag`` of the source's
  stream (``stream.get_side_output(tag)``) with the record's position, and reading goes on.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from undertow.api.output_tag import OutputTag
from undertow.core.errors import UndertowError

#: How much raw text an error message quotes (the side output keeps all of it).
_QUOTED = 200


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that could not be read: where it is, why, and its raw text."""

    path: str
    offset: int
    line: int
    reason: str
    raw: str

    def describe(self) -> str:
        where = f"{self.path} at byte offset {self.offset}"
        if self.line:
            where += f" (line {self.line})"
        raw = self.raw if len(self.raw) <= _QUOTED else self.raw[:_QUOTED] + "..."
        return f"{where}: {self.reason}; raw record: {raw!r}"


class BadRecordError(UndertowError):
    """A file source met a bad record and is configured to fail on it."""

    def __init__(self, record: BadRecord, source: str = "file source") -> None:
        super().__init__(f"{source}: bad record in {record.describe()}")
        self.record = record


@dataclass(frozen=True, slots=True)
class BadRecordHandling:
    """Fail on a bad record (``tag is None``) or send it to the side output ``tag``."""

    tag: OutputTag | None = None

    @staticmethod
    def fail() -> BadRecordHandling:
        return BadRecordHandling(None)

    @staticmethod
    def side_output(tag: OutputTag) -> BadRecordHandling:
        if not isinstance(tag, OutputTag):
            raise TypeError(f"bad records go to an OutputTag, got {tag!r}")
        return BadRecordHandling(tag)

    def __repr__(self) -> str:
        return "fail" if self.tag is None else f"side_output({self.tag.tag_id!r})"


def to_handling(value: Any) -> BadRecordHandling:
    """Accept a :class:`BadRecordHandling`, an ``OutputTag`` (side output) or ``None`` (fail)."""
    if value is None:
        return BadRecordHandling.fail()
    if isinstance(value, BadRecordHandling):
        return value
    return BadRecordHandling.side_output(value)
