"""What the Delta sink's writers hand to its committer: finished data files, and the pure
encodings a commit needs (partition values, relative paths, file statistics).

A :class:`DeltaCommittable` is a complete Parquet data file inside the table's directory that
no Delta log entry references yet, so no Delta reader sees it. Committing it means adding it
to the log (an ``add`` action) in the one table commit of its checkpoint.
"""

from __future__ import annotations

import datetime
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from undertow.core.errors import UndertowError


class DeltaSinkError(UndertowError):
    """The Delta sink could not write or commit; names the table, checkpoint and file."""


@dataclass(frozen=True, slots=True)
class DeltaCommittable:
    """A written, uncommitted data file of the table.

    ``path`` is relative to the table root (as in the Delta log's ``add.path``);
    ``partition_values`` pairs each partition column with its Delta string value (``None``
    for null), in partition column order."""

    path: str
    size: int
    partition_values: tuple[tuple[str, str | None], ...]
    num_records: int
    modification_time: int
    #: The writer subtask (for errors).
    subtask: int

    def stats_json(self) -> str:
        return json.dumps({"numRecords": self.num_records})


def partition_value(value: Any) -> str | None:
    """A value of a partition column as the Delta protocol serializes it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    raise DeltaSinkError(
        f"partition value {value!r} of type {type(value).__name__} is not supported "
        "(use string, integer, boolean or date partition columns)"
    )


#: Hive's directory name for a null partition value (what Spark and delta-rs write).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def partition_directory(values: tuple[tuple[str, str | None], ...]) -> str:
    """``col=value/...`` with values percent-encoded, ``""`` for an unpartitioned table."""
    parts = [
        f"{name}={NULL_PARTITION if v is None else urllib.parse.quote(v, safe='')}"
        for name, v in values
    ]
    return "/".join(parts)
