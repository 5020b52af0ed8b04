"""Two streams into one operator: ``connect`` (``ConnectedStreams``: co-map, co-flat-map,
co-process, keyed or not) and a stream connected to a broadcast stream with broadcast state
(``BroadcastStream``, ``BroadcastConnectedStream``), PyFlink's classes and method names.

Each method checks the function's shape once (the Protocols of
:mod:`undertow.api.function_shapes`), refusing a function without it naming the value, and
records a two-input transformation; the operators are
:mod:`undertow.runtime.task.two_input_operators`. A result is a plain ``DataStream``, made
by the input stream (``_derive``), so this module needs the stream classes only for types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from undertow.api.function_shapes import (
    BroadcastProcessLike,
    CoFlatMapLike,
    CoMapLike,
    CoProcessLike,
)
from undertow.api.functions import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from undertow.core.errors import GraphBuildError
from undertow.datastream.function_binding import described
from undertow.graph.transformations import TwoInputTransformation
from undertow.runtime.task.output_check import declared
from undertow.runtime.task.two_input_operators import (
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
)

if TYPE_CHECKING:
    from undertow.datastream.data_stream import DataStream


class ConnectedStreams:
    """Two streams connected for a two-input operator (``connect``)."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: Any = None
    ) -> ConnectedStreams:
        return ConnectedStreams(
            self.stream1.key_by(key_selector1, key_type),
            self.stream2.key_by(key_selector2, key_type),
        )

    def _keys(self) -> tuple[Any, Any]:
        k1, k2 = self.stream1._key_selector_or_none(), self.stream2._key_selector_or_none()
        if (k1 is None) != (k2 is None):
            raise GraphBuildError(
                "connect(): either both streams or neither must be keyed "
                "(use ConnectedStreams.key_by(key1, key2))"
            )
        return k1, k2

    def _two_input(self, name: str, operator: Any, output_type: Any, what: str) -> DataStream:
        k1, k2 = self._keys()
        t = TwoInputTransformation(
            name=name, input1=self.stream1._transformation, input2=self.stream2._transformation,
            operator=declared(operator, output_type, f"ConnectedStreams.{what}()"),
            key_selector1=k1, key_selector2=k2, output_type=output_type,
        )  # fmt: skip
        return self.stream1._derive(t)

    def map(self, func: CoMapFunction, output_type: Any = None) -> DataStream:
        if not isinstance(func, CoMapLike):
            raise GraphBuildError(
                f"ConnectedStreams.map() needs a CoMapFunction (map1, map2), got {described(func)}"
            )
        return self._two_input("Co-Map", CoMapOperator(func), output_type, "map")

    def flat_map(self, func: CoFlatMapFunction, output_type: Any = None) -> DataStream:
        if not isinstance(func, CoFlatMapLike):
            raise GraphBuildError(
                "ConnectedStreams.flat_map() needs a CoFlatMapFunction (flat_map1, flat_map2), "
                f"got {described(func)}"
            )
        return self._two_input("Co-Flat Map", CoFlatMapOperator(func), output_type, "flat_map")

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """A ``CoProcessFunction`` on either, a ``KeyedCoProcessFunction`` on keyed streams
        only (as in Flink, a ``CoProcessFunction`` on keyed streams uses no key state)."""
        k1, _ = self._keys()
        if not isinstance(func, CoProcessLike):
            raise GraphBuildError(
                "ConnectedStreams.process() needs a CoProcessFunction or KeyedCoProcessFunction "
                f"(process_element1, process_element2), got {described(func)}"
            )
        if k1 is None and isinstance(func, KeyedCoProcessFunction):
            raise GraphBuildError("a KeyedCoProcessFunction needs keyed streams: use key_by first")
        name = "Keyed Co-Process" if k1 is not None else "Co-Process"
        return self._two_input(name, CoProcessOperator.co_process(func), output_type, "process")


class BroadcastStream:
    """A broadcast stream with broadcast state descriptors (``broadcast(descriptor)``)."""

    def __init__(self, stream: DataStream, descriptors: list[Any]) -> None:
        self.stream = stream
        self.broadcast_state_descriptors = descriptors


class BroadcastConnectedStream:
    def __init__(self, non_broadcast: DataStream, broadcast: BroadcastStream) -> None:
        self.non_broadcast_stream = non_broadcast
        self.broadcast_stream = broadcast

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        ks = self.non_broadcast_stream._key_selector_or_none()
        if not isinstance(func, BroadcastProcessLike):
            raise GraphBuildError(
                "BroadcastConnectedStream.process() needs a BroadcastProcessFunction or "
                "KeyedBroadcastProcessFunction (process_element, process_broadcast_element), "
                f"got {described(func)}"
            )
        if ks is None and isinstance(func, KeyedBroadcastProcessFunction):
            raise GraphBuildError("a KeyedBroadcastProcessFunction needs a keyed stream")
        if ks is not None and isinstance(func, BroadcastProcessFunction):
            raise GraphBuildError(
                "a keyed stream connected to a broadcast stream needs a "
                "KeyedBroadcastProcessFunction"
            )
        t = TwoInputTransformation(
            name="Broadcast-Process", input1=self.non_broadcast_stream._transformation,
            input2=self.broadcast_stream.stream._transformation,
            operator=declared(CoProcessOperator.broadcast_process(func), output_type,
                              "BroadcastConnectedStream.process()"),
            key_selector1=ks, key_selector2=None, output_type=output_type,
        )  # fmt: skip
        return self.non_broadcast_stream._derive(t)
