"""``WindowedStream`` and ``AllWindowedStream``: PyFlink's windowed streams.

Both record one :class:`~undertow.runtime.task.window_operator.WindowOperator`. Configuration
calls (``trigger``, ``evictor``, ``allowed_lateness``, ``side_output_late_data``) return the
stream itself, as in PyFlink; the window function call (``reduce``, ``aggregate``,
``process``, ``apply``) ends the windowed stream and returns a ``DataStream``.
``window_all`` runs with parallelism 1 (all records in one window operator), like Flink's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from undertow.api.output_tag import OutputTag
from undertow.api.window import Evictor, Trigger, WindowAssigner
from undertow.common.time import to_millis
from undertow.core.errors import GraphBuildError
from undertow.graph.transformations import OneInputTransformation
from undertow.runtime.task.output_check import declared
from undertow.runtime.task.window_functions import (
    WindowContents,
    aggregate_window_contents,
    apply_window_contents,
    process_window_contents,
    reduce_window_contents,
)
from undertow.runtime.task.window_operator import WindowOperator

if TYPE_CHECKING:  # data_stream imports this module to build windowed streams
    from undertow.datastream.data_stream import DataStream, KeyedStream


def _constant_key(_: Any) -> int:
    return 0


class _Windowed:
    def __init__(self, stream: DataStream, assigner: WindowAssigner[Any, Any],
                 key_selector: Callable[[Any], Any], all_windows: bool) -> None:  # fmt: skip
        if not isinstance(assigner, WindowAssigner):
            raise GraphBuildError(f"window(): expected a WindowAssigner, got {assigner!r}")
        self._stream = stream
        self._assigner = assigner
        self._key_selector = key_selector
        self._all = all_windows
        self._trigger: Trigger[Any, Any] | None = None
        self._evictor: Evictor[Any, Any] | None = None
        self._lateness = 0
        self._late_tag: str | None = None

    def trigger(self, trigger: Trigger[Any, Any]) -> Any:
        self._trigger = trigger
        return self

    def evictor(self, evictor: Evictor[Any, Any]) -> Any:
        self._evictor = evictor
        return self

    def allowed_lateness(self, time_ms: Any) -> Any:
        self._lateness = to_millis(time_ms, "allowed_lateness")
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Any:
        self._late_tag = output_tag.tag_id
        return self

    def _build(self, method: str, contents: WindowContents, output_type: Any) -> DataStream:
        trigger = self._trigger or self._assigner.get_default_trigger(None)
        operator = WindowOperator(
            assigner=self._assigner, trigger=trigger, key_selector=self._key_selector,
            window_function=contents.window_function,
            state_descriptor=contents.state_descriptor, allowed_lateness_ms=self._lateness,
            late_data_tag_id=self._late_tag, evictor=self._evictor,
        )  # fmt: skip
        what = f"{'AllWindowedStream' if self._all else 'WindowedStream'}.{method.lower()}()"
        operator = declared(operator, output_type, what)
        name = f"Window({self._assigner!r}, {method})"
        source = self._stream
        if self._all:
            t = OneInputTransformation(
                name=name, input=source._transformation, operator=operator,
                key_selector=_constant_key, output_type=output_type, parallelism=1,
                max_parallelism=1, parallelism_set=True,
            )  # fmt: skip
            from undertow.graph.partitioners import GlobalPartitioner
            from undertow.graph.transformations import PartitionTransformation

            t.input = PartitionTransformation(
                name="Global", input=source._transformation, partitioner=GlobalPartitioner()
            )
            return source._derive(t)
        return source._one_input(name, operator, output_type, key_selector=self._key_selector)

    @property
    def _evicting(self) -> bool:
        return self._evictor is not None

    def reduce(self, reduce_function: Any, window_function: Any = None,
               output_type: Any = None) -> DataStream:  # fmt: skip
        contents = reduce_window_contents(reduce_function, window_function, evicting=self._evicting)
        if window_function is None and output_type is None:
            output_type = self._stream.get_type()  # PyFlink: a plain reduce keeps the input's type
        return self._build("Reduce", contents, output_type)

    def aggregate(self, aggregate_function: Any, window_function: Any = None,
                  accumulator_type: Any = None, output_type: Any = None) -> DataStream:  # fmt: skip
        contents = aggregate_window_contents(
            aggregate_function, window_function, evicting=self._evicting
        )
        return self._build("Aggregate", contents, output_type)

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        contents = process_window_contents(process_window_function)
        return self._build("Process", contents, output_type)

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        contents = apply_window_contents(window_function)
        return self._build("Apply", contents, output_type)


class WindowedStream(_Windowed):
    """``KeyedStream.window(assigner)``."""

    def __init__(self, keyed_stream: KeyedStream, window_assigner: WindowAssigner[Any, Any]):
        super().__init__(keyed_stream, window_assigner, keyed_stream._key_selector, False)

    def get_execution_environment(self) -> Any:
        return self._stream.get_execution_environment()


class AllWindowedStream(_Windowed):
    """``DataStream.window_all(assigner)``."""

    def __init__(self, data_stream: DataStream, window_assigner: WindowAssigner[Any, Any]):
        super().__init__(data_stream, window_assigner, _constant_key, True)

    def get_execution_environment(self) -> Any:
        return self._stream.get_execution_environment()
