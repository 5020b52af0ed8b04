"""The keyed state backend contract.

A backend holds the keyed state of one operator in one subtask, for the key groups in
``key_group_range``. The task sets the current key before it hands a record (or fires a
timer) to the operator; state objects created from descriptors read and write the entry of
the current key and the current namespace.

Threading: a backend belongs to one subtask and is only used from that subtask's mailbox loop
(one asyncio loop thread); it takes no locks.

Namespaces: every keyed state object has a current namespace, ``VOID_NAMESPACE`` unless the
operator sets one (window operators use the window as namespace). Entries are per
(key, namespace).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from undertow.core.errors import StateError
from undertow.state.descriptors import State, StateDescriptor, ValueState
from undertow.state.snapshot_strategy import NativeSnapshot

N = TypeVar("N")


class _VoidNamespace:
    """The namespace of state that is not scoped to a window. A singleton; pickles to itself."""

    _instance: _VoidNamespace | None = None

    def __new__(cls) -> _VoidNamespace:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self) -> str:
        return "VOID_NAMESPACE"

    def __repr__(self) -> str:
        return "VOID_NAMESPACE"


VOID_NAMESPACE = _VoidNamespace()


@dataclass(frozen=True, slots=True)
class PairAggregation:
    """A built-in field aggregation (``sum``/``min``/``max`` of field ``position``, 0 or 1)
    in the form a backend's fold loop may apply inline: for an old value that is exactly a
    ``tuple`` of two, the new value is the old pair with field ``position`` replaced by
    ``combine(old[position], value[position])``, which is what the aggregation's fold function
    returns for it (the other field comes from the key's first record, as in Flink). Any
    other old value goes through the fold function. ``combine`` reads no keyed state."""

    position: int
    combine: Callable[[Any, Any], Any]

    def __post_init__(self) -> None:
        if self.position not in (0, 1):
            raise ValueError(f"PairAggregation: position {self.position!r} is not 0 or 1")


class InternalKvState(State, Generic[N]):
    """A state object as an operator sees it: user-facing methods plus namespace control."""

    @abstractmethod
    def set_current_namespace(self, namespace: N) -> None: ...

    def merge_namespaces(self, target: N, sources: list[N]) -> None:
        """Merge the entries of ``sources`` into ``target`` for the current key (merging windows).

        Only list, reducing and aggregating state support this.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot merge namespaces")


class TimerQueue(Protocol):
    """A timer queue with set semantics: the timer service's own on the heap, or a backend's
    (:class:`~undertow.state.rocksdb_timers.RocksDBTimerQueue` in the RocksDB backend's DB)."""

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool: ...

    def remove(self, timestamp: int, key: Any, namespace: Any) -> None: ...

    def peek_timestamp(self) -> int | None: ...

    def pop_due(self, time: int) -> tuple[int, Any, Any] | None: ...

    def __len__(self) -> int: ...

    def entries(self) -> list[tuple[int, Any, Any]]: ...


class KeyedStateBackend(ABC):
    """Keyed state of one operator in one subtask (see the module docstring).

    Every backend is a :class:`~undertow.state.snapshot_strategy.SnapshotStrategy`: this base
    class answers "canonical snapshots only" (no native checkpoints or savepoints, no native
    restore, nothing to do on completion); a backend with a native format overrides those.
    """

    operator_name: str
    max_parallelism: int
    key_group_range: range

    def _identify(self, operator_name: str, max_parallelism: int, key_group_range: range) -> None:
        """Set the operator and key groups a backend serves (its constructor calls this
        first); raises ``StateError`` naming the operator if ``key_group_range`` is not a
        non-empty contiguous part of ``[0, max_parallelism)``."""
        if key_group_range.step != 1 or not (
            0 <= key_group_range.start < key_group_range.stop <= max_parallelism
        ):
            raise StateError(
                f"operator {operator_name!r}: key group range {key_group_range} is not a "
                f"non-empty contiguous part of [0, {max_parallelism})"
            )
        self.operator_name = operator_name
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range

    def _key_outside_range(self, key: Any, key_group: int) -> StateError:
        """The error for ``key``, whose ``key_group`` is not this subtask's (the stream was
        partitioned by another key or max parallelism): the backends raise it."""
        r = self.key_group_range
        return StateError(
            f"operator {self.operator_name!r}: key {key!r} is in key group {key_group}, "
            f"outside this subtask's key group range [{r.start}, {r.stop}) "
            f"(max parallelism {self.max_parallelism}); was the stream partitioned by "
            "a different key or max parallelism?"
        )

    # -- snapshot strategy (defaults: canonical snapshots only) -------------------------------
    @property
    def takes_native_checkpoints(self) -> bool:
        """Whether checkpoints are native (incremental); False: canonical blobs."""
        return False

    def native_checkpoint(self, checkpoint_id: int, full: bool) -> NativeSnapshot:
        raise StateError(
            f"operator {self.operator_name!r}: checkpoint {checkpoint_id}: native checkpoint "
            f"asked of {type(self).__name__}, which takes canonical checkpoints"
        )

    def native_savepoint(self, checkpoint_id: int) -> NativeSnapshot | None:
        """None: a NATIVE savepoint of this backend holds its canonical blobs."""
        return None

    def restore_native(self, downloads: Sequence[object]) -> None:
        kinds = sorted({type(d).__name__ for d in downloads})
        raise StateError(
            f"operator {self.operator_name!r}: the checkpoint holds native state of another "
            f"backend ({', '.join(kinds)}); restore it with that backend "
            f"({type(self).__name__} is configured), or take a savepoint (canonical) to "
            "switch backends"
        )

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed (default: nothing to do)."""

    def timer_queue(self, service: str, domain: str) -> TimerQueue | None:
        """The backend's own queue of ``service``'s ``domain`` (``event``/``processing``)
        timers, part of its native snapshots; None (the default): the timer service keeps
        them on the heap and snapshots them with the keyed state's key groups."""
        return None

    @abstractmethod
    def set_current_key(self, key: Any) -> None:
        """Select the key that state objects read and write. Cost: one hash lookup."""

    @abstractmethod
    def get_current_key(self) -> Any: ...

    @abstractmethod
    def get_partitioned_state(self, descriptor: StateDescriptor) -> InternalKvState[Any]:
        """The state object for ``descriptor``; the same object for the same name.

        Raises :class:`~undertow.core.errors.StateError` if the name was registered before with
        a different kind.
        """

    def fold_values(
        self,
        state: InternalKvState[Any],
        keys: list[Any],
        values: list[Any],
        fold: Callable[[Any, Any], Any],
    ) -> list[Any]:
        """Rolling reduction of a batch in value state ``state`` (current namespace).

        For each ``(key, value)`` in order: ``new = value`` if the key has no entry, else
        ``fold(entry, value)``; store ``new`` and collect it. ``fold`` runs with the record's
        key current (it may use other keyed state, e.g. a ``ReduceFunction``'s). Returns the
        collected values and leaves the last key current. Backends override this with a faster
        loop; the result must equal the record-at-a-time loop below.
        """
        if not isinstance(state, ValueState):
            raise StateError(
                f"operator {self.operator_name!r}: a batch fold needs value state, got {state!r}"
            )
        out: list[Any] = []
        get, put = state.value, state.update
        for key, value in zip(keys, values):
            self.set_current_key(key)
            old = get()
            new = value if old is None else fold(old, value)
            put(new)
            out.append(new)
        return out

    def fold_keyed(
        self,
        state: InternalKvState[Any],
        values: list[Any],
        key_of: Callable[[Any], Any],
        fold: Callable[[Any, Any], Any],
        *,
        key_context: bool = True,
        pair: PairAggregation | None = None,
    ) -> list[Any]:
        """:meth:`fold_values` with each record's key ``key_of(value)``. ``key_context=False``
        promises that ``fold`` reads no keyed state (a built-in aggregation), so a backend may
        skip making each record's key current while it runs; the last key is current after
        the call either way. ``pair`` says that ``fold`` is that aggregation, so a backend may
        apply it inline to pairs. Backends override this with a faster loop (same result)."""
        return self.fold_values(state, [key_of(v) for v in values], values, fold)

    @abstractmethod
    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        """Keys that have an entry in ``state_name`` under ``namespace``."""

    @abstractmethod
    def snapshot(self) -> dict[int, bytes]:
        """Serialize all state, one blob per non-empty key group (key group -> bytes)."""

    @abstractmethod
    def restore(self, blobs: dict[int, bytes]) -> None:
        """Load blobs produced by ``snapshot`` (possibly of other subtasks, after rescaling).

        Key groups outside ``key_group_range`` are ignored.
        """

    @abstractmethod
    def dispose(self) -> None: ...


#: Creates a backend: (operator name, max parallelism, key group range, clock in ms).
KeyedStateBackendFactory = Callable[[str, int, range, Callable[[], int]], KeyedStateBackend]
