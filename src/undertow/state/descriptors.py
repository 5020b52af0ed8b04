"""State descriptors and the user-facing state interfaces (PyFlink's ``pyflink.datastream.state``).

Re-exported by :mod:`undertow.datastream.state`. A descriptor names a piece of state and says
its kind; the keyed state backend turns it into a state object bound to the current key (and,
for window state, the current namespace).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from undertow.common.time import Duration, Time, to_millis
from undertow.core.errors import StateError

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


class StateTtlConfig:
    """Time-to-live of keyed state entries (PyFlink's ``StateTtlConfig``).

    Only processing-time TTL exists (as in Flink). Expired entries are never returned; they are
    dropped on access and left out of full snapshots.

    The cleanup strategies (``cleanup_full_snapshot``, ``cleanup_incrementally``,
    ``cleanup_in_rocksdb_compact_filter``, ``disable_cleanup_in_background``) are recorded and
    answered by :meth:`get_cleanup_strategies` with PyFlink's values. The heap backend runs the
    incremental cleanup where one is set (PyFlink's default: in background, 5 entries an
    access; :mod:`undertow.state.heap_ttl_cleanup`). The RocksDB backend runs, where a
    compaction filter strategy is set (PyFlink's default too), a walk of the state's entries
    in its place (:mod:`undertow.state.rocksdb_ttl_cleanup`).
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
        cleanup_strategies: StateTtlConfig.CleanupStrategies | None = None,
    ) -> None:
        if ttl_ms <= 0:
            raise ValueError(f"state TTL must be > 0 ms, got {ttl_ms}")
        self.ttl_ms = ttl_ms
        self.update_type = update_type
        self.state_visibility = state_visibility
        self.cleanup_strategies = cleanup_strategies or StateTtlConfig.CleanupStrategies()

    @staticmethod
    def new_builder(ttl: Any) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def is_enabled(self) -> bool:
        return self.update_type is not StateTtlConfig.UpdateType.Disabled

    def get_ttl(self) -> Time:
        return Time.milliseconds(self.ttl_ms)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self.update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self.state_visibility

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return StateTtlConfig.TtlTimeCharacteristic.ProcessingTime

    def get_cleanup_strategies(self) -> StateTtlConfig.CleanupStrategies:
        return self.cleanup_strategies

    def __repr__(self) -> str:
        return (
            f"StateTtlConfig(ttl={self.ttl_ms} ms, {self.update_type.name}, "
            f"{self.state_visibility.name}, {self.cleanup_strategies!r})"
        )

    class CleanupStrategies:
        """Which background cleanups were asked for (PyFlink's defaults: in background, with
        an incremental cleanup of 5 entries and a compaction filter querying the time every
        1000 entries). Immutable once built."""

        class IncrementalCleanupStrategy:
            def __init__(self, cleanup_size: int = 5, run_cleanup_for_every_record: bool = False):
                if cleanup_size <= 0:
                    raise ValueError(
                        f"incremental TTL cleanup size must be > 0, got {cleanup_size!r}"
                    )
                self._cleanup_size = int(cleanup_size)
                self._every_record = bool(run_cleanup_for_every_record)

            def get_cleanup_size(self) -> int:
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                return self._every_record

            def __repr__(self) -> str:
                return f"IncrementalCleanupStrategy({self._cleanup_size}, {self._every_record})"

        class RocksdbCompactFilterCleanupStrategy:
            #: Flink's default periodic compaction time: 30 days.
            DEFAULT_PERIODIC_COMPACTION_DAYS = 30

            def __init__(
                self, query_time_after_num_entries: int = 1000,
                periodic_compaction_time: Duration | None = None,
            ) -> None:  # fmt: skip
                self._entries = int(query_time_after_num_entries)
                self._compaction = periodic_compaction_time

            def get_query_time_after_num_entries(self) -> int:
                return self._entries

            def get_periodic_compaction_time(self) -> Duration:
                if self._compaction is None:
                    return Duration.of_days(self.DEFAULT_PERIODIC_COMPACTION_DAYS)
                return self._compaction

            def __repr__(self) -> str:
                return f"RocksdbCompactFilterCleanupStrategy({self._entries})"

        def __init__(
            self, is_cleanup_in_background: bool = True, in_full_snapshot: bool = False,
            incremental: StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None = None,
            rocksdb: StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy
            | None = None,
        ) -> None:  # fmt: skip
            cls = StateTtlConfig.CleanupStrategies
            self._background = is_cleanup_in_background
            self._full_snapshot = in_full_snapshot
            self._incremental = incremental
            self._rocksdb = rocksdb
            if is_cleanup_in_background:
                self._incremental = incremental or cls.IncrementalCleanupStrategy()
                self._rocksdb = rocksdb or cls.RocksdbCompactFilterCleanupStrategy()

        def is_cleanup_in_background(self) -> bool:
            return self._background

        def in_full_snapshot(self) -> bool:
            return self._full_snapshot

        def get_incremental_cleanup_strategy(
            self,
        ) -> StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None:
            return self._incremental

        def get_rocksdb_compact_filter_cleanup_strategy(
            self,
        ) -> StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy | None:
            return self._rocksdb

        def __repr__(self) -> str:
            return (
                f"CleanupStrategies(background={self._background}, "
                f"full_snapshot={self._full_snapshot}, {self._incremental!r}, {self._rocksdb!r})"
            )

    class Builder:
        def __init__(self, ttl: Any) -> None:
            self._ttl_ms = to_millis(ttl, "ttl")
            self._update = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._background = True
            self._full_snapshot = False
            self._incremental: _Incremental | None = None
            self._rocksdb: _CompactFilter | None = None

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
            self._ttl_ms = to_millis(ttl, "ttl")
            return self

        def set_ttl_time_characteristic(
            self, ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            if ttl_time_characteristic is not StateTtlConfig.TtlTimeCharacteristic.ProcessingTime:
                raise ValueError(
                    f"state TTL supports only ProcessingTime, got {ttl_time_characteristic!r}"
                )
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            self._full_snapshot = True
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            self._incremental = StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy(
                cleanup_size, run_cleanup_for_every_record
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self, query_time_after_num_entries: int,
            periodic_compaction_time: Duration | None = None,
        ) -> StateTtlConfig.Builder:  # fmt: skip
            """The RocksDB backend's background cleanup: rocksdict has no compaction filter,
            so a walk of the state's DB entries takes its place, reading the clock once per at
            most ``query_time_after_num_entries`` entries (those of one walk;
            :mod:`undertow.state.rocksdb_ttl_cleanup`). ``periodic_compaction_time`` is
            recorded for PyFlink compatibility (falsy: Flink's default, 30 days)."""
            self._rocksdb = StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(
                query_time_after_num_entries, periodic_compaction_time or None
            )
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            self._background = False
            return self

        def build(self) -> StateTtlConfig:
            strategies = StateTtlConfig.CleanupStrategies(
                self._background, self._full_snapshot, self._incremental, self._rocksdb
            )
            return StateTtlConfig(self._ttl_ms, self._update, self._visibility, strategies)


_Incremental = StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy
_CompactFilter = StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy


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


@runtime_checkable
class SupportsReduce(Protocol):
    """A function with ``reduce(a, b) -> c`` (PyFlink's ``ReduceFunction``, or any object
    shaped like one): the capability a reducing state and a reducing window look for."""

    def reduce(self, value1: Any, value2: Any) -> Any: ...


@runtime_checkable
class SupportsAggregate(Protocol):
    """What an aggregating state calls on its function (PyFlink's ``AggregateFunction``)."""

    def create_accumulator(self) -> Any: ...

    def add(self, value: Any, accumulator: Any) -> Any: ...

    def get_result(self, accumulator: Any) -> Any: ...

    def merge(self, acc_a: Any, acc_b: Any) -> Any: ...


def as_reducer(function: object) -> Callable[[Any, Any], Any] | None:
    """The two-argument callable a reduce runs: ``function.reduce`` of a :class:`SupportsReduce`,
    else ``function`` itself if callable; None when it is neither (the caller raises, naming
    its operator or state). Costs a runtime Protocol check: call it once, at construction."""
    reduce = function.reduce if isinstance(function, SupportsReduce) else function
    return reduce if callable(reduce) else None


def reducer_of(descriptor: StateDescriptor) -> Callable[[Any, Any], Any]:
    """The reduce of ``descriptor``'s function; :class:`StateError` naming the state if it
    has none (or is no reducing state)."""
    fn = descriptor.reduce_function if isinstance(descriptor, ReducingStateDescriptor) else None
    reduce = as_reducer(fn)
    if reduce is None:
        raise StateError(
            f"reducing state {descriptor.name!r}: reduce_function must be a ReduceFunction "
            f"or a callable, got {fn!r}"
        )
    return reduce


def aggregate_function_of(descriptor: StateDescriptor) -> SupportsAggregate:
    """``descriptor``'s function, checked to be a :class:`SupportsAggregate`;
    :class:`StateError` naming the state and the missing methods otherwise (or if it is no
    aggregating state)."""
    fn = descriptor.agg_function if isinstance(descriptor, AggregatingStateDescriptor) else None
    if not isinstance(fn, SupportsAggregate):
        raise StateError(
            f"aggregating state {descriptor.name!r}: agg_function {fn!r} has no "
            "create_accumulator(), add(), get_result() or merge() (an AggregateFunction has all)"
        )
    return fn


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
    def put_all(self, mapping: Mapping[K, V] | Iterable[tuple[K, V]]) -> None:
        """Put every entry of ``mapping``: a dict (or other mapping), or ``(key, value)``
        pairs such as ``d.items()`` (PyFlink 2.3 takes pairs)."""

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
