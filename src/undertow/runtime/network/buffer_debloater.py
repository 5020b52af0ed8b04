"""Buffer debloating (FLIP-183), sans I/O: from a gate's measured throughput to buffer limits.

Per period, :class:`BufferDebloater` turns a :class:`ThroughputSample` into a
:class:`DebloatDecision` so that consuming a gate's in-flight data takes about the *aim*: a
byte size (clamped to ``[min-segment-size, segment-size]``) and a record count, each
``rate * aim / buffers in use``; writers cut at whichever comes first. The rate is measured
over the latest periods whose active time spans the aim (the in-flight data is consumed over
that span, so one period's stall must not size it). The aim starts at ``target`` and falls
towards its floor (``min-target``) while the task does not starve.
Settings: :class:`DebloatSettings`.

Threading: none (pure); the owner calls it from one thread. Cost: O(samples + target /
period) per sample.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError

#: Records per buffer before a consumer's first measurement (Flink starts at the maximum size).
INITIAL_MAX_RECORDS = 16
#: The aim's floor, as a share of ``target``, when ``min-target`` is unset.
DEFAULT_FLOOR_SHARE = 0.5
#: A period is starved when the task waited for input for at least this share of it (and 1 ms).
STARVED_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class DebloatSettings:
    """The options of debloating (Flink's keys, see :class:`~undertow.core.config.Options`)."""

    target_ms: float = 1000.0
    period_ms: float = 200.0
    samples: int = 20
    threshold_percentages: int = 25
    min_buffer_size: int = 256
    max_buffer_size: int = 32 * 1024
    #: The aim's floor; ``None`` (the default): ``DEFAULT_FLOOR_SHARE`` of ``target``; at or
    #: above ``target``: the aim stays at ``target``, as Flink's.
    min_target_ms: float | None = None

    def __post_init__(self) -> None:
        problems = [
            (self.target_ms > 0, f"target must be > 0 ms, got {self.target_ms}"),
            (self.min_target_ms is None or self.min_target_ms > 0,
             f"min-target must be > 0 ms, got {self.min_target_ms}"),
            (self.period_ms > 0, f"period must be > 0 ms, got {self.period_ms}"),
            (self.samples >= 1, f"samples must be >= 1, got {self.samples}"),
            (0 <= self.threshold_percentages <= 100,
             f"threshold-percentages must be in [0, 100], got {self.threshold_percentages}"),
            (0 < self.min_buffer_size <= self.max_buffer_size,
             f"taskmanager.memory.min-segment-size ({self.min_buffer_size}) must be in "
             f"(0, taskmanager.memory.segment-size ({self.max_buffer_size})]"),
        ]  # fmt: skip
        for ok, problem in problems:
            if not ok:
                raise ConfigurationError(f"buffer debloating: {problem}")

    @property
    def floor_ms(self) -> float:
        """The least in-flight time aimed at: ``min-target``, at most ``target`` (half the
        target when ``min-target`` is unset)."""
        if self.min_target_ms is None:
            return DEFAULT_FLOOR_SHARE * self.target_ms
        return min(self.min_target_ms, self.target_ms)

    @property
    def max_records(self) -> int:
        """The record limit that means "no limit": a record takes at least one byte."""
        return self.max_buffer_size

    @property
    def rate_periods(self) -> int:
        """The most periods the rate is measured over: enough for their active time to span
        ``target`` (the longest aim) when the task never waits."""
        return max(1, math.ceil(self.target_ms / self.period_ms))

    @property
    def initial_max_records(self) -> int:
        """The record limit producers start with, before the first announcement (one period),
        so a job does not start with seconds of backlog; the first measurement replaces it."""
        return min(INITIAL_MAX_RECORDS, self.max_records)

    @classmethod
    def of(cls, config: Configuration) -> DebloatSettings | None:
        """The settings in ``config``, or ``None`` if debloating is disabled."""
        if not config.get(Options.BUFFER_DEBLOAT_ENABLED):
            return None
        min_target = config.get(Options.BUFFER_DEBLOAT_MIN_TARGET)
        return cls(
            target_ms=float(config.get(Options.BUFFER_DEBLOAT_TARGET)),
            period_ms=float(config.get(Options.BUFFER_DEBLOAT_PERIOD)),
            samples=config.get(Options.BUFFER_DEBLOAT_SAMPLES),
            threshold_percentages=config.get(Options.BUFFER_DEBLOAT_THRESHOLD),
            min_buffer_size=config.get(Options.MIN_SEGMENT_SIZE),
            max_buffer_size=config.get(Options.SEGMENT_SIZE),
            min_target_ms=None if min_target is None else float(min_target),
        )


@dataclass(frozen=True, slots=True)
class ThroughputSample:
    """What a gate consumed in one period: ``active_ms`` is the period minus the time its task
    waited for input (Flink pauses its throughput measurement then); ``buffers_in_use`` the
    data buffers of the whole edge: queued at its channels, their senders' last reported
    backlog, and the buffers the senders are filling; ``starved_ms`` the part of the waits in
    which the task could have read (no channel blocked by a barrier, input not held): its
    queues ran dry."""

    bytes: int
    records: int
    active_ms: float
    buffers_in_use: int
    starved_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class DebloatDecision:
    """The limits to use from now on, and whether they changed enough to be announced.

    ``estimated_time_ms``: time to consume ``buffers_in_use`` buffers cut at these limits at
    the measured rates (Flink's ``estimatedTimeToConsumeBuffersMs``); -1 if nothing was
    consumed (unknown). The rates are those over the latest periods spanning the aim
    (:class:`BufferDebloater`). ``aim_ms``: the in-flight time the limits were computed for.
    """

    buffer_size: int
    max_records: int
    announce: bool
    estimated_time_ms: float
    bytes_per_second: float
    records_per_second: float
    buffers_in_use: int
    aim_ms: float


class BufferDebloater:
    """The size controller of one input gate (see the module docstring).

    Starts where producers start (the maximum buffer size, ``initial_max_records``), so the
    first measurement is always announced, and aims at ``target``; :meth:`recalculate` once
    per period. Each limit is ``rate * aim / buffers in use``, clamped and rounded, with the
    rates measured over the latest periods (at most ``settings.rate_periods``) whose active
    time adds up to the aim, the newest always included: in-flight data sized for the aim is
    consumed over about that span, so a one-period stall lowers the limits by its share of the
    span, not to its own rate. That span is the smoothing: the limits follow it both ways,
    falls at once (the aim is a bound), rises when they reach the threshold or a bound (see
    docs/design.md for why not Flink's EMA over per-period rates).

    Invariants: ``floor_ms <= aim_ms <= target_ms``; ``min_buffer_size <= buffer_size <=
    max_buffer_size`` and ``1 <= max_records <= settings.max_records``; a limit never stays
    above its value at the measured rates after a period (so the estimated time stays within
    the aim); an announced rise is at least the threshold, or reaches a bound.
    """

    __slots__ = ("_in_use", "_periods", "_shrink", "_threshold", "aim_ms", "buffer_size",
                 "last", "max_records", "settings")  # fmt: skip

    def __init__(self, settings: DebloatSettings) -> None:
        self.settings = settings
        self._threshold = settings.threshold_percentages / 100.0
        self.buffer_size = settings.max_buffer_size
        self.max_records = settings.initial_max_records  # what producers start with
        self._in_use: deque[int] = deque(maxlen=settings.samples)
        #: (bytes, records, active ms) of the latest periods, newest last.
        self._periods: deque[tuple[int, int, float]] = deque(maxlen=settings.rate_periods)
        self._shrink = 1.0 - 2.0 / (settings.samples + 1)  # Flink's EMA alpha, per period
        #: The in-flight time the limits are computed for (see the module docstring).
        self.aim_ms = settings.target_ms
        #: The latest decision (``None`` before the first measured period).
        self.last: DebloatDecision | None = None

    def recalculate(self, sample: ThroughputSample) -> DebloatDecision | None:
        """The decision for one period's sample; ``None`` (nothing changes) if the gate had
        input for less than 1 ms of the period: there is no throughput to measure."""
        if sample.active_ms < 1.0:
            return None
        s = self.settings
        self._periods.append((sample.bytes, sample.records, sample.active_ms))
        self._in_use.append(sample.buffers_in_use)
        in_use = max(1, max(self._in_use))
        self._move_aim(sample.starved_ms)
        bytes_rate, records_rate = self._rates()
        aim_s = self.aim_ms / 1000.0
        new_size = _limit(bytes_rate * aim_s / in_use, s.min_buffer_size, s.max_buffer_size)
        new_records = _limit(records_rate * aim_s / in_use, 1, s.max_records)
        changed = False
        if self._moves(new_size, self.buffer_size, s.max_buffer_size):
            self.buffer_size = new_size
            changed = True
        if self._moves(new_records, self.max_records, s.max_records):
            self.max_records = new_records
            changed = True
        per_buffer_s = min(
            self.buffer_size / bytes_rate if bytes_rate > 0 else float("inf"),
            self.max_records / records_rate if records_rate > 0 else float("inf"),
        )
        estimate = in_use * per_buffer_s * 1000.0 if per_buffer_s != float("inf") else -1.0
        self.last = DebloatDecision(
            self.buffer_size, self.max_records, changed, estimate, bytes_rate, records_rate,
            sample.buffers_in_use, self.aim_ms,
        )  # fmt: skip
        return self.last

    def _rates(self) -> tuple[float, float]:
        """Bytes and records per second over the latest periods whose active time spans the
        aim (the newest always counts)."""
        total_bytes, total_records, active_ms = 0, 0, 0.0
        for period_bytes, period_records, period_active_ms in reversed(self._periods):
            total_bytes += period_bytes
            total_records += period_records
            active_ms += period_active_ms
            if active_ms >= self.aim_ms:
                break
        seconds = active_ms / 1000.0
        return total_bytes / seconds, total_records / seconds

    def _move_aim(self, starved_ms: float) -> None:
        """Double the aim after a starved period (up to the target), else shrink it towards
        the floor."""
        s = self.settings
        if starved_ms >= max(1.0, STARVED_SHARE * s.period_ms):
            self.aim_ms = min(s.target_ms, 2.0 * self.aim_ms)
        else:
            self.aim_ms = max(s.floor_ms, self._shrink * self.aim_ms)

    def _moves(self, new: int, current: int, high: int) -> bool:
        """Whether a limit goes from ``current`` to ``new`` (its value at the measured rates):
        always down (a limit above it lets the in-flight data take longer than the aim), up
        only by at least the threshold or to the upper bound (Flink's ``skipUpdate`` skips
        small changes both ways; the lower bound needs no case, it is only reached
        downwards)."""
        if new < current:
            return True
        if new == current:
            return False
        return new >= high or new - current >= current * self._threshold


def _limit(desired: float, low: int, high: int) -> int:
    """``desired`` clamped to ``[low, high]`` and rounded (Flink's ``BufferSizeEMA`` clamps
    its average the same way)."""
    return round(max(float(low), min(desired, float(high))))
