"""Internal window functions: the user's window function, adapted to one call shape.

The window operator evaluates a pane with ``process(key, window, context, contents)`` where
``contents`` is what its window state returns: one value for reducing/aggregating state, a
list for list state. The classes here turn that into the call the user wrote: a
``WindowFunction.apply(key, window, inputs)``, ``AllWindowFunction.apply(window, inputs)``,
``ProcessWindowFunction.process(key, context, inputs)`` or
``ProcessAllWindowFunction.process(context, inputs)``; or emit the reduced/aggregated value
unchanged when no window function is given.

Lifecycle: ``open(runtime_context)`` once before the first pane, ``close()`` at the end; both,
and the checkpoint hooks, reach every user function involved (reduce, aggregate, window
function) that has the method (bound once by ``UdfHooks``). Threading: the loop thread only.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from undertow.api.functions import (
    AggregateFunction,
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from undertow.runtime.task.udf_hooks import UdfHooks
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    as_reducer,
)

#: Name of the state that holds the panes (Flink's name).
WINDOW_CONTENTS_STATE_NAME = "window-contents"

_Output = Iterable[Any] | None


class InternalWindowContext(ProcessWindowFunction.Context, ProcessAllWindowFunction.Context, ABC):
    """The context the operator hands to internal functions; it is also the ``Context`` that
    process window functions see. Reused between calls: user code must not keep it."""


class InternalWindowFunction(ABC):
    """Evaluates one pane (see the module docstring). ``user_functions``: the functions it
    calls (None or a plain callable has no hooks), opened, closed and told about checkpoints
    in this order."""

    def __init__(self, *user_functions: Any) -> None:
        self._hooks = tuple(UdfHooks.of(f) for f in user_functions if f is not None)

    def open(self, runtime_context: Any) -> None:
        for hooks in self._hooks:
            hooks.open(runtime_context)

    def close(self) -> None:
        for hooks in self._hooks:
            hooks.close()

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        for hooks in self._hooks:
            hooks.prepare_snapshot_pre_barrier(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for hooks in self._hooks:
            hooks.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for hooks in self._hooks:
            hooks.notify_checkpoint_aborted(checkpoint_id)

    @abstractmethod
    def process(
        self, key: Any, window: Any, context: InternalWindowContext, contents: Any
    ) -> _Output:
        """The records to emit for the pane (timestamped ``window.max_timestamp()``)."""

    def clear(self, window: Any, context: InternalWindowContext) -> None:
        """The window is purged for good: let process functions drop their per-window state."""


_Invoke = Callable[[Any, Any, InternalWindowContext, Iterable[Any]], _Output]


def _invoker(function: Any) -> tuple[_Invoke, Callable[[InternalWindowContext], None] | None]:
    """How to call ``function`` with (key, window, context, inputs), and its ``clear``."""
    if isinstance(function, ProcessWindowFunction):
        return (lambda k, w, c, i: function.process(k, c, i)), function.clear
    if isinstance(function, ProcessAllWindowFunction):
        return (lambda k, w, c, i: function.process(c, i)), function.clear
    if isinstance(function, WindowFunction):
        return (lambda k, w, c, i: function.apply(k, w, i)), None
    if isinstance(function, AllWindowFunction):
        return (lambda k, w, c, i: function.apply(w, i)), None
    raise TypeError(
        "a window function must be a WindowFunction, AllWindowFunction, ProcessWindowFunction "
        f"or ProcessAllWindowFunction, got {function!r}"
    )


class IterableWindowFunction(InternalWindowFunction):
    """Passes list contents to the user's window function."""

    def __init__(self, function: Any) -> None:
        super().__init__(function)
        self._invoke, self._clear = _invoker(function)

    def process(
        self, key: Any, window: Any, context: InternalWindowContext, contents: Any
    ) -> _Output:
        return self._invoke(key, window, context, contents)

    def clear(self, window: Any, context: InternalWindowContext) -> None:
        if self._clear is not None:
            self._clear(context)


class SingleValueWindowFunction(InternalWindowFunction):
    """Passes a reduced/aggregated value as a one-element input; without a user function the
    value itself is the output. ``state_function`` (the reduce or aggregate function inside
    the state descriptor) is opened and closed with it."""

    def __init__(self, function: Any = None, *, state_function: Any = None) -> None:
        super().__init__(state_function, function)
        self._invoke: _Invoke | None = None
        self._clear: Callable[[InternalWindowContext], None] | None = None
        if function is not None:
            self._invoke, self._clear = _invoker(function)

    def process(
        self, key: Any, window: Any, context: InternalWindowContext, contents: Any
    ) -> _Output:
        if self._invoke is None:
            return (contents,)
        return self._invoke(key, window, context, [contents])

    def clear(self, window: Any, context: InternalWindowContext) -> None:
        if self._clear is not None:
            self._clear(context)


def _reduce_callable(reduce_function: Any) -> Callable[[Any, Any], Any]:
    reduce = as_reducer(reduce_function)
    if reduce is None:
        raise TypeError(
            f"reduce needs a ReduceFunction or a callable (a, b) -> c, got {reduce_function!r}"
        )
    return reduce


class _FoldThenApply(InternalWindowFunction):
    """List contents folded to one value when the window fires, then handed to ``inner``
    (evicting windows): opens, closes, clears and tells ``inner`` about checkpoints with the
    folding function."""

    def __init__(self, folding_function: Any, inner: SingleValueWindowFunction) -> None:
        super().__init__(folding_function)
        self._inner = inner

    def open(self, runtime_context: Any) -> None:
        super().open(runtime_context)
        self._inner.open(runtime_context)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        super().prepare_snapshot_pre_barrier(checkpoint_id)
        self._inner.prepare_snapshot_pre_barrier(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        super().notify_checkpoint_complete(checkpoint_id)
        self._inner.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        super().notify_checkpoint_aborted(checkpoint_id)
        self._inner.notify_checkpoint_aborted(checkpoint_id)

    def clear(self, window: Any, context: InternalWindowContext) -> None:
        self._inner.clear(window, context)


class ReduceApplyWindowFunction(_FoldThenApply):
    """Reduces list contents when the window fires, then applies ``inner`` (evicting windows).
    An empty pane (everything evicted) produces nothing."""

    def __init__(self, reduce_function: Any, inner: SingleValueWindowFunction) -> None:
        super().__init__(reduce_function, inner)
        self._reduce = _reduce_callable(reduce_function)

    def process(
        self, key: Any, window: Any, context: InternalWindowContext, contents: Any
    ) -> _Output:
        iterator = iter(contents)
        for acc in iterator:
            reduce = self._reduce
            for value in iterator:
                acc = reduce(acc, value)
            return self._inner.process(key, window, context, acc)
        return None


class AggregateApplyWindowFunction(_FoldThenApply):
    """Aggregates list contents when the window fires, then applies ``inner`` (evicting
    windows). An empty pane aggregates to the result of a fresh accumulator."""

    def __init__(
        self, aggregate_function: AggregateFunction[Any, Any, Any], inner: SingleValueWindowFunction
    ) -> None:
        super().__init__(aggregate_function, inner)
        self._aggregate = aggregate_function

    def process(
        self, key: Any, window: Any, context: InternalWindowContext, contents: Any
    ) -> _Output:
        aggregate = self._aggregate
        acc = aggregate.create_accumulator()
        for value in contents:
            acc = aggregate.add(value, acc)
        return self._inner.process(key, window, context, aggregate.get_result(acc))


# --- what the DataStream API calls -----------------------------------------------------------


@dataclass(frozen=True)
class WindowContents:
    """How a window operator keeps panes (``state_descriptor``) and evaluates them
    (``window_function``). Pass both to ``WindowOperator``."""

    state_descriptor: StateDescriptor
    window_function: InternalWindowFunction


def _list_contents(function: InternalWindowFunction) -> WindowContents:
    return WindowContents(ListStateDescriptor(WINDOW_CONTENTS_STATE_NAME), function)


def reduce_window_contents(
    reduce_function: Any, window_function: Any = None, *, evicting: bool = False
) -> WindowContents:
    """``reduce(reduce_function, window_function=None)`` of (All)WindowedStream.

    ``reduce_function``: a ``ReduceFunction`` or a callable ``(a, b) -> c``; ``window_function``:
    optional (Process)(All)WindowFunction that receives the reduced value as its only input.
    ``evicting``: True when the stream has an evictor.
    """
    _reduce_callable(reduce_function)  # type check now, not at the first record
    if evicting:
        single = SingleValueWindowFunction(window_function)
        return _list_contents(ReduceApplyWindowFunction(reduce_function, single))
    descriptor = ReducingStateDescriptor(WINDOW_CONTENTS_STATE_NAME, reduce_function)
    return WindowContents(
        descriptor, SingleValueWindowFunction(window_function, state_function=reduce_function)
    )


def aggregate_window_contents(
    aggregate_function: AggregateFunction[Any, Any, Any],
    window_function: Any = None,
    *,
    evicting: bool = False,
) -> WindowContents:
    """``aggregate(aggregate_function, window_function=None)`` of (All)WindowedStream.

    The window function, if any, receives ``get_result(accumulator)`` as its only input.
    Session windows need ``AggregateFunction.merge``.
    """
    if not isinstance(aggregate_function, AggregateFunction):
        raise TypeError(f"aggregate needs an AggregateFunction, got {aggregate_function!r}")
    if evicting:
        single = SingleValueWindowFunction(window_function)
        return _list_contents(AggregateApplyWindowFunction(aggregate_function, single))
    descriptor = AggregatingStateDescriptor(WINDOW_CONTENTS_STATE_NAME, aggregate_function)
    return WindowContents(
        descriptor, SingleValueWindowFunction(window_function, state_function=aggregate_function)
    )


def process_window_contents(process_window_function: Any) -> WindowContents:
    """``process(ProcessWindowFunction)`` of WindowedStream, ``process(ProcessAllWindowFunction)``
    of AllWindowedStream: the function sees every record of the pane."""
    if not isinstance(process_window_function, (ProcessWindowFunction, ProcessAllWindowFunction)):
        raise TypeError(
            "process needs a ProcessWindowFunction or ProcessAllWindowFunction, "
            f"got {process_window_function!r}"
        )
    return _list_contents(IterableWindowFunction(process_window_function))


def apply_window_contents(window_function: Any) -> WindowContents:
    """``apply(WindowFunction)`` of WindowedStream, ``apply(AllWindowFunction)`` of
    AllWindowedStream: the function sees every record of the pane."""
    if not isinstance(window_function, (WindowFunction, AllWindowFunction)):
        raise TypeError(
            f"apply needs a WindowFunction or AllWindowFunction, got {window_function!r}"
        )
    return _list_contents(IterableWindowFunction(window_function))
