"""Evictors: remove records from a pane just before and/or after the window function runs.

Java-only in Flink (absent from PyFlink), offered with PyFlink's naming. An evictor sees the
pane as :class:`TimestampedValue` records and keeps no per-pane data in attributes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Protocol, runtime_checkable

from undertow.api.windows.windows import (
    T,
    W,
)
from undertow.common.time import to_millis
from undertow.core.types import MIN_TIMESTAMP


class TimestampedValue(Generic[T]):
    """A record of a pane with its timestamp, as an :class:`Evictor` sees it."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: T, timestamp: int | None = None) -> None:
        self.value = value
        self.timestamp = timestamp

    def get_value(self) -> T:
        return self.value

    def get_timestamp(self) -> int:
        return MIN_TIMESTAMP if self.timestamp is None else self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TimestampedValue)
            and self.value == other.value
            and self.timestamp == other.timestamp
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TimestampedValue({self.value!r}, {self.timestamp!r})"


class Evictor(ABC, Generic[T, W]):
    """Removes records from a pane before and/or after the window function runs.

    ``elements`` is a list that the evictor edits in place (``del elements[i]``, slice
    assignment); what is left is what the function sees (``evict_before``) and what the pane
    keeps (``evict_after``). ``size`` is ``len(elements)`` on entry.
    """

    class EvictorContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_metric_group(self) -> Any: ...

        @abstractmethod
        def get_current_watermark(self) -> int: ...

    @abstractmethod
    def evict_before(
        self,
        elements: list[TimestampedValue[T]],
        size: int,
        window: W,
        evictor_context: Evictor.EvictorContext,
    ) -> None: ...

    @abstractmethod
    def evict_after(
        self,
        elements: list[TimestampedValue[T]],
        size: int,
        window: W,
        evictor_context: Evictor.EvictorContext,
    ) -> None: ...


class _BeforeOrAfterEvictor(Evictor[Any, Any]):
    def __init__(self, do_evict_after: bool) -> None:
        self._do_evict_after = do_evict_after

    @abstractmethod
    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None: ...

    def evict_before(
        self,
        elements: list[TimestampedValue[Any]],
        size: int,
        window: Any,
        evictor_context: Evictor.EvictorContext,
    ) -> None:
        if not self._do_evict_after:
            self._evict(elements, size)

    def evict_after(
        self,
        elements: list[TimestampedValue[Any]],
        size: int,
        window: Any,
        evictor_context: Evictor.EvictorContext,
    ) -> None:
        if self._do_evict_after:
            self._evict(elements, size)


class CountEvictor(_BeforeOrAfterEvictor):
    """Keeps the last ``max_count`` records of the pane."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if max_count < 0:
            raise ValueError(f"CountEvictor max_count must be >= 0, got {max_count}")
        super().__init__(do_evict_after)
        self._max_count = max_count

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if size > self._max_count:
            del elements[: size - self._max_count]

    def __repr__(self) -> str:
        return f"CountEvictor({self._max_count}, {self._do_evict_after})"


class TimeEvictor(_BeforeOrAfterEvictor):
    """Keeps records with timestamp > (largest timestamp in the pane) - ``window_size``.
    Panes whose records carry no timestamps are left alone."""

    def __init__(self, window_size: int, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        self._window_size = window_size

    @staticmethod
    def of(window_size: Any, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(to_millis(window_size, "window_size"), do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements or not elements[0].has_timestamp():
            return
        cutoff = max(e.get_timestamp() for e in elements) - self._window_size
        elements[:] = [e for e in elements if e.get_timestamp() > cutoff]

    def __repr__(self) -> str:
        return f"TimeEvictor({self._window_size}, {self._do_evict_after})"


@runtime_checkable
class DeltaFunction(Protocol):
    """Flink's ``DeltaFunction``: the distance between two data points, as a float."""

    def get_delta(self, old_data_point: Any, new_data_point: Any) -> float: ...


class DeltaEvictor(_BeforeOrAfterEvictor):
    """Evicts records whose delta to the last record of the pane is >= ``threshold``.

    ``delta_function`` is a callable ``(old, new) -> float`` or an object with
    ``get_delta(old, new)`` (Flink's DeltaFunction).
    """

    def __init__(self, threshold: float, delta_function: Any, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        self._threshold = threshold
        delta = (
            delta_function.get_delta
            if isinstance(delta_function, DeltaFunction)
            else delta_function
        )
        if not callable(delta):
            raise TypeError(
                f"DeltaEvictor needs a DeltaFunction or a callable (old, new) -> float, "
                f"got {delta_function!r}"
            )
        self._delta: Callable[[Any, Any], float] = delta

    @staticmethod
    def of(threshold: float, delta_function: Any, do_evict_after: bool = False) -> DeltaEvictor:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements:
            return
        last, delta, threshold = elements[-1].value, self._delta, self._threshold
        elements[:] = [e for e in elements if delta(e.value, last) < threshold]

    def __repr__(self) -> str:
        return f"DeltaEvictor({self._threshold}, {self._do_evict_after})"
