"""A user function's optional hooks (:mod:`undertow.runtime.task.udf_hooks`): bound once, None
where the function has no such method (or it cannot be called), and passed on by operators."""

from __future__ import annotations

import pickle
from typing import Any

from undertow.runtime.task.udf_hooks import NO_HOOKS, UdfHooks


class Everything:
    """A function with every hook; logs the calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def open(self, runtime_context: Any) -> None:
        self.calls.append(f"open {runtime_context}")

    def close(self) -> None:
        self.calls.append("close")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.calls.append(f"complete {checkpoint_id}")

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.calls.append(f"aborted {checkpoint_id}")

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.calls.append(f"barrier {checkpoint_id}")


class NotCallable:
    """Attributes of the hooks' names that are no methods."""

    open = None
    close = "closed"
    notify_checkpoint_complete = 3


def run_every_hook(hooks: UdfHooks) -> None:
    hooks.open("ctx")
    hooks.prepare_snapshot_pre_barrier(1)
    hooks.notify_checkpoint_complete(1)
    hooks.notify_checkpoint_aborted(2)
    hooks.close()


def test_every_hook_of_the_function_is_called_in_turn() -> None:
    function = Everything()
    run_every_hook(UdfHooks.of(function))
    assert function.calls == ["open ctx", "barrier 1", "complete 1", "aborted 2", "close"]


def test_a_missing_or_uncallable_hook_is_none_and_calls_nothing() -> None:
    assert UdfHooks.of(None) is NO_HOOKS
    assert UdfHooks.of(lambda v: v) == NO_HOOKS
    assert UdfHooks.of(NotCallable()) == NO_HOOKS
    run_every_hook(UdfHooks.of(NotCallable()))  # nothing to call, nothing raised


def test_a_pickled_copy_calls_its_own_function() -> None:
    """Each deployed operator is a copy of the pickled job: its hooks must reach its copy of
    the function, not the one the job was built with."""
    function = Everything()
    operator = {"function": function, "hooks": UdfHooks.of(function)}
    copy = pickle.loads(pickle.dumps(operator))
    copy["hooks"].notify_checkpoint_complete(7)
    assert copy["function"].calls == ["complete 7"]
    assert function.calls == []
