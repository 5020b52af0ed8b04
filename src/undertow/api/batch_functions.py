"""The keyed batch process function: a batch at a time, with columnar keyed state and timers.

``key_by(columns).process_batches(fn)`` calls ``fn.process_batch(batch, ctx)`` for each
record batch and ``fn.on_timer(timestamp, ctx)`` for each timestamp at which timers fire.
Everything keyed is *vectorised over the distinct keys*: ``ctx.keys()`` is a record batch
with one row per distinct key (the key columns), ``ctx.key_index()`` maps each input row to
its key's row there, and state values and timers are arrays aligned with ``ctx.keys()`` (or,
for timers, with a ``key_index``). Both methods return a record batch, a ``Table``, an
iterable of them, or ``None``. Contexts are valid only during the call that received them.
Threading: as every function, on the subtask's loop thread. Runtime:
:mod:`undertow.runtime.task.batch_process`; user guide: docs/columnar.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import numpy as np
import pyarrow as pa

from undertow.api.functions import Function, TimeDomain

__all__ = [
    "BatchListState",
    "BatchListStateDescriptor",
    "BatchMapState",
    "BatchMapStateDescriptor",
    "BatchValueState",
    "BatchValueStateDescriptor",
    "KeyedBatchProcessFunction",
]


def _check(kind: str, name: Any, types: dict[str, Any]) -> None:
    if not isinstance(name, str) or not name or name.startswith("undertow."):
        raise ValueError(f"{kind}: the name must be a non-empty string not starting with "
                         f"'undertow.', got {name!r}")  # fmt: skip
    for what, t in types.items():
        if not isinstance(t, pa.DataType):
            raise ValueError(f"{kind} {name!r}: the {what} must be a pyarrow.DataType, got "
                             f"{t!r}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class BatchValueStateDescriptor:
    """A value state per key, held as a column: its name (unique in the function) and Arrow
    type (numbers and booleans are kept in numpy, other types as Python values)."""

    name: str
    type: pa.DataType

    def __post_init__(self) -> None:
        _check("BatchValueStateDescriptor", self.name, {"type": self.type})


@dataclass(frozen=True, slots=True)
class BatchListStateDescriptor:
    """A list state per key: its name (unique in the function among all its states) and the
    Arrow type of its elements. Each key's list is held as a Python list."""

    name: str
    element_type: pa.DataType

    def __post_init__(self) -> None:
        _check("BatchListStateDescriptor", self.name, {"element type": self.element_type})


@dataclass(frozen=True, slots=True)
class BatchMapStateDescriptor:
    """A map state per key: its name (unique in the function among all its states) and the
    Arrow types of its keys and values. Each key's map is held as a Python dict."""

    name: str
    key_type: pa.DataType
    value_type: pa.DataType

    def __post_init__(self) -> None:
        _check("BatchMapStateDescriptor", self.name,
               {"key type": self.key_type, "value type": self.value_type})  # fmt: skip


class BatchValueState(Protocol):
    """A value state seen for the context's keys (``ctx.keys()``), in their order."""

    def value(self) -> pa.Array:
        """Each key's value, null where the key has none."""

    def update(self, values: Any) -> None:
        """Set each key's value (an Arrow array, numpy array or list with one entry per key;
        a null clears that key's value)."""

    def clear(self) -> None:
        """Clear the value of every key of the context."""


class BatchListState(Protocol):
    """A list state seen for the context's keys (``ctx.keys()``), in their order. Where an
    argument is "per key" it has one entry per key of the context, or, with ``key_index``
    (rows of ``ctx.keys()``, e.g. ``ctx.key_index()``), one entry per entry of ``key_index``
    for that entry's key."""

    def get(self) -> pa.ListArray:
        """Each key's list (empty where the key has none)."""

    def add(self, values: Any, key_index: Any = None) -> None:
        """Append ``values`` (per key) to their keys' lists, in order."""

    def add_all(self, lists: Any) -> None:
        """Append each key's list of ``lists`` (a list array or a list of lists, one per
        key; null adds nothing)."""

    def update(self, lists: Any) -> None:
        """Replace each key's list (one per key; null or empty clears it)."""

    def clear(self) -> None:
        """Clear the list of every key of the context."""


class BatchMapState(Protocol):
    """A map state seen for the context's keys; "per key" as for :class:`BatchListState`."""

    def get(self, map_keys: Any, key_index: Any = None) -> pa.Array:
        """The value of each of ``map_keys`` (per key) in its key's map, null where absent."""

    def put(self, map_keys: Any, values: Any, key_index: Any = None) -> None:
        """Set each of ``map_keys`` (per key) to its value in ``values`` (aligned with
        ``map_keys``); a later entry for the same key and map key wins."""

    def contains(self, map_keys: Any, key_index: Any = None) -> np.ndarray:
        """Whether each of ``map_keys`` (per key) is in its key's map (booleans)."""

    def remove(self, map_keys: Any, key_index: Any = None) -> None:
        """Remove each of ``map_keys`` (per key) from its key's map (absent ones are ignored)."""

    def items(self) -> pa.MapArray:
        """Each key's whole map (empty where the key has none)."""

    def clear(self) -> None:
        """Clear the map of every key of the context."""


Output: TypeAlias = Iterable[pa.RecordBatch | pa.Table] | pa.RecordBatch | pa.Table | None


class KeyedBatchProcessFunction(Function):
    """See the module docstring."""

    class Context(ABC):
        @abstractmethod
        def keys(self) -> pa.RecordBatch:
            """One row per distinct key of the call (the key columns)."""

        @abstractmethod
        def key_index(self) -> np.ndarray:
            """For each input row, its key's row in :meth:`keys` (``process_batch`` only)."""

        @abstractmethod
        def timestamp(self) -> int | None:
            """The batch's timestamp, or the firing timers' timestamp."""

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def get_state(self, descriptor: BatchValueStateDescriptor) -> BatchValueState: ...

        @abstractmethod
        def get_list_state(self, descriptor: BatchListStateDescriptor) -> BatchListState: ...

        @abstractmethod
        def get_map_state(self, descriptor: BatchMapStateDescriptor) -> BatchMapState: ...

        @abstractmethod
        def register_event_time_timers(self, times: Any, key_index: Any = None) -> None:
            """Timers at ``times``: one int for every key, or one entry per key of
            :meth:`keys` (null: no timer for that key); with ``key_index`` (rows of
            :meth:`keys`, e.g. ``ctx.key_index()``), one entry per entry of ``key_index``,
            for that entry's key. A key has at most one timer per timestamp and domain;
            timers at or below the watermark fire at its next advance."""

        @abstractmethod
        def register_processing_time_timers(self, times: Any, key_index: Any = None) -> None:
            """As :meth:`register_event_time_timers`, in processing time (ms since the epoch)."""

        @abstractmethod
        def delete_event_time_timers(self, times: Any, key_index: Any = None) -> None:
            """Delete the timers these arguments would register (absent ones are ignored)."""

        @abstractmethod
        def delete_processing_time_timers(self, times: Any, key_index: Any = None) -> None: ...

    class OnTimerContext(Context, ABC):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_batch(
        self, batch: pa.RecordBatch, ctx: KeyedBatchProcessFunction.Context
    ) -> Output: ...

    def on_timer(self, timestamp: int, ctx: KeyedBatchProcessFunction.OnTimerContext) -> Output:
        """Timers of the keys ``ctx.keys()`` fired at ``timestamp``."""
        return None
