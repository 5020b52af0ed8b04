"""State descriptors and the user-facing state interfaces (PyFlink's ``pyflink.datastream.state``).

Re-exported by :mod:`undertow.datastream.state`. A descriptor names a piece of state and says
its kind; the keyed state backend turns it into a state object bound to the current key (and,
for window state, the current namespace).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


def _to_millis(value: Any) -> int:
    """Accept a ``Time``/``Duration`` (anything with ``to_milliseconds``) or plain milliseconds."""
    if hasattr(value, "to_milliseconds"):
        return int(value.to_milliseconds())
    return int(value)


class StateTtlConfig:
    """Time-to-live of keyed state entries (PyFlink's ``StateTtlConfig``).

    Only processing-time TTL exists (as in Flink). Expired entries are never returned; they are
    dropped lazily on access and when a full snapshot is taken.
    """

    class UpdateType(enum.Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(enum.Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(enum.Enum):
        ProcessingTime = 0

    def __init__(
        self,
        ttl_ms: int,
        update_type: StateTtlConfig.UpdateType = UpdateType.OnCreateAndWrite,
        state_visibility: StateTtlConfig.StateVisibility = StateVisibility.NeverReturnExpired,
    ) -> None:
        if ttl_ms <= 0:
            raise ValueError(f"state TTL must be > 0 ms, got {ttl_ms}")
        self.ttl_ms = ttl_ms
        self.update_type = update_type
        self.state_visibility = state_visibility

    @staticmethod
    def new_builder(ttl: Any) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def is_enabled(self) -> bool:
        return self.update_type is not StateTtlConfig.UpdateType.Disabled

    def get_ttl(self) -> int:
        return self.ttl_ms

    class Builder:
        def __init__(self, ttl: Any) -> None:
            self._ttl_ms = _to_millis(ttl)
            self._update = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, visibility: StateTtlConfig.StateVisibility
        ) -> StateTtlConfig.Builder:
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl(self, ttl: Any) -> StateTtlConfig.Builder:
            self._ttl_ms = _to_millis(ttl)
            return self

        def set_ttl_time_characteristic(self, _: Any) -> StateTtlConfig.Builder:
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            return self

        def cleanup_incrementally(self, *_: Any) -> StateTtlConfig.Builder:
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(self._ttl_ms, self._update, self._visibility)


class StateDescriptor(ABC):
    """Names a piece of state. Equal names within one operator mean the same state."""

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"state name must be a non-empty string, got {name!r}")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        self.ttl_config = ttl_config

    #: One of ``value``, ``list``, ``map``, ``reducing``, ``aggregating``.
    kind: ClassVar[str]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    kind = "value"


class ListStateDescriptor(StateDescriptor):
    kind = "list"


class MapStateDescriptor(StateDescriptor):
    kind = "map"

    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info)
        self.key_type_info = key_type_info


class ReducingStateDescriptor(StateDescriptor):
    """``reduce_function`` is a ``ReduceFunction`` or a callable ``(a, b) -> c``."""

    kind = "reducing"

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info)
        self.reduce_function = reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    """``agg_function`` is an ``AggregateFunction`` (create_accumulator / add / get_result)."""

    kind = "aggregating"

    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info)
        self.agg_function = agg_function


# --- the state objects a user function sees ------------------------------------------------


class State(ABC):
    @abstractmethod
    def clear(self) -> None: ...


class ValueState(State, Generic[T]):
    @abstractmethod
    def value(self) -> T | None: ...

    @abstractmethod
    def update(self, value: T) -> None: ...


class AppendingState(State, Generic[IN, OUT]):
    @abstractmethod
    def get(self) -> OUT: ...

    @abstractmethod
    def add(self, value: IN) -> None: ...


class MergingState(AppendingState[IN, OUT]):
    pass


class ListState(MergingState[T, Iterable[T]]):
    @abstractmethod
    def update(self, values: list[T]) -> None: ...

    @abstractmethod
    def add_all(self, values: list[T]) -> None: ...

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class ReducingState(MergingState[T, T]):
    pass


class AggregatingState(MergingState[IN, OUT]):
    pass


class MapState(State, Generic[K, V]):
    @abstractmethod
    def get(self, key: K) -> V | None: ...

    @abstractmethod
    def put(self, key: K, value: V) -> None: ...

    @abstractmethod
    def put_all(self, mapping: dict[K, V]) -> None: ...

    @abstractmethod
    def remove(self, key: K) -> None: ...

    @abstractmethod
    def contains(self, key: K) -> bool: ...

    @abstractmethod
    def items(self) -> Iterable[tuple[K, V]]: ...

    @abstractmethod
    def keys(self) -> Iterable[K]: ...

    @abstractmethod
    def values(self) -> Iterable[V]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class BroadcastState(MapState[K, V]):
    """Map state replicated on every subtask of a broadcast-connected operator."""


class ReadOnlyBroadcastState(State, Generic[K, V]):
    @abstractmethod
    def get(self, key: K) -> V | None: ...

    @abstractmethod
    def contains(self, key: K) -> bool: ...

    @abstractmethod
    def items(self) -> Iterable[tuple[K, V]]: ...

    @abstractmethod
    def keys(self) -> Iterable[K]: ...

    @abstractmethod
    def values(self) -> Iterable[V]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...
