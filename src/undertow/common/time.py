"""Amounts of time and points in time, shaped like PyFlink's ``pyflink.common.time``.

* :class:`Duration` - PyFlink 2.x's ``Duration`` (``Duration.of_seconds(5)``), held in nanoseconds
  like ``java.time.Duration``.
* :class:`Time` - PyFlink 1.x's ``Time`` (``Time.seconds(5)``), held in milliseconds. Flink 2.0
  removed it; undertow keeps it so that older jobs port unchanged.
* :class:`Instant` - a point on the time line (seconds and nanoseconds since the epoch), the
  value type of ``Types.INSTANT()``.
* :func:`to_millis` - what every undertow API that takes a duration calls, so those APIs accept a
  ``Duration``, a ``Time``, a ``datetime.timedelta`` or an ``int`` of milliseconds alike.

Threading: all three are immutable value objects (hashable, picklable), safe to share anywhere.
"""

from __future__ import annotations

import datetime
from typing import Any, NoReturn

__all__ = ["Duration", "Instant", "Time", "to_millis"]

_NANOS_PER_MILLI = 1_000_000
_NANOS_PER_SECOND = 1_000_000_000
_MILLIS_PER_SECOND = 1000
_SECONDS_PER_MINUTE = 60
_SECONDS_PER_HOUR = 3600
_SECONDS_PER_DAY = 86_400


def _whole(value: Any, what: str) -> int:
    """``value`` as an int; bools and non-integral floats are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    return int(value)


def _immutable(self: object, name: str, value: Any) -> NoReturn:
    raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")


class Duration:
    """A time-based amount of time, such as '34.5 seconds' (PyFlink 2.x ``Duration``).

    Build it with the ``of_*`` constructors; it is stored as a whole number of nanoseconds, so
    ``Duration.of_millis(1500) == Duration.of_nanos(1_500_000_000)``. Negative durations exist
    (as in Java) but every undertow API that takes one says whether it accepts them.
    """

    __slots__ = ("_nanos",)
    _nanos: int

    def __init__(self, nanos: int = 0) -> None:
        object.__setattr__(self, "_nanos", _whole(nanos, "nanos"))

    __setattr__ = _immutable

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(nanos)

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(_whole(millis, "millis") * _NANOS_PER_MILLI)

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(_whole(seconds, "seconds") * _NANOS_PER_SECOND)

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(_whole(minutes, "minutes") * _SECONDS_PER_MINUTE * _NANOS_PER_SECOND)

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(_whole(hours, "hours") * _SECONDS_PER_HOUR * _NANOS_PER_SECOND)

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(_whole(days, "days") * _SECONDS_PER_DAY * _NANOS_PER_SECOND)

    def to_milliseconds(self) -> int:
        """Whole milliseconds, rounded towards negative infinity (as Java's ``toMillis``)."""
        return self._nanos // _NANOS_PER_MILLI

    def to_nanos(self) -> int:
        return self._nanos

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other._nanos == self._nanos

    def __hash__(self) -> int:
        return hash((Duration, self._nanos))

    def __reduce__(self) -> tuple[Any, ...]:
        return Duration, (self._nanos,)

    def __repr__(self) -> str:
        nanos = self._nanos
        if nanos % _NANOS_PER_MILLI:
            return f"Duration.of_nanos({nanos})"
        millis = nanos // _NANOS_PER_MILLI
        for unit, size in (("days", 86_400_000), ("hours", 3_600_000), ("minutes", 60_000)):
            if millis and millis % size == 0:
                return f"Duration.of_{unit}({millis // size})"
        if millis % _MILLIS_PER_SECOND == 0:
            return f"Duration.of_seconds({millis // _MILLIS_PER_SECOND})"
        return f"Duration.of_millis({millis})"


class Time:
    """An interval in milliseconds (PyFlink 1.x ``Time``, used by windows and restart strategies).

    ``Time.seconds(5) == Time.milliseconds(5000)``.
    """

    __slots__ = ("_milliseconds",)
    _milliseconds: int

    def __init__(self, milliseconds: int) -> None:
        object.__setattr__(self, "_milliseconds", _whole(milliseconds, "milliseconds"))

    __setattr__ = _immutable

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time(_whole(seconds, "seconds") * _MILLIS_PER_SECOND)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time(_whole(minutes, "minutes") * _SECONDS_PER_MINUTE * _MILLIS_PER_SECOND)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time(_whole(hours, "hours") * _SECONDS_PER_HOUR * _MILLIS_PER_SECOND)

    @staticmethod
    def days(days: int) -> Time:
        return Time(_whole(days, "days") * _SECONDS_PER_DAY * _MILLIS_PER_SECOND)

    def to_milliseconds(self) -> int:
        return self._milliseconds

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and other._milliseconds == self._milliseconds

    def __hash__(self) -> int:
        return hash((Time, self._milliseconds))

    def __reduce__(self) -> tuple[Any, ...]:
        return Time, (self._milliseconds,)

    def __str__(self) -> str:
        return f"{self._milliseconds} ms"

    def __repr__(self) -> str:
        return f"Time.milliseconds({self._milliseconds})"


class Instant:
    """An instantaneous point on the time line: ``seconds`` since the epoch plus ``nanos``.

    ``nanos`` is normalized into ``[0, 1e9)`` (``Instant(-1, 500_000_000)`` is half a second
    before the epoch), as in ``java.time.Instant``.
    """

    __slots__ = ("nanos", "seconds")
    seconds: int
    nanos: int

    def __init__(self, seconds: int, nanos: int = 0) -> None:
        extra, nanos = divmod(_whole(nanos, "nanos"), _NANOS_PER_SECOND)
        object.__setattr__(self, "seconds", _whole(seconds, "seconds") + extra)
        object.__setattr__(self, "nanos", nanos)

    __setattr__ = _immutable

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        seconds, millis = divmod(_whole(epoch_milli, "epoch_milli"), _MILLIS_PER_SECOND)
        return Instant(seconds, millis * _NANOS_PER_MILLI)

    def to_epoch_milli(self) -> int:
        return self.seconds * _MILLIS_PER_SECOND + self.nanos // _NANOS_PER_MILLI

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Instant)
            and other.seconds == self.seconds
            and other.nanos == self.nanos
        )

    def __hash__(self) -> int:
        return hash((Instant, self.seconds, self.nanos))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return (self.seconds, self.nanos) < (other.seconds, other.nanos)

    def __reduce__(self) -> tuple[Any, ...]:
        return Instant, (self.seconds, self.nanos)

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


_ONE_MILLI = datetime.timedelta(milliseconds=1)


def to_millis(value: Duration | Time | datetime.timedelta | int, what: str = "") -> int:
    """Milliseconds in ``value``: a :class:`Duration`, :class:`Time`, ``timedelta`` or int ms.

    ``Duration`` and ``timedelta`` are rounded towards negative infinity to whole milliseconds.
    Raises ``TypeError`` naming the value, and ``what`` it is (an argument's name) if given,
    for anything else (including ``bool`` and ``float``).
    """
    if isinstance(value, (Duration, Time)):
        return value.to_milliseconds()
    if isinstance(value, datetime.timedelta):
        return value // _ONE_MILLI
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(
        f"{what + ': ' if what else ''}expected a Duration, Time, datetime.timedelta or int "
        f"milliseconds, got {type(value).__name__} {value!r}"
    )
