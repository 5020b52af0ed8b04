"""``WatermarkStrategy`` and ``TimestampAssigner`` (PyFlink's API) and the watermark generators
the runtime drives.

A :class:`WatermarkStrategy` is a frozen description built by the user::

    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)) \\
        .with_timestamp_assigner(MyAssigner()) \\
        .with_idleness(Duration.of_minutes(1))

Threading: strategies are immutable value objects. A generator belongs to one subtask and is
called only from that subtask's task thread.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import dataclasses
import datetime
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from undertow.common.time import Duration, Time, to_millis
from undertow.core.config import ConfigOption, Options
from undertow.core.types import MIN_TIMESTAMP

__all__ = [
    "AUTO_WATERMARK_INTERVAL",
    "DEFAULT_AUTO_WATERMARK_INTERVAL_MS",
    "BoundedOutOfOrdernessWatermarks",
    "NoWatermarksGenerator",
    "TimestampAssigner",
    "WatermarkAlignmentParams",
    "WatermarkGenerator",
    "WatermarkStrategy",
]

#: Flink's default for ``pipeline.auto-watermark-interval``.
DEFAULT_AUTO_WATERMARK_INTERVAL_MS = 200
#: How often periodic watermark generators are asked for a watermark (0 disables them).
AUTO_WATERMARK_INTERVAL: ConfigOption[int] = Options.AUTO_WATERMARK_INTERVAL
#: Flink's default for the update interval of watermark alignment.
DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS = 1000

DurationLike = Duration | Time | datetime.timedelta | int
TimestampAssignerFunction = Callable[[Any, int], int]


class TimestampAssigner(ABC):
    """Assigns event-time timestamps (milliseconds since the epoch) to elements."""

    @abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        """The timestamp of ``value``.

        ``record_timestamp`` is the timestamp the record already carries (from its source or a
        previous assigner), or :data:`~undertow.core.types.MIN_TIMESTAMP` if it has none.
        """


class WatermarkGenerator(ABC):
    """Turns the timestamps of a stream into watermarks. One per subtask; not thread-safe."""

    @abstractmethod
    def on_events(self, timestamps: Sequence[int | None]) -> None:
        """Observe the timestamps of a batch of records (``None`` entries are ignored)."""

    @abstractmethod
    def on_periodic_emit(self) -> int | None:
        """The watermark to emit now, or ``None`` if it has not advanced since the last one."""


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Flink's generator for records at most ``out_of_orderness_ms`` late.

    Watermark = max timestamp seen - ``out_of_orderness_ms`` - 1 (0 gives Flink's monotonous
    timestamps generator). ``on_periodic_emit`` returns it only when it is above both the last
    one returned and ``MIN_TIMESTAMP``. O(batch length) per ``on_events``, O(1) per
    ``on_periodic_emit``.
    """

    def __init__(self, out_of_orderness_ms: int) -> None:
        if out_of_orderness_ms < 0:
            raise ValueError(f"out-of-orderness must be >= 0 ms, got {out_of_orderness_ms}")
        self._out_of_orderness_ms = out_of_orderness_ms
        self._max_timestamp: int | None = None
        self._last_emitted = MIN_TIMESTAMP  # below this nothing is a watermark

    def on_events(self, timestamps: Sequence[int | None]) -> None:
        if not timestamps:
            return
        highest: int
        try:
            highest = max(timestamps)  # type: ignore[type-var, assignment]
        except TypeError:  # some records carry no timestamp
            present = [t for t in timestamps if t is not None]
            if not present:
                return
            highest = max(present)
        if self._max_timestamp is None or highest > self._max_timestamp:
            self._max_timestamp = highest

    def on_periodic_emit(self) -> int | None:
        if self._max_timestamp is None:
            return None
        watermark: int = self._max_timestamp - self._out_of_orderness_ms - 1
        if watermark <= self._last_emitted:
            return None
        self._last_emitted = watermark
        return watermark

    def __repr__(self) -> str:
        return (
            f"BoundedOutOfOrdernessWatermarks(out_of_orderness_ms={self._out_of_orderness_ms}, "
            f"max_timestamp={self._max_timestamp})"
        )


class NoWatermarksGenerator(WatermarkGenerator):
    """Emits no watermarks (``WatermarkStrategy.no_watermarks()``)."""

    def on_events(self, timestamps: Sequence[int | None]) -> None:
        pass

    def on_periodic_emit(self) -> int | None:
        return None

    def __repr__(self) -> str:
        return "NoWatermarksGenerator()"


@dataclass(frozen=True)
class WatermarkAlignmentParams:
    """What ``with_watermark_alignment`` asked for (stored; enforced by the source runtime)."""

    watermark_group: str
    max_allowed_watermark_drift_ms: int
    update_interval_ms: int = DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS


def _non_negative_millis(what: str, value: DurationLike) -> int:
    millis = to_millis(value)
    if millis < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    return millis


def _positive_millis(what: str, value: DurationLike) -> int:
    millis = to_millis(value)
    if millis <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return millis


@dataclass(frozen=True)
class WatermarkStrategy:
    """How a source (or ``assign_timestamps_and_watermarks``) derives timestamps and watermarks.

    Build it with the static constructors and ``with_*`` methods, not with the constructor.
    ``out_of_orderness_ms`` is ``None`` for ``no_watermarks()``.
    """

    out_of_orderness_ms: int | None
    timestamp_assigner: TimestampAssigner | TimestampAssignerFunction | None = None
    idle_timeout_ms: int | None = None
    alignment: WatermarkAlignmentParams | None = None

    # PyFlink constructors ------------------------------------------------------------------
    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Timestamps ascend: the watermark follows the latest timestamp (minus 1 ms)."""
        return WatermarkStrategy(out_of_orderness_ms=0)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: DurationLike) -> WatermarkStrategy:
        """Records arrive at most ``max_out_of_orderness`` after a later-stamped record."""
        millis = _non_negative_millis("max_out_of_orderness", max_out_of_orderness)
        return WatermarkStrategy(out_of_orderness_ms=millis)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No watermarks at all (processing-time jobs)."""
        return WatermarkStrategy(out_of_orderness_ms=None)

    def with_timestamp_assigner(
        self, timestamp_assigner: TimestampAssigner | TimestampAssignerFunction
    ) -> WatermarkStrategy:
        """This strategy with timestamps taken from ``timestamp_assigner``: a
        :class:`TimestampAssigner` or a function ``(value, record_timestamp) -> int``."""
        if not isinstance(timestamp_assigner, TimestampAssigner) and not callable(
            timestamp_assigner
        ):
            raise TypeError(
                "timestamp_assigner must be a TimestampAssigner or a function "
                f"(value, record_timestamp) -> int, got {timestamp_assigner!r}"
            )
        return dataclasses.replace(self, timestamp_assigner=timestamp_assigner)

    def with_idleness(self, idle_timeout: DurationLike) -> WatermarkStrategy:
        """This strategy, also marking the output idle after ``idle_timeout`` without records
        (so it does not hold back the watermark downstream)."""
        millis = _positive_millis("idle_timeout", idle_timeout)
        return dataclasses.replace(self, idle_timeout_ms=millis)

    def with_watermark_alignment(
        self,
        watermark_group: str,
        max_allowed_watermark_drift: DurationLike,
        update_interval: DurationLike | None = None,
    ) -> WatermarkStrategy:
        """This strategy, asking sources of ``watermark_group`` to pause when they get more than
        ``max_allowed_watermark_drift`` ahead of the group's watermark."""
        if not isinstance(watermark_group, str) or not watermark_group:
            raise ValueError(f"watermark_group must be a non-empty str, got {watermark_group!r}")
        params = WatermarkAlignmentParams(
            watermark_group,
            _non_negative_millis("max_allowed_watermark_drift", max_allowed_watermark_drift),
            DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS
            if update_interval is None
            else _positive_millis("update_interval", update_interval),
        )
        return dataclasses.replace(self, alignment=params)

    # runtime side ----------------------------------------------------------------------------
    def create_timestamp_assigner(self) -> TimestampAssignerFunction | None:
        """``(value, record_timestamp) -> int``, or ``None`` to keep records' own timestamps."""
        assigner = self.timestamp_assigner
        if isinstance(assigner, TimestampAssigner):
            return assigner.extract_timestamp
        return assigner

    def create_watermark_generator(self) -> WatermarkGenerator:
        """A fresh generator for one subtask."""
        if self.out_of_orderness_ms is None:
            return NoWatermarksGenerator()
        return BoundedOutOfOrdernessWatermarks(self.out_of_orderness_ms)

    def get_idle_timeout_ms(self) -> int | None:
        return self.idle_timeout_ms

    def get_alignment_parameters(self) -> WatermarkAlignmentParams | None:
        return self.alignment
