"""Windows: the time, count and global windows that panes are keyed by.

A :class:`TimeWindow` is the half-open interval ``[start, end)``; ``max_timestamp()`` is
``end - 1``, the timestamp of the output of a fired window. Windows are immutable values,
hashed and pickled as state namespaces. Also here: the type variables shared by the other
window modules.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar, Generic, TypeVar

from undertow.core.types import MAX_WATERMARK

T = TypeVar("T")
W = TypeVar("W", bound="Window")
W2 = TypeVar("W2")

#: Largest timestamp; the ``max_timestamp`` of windows that never end (Java's Long.MAX_VALUE).
MAX_LONG_VALUE = MAX_WATERMARK


class MergeCallback(ABC, Generic[W2]):
    """Told by a merging assigner which windows merge (``MergingWindowAssigner.MergeCallback``).

    Defined here, below the assigners, because ``TimeWindow.merge_windows`` reports to it too.
    """

    @abstractmethod
    def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None:
        """The windows ``to_be_merged`` become the single window ``merge_result``."""


class Window(ABC):
    """A finite bucket of records. Every record of a window has arrived once time passes
    ``max_timestamp()``. Windows are immutable, hashable values (they key window state)."""

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int: ...


class TimeWindow(Window):
    """The time interval ``[start, end)`` in epoch milliseconds. Ordered by (start, end)."""

    __slots__ = ("_hash", "end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end
        self._hash = hash((start, end))  # windows key state and timers: hashed often

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """True if the windows overlap or touch (``[0, 5)`` and ``[5, 9)`` intersect)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window that contains both windows."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the aligned window of ``window_size`` (shifted by ``offset``) containing
        ``timestamp``; correct for negative timestamps (floor modulo)."""
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: MergeCallback[TimeWindow]) -> None:
        """Merge intersecting windows: one ``callback.merge(group, cover)`` per group of two or
        more windows. Groups are lists in (start, end) order."""
        merged: list[tuple[TimeWindow, list[TimeWindow]]] = []
        for candidate in sorted(windows):
            if merged and merged[-1][0].intersects(candidate):
                cover, group = merged[-1]
                group.append(candidate)
                merged[-1] = (cover.cover(candidate), group)
            else:
                merged.append((candidate, [candidate]))
        for cover, group in merged:
            if len(group) > 1:
                callback.merge(group, cover)

    def _key(self) -> tuple[int, int]:
        return (self.start, self.end)

    def __eq__(self, other: object) -> bool:
        return type(other) is TimeWindow and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: TimeWindow) -> bool:
        return self._key() < other._key()

    def __le__(self, other: TimeWindow) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: TimeWindow) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: TimeWindow) -> bool:
        return self._key() >= other._key()

    def __reduce__(self) -> tuple[Any, ...]:
        return (TimeWindow, (self.start, self.end))

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    """A window of count-based assigners, identified by a number; it never ends in time."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return type(other) is CountWindow and self.id == other.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __lt__(self, other: CountWindow) -> bool:
        return self.id < other.id

    def __reduce__(self) -> tuple[Any, ...]:
        return (CountWindow, (self.id,))

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The single window of :class:`GlobalWindows`; it never ends in time."""

    __slots__ = ()
    _instance: ClassVar[GlobalWindow | None] = None

    def __new__(cls) -> GlobalWindow:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return type(other) is GlobalWindow

    def __hash__(self) -> int:
        return 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (GlobalWindow.get, ())

    def __repr__(self) -> str:
        return "GlobalWindow"
