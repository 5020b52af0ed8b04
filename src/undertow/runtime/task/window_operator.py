"""The window operator: Flink's ``WindowOperator`` (and ``EvictingWindowOperator``).

Lifecycle: ``setup -> open -> (process_batch | process_watermark | timers)* -> finish ->
close``, checkpoint hooks passed on to the user's functions. At the end of data the task
first quiesces the operator's processing-time service (:mod:`undertow.runtime.task.chain`):
processing-time windows still open then never fire, and their contents are dropped, as in
Flink's streaming mode. Threading: everything runs on the task's loop thread; no locks.

Invariants: a window with state has a cleanup timer (unless it never ends); after the cleanup
timer of a window fired, no state of that (key, window) remains; a record is added to a pane
only if that window was not late when the record arrived. Windows equal to each other are
one instance in state and timers (non-merging assigners): a snapshot pickles it once per key
group, not once per key.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any

from undertow.api.window import (
    EventTimeTrigger,
    Evictor,
    MergingWindowAssigner,
    TimestampedValue,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)
from undertow.core.errors import GraphBuildError, StateError, note_context, note_record, shown_value
from undertow.core.types import MAX_WATERMARK, MIN_TIMESTAMP
from undertow.runtime.task.merging_window_set import MergingWindowSet
from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps
from undertow.runtime.task.timers import InternalTimer
from undertow.runtime.task.window_contexts import (
    AssignerContext,
    EvictorContext,
    TriggerContext,
    WindowContext,
)
from undertow.runtime.task.window_functions import (
    AggregateApplyWindowFunction,
    InternalWindowFunction,
    IterableWindowFunction,
    ReduceApplyWindowFunction,
    SingleValueWindowFunction,
    WindowContents,
    aggregate_window_contents,
    apply_window_contents,
    process_window_contents,
    reduce_window_contents,
)
from undertow.runtime.task.window_panes import WindowPanes
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import ListStateDescriptor, StateDescriptor, ValueStateDescriptor
from undertow.state.key_groups import user_key

__all__ = [
    "NUM_LATE_RECORDS_DROPPED",
    "AggregateApplyWindowFunction",
    "InternalWindowFunction",
    "IterableWindowFunction",
    "ReduceApplyWindowFunction",
    "SingleValueWindowFunction",
    "WindowContents",
    "WindowOperator",
    "aggregate_window_contents",
    "apply_window_contents",
    "process_window_contents",
    "reduce_window_contents",
]

#: Accumulator counting records dropped as late (no late-data side output set).
NUM_LATE_RECORDS_DROPPED = "num_late_records_dropped"
_MERGING_SETS_STATE_NAME = "merging-window-set"
_TIMER_SERVICE_NAME = "window-timers"
_CONTINUE, _FIRE = TriggerResult.CONTINUE, TriggerResult.FIRE
_PURGE, _FIRE_AND_PURGE = TriggerResult.PURGE, TriggerResult.FIRE_AND_PURGE


class WindowOperator(OneInputStreamOperator):
    """Windows of a keyed stream (see the module docstring).

    ``key_selector`` extracts the key of a record (a constant for ``window_all``);
    ``window_function`` and ``state_descriptor`` come from one of the ``*_window_contents``
    functions of :mod:`undertow.runtime.task.window_functions` (pass ``evicting=True`` to
    reduce/aggregate when ``evictor`` is set). ``late_data_tag_id`` names the side output for
    late records (``OutputTag.tag_id``).
    """

    def __init__(
        self,
        *,
        assigner: WindowAssigner[Any, Any],
        trigger: Trigger[Any, Any],
        key_selector: Callable[[Any], Any],
        window_function: InternalWindowFunction,
        state_descriptor: StateDescriptor,
        allowed_lateness_ms: int = 0,
        late_data_tag_id: str | None = None,
        evictor: Evictor[Any, Any] | None = None,
    ) -> None:
        merging = isinstance(assigner, MergingWindowAssigner)
        where = f"window operator ({assigner!r}, {trigger!r})"
        if allowed_lateness_ms < 0:
            raise GraphBuildError(
                f"{where}: allowed lateness must be >= 0, got {allowed_lateness_ms}"
            )
        if merging and not trigger.can_merge():
            raise GraphBuildError(
                f"{where}: a merging window assigner needs a trigger that can merge"
            )
        if merging and state_descriptor.kind not in ("list", "reducing", "aggregating"):
            raise GraphBuildError(
                f"{where}: merging windows need mergeable state, got {state_descriptor!r}"
            )
        if evictor is not None and not isinstance(state_descriptor, ListStateDescriptor):
            raise GraphBuildError(
                f"{where}: an evictor needs list window state; build the contents with "
                f"evicting=True (got {state_descriptor!r})"
            )
        self._assigner = assigner
        self._trigger = trigger
        self._key_selector = key_selector
        self._window_function = window_function
        self._state_descriptor = state_descriptor
        self._allowed_lateness = allowed_lateness_ms
        self._late_tag_id = late_data_tag_id
        self._evictor = evictor
        self._merging = merging
        self._is_event_time = assigner.is_event_time()
        self._list_contents = isinstance(state_descriptor, ListStateDescriptor)
        self._out_values: list[Any] = []
        self._out_timestamps: list[Any] = []
        self._buffering = False
        self._opened = False
        #: An EventTimeTrigger's timer of a window is its cleanup time (event time, no allowed
        #: lateness): the trigger registered it for every record added, so the cleanup timer
        #: would register it again, for nothing (timers are a set).
        self._trigger_cleans_up = (
            type(trigger) is EventTimeTrigger and self._is_event_time and allowed_lateness_ms == 0
        )

    # --- lifecycle ---------------------------------------------------------------------------

    def open(self) -> None:
        ctx = self.ctx
        if ctx.keyed_backend is None or ctx.timer_service_factory is None:
            raise StateError(
                f"window operator {ctx.name!r} needs a keyed input (a keyed state backend and "
                "timers); key the stream, or key window_all by a constant"
            )
        self._backend = ctx.keyed_backend
        self._timers = ctx.timer_service_factory(_TIMER_SERVICE_NAME, self)
        self._window_state: Any = self._backend.get_partitioned_state(self._state_descriptor)
        if self._merging:
            sets = self._backend.get_partitioned_state(
                ValueStateDescriptor(_MERGING_SETS_STATE_NAME)
            )
            sets.set_current_namespace(VOID_NAMESPACE)
            self._merging_sets: Any = sets
        # The RuntimeContext user functions see (set by the operator chain; None in bare setups).
        self._runtime_context: Any = ctx.runtime_context
        timers, backend = self._timers, self._backend
        self._trigger_ctx = TriggerContext(self.name, timers, backend, self._metric_group)
        self._window_ctx = WindowContext(timers, backend, self._merging, self.output.collect_side)
        self._assigner_ctx = AssignerContext(timers, backend, self._runtime_context)
        self._evictor_ctx = EvictorContext(timers, self._metric_group)
        self._panes = WindowPanes(self._assigner, self._assigner_ctx, self._cleanup_time)
        ctx.counters.setdefault(NUM_LATE_RECORDS_DROPPED, 0)
        self._window_function.open(self._runtime_context)
        self._opened = True

    def finish(self) -> None:
        """Emit buffered results. Event-time windows fired on the final ``MAX_WATERMARK``;
        pending processing-time windows never fire: the chain quiesced this operator's
        processing-time service before calling ``finish`` (Flink's streaming mode), so their
        contents are dropped at the end of a bounded input (BATCH mode fires them first)."""
        self._flush()

    def close(self) -> None:
        self._out_values, self._out_timestamps = [], []
        if self._opened:
            self._opened = False
            self._window_function.close()

    # --- checkpoints: passed on to the user's functions (Flink's AbstractUdfStreamOperator) ---

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._window_function.prepare_snapshot_pre_barrier(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._window_function.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self._window_function.notify_checkpoint_aborted(checkpoint_id)

    def _metric_group(self) -> Any:
        rc = self._runtime_context
        return rc.get_metrics_group() if rc is not None else None

    # --- input -------------------------------------------------------------------------------

    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        set_key, key_selector, process = (
            self._backend.set_current_key,
            self._key_selector,
            self._process_merging if self._merging else self._process_element,
        )
        self._buffering = True
        value: Any = None
        try:
            if timestamps is None:
                for value in values:
                    key = key_selector(value)
                    set_key(key)
                    process(key, value, MIN_TIMESTAMP)
            else:
                for value, ts in zip(values, timestamps):
                    key = key_selector(value)
                    set_key(key)
                    process(key, value, MIN_TIMESTAMP if ts is None else ts)
        except Exception as err:  # a reduce or aggregate function adding the record raised
            note_record(err, value)
            raise
        finally:
            self._buffering = False
        self._flush()

    def process_watermark(self, watermark: int) -> None:
        """Fire the windows the watermark completes, in mailbox slices (see the timers); each
        slice's results go out as one batch, and the watermark after the last of them."""
        self._buffering = True
        try:
            self._timers.advance_watermark(watermark, functools.partial(
                self.output.emit_watermark, watermark), self._flush)  # fmt: skip
        finally:
            self._buffering = False

    def _process_element(self, key: Any, value: Any, timestamp: int) -> None:
        """One record of a non-merging assigner (its key current): into each window's pane."""
        if self._evictor is not None:
            record: Any = (value, None if timestamp == MIN_TIMESTAMP else timestamp)
        else:
            record = value
        event_time, watermark = self._is_event_time, self._timers.current_watermark
        skipped = True
        # one instance per distinct window: state and timers of all keys then share it, and a
        # snapshot pickles it once per key group, not once per key
        for window, cleanup in self._panes.of(value, timestamp):
            if event_time and cleanup <= watermark:
                continue
            skipped = False
            self._add(key, value, record, timestamp, window, window, cleanup)
        if skipped:
            self._late(value, timestamp, watermark)

    def _process_merging(self, key: Any, value: Any, timestamp: int) -> None:
        """One record of a merging assigner: its windows merge into the key's sessions."""
        windows: Collection[Any] = self._assigner.assign_windows(
            value, timestamp, self._assigner_ctx
        )
        if self._evictor is not None:
            record: Any = (value, None if timestamp == MIN_TIMESTAMP else timestamp)
        else:
            record = value
        event_time, watermark = self._is_event_time, self._timers.current_watermark
        skipped = True
        merging_set = self._merging_window_set()
        for window in windows:
            actual = merging_set.add_window(window, self._merge)
            cleanup = self._cleanup_time(actual)
            if event_time and cleanup <= watermark:
                merging_set.retire_window(actual)
                continue
            state_window = merging_set.get_state_window(actual)
            if state_window is None:
                raise StateError(
                    f"window operator {self.name!r}: window {actual!r} is not in flight"
                )
            skipped = False
            self._add(key, value, record, timestamp, actual, state_window, cleanup)
        merging_set.persist()
        if skipped:
            self._late(value, timestamp, watermark)

    def _add(
        self,
        key: Any,
        value: Any,
        record: Any,
        timestamp: int,
        window: Any,
        state_window: Any,
        cleanup: int,
    ) -> None:
        """Add ``record`` to the pane of ``window`` (its state kept under ``state_window``),
        ask the trigger, and make sure the window has its cleanup timer."""
        window_state, tc = self._window_state, self._trigger_ctx
        window_state.set_current_namespace(state_window)
        window_state.add(record)
        tc.window = window
        result = self._trigger.on_element(value, timestamp, window, tc)
        if result is not _CONTINUE:
            if result is _FIRE or result is _FIRE_AND_PURGE:
                contents = self._contents()
                if contents is None:
                    return  # as Flink: nothing to evaluate, no purge, no cleanup timer
                self._emit(key, window, contents)
            if result is _PURGE or result is _FIRE_AND_PURGE:
                window_state.clear()
        # windows that never end get no cleanup timer
        if cleanup < MAX_WATERMARK and not self._trigger_cleans_up:
            tc.window = window
            if self._is_event_time:
                tc.register_event_time_timer(cleanup)
            else:
                tc.register_processing_time_timer(cleanup)

    def _late(self, value: Any, timestamp: int, watermark: int) -> None:
        """A record that went into no window: late data if its own timestamp is late too."""
        if self._is_event_time and timestamp + self._allowed_lateness <= watermark:
            if self._late_tag_id is not None:
                self.output.collect_side(self._late_tag_id, value, timestamp)
            else:
                self.ctx.counters[NUM_LATE_RECORDS_DROPPED] += 1

    # --- merging -----------------------------------------------------------------------------

    def _merging_window_set(self) -> MergingWindowSet:
        assert isinstance(self._assigner, MergingWindowAssigner)
        return MergingWindowSet(self._assigner, self._merging_sets)

    def _merge(
        self,
        merge_result: Window,
        merged_windows: list[Any],
        state_window_result: Any,
        merged_state_windows: list[Any],
    ) -> None:
        """Windows merged: move trigger state and timers to the result, merge the panes."""
        timers = self._timers
        if self._is_event_time:
            if self._cleanup_time(merge_result) <= timers.current_watermark:
                raise StateError(
                    f"window operator {self.name!r}: merging produced {merge_result!r}, which "
                    f"ends before the current watermark {timers.current_watermark}"
                )
        elif merge_result.max_timestamp() <= timers.current_processing_time():
            raise StateError(
                f"window operator {self.name!r}: merging produced {merge_result!r}, which ends "
                f"before the current processing time {timers.current_processing_time()}"
            )
        tc, trigger = self._trigger_ctx, self._trigger
        tc.window = merge_result
        tc.merged_windows = merged_windows
        trigger.on_merge(merge_result, tc)
        tc.merged_windows = []
        for window in merged_windows:
            tc.window = window
            trigger.clear(window, tc)
            self._delete_cleanup_timer(window)
        if merged_state_windows:
            self._window_state.merge_namespaces(state_window_result, merged_state_windows)

    # --- timers ------------------------------------------------------------------------------

    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, event_time=True)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, event_time=False)

    def _on_timer(self, timer: InternalTimer, *, event_time: bool) -> None:
        window = timer.namespace
        window_state, trigger, tc = self._window_state, self._trigger, self._trigger_ctx
        tc.window = window
        merging_set = None
        if self._merging:
            merging_set = self._merging_window_set()
            state_window = merging_set.get_state_window(window)
            if state_window is None:
                return  # the window merged away or was cleared: its trigger left a timer
            window_state.set_current_namespace(state_window)
        else:
            window_state.set_current_namespace(window)
        if event_time:
            result = trigger.on_event_time(timer.timestamp, window, tc)
        else:
            result = trigger.on_processing_time(timer.timestamp, window, tc)
        if result.is_fire():
            contents = self._contents()
            if contents is not None:
                self._emit(user_key(timer.key), window, contents)  # -0.0 as the float it is
        if result.is_purge():
            window_state.clear()
        if event_time == self._is_event_time and timer.timestamp == self._cleanup_time(window):
            self._clear_all_state(window, merging_set)
        if merging_set is not None:
            merging_set.persist()
        if not self._buffering:
            self._flush()

    def _clear_all_state(self, window: Any, merging_set: MergingWindowSet | None) -> None:
        self._window_state.clear()
        tc = self._trigger_ctx
        tc.window = window
        self._trigger.clear(window, tc)
        wc = self._window_ctx
        wc.current_window = window
        self._window_function.clear(window, wc)
        if merging_set is not None:
            merging_set.retire_window(window)

    def _cleanup_time(self, window: Any) -> int:
        """When the window's state goes: end + allowed lateness (event time) or end."""
        if self._is_event_time:
            return min(window.max_timestamp() + self._allowed_lateness, MAX_WATERMARK)
        return int(window.max_timestamp())

    def _delete_cleanup_timer(self, window: Any) -> None:
        time = self._cleanup_time(window)
        if time >= MAX_WATERMARK:
            return
        tc = self._trigger_ctx
        tc.window = window
        if self._is_event_time:
            tc.delete_event_time_timer(time)
        else:
            tc.delete_processing_time_timer(time)

    # --- evaluation --------------------------------------------------------------------------

    def _contents(self) -> Any:
        """The current pane (window state namespace already set), or None if it is empty."""
        contents = self._window_state.get()
        if self._list_contents and not contents:
            return None
        return contents

    def _emit(self, key: Any, window: Any, contents: Any) -> None:
        evictor = self._evictor
        if evictor is None:
            self._evaluate(key, window, contents)
            return
        elements = [TimestampedValue(v, ts) for v, ts in contents]
        ectx = self._evictor_ctx
        evictor.evict_before(elements, len(elements), window, ectx)
        self._evaluate(key, window, [e.value for e in elements])
        evictor.evict_after(elements, len(elements), window, ectx)
        if elements:
            self._window_state.update([(e.value, e.timestamp) for e in elements])
        else:
            self._window_state.clear()

    def _evaluate(self, key: Any, window: Any, inputs: Any) -> None:
        wc = self._window_ctx
        wc.current_window = window
        out = self._out_values
        before = len(out)
        try:
            produced = self._window_function.process(key, window, wc, inputs)
            if produced is None:
                return
            out.extend(produced)
        except Exception as err:  # the user's window function (or its generator) raised
            note_context(err, f"firing the window {window} of the key {shown_value(key)}")
            raise
        if len(out) > before:
            self._out_timestamps.extend([window.max_timestamp()] * (len(out) - before))

    def _flush(self) -> None:
        if self._out_values:
            values, timestamps = self._out_values, self._out_timestamps
            self._out_values, self._out_timestamps = [], []
            self.output.collect_batch(values, timestamps)

    def __repr__(self) -> str:
        return (
            f"WindowOperator({self._assigner!r}, {self._trigger!r}, evictor={self._evictor!r}, "
            f"allowed_lateness_ms={self._allowed_lateness})"
        )
