"""The single place a restore plan is handed to a deployment, and a hook on it for tests.

The JobMaster passes every restore plan (failover or ``execution.state-recovery.path``) through
:func:`plan_to_apply` right before it deploys: the enumerators' state, the subtasks' keyed and
operator state, source positions and channel state all come from what it returns. By default
that is the plan itself. :mod:`undertow.testing` installs a filter there for its no-restore
control (a restore that ignores its snapshot), which the restore tests must catch.

Threading: the filter is read on the JobMaster's loop; install it before the job starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

P = TypeVar("P")

_filter: Callable[[object], object | None] | None = None


def set_restore_filter(restore_filter: Callable[[object], object | None] | None) -> None:
    """Install (or, with ``None``, remove) the filter every restore plan goes through."""
    global _filter
    _filter = restore_filter


def plan_to_apply(plan: P | None) -> P | None:
    """The plan a deployment applies: ``plan`` unless a filter is installed."""
    if plan is None or _filter is None:
        return plan
    return _filter(plan)  # type: ignore[return-value]
