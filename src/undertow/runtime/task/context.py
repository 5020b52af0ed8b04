"""What operators and user functions see of their task: clocks, runtime context, timers.

Processing time has two levels. The task owns one :class:`LoopProcessingTimeService` (asyncio
timers whose callbacks are posted to the task's mailbox); every operator sees it through its own
:class:`OperatorProcessingTimeService`, which the chain *quiesces* right before the operator's
``finish()`` — and, on a stop without drain, where ``finish()`` is skipped, when the task ends
its data. Flink's rule (``StreamOperatorWrapper``): once quiesced, pending processing-time
callbacks never run (also those whose mail is already queued) and new registrations are
ignored, so nothing an operator's processing-time timers would emit can follow ``EndOfData``.
Keyed timers stay in the timer service's queue, hence in the final checkpoint or savepoint;
event-time timers are not affected (they fire on the MAX watermark before ``finish()``).

Threading: everything here is used on the owning task's loop thread only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any

from undertow.api.functions import RuntimeContext, TimerService
from undertow.common.metrics import MetricGroup
from undertow.core.errors import StateError
from undertow.runtime.task.operator import OperatorSetup, StreamOperator
from undertow.runtime.task.timers import InternalTimerService
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class LoopProcessingTimeService:
    """Processing time on an asyncio loop; callbacks are posted to the task's mailbox.

    The task's one instance; operators use it through an :class:`OperatorProcessingTimeService`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, post: Callable[[Callable[[], None]], None]):
        self._loop = loop
        self._post = post

    def current_processing_time(self) -> int:
        return now_ms()

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> Any:
        delay = max(0.0, (timestamp - now_ms()) / 1000.0)
        return self._loop.call_later(delay, self._post, lambda: callback(timestamp))


class _NoTimer:
    """The handle of a registration made after quiescing: there is nothing to cancel."""

    __slots__ = ()

    def cancel(self) -> None:
        pass


_NO_TIMER = _NoTimer()


class _OperatorTimer:
    """A pending callback of an :class:`OperatorProcessingTimeService`."""

    __slots__ = ("_callback", "_inner", "_owner")

    def __init__(self, owner: OperatorProcessingTimeService, callback: Callable[[int], None]):
        self._owner = owner
        self._callback = callback
        self._inner: Any = None

    def fire(self, timestamp: int) -> None:
        owner = self._owner
        if owner._quiesced or self not in owner._pending:
            return  # quiesced, or cancelled after its mail was queued
        owner._pending.discard(self)
        self._callback(timestamp)

    def cancel(self) -> None:
        self._owner._pending.discard(self)
        if self._inner is not None:
            self._inner.cancel()


class OperatorProcessingTimeService:
    """One operator's processing-time service over its task's (see the module docstring).

    Lifecycle: active from construction; :meth:`quiesce` (called by the operator chain before
    the operator's ``finish()``, or at the end of data on a stop without drain) is final:
    every pending callback is dropped and later registrations return a handle that never
    fires. The clock keeps working. Invariant: after ``quiesce`` no callback of this operator
    runs. Threading: the task's loop thread. Cost: one set insertion per registration.
    """

    __slots__ = ("_pending", "_quiesced", "_task_service")

    def __init__(self, task_service: Any) -> None:
        self._task_service = task_service
        self._pending: set[_OperatorTimer] = set()
        self._quiesced = False

    def current_processing_time(self) -> int:
        return int(self._task_service.current_processing_time())

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> Any:
        """Run ``callback(timestamp)`` on the task loop at or after ``timestamp``, unless this
        service is quiesced first (then, or if already quiesced, never)."""
        if self._quiesced:
            return _NO_TIMER
        timer = _OperatorTimer(self, callback)
        self._pending.add(timer)
        timer._inner = self._task_service.register_timer(timestamp, timer.fire)
        return timer

    def quiesce(self) -> None:
        """Drop every pending callback and ignore new registrations, for good."""
        self._quiesced = True
        pending, self._pending = self._pending, set()
        for timer in pending:
            if timer._inner is not None:
                timer._inner.cancel()

    @property
    def is_quiesced(self) -> bool:
        return self._quiesced

    def num_pending(self) -> int:
        """Callbacks registered and neither run, cancelled nor dropped."""
        return len(self._pending)


class TaskMetricGroup(MetricGroup, MutableMapping[str, Any]):
    """An operator's root metric group, which is also a mapping over its task's accumulators
    (name -> value, summed into the job's result when tasks finish): functions (undertow's
    testing kit among them) publish job accumulators through ``get_metrics_group()[name]``,
    and PyFlink's metric methods (``counter``, ``gauge``, ``meter``, ``distribution``,
    ``add_group``) work beside that. Threading: the task's thread."""

    def __init__(self, accumulators: dict[str, Any]) -> None:
        super().__init__()
        self._accumulators = accumulators

    def __getitem__(self, key: str) -> Any:
        return self._accumulators[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._accumulators[key] = value

    def __delitem__(self, key: str) -> None:
        del self._accumulators[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._accumulators)

    def __len__(self) -> int:
        return len(self._accumulators)


class StreamingRuntimeContext(RuntimeContext):
    """The ``RuntimeContext`` handed to ``Function.open``."""

    def __init__(self, setup: OperatorSetup) -> None:
        self._setup = setup
        #: Created by the first ``get_metrics_group``; read by :func:`user_metric_values`.
        self.metric_group: TaskMetricGroup | None = None

    def get_task_name(self) -> str:
        """The task's name: its chain's (``Source: ... -> my map -> Sink: ...``), as PyFlink's."""
        return self._setup.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._setup.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._setup.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._setup.subtask_index

    def get_attempt_number(self) -> int:
        return self._setup.attempt_number

    def get_task_name_with_subtasks(self) -> str:
        return self._setup.task_name_with_subtasks

    def get_job_parameter(self, key: str, default_value: str) -> str:
        return self._setup.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> TaskMetricGroup:
        """This operator's user metrics (:mod:`undertow.common.metrics`), sampled with the
        task's metrics and served by the REST API; also the task's accumulator map."""
        if self.metric_group is None:
            self.metric_group = TaskMetricGroup(self._setup.accumulators)
        return self.metric_group

    def _state(self, descriptor: StateDescriptor) -> Any:
        backend = self._setup.keyed_backend
        if backend is None:
            raise StateError(
                f"operator '{self._setup.name}': keyed state ({descriptor!r}) is only available "
                "on a keyed stream; call key_by(...) before this operator"
            )
        state = backend.get_partitioned_state(descriptor)
        state.set_current_namespace(VOID_NAMESPACE)
        return state

    def get_state(self, state_descriptor: ValueStateDescriptor) -> Any:
        return self._state(state_descriptor)

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> Any:
        return self._state(state_descriptor)

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> Any:
        return self._state(state_descriptor)

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> Any:
        return self._state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> Any:
        return self._state(state_descriptor)


def user_metric_values(operators: Sequence[StreamOperator]) -> dict[str, float]:
    """The user metrics of a chain's set-up operators: ``{"<operator>.<identifier>": value}``."""
    values: dict[str, float] = {}
    for op in operators:
        context = op.ctx.runtime_context
        if isinstance(context, StreamingRuntimeContext) and context.metric_group is not None:
            group = context.metric_group.metric_values()
            values.update((f"{op.ctx.name}.{k}", v) for k, v in group.items())
    return values


class KeyedTimerService(TimerService):
    """``ctx.timer_service()`` of keyed process functions: timers of the current key."""

    def __init__(self, internal: InternalTimerService) -> None:
        self._internal = internal

    def current_processing_time(self) -> int:
        return self._internal.current_processing_time()

    def current_watermark(self) -> int:
        return self._internal.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._internal.register_processing_time_timer(VOID_NAMESPACE, int(timestamp))

    def register_event_time_timer(self, timestamp: int) -> None:
        self._internal.register_event_time_timer(VOID_NAMESPACE, int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._internal.delete_processing_time_timer(VOID_NAMESPACE, int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._internal.delete_event_time_timer(VOID_NAMESPACE, int(timestamp))


class NonKeyedTimerService(TimerService):
    """Clocks only: Flink refuses timers outside keyed streams, and so do we."""

    def __init__(self, operator_name: str, pts: Any, watermark: Callable[[], int]) -> None:
        self._name = operator_name
        self._pts = pts
        self._watermark = watermark

    def current_processing_time(self) -> int:
        return int(self._pts.current_processing_time())

    def current_watermark(self) -> int:
        return self._watermark()

    def _refuse(self) -> None:
        raise StateError(
            f"operator '{self._name}': timers can only be used on keyed streams; "
            "use key_by(...).process(KeyedProcessFunction)"
        )

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._refuse()

    def register_event_time_timer(self, timestamp: int) -> None:
        self._refuse()

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._refuse()

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._refuse()
