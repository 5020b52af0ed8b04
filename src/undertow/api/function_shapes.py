"""The shapes of user functions: what the DataStream API calls on a function object, as
runtime Protocols, so that an object with the method is accepted as PyFlink's duck typing
accepts it, without subclassing ``MapFunction`` and the rest (:mod:`undertow.api.functions`).

Each is checked once, when the job is built (a runtime Protocol check costs microseconds);
the runtime then calls the bound method it was given. A Protocol checks that the method is
there, not that it is callable or how many arguments it takes: what binds it checks
``callable`` where a plain callable is the alternative.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class MapLike(Protocol):
    """``map(value)``: a :class:`~undertow.api.functions.MapFunction` or its shape."""

    def map(self, value: Any) -> Any: ...


@runtime_checkable
class FlatMapLike(Protocol):
    """``flat_map(value)``: a ``FlatMapFunction`` or its shape."""

    def flat_map(self, value: Any) -> Iterable[Any] | None: ...


@runtime_checkable
class FilterLike(Protocol):
    """``filter(value)``: a ``FilterFunction`` or its shape."""

    def filter(self, value: Any) -> bool: ...


@runtime_checkable
class ReduceLike(Protocol):
    """``reduce(a, b)``: a ``ReduceFunction`` or its shape (state has its own,
    :class:`~undertow.state.descriptors.SupportsReduce`, below this layer)."""

    def reduce(self, value1: Any, value2: Any) -> Any: ...


@runtime_checkable
class ProcessElementLike(Protocol):
    """``process_element(value, ctx)``: a ``ProcessFunction`` or ``KeyedProcessFunction``
    (``on_timer`` is optional, as in the base classes)."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None: ...


@runtime_checkable
class InvokeLike(Protocol):
    """``invoke(value, context)``: a ``SinkFunction`` or its shape (``add_sink``)."""

    def invoke(self, value: Any, context: Any) -> None: ...


@runtime_checkable
class CoMapLike(Protocol):
    """What ``ConnectedStreams.map`` calls: a ``CoMapFunction`` or anything with its two
    methods."""

    def map1(self, value: Any) -> Any: ...

    def map2(self, value: Any) -> Any: ...


@runtime_checkable
class CoFlatMapLike(Protocol):
    """What ``ConnectedStreams.flat_map`` calls: a ``CoFlatMapFunction`` or its shape."""

    def flat_map1(self, value: Any) -> Iterable[Any] | None: ...

    def flat_map2(self, value: Any) -> Iterable[Any] | None: ...


@runtime_checkable
class CoProcessLike(Protocol):
    """What ``ConnectedStreams.process`` calls: a ``CoProcessFunction``, a
    ``KeyedCoProcessFunction`` or their shape (``on_timer`` optional: :class:`OnTimerLike`)."""

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None: ...

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None: ...


@runtime_checkable
class BroadcastProcessLike(Protocol):
    """What ``BroadcastConnectedStream.process`` calls: a ``BroadcastProcessFunction``, a
    ``KeyedBroadcastProcessFunction`` or their shape (``on_timer`` optional)."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None: ...

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any] | None: ...


@runtime_checkable
class OnTimerLike(Protocol):
    """``on_timer(timestamp, ctx)``: a keyed process function's timer callback (the keyed
    variants define it; a function without it has its timers fire to no effect)."""

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None: ...


# --- what the runtime tells a function beside its records (each optional) ----------------


@runtime_checkable
class OpenLike(Protocol):
    """``open(runtime_context)``: called once before the first record (``Function.open``)."""

    def open(self, runtime_context: Any) -> None: ...


@runtime_checkable
class CloseLike(Protocol):
    """``close()``: called once at the end, also after a failure (``Function.close``)."""

    def close(self) -> None: ...


@runtime_checkable
class CheckpointCompleteLike(Protocol):
    """``notify_checkpoint_complete(checkpoint_id)``: half of Flink's ``CheckpointListener``."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...


@runtime_checkable
class CheckpointAbortedLike(Protocol):
    """``notify_checkpoint_aborted(checkpoint_id)``: the other half."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None: ...


@runtime_checkable
class PreBarrierLike(Protocol):
    """``prepare_snapshot_pre_barrier(checkpoint_id)``: told when a barrier reaches the
    function's operator, before the operator forwards it. Not public API: the testing kit's
    scheduled failures and holds use it to know which checkpoints follow a record."""

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None: ...


# --- batch streams' functions (an object with the method, or a plain callable) --------------


@runtime_checkable
class MapBatchesLike(Protocol):
    def map_batches(self, batch: Any) -> Any: ...


@runtime_checkable
class MapPandasLike(Protocol):
    def map_pandas(self, frame: Any) -> Any: ...


@runtime_checkable
class FilterBatchesLike(Protocol):
    def filter_batches(self, batch: Any) -> Any: ...


@runtime_checkable
class FlatMapBatchesLike(Protocol):
    def flat_map_batches(self, batch: Any) -> Any: ...


@runtime_checkable
class ReduceBatchesLike(Protocol):
    def reduce_batches(self, earlier: Any, later: Any) -> Any: ...
