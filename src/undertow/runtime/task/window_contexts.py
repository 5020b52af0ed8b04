"""The contexts a window operator hands to user code: trigger, window function, assigner, evictor.

Flink's ``WindowOperator.Context``, ``WindowContext``, ``WindowAssignerContext`` and
``EvictorContext``, and PyFlink's ``KeyedStateStore`` for per-window and global state. The
operator (:mod:`undertow.runtime.task.window_operator`) makes one of each in ``open`` and
reuses it for every call, setting the window before each call; state and timers are always
those of the backend's current key.

Threading: the task's loop thread only, like the operator that owns them; no locks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.api.window import Evictor, Trigger, WindowAssigner
from undertow.core.errors import StateError
from undertow.runtime.task.timers import InternalTimerService
from undertow.runtime.task.window_functions import InternalWindowContext
from undertow.state.backend import VOID_NAMESPACE, KeyedStateBackend
from undertow.state.descriptors import StateDescriptor

#: Reads the operator's metric group when user code asks for it (None in bare setups).
MetricGroupOf = Callable[[], Any]


class KeyedStateStore:
    """Keyed state of the current key in one namespace (PyFlink's ``KeyedStateStore``)."""

    __slots__ = ("_backend", "_namespace")

    def __init__(self, backend: KeyedStateBackend, namespace: Any) -> None:
        self._backend = backend
        self._namespace = namespace

    def _state(self, descriptor: StateDescriptor) -> Any:
        if self._namespace is None:
            raise StateError(
                f"per-window state ({descriptor.name!r}) is not allowed with merging windows"
            )
        state = self._backend.get_partitioned_state(descriptor)
        state.set_current_namespace(self._namespace)
        return state

    get_state = get_list_state = get_map_state = _state
    get_reducing_state = get_aggregating_state = _state


class TriggerContext(Trigger.OnMergeContext):
    """Timers and state of (current key, ``window``) for trigger calls. Reused."""

    def __init__(
        self,
        operator_name: str,
        timers: InternalTimerService,
        backend: KeyedStateBackend,
        metric_group: MetricGroupOf,
    ) -> None:
        self._operator_name = operator_name
        self._timers = timers
        self._backend = backend
        self._metric_group = metric_group
        self.window: Any = None
        self.merged_windows: list[Any] = []

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_metric_group(self) -> Any:
        return self._metric_group()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        state = self._backend.get_partitioned_state(state_descriptor)
        state.set_current_namespace(self.window)
        return state

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if not self.merged_windows:
            return
        state = self._backend.get_partitioned_state(state_descriptor)
        try:
            state.merge_namespaces(self.window, list(self.merged_windows))
        except NotImplementedError as err:
            raise StateError(
                f"window operator {self._operator_name!r}: trigger state "
                f"{state_descriptor.name!r} is not mergeable (use list, reducing or aggregating "
                "state)"
            ) from err


class WindowContext(InternalWindowContext):
    """The ``Context`` of process window functions, for the window being evaluated."""

    def __init__(
        self,
        timers: InternalTimerService,
        backend: KeyedStateBackend,
        merging: bool,
        collect_side: Callable[[str, Any, int], None],
    ) -> None:
        self._timers = timers
        self._backend = backend
        self._merging = merging
        self._collect_side = collect_side
        self.current_window: Any = None

    def window(self) -> Any:
        return self.current_window

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._timers.current_watermark

    def window_state(self) -> Any:
        return KeyedStateStore(self._backend, None if self._merging else self.current_window)

    def global_state(self) -> Any:
        return KeyedStateStore(self._backend, VOID_NAMESPACE)

    def output(self, output_tag: Any, value: Any) -> None:
        self._collect_side(output_tag.tag_id, value, self.current_window.max_timestamp())


class AssignerContext(WindowAssigner.WindowAssignerContext):
    """What an assigner sees: processing time and the current key's state."""

    def __init__(
        self, timers: InternalTimerService, backend: KeyedStateBackend, runtime_context: Any
    ) -> None:
        self._timers = timers
        # Keyed state of the current key: the attached RuntimeContext, else a state-only store.
        self._runtime_context: Any = runtime_context or KeyedStateStore(backend, VOID_NAMESPACE)

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_runtime_context(self) -> Any:
        return self._runtime_context


class EvictorContext(Evictor.EvictorContext):
    """What an evictor sees: processing time, the watermark and the metric group."""

    def __init__(self, timers: InternalTimerService, metric_group: MetricGroupOf) -> None:
        self._timers = timers
        self._metric_group = metric_group

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_metric_group(self) -> Any:
        return self._metric_group()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark
