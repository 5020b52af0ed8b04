"""Which checkpoint directories of a job are orphans, and when to look for them: pure decisions.

Why: the coordinator deletes the directory of an aborted checkpoint at once, but a task may
still be writing a late file into it (its state file or a shared channel-state file, written
on the worker's I/O pool). The delete then fails ("Directory not empty"), or the late write
re-creates the directory after it. A late *acknowledgement* triggers another delete, but a
late write that is never acknowledged (declined, subsumed, worker stopping) would leave
``chk-<n>/`` forever. The coordinator therefore sweeps the job's directory now and then
(:func:`sweep_due`) and deletes what :func:`select_orphans` selects.

Invariants (tested with Hypothesis): the selection is a subset of the listed ids, ascending,
at most ``limit`` long, and never contains an id ``>= below``, a protected id, or a directory
with ``_metadata``. Threading: none (pure functions); cost O(listed directories).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from undertow.storage.checkpoint_storage import CheckpointDirectory

#: The coordinator sweeps at most this often while the job runs (and once when it ends).
SWEEP_INTERVAL_MS = 5_000
#: At most this many directories are deleted per sweep (bounded work; the rest go next time).
MAX_DELETES_PER_SWEEP = 16


@dataclass(frozen=True, slots=True)
class SweepFacts:
    """What the coordinator knew on its loop when it decided to sweep (see the module doc).

    ``below`` is None when nothing completed yet: then nothing is an orphan.
    """

    below: int | None
    protected: frozenset[int]


def select_orphans(
    directories: Iterable[CheckpointDirectory],
    facts: SweepFacts,
    limit: int = MAX_DELETES_PER_SWEEP,
) -> tuple[int, ...]:
    """The ids of the orphaned directories among ``directories``, oldest first, at most
    ``limit`` of them."""
    if facts.below is None or limit <= 0:
        return ()
    below = facts.below
    orphans = sorted(
        {
            d.checkpoint_id
            for d in directories
            if d.checkpoint_id < below
            and d.checkpoint_id not in facts.protected
            and not d.has_metadata
        }
    )
    return tuple(orphans[:limit])


def sweep_due(now_ms: int, last_sweep_ms: int | None, interval_ms: int = SWEEP_INTERVAL_MS) -> bool:
    """Whether a periodic sweep may start at ``now_ms``: none ran yet, or the last one started
    at least ``interval_ms`` ago (a clock that went back counts as due)."""
    if last_sweep_ms is None:
        return True
    return now_ms - last_sweep_ms >= interval_ms or now_ms < last_sweep_ms
