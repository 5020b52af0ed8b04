"""When part files roll, what they are called, and which bucket (directory) a record goes to.

PyFlink's names: ``OutputFileConfig``, ``RollingPolicy.default_rolling_policy(...)`` /
``RollingPolicy.on_checkpoint_rolling_policy()``, ``BucketAssigner.base_path_bucket_assigner()``
/ ``BucketAssigner.date_time_bucket_assigner(format_str, timezone_id)``.

Rolling decisions are pure: a policy looks at a :class:`PartFileInfo` (and a clock value) and
says whether to close the part file. ``should_roll_on_checkpoint`` is asked only where a part
file could stay open across a checkpoint: row formats on a file system that resumes open files
(the local one; see :mod:`.writer`). Bulk formats, and every format on other file systems
(``memory://``, ``s3://``...), roll on every checkpoint whatever the policy says (docs/design.md
"File sink: row-format part files stay open across checkpoints where the file system resumes").
"""

from __future__ import annotations

import datetime as dt
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo


@dataclass(frozen=True, slots=True)
class OutputFileConfig:
    """Part file names: ``<prefix>-<uuid>-<subtask>-<counter><suffix>``."""

    part_prefix: str = "part"
    part_suffix: str = ""

    def __post_init__(self) -> None:
        for what, value in (("prefix", self.part_prefix), ("suffix", self.part_suffix)):
            if "/" in value or "\\" in value:
                raise ValueError(f"OutputFileConfig: part {what} {value!r} must not contain '/'")
        if self.part_prefix.startswith((".", "_")):
            raise ValueError(
                f"OutputFileConfig: part prefix {self.part_prefix!r} starts with "
                "'.' or '_': committed files would be hidden from readers"
            )

    @staticmethod
    def builder() -> OutputFileConfigBuilder:
        return OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix


class OutputFileConfigBuilder:
    def __init__(self) -> None:
        self._prefix, self._suffix = "part", ""

    def with_part_prefix(self, prefix: str) -> OutputFileConfigBuilder:
        self._prefix = prefix
        return self

    def with_part_suffix(self, suffix: str) -> OutputFileConfigBuilder:
        self._suffix = suffix
        return self

    def build(self) -> OutputFileConfig:
        return OutputFileConfig(self._prefix, self._suffix)


@dataclass(frozen=True, slots=True)
class PartFileInfo:
    """What a rolling policy may look at: the open part file's bucket, times (ms), size."""

    bucket_id: str
    creation_time: int
    last_update_time: int
    size: int


class RollingPolicy(ABC):
    @abstractmethod
    def should_roll_on_event(self, part: PartFileInfo) -> bool:
        """After a record was written."""

    @abstractmethod
    def should_roll_on_processing_time(self, part: PartFileInfo, now_ms: int) -> bool:
        """On the writer's periodic check (at most once per ``bucket_check_interval``, when a
        record comes) and before every checkpoint, for part files that could stay open."""

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        """Before a checkpoint, for a part file that could stay open (module doc). The default
        rolls, which is always safe; :class:`DefaultRollingPolicy` keeps small files open."""
        return True

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: int = 60 * 1000,
        inactivity_interval: int = 60 * 1000,
    ) -> DefaultRollingPolicy:
        """Roll at ``part_size`` bytes, after ``rollover_interval`` ms open or
        ``inactivity_interval`` ms without a record. A checkpoint rolls only bulk formats and
        file systems that cannot resume an open file (module doc)."""
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        return OnCheckpointRollingPolicy()


@dataclass(frozen=True)
class DefaultRollingPolicy(RollingPolicy):
    part_size: int = 1024 * 1024 * 128
    rollover_interval: int = 60 * 1000
    inactivity_interval: int = 60 * 1000

    def __post_init__(self) -> None:
        if min(self.part_size, self.rollover_interval, self.inactivity_interval) <= 0:
            raise ValueError(
                f"default_rolling_policy(): sizes and intervals must be positive: {self}"
            )

    def should_roll_on_event(self, part: PartFileInfo) -> bool:
        return part.size >= self.part_size

    def should_roll_on_checkpoint(self, part: PartFileInfo) -> bool:
        """Only a part file that reached ``part_size`` (Flink's rule): others stay open."""
        return part.size >= self.part_size

    def should_roll_on_processing_time(self, part: PartFileInfo, now_ms: int) -> bool:
        return (
            now_ms - part.creation_time >= self.rollover_interval
            or now_ms - part.last_update_time >= self.inactivity_interval
        )


@dataclass(frozen=True)
class OnCheckpointRollingPolicy(RollingPolicy):
    """Roll on checkpoints only (the only policy of bulk formats in Flink)."""

    def should_roll_on_event(self, part: PartFileInfo) -> bool:
        return False

    def should_roll_on_processing_time(self, part: PartFileInfo, now_ms: int) -> bool:
        return False


# --- bucket assigners ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BucketContext:
    """What a bucket assigner may look at besides the record (all in epoch milliseconds)."""

    current_processing_time: int
    current_watermark: int
    timestamp: int | None


class BucketAssigner(ABC):
    @abstractmethod
    def get_bucket_id(self, element: Any, context: BucketContext) -> str:
        """A relative directory (``""``: the base path itself); ``/`` separates levels."""

    @staticmethod
    def base_path_bucket_assigner() -> BasePathBucketAssigner:
        return BasePathBucketAssigner()

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> DateTimeBucketAssigner:
        return DateTimeBucketAssigner(format_str, timezone_id)


class BasePathBucketAssigner(BucketAssigner):
    def get_bucket_id(self, element: Any, context: BucketContext) -> str:
        return ""

    def __repr__(self) -> str:
        return "BasePathBucketAssigner()"


#: Java DateTimeFormatter letters -> strftime, longest first.
_JAVA_PATTERNS = [
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
    ("SSS", "%f"),
]
_TOKEN = re.compile("|".join(re.escape(j) for j, _ in _JAVA_PATTERNS) + "|'[^']*'|[A-Za-z]")


def java_to_strftime(pattern: str) -> str:
    """``yyyy-MM-dd--HH`` -> ``%Y-%m-%d--%H``; quoted text stays literal; other letters are
    refused (naming them) rather than written literally into directory names."""
    table = dict(_JAVA_PATTERNS)

    def convert(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in table:
            return table[token]
        if token.startswith("'"):
            return token[1:-1].replace("%", "%%") or "'"
        raise ValueError(
            f"date_time_bucket_assigner(): unsupported pattern letter {token!r} "
            f"in {pattern!r} (supported: yyyy yy MM dd HH mm ss SSS)"
        )

    return _TOKEN.sub(convert, pattern.replace("%", "%%"))


class DateTimeBucketAssigner(BucketAssigner):
    """Buckets by the processing time when the record is written (Flink's behaviour)."""

    def __init__(self, format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None):
        self.format_str = format_str
        self.timezone_id = timezone_id
        self._strftime = java_to_strftime(format_str)
        self._zone = ZoneInfo(timezone_id) if timezone_id else None
        if self._zone is None:
            self._zone = dt.datetime.now().astimezone().tzinfo  # type: ignore[assignment]

    def get_bucket_id(self, element: Any, context: BucketContext) -> str:
        moment = dt.datetime.fromtimestamp(context.current_processing_time / 1000, self._zone)
        return moment.strftime(self._strftime)

    def __getstate__(self) -> dict[str, Any]:
        return {"format_str": self.format_str, "timezone_id": self.timezone_id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["format_str"], state["timezone_id"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"DateTimeBucketAssigner({self.format_str!r}, {self.timezone_id!r})"
