"""What an operator tells its user function beside the records, resolved once per operator.

A user function is a PyFlink function object, an object of its shape or a plain callable; it
may have ``open``, ``close``, the checkpoint notifications and the pre-barrier hook, each
optional (the Protocols of :mod:`undertow.api.function_shapes`). :meth:`UdfHooks.of` looks
them up when the operator is built and keeps the bound methods (None for a missing one), so
the lifecycle calls never probe the function's attributes. :class:`ForwardsCheckpointHooks`
passes an operator's checkpoint hooks on to them, as Flink's ``AbstractUdfStreamOperator``
does for a function that is a ``CheckpointListener``.

Threading: every call runs on the task's loop thread, in the operator's lifecycle order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.api.function_shapes import (
    CheckpointAbortedLike,
    CheckpointCompleteLike,
    CloseLike,
    OpenLike,
    PreBarrierLike,
)


def _bound(function: Any, shape: type, method: Callable[[Any], Any]) -> Any:
    """``method(function)`` if ``function`` has ``shape`` and that is callable (a Protocol
    check sees the attribute, not whether it can be called), else None."""
    if isinstance(function, shape):
        bound = method(function)
        if callable(bound):
            return bound
    return None


@dataclass(frozen=True, slots=True)
class UdfHooks:
    """A user function's optional methods, bound (or None), and the calls that use them.

    Pickled with its operator: the bound methods refer to the same function object as the
    operator's own reference, so each deployed copy calls its own function. Immutable."""

    open_fn: Callable[[Any], Any] | None = None
    close_fn: Callable[[], Any] | None = None
    complete_fn: Callable[[int], Any] | None = None
    aborted_fn: Callable[[int], Any] | None = None
    pre_barrier_fn: Callable[[int], Any] | None = None

    @classmethod
    def of(cls, function: Any) -> UdfHooks:
        """The hooks of ``function`` (None, a plain callable: none)."""
        if function is None:
            return NO_HOOKS
        return cls(
            open_fn=_bound(function, OpenLike, lambda f: f.open),
            close_fn=_bound(function, CloseLike, lambda f: f.close),
            complete_fn=_bound(function, CheckpointCompleteLike,
                               lambda f: f.notify_checkpoint_complete),
            aborted_fn=_bound(function, CheckpointAbortedLike,
                              lambda f: f.notify_checkpoint_aborted),
            pre_barrier_fn=_bound(function, PreBarrierLike,
                                  lambda f: f.prepare_snapshot_pre_barrier),
        )  # fmt: skip

    def open(self, runtime_context: Any) -> None:
        if self.open_fn is not None:
            self.open_fn(runtime_context)

    def close(self) -> None:
        if self.close_fn is not None:
            self.close_fn()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.complete_fn is not None:
            self.complete_fn(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        if self.aborted_fn is not None:
            self.aborted_fn(checkpoint_id)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if self.pre_barrier_fn is not None:
            self.pre_barrier_fn(checkpoint_id)


#: The hooks of a plain callable, or of an operator without a function object.
NO_HOOKS = UdfHooks()


class ForwardsCheckpointHooks:
    """Mixin for an operator around one user function (before ``StreamOperator`` in the
    bases): its checkpoint hooks pass on to the function's (``hooks``, set by the operator
    when it is built)."""

    hooks: UdfHooks

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.hooks.prepare_snapshot_pre_barrier(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.hooks.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.hooks.notify_checkpoint_aborted(checkpoint_id)
