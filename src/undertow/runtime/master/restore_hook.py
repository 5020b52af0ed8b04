"""The single place a restore plan is handed to a deployment: a record of every restore, and
the JobMaster's half of the restore controls (docs/testing.md, "Controls").

The JobMaster passes every restore plan (failover or ``execution.state-recovery.path``) through
:func:`plan_to_apply` right before it deploys, and calls :func:`record_restored` once the
restore is deployed (appended to ``$UNDERTOW_RESTORE_LOG`` if set). With
``$UNDERTOW_RESTORE_CONTROL`` set, the plan drops that part of its snapshot (``all``: the whole
plan; channel state and enumerator state here; the rest travels to the workers as a
``RestoreFault``) while the restore is still reported. A filter (:func:`set_restore_filter`)
takes precedence. Test-only; production sets neither variable.

Threading: the JobMaster's loop; the environment is read at each restore.
The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from collections.abc import Callable
from typing import Any

from undertow.runtime.checkpoint.restore_fault import (
    CONTROL_ENV,
    LOG_ENV,
    ControlKind,
    RestoreFault,
    record_to,
)
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.state.snapshot_strategy import NativeStateHandle
from undertow.storage.checkpoint_storage import CheckpointStorage

_filter: Callable[[object], object | None] | None = None


def set_restore_filter(restore_filter: Callable[[object], object | None] | None) -> None:
    """Install (or, with ``None``, remove) the filter every restore plan goes through."""
    global _filter
    _filter = restore_filter


def active_control() -> ControlKind | None:
    """The control ``$UNDERTOW_RESTORE_CONTROL`` names, if any (a bad name raises)."""
    name = os.environ.get(CONTROL_ENV, "")
    return ControlKind.parse(name) if name else None


def record(event: str, **fields: Any) -> None:
    """Append one JSON line to ``$UNDERTOW_RESTORE_LOG`` (nothing if unset)."""
    record_to(os.environ.get(LOG_ENV, ""), event, **fields)


def record_restored(checkpoint_id: int) -> None:
    """A restore of ``checkpoint_id`` was deployed (the JobMaster prints its restore line):
    recorded, whatever a control dropped from it. A restore that failed before its tasks
    were deployed (a corrupt file, a refused plan) is not recorded."""
    record("restore", checkpoint=checkpoint_id)


def plan_to_apply(plan: RestorePlan | None) -> RestorePlan | None:
    """The plan a deployment applies: ``plan``, recorded, filtered by an installed filter and
    by the active control (module doc)."""
    if plan is None:
        return None
    checkpoint_id = plan.metadata.checkpoint_id
    if _filter is not None:
        filtered = _filter(plan)
        assert filtered is None or isinstance(filtered, RestorePlan), filtered
        return filtered
    kind = active_control()
    if kind is None:
        return plan
    return _controlled(plan, kind, checkpoint_id)


def _controlled(plan: RestorePlan, kind: ControlKind, checkpoint_id: int) -> RestorePlan | None:
    print(f"[undertow] restore control {kind.value}: checkpoint {checkpoint_id}", flush=True)
    if kind is ControlKind.ALL:
        record("fault", kind=kind.value, checkpoint=checkpoint_id, what="the whole snapshot")
        return None
    shared_file = _first_heap_segment(plan) if kind is ControlKind.SHARED_FILE else ""
    changes: dict[str, Any] = {
        "fault": RestoreFault(kind, os.environ.get(LOG_ENV, ""), shared_file)
    }
    if kind is ControlKind.CHANNEL_STATE and (plan.channel_state or plan.reemit):
        record("fault", kind=kind.value, checkpoint=checkpoint_id,
               what=f"channel state of {len(plan.channel_state)} subtasks, "
                    f"{len(plan.reemit)} re-emitting")  # fmt: skip
        changes.update(channel_state={}, reemit={})
    if kind is ControlKind.SOURCE_POSITIONS and plan.enumerator_states:
        record("fault", kind=kind.value, checkpoint=checkpoint_id,
               what=f"enumerator state of vertices {sorted(plan.enumerator_states)}")  # fmt: skip
        changes.update(enumerator_states={})
    return dataclasses.replace(plan, **changes)


def _first_heap_segment(plan: RestorePlan) -> str:
    """The path of the first shared file that the first native handle able to drop one (heap
    incremental state, :meth:`~undertow.state.snapshot_strategy.NativeStateHandle.
    without_shared_file`) references with live state, in the plan's state files in reverse
    (vertex, subtask) order, i.e. of the stateful vertex nearest the sinks; ``""`` if none
    (blocking reads: test-only)."""
    storage = CheckpointStorage(plan.checkpoint_dir, plan.job_id)
    for key in sorted(plan.subtask_files, reverse=True):
        for handle in plan.subtask_files[key]:
            snapshot = pickle.loads(storage.read_file(handle, plan.metadata.checkpoint_id))
            for part in snapshot.operators.values():
                native: NativeStateHandle | None = part.keyed_native
                if native is None:
                    continue
                for shared in native.shared_handles:
                    if native.without_shared_file(shared.path) is not None:
                        return shared.path
    return ""
