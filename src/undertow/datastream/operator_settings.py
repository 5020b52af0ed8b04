"""The settings of a stream's last operator, PyFlink's methods on ``DataStream`` for them:
name, uid, description, parallelism and max parallelism, buffer timeout, chaining, slot
sharing group, and the records' declared type.

Each records a setting on the stream's last :class:`~undertow.graph.transformations.Transformation`
and returns the stream; bad values are refused when they are set, naming the operator and the
value. ``DataStream`` inherits them; ``KeyedStream`` refuses them, as PyFlink does (its last
transformation is the key partitioning, which has none of these knobs). Not thread-safe:
built by the program's thread before ``execute``.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING, Any, TypeVar

from undertow.core.errors import GraphBuildError
from undertow.datastream.slot_sharing_group import SlotSharingGroup, group_name
from undertow.graph.transformations import (
    ChainingStrategy,
    PartitionTransformation,
    Transformation,
    UnionTransformation,
)

if TYPE_CHECKING:
    from undertow.datastream.stream_execution_environment import StreamExecutionEnvironment

_S = TypeVar("_S", bound="OperatorSettings")


class OperatorSettings:
    """What configures a stream's last operator (``_transformation``) in its environment."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._transformation = transformation

    def get_name(self) -> str:
        return self._transformation.name

    def name(self: _S, name: str) -> _S:
        self._transformation.name = name
        return self

    def uid(self: _S, uid: str) -> _S:
        self._transformation.uid = uid
        return self

    def set_description(self: _S, description: str) -> _S:
        """A description of the operator, shown where Flink shows it: the execution plan's
        ``contents`` and the REST API's (and dashboard's) vertex ``description``."""
        self._transformation.description = description
        return self

    def get_type(self) -> Any:
        """The declared type of the records (``None``: Python objects). Partitioning keeps the
        type of its input, a union that of its first input, as in PyFlink."""
        t = self._transformation
        while t.output_type is None:
            if isinstance(t, PartitionTransformation) and t.input is not None:
                t = t.input
            elif isinstance(t, UnionTransformation) and t.union_inputs:
                t = t.union_inputs[0]
            else:
                break
        return t.output_type

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def set_parallelism(self: _S, parallelism: int) -> _S:
        t = self._transformation
        if (
            isinstance(parallelism, bool)
            or not isinstance(parallelism, Integral)
            or (parallelism < 1)
        ):
            raise GraphBuildError(
                f"operator '{t.name}': parallelism must be an int >= 1, got {parallelism!r}"
            )
        parallelism = int(parallelism)
        if t.max_parallelism is not None and parallelism > t.max_parallelism:
            raise GraphBuildError(
                f"operator '{t.name}': parallelism {parallelism} is larger than its max "
                f"parallelism {t.max_parallelism}"
            )
        t.parallelism = parallelism
        t.parallelism_set = True
        return self

    def set_max_parallelism(self: _S, max_parallelism: int) -> _S:
        t = self._transformation
        if max_parallelism < 1:
            raise GraphBuildError(f"operator '{t.name}': max parallelism must be >= 1")
        if t.parallelism is not None and t.parallelism > max_parallelism:
            raise GraphBuildError(
                f"operator '{t.name}': max parallelism {max_parallelism} is below its "
                f"parallelism {t.parallelism}"
            )
        t.max_parallelism = max_parallelism
        return self

    def force_non_parallel(self: _S) -> _S:
        self._transformation.parallelism = 1
        self._transformation.max_parallelism = 1
        return self

    def set_buffer_timeout(self: _S, timeout_millis: int) -> _S:
        self._transformation.buffer_timeout = int(timeout_millis)
        return self

    def start_new_chain(self: _S) -> _S:
        self._transformation.chaining = ChainingStrategy.HEAD
        return self

    def disable_chaining(self: _S) -> _S:
        self._transformation.chaining = ChainingStrategy.NEVER
        return self

    def slot_sharing_group(self: _S, slot_sharing_group: SlotSharingGroup | str) -> _S:
        self._transformation.slot_sharing_group = group_name(slot_sharing_group)
        return self
