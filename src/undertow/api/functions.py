"""User function classes, as in PyFlink's ``pyflink.datastream.functions``.

Every function may override ``open(runtime_context)`` and ``close()``; they run once per
subtask, on the subtask's loop thread, around all calls of the function's main method. Plain
callables are accepted wherever PyFlink accepts them (``ds.map(lambda x: x + 1)``).

``flat_map`` and the ``process*`` methods return an iterable (usually they ``yield``); ``None``
means no output. Process-function contexts are reused between calls: do not keep them.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from undertow.api.output_tag import OutputTag
    from undertow.state.descriptors import (
        AggregatingState,
        AggregatingStateDescriptor,
        BroadcastState,
        ListState,
        ListStateDescriptor,
        MapState,
        MapStateDescriptor,
        ReadOnlyBroadcastState,
        ReducingState,
        ReducingStateDescriptor,
        ValueState,
        ValueStateDescriptor,
    )

IN = TypeVar("IN")
OUT = TypeVar("OUT")
ACC = TypeVar("ACC")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")


class TimeDomain(enum.Enum):
    EVENT_TIME = 0
    PROCESSING_TIME = 1


class RuntimeContext(ABC):
    """What a function learns about the subtask it runs in, and its keyed state."""

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    @abstractmethod
    def get_attempt_number(self) -> int: ...

    @abstractmethod
    def get_task_name_with_subtasks(self) -> str: ...

    @abstractmethod
    def get_job_parameter(self, key: str, default_value: str) -> str: ...

    @abstractmethod
    def get_metrics_group(self) -> Any: ...

    @abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState[Any]: ...

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState[Any]: ...

    @abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState[Any, Any]: ...

    @abstractmethod
    def get_reducing_state(
        self, state_descriptor: ReducingStateDescriptor
    ) -> ReducingState[Any]: ...

    @abstractmethod
    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState[Any, Any]: ...


class Function:
    """Base of all user functions."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def map(self, value: IN) -> OUT: ...


class FlatMapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def flat_map(self, value: IN) -> Iterable[OUT] | None: ...


class FilterFunction(Function, Generic[IN]):
    @abstractmethod
    def filter(self, value: IN) -> bool: ...


class ReduceFunction(Function, Generic[IN]):
    @abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN: ...


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    @abstractmethod
    def create_accumulator(self) -> ACC: ...

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC: ...

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT: ...

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        raise NotImplementedError(f"{type(self).__name__}.merge is needed for session windows")


class KeySelector(Function, Generic[IN, KEY]):
    @abstractmethod
    def get_key(self, value: IN) -> KEY: ...


class Partitioner(Function, Generic[KEY]):
    @abstractmethod
    def partition(self, key: KEY, num_partitions: int) -> int: ...


class CoMapFunction(Function):
    @abstractmethod
    def map1(self, value: Any) -> Any: ...

    @abstractmethod
    def map2(self, value: Any) -> Any: ...


class CoFlatMapFunction(Function):
    @abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any] | None: ...

    @abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any] | None: ...


class TimerService(ABC):
    """Timers of the current key (keyed functions) and the task's clocks."""

    @abstractmethod
    def current_processing_time(self) -> int: ...

    @abstractmethod
    def current_watermark(self) -> int: ...

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None: ...


class BaseContext(ABC):
    @abstractmethod
    def timestamp(self) -> int:
        """Timestamp of the current record (or firing timer); for a record without one,
        ``-2**63`` (Java's ``Long.MIN_VALUE``), as PyFlink hands it over."""

    @abstractmethod
    def timer_service(self) -> TimerService: ...

    @abstractmethod
    def output(self, output_tag: OutputTag, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""


class ProcessFunction(Function):
    class Context(BaseContext, ABC):
        pass

    @abstractmethod
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any] | None: ...


class KeyedProcessFunction(Function):
    class Context(BaseContext, ABC):
        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context, ABC):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        return None


class CoProcessFunction(Function):
    class Context(BaseContext, ABC):
        pass

    @abstractmethod
    def process_element1(
        self, value: Any, ctx: CoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_element2(
        self, value: Any, ctx: CoProcessFunction.Context
    ) -> Iterable[Any] | None: ...


class KeyedCoProcessFunction(Function):
    class Context(BaseContext, ABC):
        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context, ABC):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element1(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_element2(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    def on_timer(
        self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        return None


class BaseBroadcastProcessFunction(Function):
    class BaseContext(BaseContext, ABC):
        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

    class ReadOnlyContext(BaseContext, ABC):
        @abstractmethod
        def get_broadcast_state(
            self, state_descriptor: MapStateDescriptor
        ) -> ReadOnlyBroadcastState[Any, Any]: ...

    class Context(BaseContext, ABC):
        @abstractmethod
        def get_broadcast_state(
            self, state_descriptor: MapStateDescriptor
        ) -> BroadcastState[Any, Any]: ...


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    @abstractmethod
    def process_element(
        self, value: Any, ctx: BaseBroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: BaseBroadcastProcessFunction.Context
    ) -> Iterable[Any] | None: ...


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext, ABC):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: BaseBroadcastProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    def on_timer(
        self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        return None


# --- window functions ------------------------------------------------------------------------


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    @abstractmethod
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[OUT] | None: ...


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    @abstractmethod
    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[OUT] | None: ...


class PassThroughWindowFunction(WindowFunction[IN, IN, KEY, W]):
    """Emits a window's records unchanged."""

    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[IN]:
        return inputs


class PassThroughAllWindowFunction(AllWindowFunction[IN, IN, W]):
    """Emits a non-keyed window's records unchanged."""

    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[IN]:
        return inputs


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> W2: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def window_state(self) -> Any:
            """Keyed state scoped to the key and this window (a KeyedStateStore)."""

        @abstractmethod
        def global_state(self) -> Any:
            """Keyed state of the key across all windows (a KeyedStateStore)."""

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None: ...

    @abstractmethod
    def process(
        self, key: KEY, context: ProcessWindowFunction.Context, elements: Iterable[IN]
    ) -> Iterable[OUT] | None: ...

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        """Called when the window is purged; clear per-window state here."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> W2: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def window_state(self) -> Any: ...

        @abstractmethod
        def global_state(self) -> Any: ...

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None: ...

    @abstractmethod
    def process(
        self, context: ProcessAllWindowFunction.Context, elements: Iterable[IN]
    ) -> Iterable[OUT] | None: ...

    def clear(self, context: ProcessAllWindowFunction.Context) -> None:
        pass


class SinkFunction(Function):
    """A simple sink (``add_sink``): ``invoke`` per record. Use ``sink_to`` for exactly-once."""

    @abstractmethod
    def invoke(self, value: Any, context: Any) -> None: ...
