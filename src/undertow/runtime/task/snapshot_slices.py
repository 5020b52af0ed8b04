"""The asynchronous part of a heap keyed-state snapshot, run in mailbox slices.

:meth:`HeapKeyedStateBackend.snapshot <undertow.state.heap.HeapKeyedStateBackend.snapshot>`
returns key groups still to be pickled (:class:`~undertow.state.heap_snapshot.PendingKeyGroups`).
Rather than pickling them all in the step that took the snapshot (a window operator with
10,000 keys held its task, and the worker loop it shares, for hundreds of milliseconds),
:func:`serialize_in_slices` pickles them one slice per mail, so records, barriers and other
mails run in between; a record that touches a pending key group pickles that group first (the
backend's rule), so the snapshot stays the state at its barrier. When none is left, ``then``
runs: the state file is written and the checkpoint acknowledged as before.

Threading: the task's thread (mails). Lifecycle: the returned future is done once ``then``
ran; the checkpointer waits for it like for a state write before the task closes.
The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable

from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.state.heap_snapshot import PendingKeyGroups
from undertow.state.snapshot_strategy import NativeSnapshot


def pending_keyed_state(snapshot: SubtaskSnapshot) -> list[PendingKeyGroups]:
    """The keyed state and timer parts of ``snapshot`` that still have blobs to pickle (a heap
    incremental checkpoint's rewritten key groups too)."""
    pending: list[PendingKeyGroups] = []
    for part in snapshot.operators.values():
        native: NativeSnapshot | None = part.keyed_native
        for blobs in (part.keyed, part.timers, None if native is None else native.pending):
            if isinstance(blobs, PendingKeyGroups) and blobs.remaining:
                pending.append(blobs)
    return pending


def serialize_in_slices(
    pending: list[PendingKeyGroups], post: Callable[[Callable[[], None]], None],
    slice_s: Callable[[], float], then: Callable[[], None],
) -> concurrent.futures.Future[None]:  # fmt: skip
    """Pickle ``pending`` one slice (``slice_s()`` seconds, at least one key group) per mail
    posted with ``post``; then call ``then``. Returns a future done after ``then``."""
    finished: concurrent.futures.Future[None] = concurrent.futures.Future()

    def mail() -> None:
        deadline = time.perf_counter() + slice_s()
        while pending:
            if not pending[0].step(deadline):
                post(mail)
                return
            pending.pop(0)
            if time.perf_counter() >= deadline and pending:
                post(mail)
                return
        try:
            then()
        finally:
            finished.set_result(None)

    post(mail)
    return finished
